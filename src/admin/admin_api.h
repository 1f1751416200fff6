// The admin API of SPEC §7 as a pure handler: a request value in, a response value out, no
// sockets (gateway/admin_server.cpp puts it on a listener). Every route, the bearer-token
// check, strict body validation and the OpenAI-shaped error bodies live here.
//
// Order of answers: unknown path 404, wrong method 405, bad admin token 401, then the
// route's own checks (400 before 404 before 409).
//
// Thread safety: handle() may be called from several threads at once; AdminApi keeps no
// mutable state (the Store is thread-safe).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "base/time.h"
#include "store/store.h"

namespace cairva::admin {

struct AdminRequest {
  std::string method;         // "GET", "POST", "DELETE", ...
  std::string target;         // path?query, as received
  std::string authorization;  // the Authorization header's value ("" when absent)
  std::string body;
};

struct AdminResponse {
  int status = 200;
  std::string body;  // JSON, except /metrics
  std::string content_type = "application/json";
};

inline constexpr const char* metrics_content_type = "text/plain; version=0.0.4; charset=utf-8";

class AdminApi {
 public:
  // `store` must outlive the AdminApi. An empty `admin_token` refuses every call (401).
  // `metrics_text` renders GET /metrics.
  AdminApi(store::Store& store, std::string admin_token, std::shared_ptr<const Clock> clock,
           std::function<std::string()> metrics_text);

  AdminResponse handle(const AdminRequest& request) const;

 private:
  store::Store& store_;
  std::string admin_token_;
  std::shared_ptr<const Clock> clock_;
  std::function<std::string()> metrics_text_;
};

}  // namespace cairva::admin
