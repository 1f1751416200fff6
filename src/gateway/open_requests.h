// OpenRequests: the admitted requests one event loop is forwarding to a provider, so that
// the end of a drain that timed out (serve.cpp) can settle what is still open as a cut
// request (SPEC §5: usage_missing, the request usage_pending with its hold kept) under the
// provider's id seen so far.
//
// Thread safety: none. One per event loop, touched only on its thread, and read from
// another thread only once that loop has stopped and its thread has been joined.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "store/store.h"

namespace cairva::gateway {

class OpenRequests {
 public:
  OpenRequests() = default;
  OpenRequests(const OpenRequests&) = delete;
  OpenRequests& operator=(const OpenRequests&) = delete;

  // One request in the list for the entry's lifetime (none with a null list). The ids are
  // referenced, not copied: they must outlive the entry (the exchange's and the grant's).
  class Entry {
   public:
    Entry(OpenRequests* list, const std::string& request_id, const std::string& allocation_id);
    ~Entry();
    Entry(const Entry&) = delete;
    Entry& operator=(const Entry&) = delete;

    // The provider's id, once the flow has seen it.
    void set_provider_request_id(std::string_view id) { provider_request_id_.assign(id); }

   private:
    friend class OpenRequests;
    OpenRequests* list_;
    const std::string& request_id_;
    const std::string& allocation_id_;
    std::string provider_request_id_;
    Entry* prev_ = nullptr;
    Entry* next_ = nullptr;
  };

  // The settlement of each request still open, oldest first: usage_missing under the
  // provider's id when one was seen (else empty: the request keeps the id it has).
  std::vector<store::SettleCommand> cut_settlements() const;
  size_t size() const { return size_; }

 private:
  Entry* head_ = nullptr;
  Entry* tail_ = nullptr;
  size_t size_ = 0;
};

}  // namespace cairva::gateway
