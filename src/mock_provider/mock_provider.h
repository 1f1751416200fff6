// The built-in fake provider (`cairva mock-provider`): deterministic replies with usage,
// streaming, and switches for the cases tests need. It serves Chat Completions and, in
// openai_apis.cpp, Responses (POST /v1/responses, streamed with the real event sequence;
// each response stored for GET/DELETE /v1/responses/{id} and GET …/input_items),
// Embeddings (deterministic unit vectors, float or base64, usage.prompt_tokens, an
// x-request-id header) and GET /v1/models (in Anthropic's list shape when asked with
// anthropic-version, as Anthropic's API is).
//
// Switches ride in the request's `model`, after a '?', '&'-separated, so that they pass
// through any gateway unchanged: "mock?no-usage&status=500&delay-ms=50".
//   no-usage            reply without usage (no usage chunk when streaming)
//   status=N            answer with HTTP status N and an OpenAI-style error body; 401, 403
//                       and 429 word it as OpenAI does and name the supplier's organisation
//                       (org-MockSupplier7Q2) and a key fragment (sk-proj-****k3Yz)
//   retry-after=N       with status=429: its Retry-After header (default 3)
//   delay-ms=N          wait N ms before the response headers
//   chunks=N            stream N content chunks (default 3)
//   chunk-delay-ms=N    wait N ms between streamed chunks
//   id=TEXT             use TEXT as the response id (default: a unique one)
//   usage=P,C           report P prompt and C completion tokens, as written: any JSON number
//                       text (-5, 1.5, 1e3, 99999999999999999999) for bad-usage cases
//   output=N            the model writes N completion tokens per choice unless the request's
//                       limit stops it sooner (as a real model does): min(limit, N) times n
//   cut-after=N         streaming: close the connection after N chunks, no [DONE]
//   reset-after=N       streaming: a TCP reset (RST) after N events; non-streaming: the
//                       headers and N bytes of the body, then a reset
//   truncate-after=N    streaming: N events, then half of the next one (no line end), then a
//                       clean end of the HTTP body: a truncated SSE line
//   split=N             streaming: each event in N-byte HTTP chunks, chunk-delay-ms between
//                       pieces (a slow drip)
//   malformed           send a 200 whose body is not JSON; streaming: one event whose data
//                       is not JSON, among the content events
//   no-id               omit the response id
//   oversize            non-streaming: a header announcing a 1 TiB body (with status=N if
//                       given), a few bytes of it, then the connection closes
//   header-id=TEXT      send TEXT as the x-request-id response header
//   hold=NAME           streaming: after its first event (which carries the id) the stream
//                       waits until POST /mock/release/NAME (a test's "mid-stream" moment)
//   stamp               streaming: each content chunk is "stamp:<steady_clock µs when
//                       written>", for per-chunk latency (bench/stream_load)
//   failed              responses: the response fails (status "failed", response.failed)
// Usage by default: prompt_tokens 10, completion_tokens min(limit, 7) where limit is
// max_completion_tokens, else max_tokens, else 7 (or N with output=N); times n.
// Responses: input_tokens 10, output_tokens min(max_output_tokens, 7) (or N with
// output=N), status "incomplete" when the limit cut the output. Embeddings: prompt_tokens
// is a token array's length, else a token per 4 bytes of each string (or P with usage=P).
//
// Also: GET /mock/stats → {"requests","in_flight","peak_in_flight"} over every API request;
// POST /mock/reset zeroes them; GET /mock/last → the last API request's body (null when it
// had none), its authorization header (x-mock-authorization) and its method and target
// (x-mock-target).
#pragma once

#include <string>

namespace cairva::mock_provider {

struct Options {
  std::string listen = "127.0.0.1:9090";
  int threads = 1;
};

// Runs until SIGINT/SIGTERM. Prints "mock-provider listening on HOST:PORT" once bound.
int run(const Options& options);

}  // namespace cairva::mock_provider
