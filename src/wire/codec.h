// A dialect's codec (STYLE "Several APIs, one flow"; Envoy's codecs): what the gateway flow
// needs to know of one API's responses. The flow (src/gateway/flow.h) is written once
// over this concept; an API is a codec and its tests, not a branch in the flow.
//
// A codec C provides:
// - C::Response and C::read_response(body): a non-streamed body's provider id (`id`) and
//   usage (`usage`), or an error when the body is not the API's response;
// - C::with_usage_source(body, read): the body the client gets (SPEC §5 usage_source);
// - C::Relay: per stream, constructed with whether the client asked for usage; feed(bytes,
//   out) appends what the client sees (false: an event over the bound), provider_id(),
//   usage(), done_seen(); finish(out) ends a whole stream, finish_cut(out) one the gateway
//   cut (no end-of-stream marker);
// - C::append_stream_error(out, code, message): the error event that ends a cut stream, in
//   the API's shape.
// Requests (inspection, the estimate's facts, the limit's rewrite) are read by each API's
// request module (chat_request.h, responses_request.h, embeddings_request.h,
// messages_request.h) before admission. Codecs: ChatCodec below, ResponsesCodec
// (responses_codec.h), EmbeddingsCodec (embeddings_codec.h), MessagesCodec
// (messages_codec.h: Anthropic Messages).
//
// Codecs are stateless types with static functions: the flow is a template over them, so
// a dialect costs no virtual call or allocation per chunk.
#pragma once

#include <concepts>
#include <optional>
#include <string>
#include <string_view>

#include "base/error_code.h"
#include "base/result.h"
#include "core/types.h"
#include "wire/completion.h"
#include "wire/errors.h"
#include "wire/sse.h"

namespace cairva::wire {

template <class C>
concept Codec = requires(std::string_view body, const typename C::Response& read,
                         typename C::Relay& relay, std::string& out, ErrorCode code,
                         std::string_view message) {
  { C::read_response(body) } -> std::same_as<Result<typename C::Response>>;
  { read.id } -> std::convertible_to<std::string_view>;
  { read.usage } -> std::convertible_to<std::optional<core::Tokens>>;
  { C::with_usage_source(body, read) } -> std::same_as<std::string>;
  typename C::Relay;
  requires std::constructible_from<typename C::Relay, bool>;
  { relay.feed(body, out) } -> std::same_as<bool>;
  relay.finish(out);
  relay.finish_cut(out);
  { relay.provider_id() } -> std::convertible_to<std::string_view>;
  { relay.usage() } -> std::convertible_to<std::optional<core::Tokens>>;
  { relay.done_seen() } -> std::same_as<bool>;
  C::append_stream_error(out, code, message);
};

// OpenAI Chat Completions (SPEC §5).
struct ChatCodec {
  using Response = CompletionInfo;
  using Relay = StreamRelay;

  static Result<CompletionInfo> read_response(std::string_view body) {
    return read_completion(body);
  }
  static std::string with_usage_source(std::string_view body, const CompletionInfo& read) {
    return wire::with_usage_source(body, read, !read.usage.has_value());
  }
  // `data: {"error":{…}}`: the shape OpenAI's own streams end with on an error, which the
  // OpenAI SDKs raise as an APIError.
  static void append_stream_error(std::string& out, ErrorCode code, std::string_view message) {
    out.append("data: ");
    out.append(error_body(code, message));
    out.append("\n\n");
  }
};
static_assert(Codec<ChatCodec>);

}  // namespace cairva::wire
