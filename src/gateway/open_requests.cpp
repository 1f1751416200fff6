#include "gateway/open_requests.h"

namespace cairva::gateway {

OpenRequests::Entry::Entry(OpenRequests* list, const std::string& request_id,
                           const std::string& allocation_id)
    : list_(list), request_id_(request_id), allocation_id_(allocation_id) {
  if (list_ == nullptr) return;
  prev_ = list_->tail_;
  (prev_ != nullptr ? prev_->next_ : list_->head_) = this;
  list_->tail_ = this;
  ++list_->size_;
}

OpenRequests::Entry::~Entry() {
  if (list_ == nullptr) return;
  (prev_ != nullptr ? prev_->next_ : list_->head_) = next_;
  (next_ != nullptr ? next_->prev_ : list_->tail_) = prev_;
  --list_->size_;
}

std::vector<store::SettleCommand> OpenRequests::cut_settlements() const {
  std::vector<store::SettleCommand> out;
  out.reserve(size_);
  for (const Entry* e = head_; e != nullptr; e = e->next_) {
    out.push_back({e->request_id_,
                   e->allocation_id_,
                   store::SettleKind::usage_missing,
                   e->provider_request_id_,
                   {}});
  }
  return out;
}

}  // namespace cairva::gateway
