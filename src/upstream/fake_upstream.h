// A scripted provider for in-process tests of the gateway flow (STYLE §9): each send()
// plays the next Script: a failure to send (connection failure, timeout), or a response
// head (status, fields) and a body in pieces, ending cleanly or cut off (timeout, a
// failure, over the bound). Records what the flow sent and what it did with each response.
// Test-only; single-threaded like the real client.
#pragma once

#include <array>
#include <boost/system/errc.hpp>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "upstream/upstream.h"

namespace cairva::upstream::testing {

struct Script {
  // Set: send() fails with it (provider_unavailable, provider_timeout).
  std::optional<Error> send_error;
  unsigned status = 200;
  std::array<std::optional<std::string>, field_count> fields{};
  bool keep_alive = true;
  // The body: read whole (read_body) or one piece per read_some().
  std::vector<std::string> pieces;
  // How the body ends after its pieces: ok (complete) or the failure a read then reports.
  ReadStatus end = ReadStatus::ok;
  // Called before piece i is delivered (streaming), e.g. to close the client's socket.
  std::function<void(size_t i)> before_piece;

  Script& field(Field f, std::string value) {
    fields[static_cast<size_t>(f)] = std::move(value);
    return *this;
  }
};

// What the flow did with one exchange.
struct Sent {
  std::string method;
  std::string path;
  std::string request_id;
  std::string body;
  std::chrono::steady_clock::duration head_timeout{};
  bool released = false;  // handed back for reuse (else dropped: the connection closed)
  std::vector<std::chrono::steady_clock::duration> read_deadlines;
  std::vector<std::pair<std::string, std::string>>
      headers;  // the client's passed on (Request::headers)
};

class FakeUpstream final : public Upstream {
 public:
  // Scripts played in order, one per send(); a send() with none left fails the test's
  // expectations with provider_unavailable "no script".
  std::deque<Script> scripts;
  std::vector<Sent> sent;

  http::Task<Result<std::unique_ptr<Response>>> send(const ProviderEndpoint&,
                                                     const Request& req) override {
    sent.push_back(Sent{std::string(req.method), std::string(req.path), std::string(req.request_id),
                        std::string(req.body), req.head_timeout});
    if (scripts.empty()) co_return make_error(ErrorCode::provider_unavailable, "fake: no script");
    for (const Header& h : req.headers) sent.back().headers.emplace_back(h.name, h.value);
    Script s = std::move(scripts.front());
    scripts.pop_front();
    if (s.send_error) co_return *s.send_error;
    co_return std::unique_ptr<Response>(
        std::make_unique<FakeResponse>(std::move(s), sent.size() - 1, *this));
  }
  void release(const ProviderEndpoint&, std::unique_ptr<Response> response) override {
    auto& r = static_cast<FakeResponse&>(*response);
    sent[r.index].released = true;
    // A connection is reusable only once its response was read whole.
    if (!r.complete()) ++released_incomplete;
  }
  int released_incomplete = 0;

 private:
  class FakeResponse final : public Response {
   public:
    FakeResponse(Script s, size_t i, FakeUpstream& up)
        : script(std::move(s)), index(i), owner(up) {}
    unsigned status() const override { return script.status; }
    std::string_view field(Field f) const override {
      const auto& v = script.fields[static_cast<size_t>(f)];
      return v ? std::string_view(*v) : std::string_view();
    }
    bool has_field(Field f) const override {
      return script.fields[static_cast<size_t>(f)].has_value();
    }
    bool keep_alive() const override { return script.keep_alive; }
    bool complete() const override { return complete_; }
    std::string& body() override { return body_; }
    void expires_after(std::chrono::steady_clock::duration d) override {
      owner.sent[index].read_deadlines.push_back(d);
    }
    std::optional<ReadStatus> body_buffered(size_t bytes_max) override {
      bytes_max_ = bytes_max;
      return std::nullopt;
    }
    http::Task<Outcome> read_body() override {
      for (const auto& p : script.pieces) body_ += p;
      if (body_.size() > bytes_max_) co_return outcome_of(ReadStatus::too_large);
      complete_ = script.end == ReadStatus::ok;
      co_return outcome_of(script.end);
    }
    void hold_at_most(size_t) override {}
    http::Task<Outcome> read_some() override {
      if (next_ < script.pieces.size()) {
        if (script.before_piece) script.before_piece(next_);
        body_ += script.pieces[next_++];
        co_return Outcome{};
      }
      complete_ = script.end == ReadStatus::ok;
      co_return outcome_of(script.end);
    }
    ReadStatus status_of(const Outcome& o) const override {
      namespace errc = boost::system::errc;
      const auto ec = std::get<0>(o);
      if (!ec) return ReadStatus::ok;
      if (ec == errc::timed_out) return ReadStatus::timeout;
      if (ec == errc::message_size) return ReadStatus::too_large;
      return ReadStatus::cut;
    }

    Script script;
    size_t index;

   private:
    static Outcome outcome_of(ReadStatus s) {
      namespace errc = boost::system::errc;
      switch (s) {
        case ReadStatus::ok:
          return Outcome{};
        case ReadStatus::timeout:
          return Outcome{errc::make_error_code(errc::timed_out), 0};
        case ReadStatus::too_large:
          return Outcome{errc::make_error_code(errc::message_size), 0};
        case ReadStatus::cut:
          return Outcome{errc::make_error_code(errc::connection_reset), 0};
      }
      return Outcome{};
    }

    FakeUpstream& owner;
    std::string body_;
    size_t next_ = 0;
    size_t bytes_max_ = 0;
    bool complete_ = false;
  };
};

}  // namespace cairva::upstream::testing
