// Non-streaming Chat Completions responses (SPEC §5): the provider id and usage read from
// the provider's body, and the `usage_source` member spliced into it for the client.
//
// Pure functions over bytes; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "core/types.h"
#include "wire/byte_span.h"
#include "wire/usage_fields.h"

namespace cairva::wire {

// Where read_completion found what with_usage_source edits: reading the body once serves both.
struct CompletionLayout {
  size_t close = 0;  // offset of the closing '}'
  bool has_members = false;
  std::optional<ByteSpan> usage_value;
  std::optional<ByteSpan> usage_source_value;
};

struct CompletionInfo {
  std::string id;                     // the body's "id" string; empty when absent or not a string
  std::optional<core::Tokens> usage;  // chat: prompt_tokens -> input, completion_tokens -> output
  CompletionLayout layout;            // of the body it was read from
};

// Whether a provider's response id (a body's "id", a stream's first chunk's, an
// x-request-id header) can key a booking on either store: non-empty, at most
// provider_id_bytes_max bytes, no NUL byte (PostgreSQL's text cannot hold one; libpq would
// cut it short into another id). One that cannot counts as absent.
bool usable_provider_id(std::string_view id);

// Reads a provider's completion body. `usage` is set only when "usage" is an object whose
// counts named by `fields` (prompt_tokens and completion_tokens for chat) are integers in
// [0, usage_tokens_max]; anything else counts as usage missing. A body that is not a valid
// JSON object is an ErrorCode::provider_unavailable error. Every API whose body keeps its
// id and usage at the top level reads it so (Responses, Embeddings).
Result<CompletionInfo> read_completion(std::string_view body,
                                       const UsageFields& fields = chat_usage_fields);

// `body` with `"usage_source":"provider"` added before its closing brace or, when
// `pending`, with `"usage":null` (replacing any usage value) and
// `"usage_source":"pending"`. An existing usage_source value is replaced. Every other byte
// is unchanged. A body read_completion refused is returned unchanged.
std::string with_usage_source(std::string_view body, bool pending);
// The same for a body already read: `read` is read_completion(body)'s value.
std::string with_usage_source(std::string_view body, const CompletionInfo& read, bool pending);

}  // namespace cairva::wire
