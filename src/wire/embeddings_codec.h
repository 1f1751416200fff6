// The Embeddings API's codec (wire/codec.h; SPEC-APIS §2): a body whose `usage.prompt_tokens`
// is booked as input and nothing as output. The body has no id: the flow keys the booking
// by the provider's x-request-id header, else the gateway's own request id. Embeddings
// are never streamed, so the relay only satisfies the flow's template.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/error_code.h"
#include "base/result.h"
#include "core/types.h"
#include "wire/codec.h"
#include "wire/completion.h"

namespace cairva::wire {

// The relay of an API without streams: the flow never runs it (the request is never
// forwarded as a stream), and were it to, it passes bytes through and reads nothing.
class UnstreamedRelay {
 public:
  explicit UnstreamedRelay(bool /*client_wants_usage*/) {}
  [[nodiscard]] bool feed(std::string_view bytes, std::string& out) {
    out.append(bytes);
    return true;
  }
  void finish(std::string&) {}
  void finish_cut(std::string&) {}
  std::string_view provider_id() const { return {}; }
  const std::optional<core::Tokens>& usage() const { return usage_; }
  bool done_seen() const { return false; }

 private:
  std::optional<core::Tokens> usage_;  // never read
};

struct EmbeddingsCodec {
  using Response = CompletionInfo;
  using Relay = UnstreamedRelay;

  // usage.prompt_tokens → input, 0 → output; an `id` only if the provider sends one.
  static Result<CompletionInfo> read_response(std::string_view body) {
    return read_completion(body, embeddings_usage_fields);
  }
  static std::string with_usage_source(std::string_view body, const CompletionInfo& read) {
    return wire::with_usage_source(body, read, !read.usage.has_value());
  }
  static void append_stream_error(std::string& out, ErrorCode code, std::string_view message) {
    ChatCodec::append_stream_error(out, code, message);
  }
};
static_assert(Codec<EmbeddingsCodec>);

}  // namespace cairva::wire
