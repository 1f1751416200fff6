// Embeddings requests (`POST /v1/embeddings`, SPEC-APIS §2): inspection of a client's body
// — validation and the facts admission needs. An embedding produces no output tokens: it
// holds none and its body has no limit to rewrite.
//
// Pure functions over bytes; thread-safe (each thread parses with its own scratch).
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"
#include "core/estimate.h"

namespace cairva::wire {

struct EmbeddingsRequest {
  std::string model;
  // SPEC §4's one rule, with items = the strings or token arrays in `input` (1 for one
  // string or one token array), and a token array's length counted exactly in `tokens`
  // instead of characters: an `input` of token arrays adds no characters at all (not even
  // its key's), as the specification's vectors count it.
  core::PromptFacts prompt;
  friend bool operator==(const EmbeddingsRequest&, const EmbeddingsRequest&) = default;
};

// Validates `body` and reads it. Errors are ErrorCode::invalid_request with a message
// naming the field: malformed JSON, trailing bytes, a non-object body, nesting deeper than
// json_depth_max, `model` or `input` repeated, `model` missing or not a string, `input`
// missing or not one of: a string, a non-empty array of strings, a non-empty array of
// token integers (>= 0), a non-empty array of non-empty token arrays; `stream` that is
// not a boolean or null, or is true (embeddings have no stream). Every other member
// (`dimensions`, `encoding_format`, `user`…) passes through and counts toward the estimate.
Result<EmbeddingsRequest> inspect_embeddings_request(std::string_view body);

}  // namespace cairva::wire
