// Deadline: one timer per connection bounding every read and write on it. Setting a
// later deadline only stores a number; the timer is re-armed only when the deadline
// moves earlier, so the common case costs no timer operation per request. On expiry the
// socket's operations are cancelled (not the socket closed), so the session can still
// answer, e.g. 408 to a client too slow to send its headers.
//
// Thread safety: none; lives on one event loop with its socket.
#pragma once

#include <chrono>
#include <memory>

#include "http/executor.h"

namespace cairva::http {

class Deadline {
 public:
  using clock = std::chrono::steady_clock;

  explicit Deadline(Socket& socket);
  ~Deadline();
  Deadline(const Deadline&) = delete;
  Deadline& operator=(const Deadline&) = delete;

  // Operations on the socket after now + d are cancelled; clears a previous expiry.
  void expires_after(clock::duration d);
  // No deadline until the next expires_after (an idle pooled connection).
  void clear();
  // True once the deadline passed and the socket's operations were cancelled.
  bool expired() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace cairva::http
