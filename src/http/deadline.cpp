#include "http/deadline.h"

namespace cairva::http {

// Shared with the pending timer wait, which may complete after the Deadline is gone.
struct Deadline::State {
  explicit State(Socket& s) : socket(&s), timer(s.get_executor()) {}
  Socket* socket;  // null once the Deadline is destroyed
  Timer timer;
  clock::time_point deadline = clock::time_point::max();
  bool expired = false;
  bool waiting = false;

  static void arm(const std::shared_ptr<State>& self) {
    self->waiting = true;
    self->timer.expires_at(self->deadline);
    self->timer.async_wait([self](boost::system::error_code) { on_timer(self); });
  }

  static void on_timer(const std::shared_ptr<State>& self) {
    self->waiting = false;
    if (!self->socket) return;
    if (clock::now() < self->deadline) {
      arm(self);  // the deadline moved later while we slept
      return;
    }
    self->expired = true;
    self->deadline = clock::time_point::max();
    boost::system::error_code ignored;
    self->socket->cancel(ignored);
  }
};

Deadline::Deadline(Socket& socket) : state_(std::make_shared<State>(socket)) {}

Deadline::~Deadline() {
  state_->socket = nullptr;
  state_->timer.cancel();
}

void Deadline::expires_after(clock::duration d) {
  auto& s = *state_;
  s.expired = false;
  const auto next = clock::now() + d;
  const bool earlier = next < s.deadline;
  s.deadline = next;
  // A pending wait that ends before `next` re-arms itself on waking. Only an earlier
  // deadline moves the timer: that cancels the pending wait, whose handler re-arms.
  if (!s.waiting) {
    State::arm(state_);
  } else if (earlier && s.timer.expiry() > next) {
    s.timer.expires_at(next);
  }
}

void Deadline::clear() {
  state_->expired = false;
  state_->deadline = clock::time_point::max();  // a pending wait re-arms for never on waking
}

bool Deadline::expired() const { return state_->expired; }

}  // namespace cairva::http
