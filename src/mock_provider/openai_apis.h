// The fake provider's OpenAI APIs beside Chat Completions (SPEC-APIS §5): Responses
// (streamed with the real event sequence, and stored for GET/DELETE /v1/responses/{id}
// and its input_items), Embeddings (deterministic vectors, float or base64) and Models.
// The switches of mock_provider.h apply, read from the request's model.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include "mock_provider/mock_common.h"

namespace cairva::mock_provider {

// Whether `req` is one of these APIs' requests (by method and path).
bool is_openai_api(const Request& req);
// Serves it. Returns false when the connection must close.
boost::asio::awaitable<bool> serve_openai_api(beast::tcp_stream& stream, const Request& req);

}  // namespace cairva::mock_provider
