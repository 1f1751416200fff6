// The fake provider's Anthropic Messages API (SPEC-APIS §5): `POST /v1/messages`, plain and
// streamed with the real event sequence (message_start with usage including
// cache_creation_input_tokens and cache_read_input_tokens, content_block_start, ping,
// content_block_delta…, content_block_stop, message_delta with the cumulative usage,
// message_stop), and `POST /v1/messages/count_tokens`. Errors in Anthropic's shape; a
// plain answer carries a `request-id` header as Anthropic's do.
//
// The switches of mock_provider.h apply, read from the request's model (status=N answers
// an Anthropic error: 401, 403 and 429 worded as Anthropic words them, naming the supplier's
// organisation org-MockSupplier7Q2 and a key fragment sk-ant-api03-****k3Yz; 529 is
// overloaded_error), and one more:
//   cache=W,R   report cache_creation_input_tokens W and cache_read_input_tokens R
// Usage by default: input_tokens 10 (P with usage=P,C), cache_creation_input_tokens 2 and
// cache_read_input_tokens 4, output_tokens min(max_tokens, 7) (N with output=N; C with
// usage=P,C), stop_reason "max_tokens" when the limit cut the output. count_tokens answers
// {"input_tokens":10} (P with usage=P,C).
//
// Also GET /mock/anthropic/last → the last API request's (any API's: remember_fields)
// x-api-key, authorization, anthropic-version and anthropic-beta fields and its target, as
// a JSON object of strings (the body is GET /mock/last's).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include "mock_provider/mock_common.h"

namespace cairva::mock_provider {

// Keeps `req`'s key and Anthropic fields for GET /mock/anthropic/last. Called for every API
// request, whichever API serves it.
void remember_fields(const Request& req);
// Whether `req` is one of these requests (by method and path, the query aside).
bool is_anthropic_api(const Request& req);
// Serves it. Returns false when the connection must close.
boost::asio::awaitable<bool> serve_anthropic_api(beast::tcp_stream& stream, const Request& req);

}  // namespace cairva::mock_provider
