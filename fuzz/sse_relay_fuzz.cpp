// Fuzzes the SSE relay. The first byte picks whether the client asked for usage and the
// size of the pieces the stream arrives in; the rest is the provider's stream.
// Properties: nothing crashes; the output does not depend on how the stream was split;
// the client's stream always ends with [DONE] after a pending-usage chunk when the client
// asked for usage and none came; the output is whole events; usage is within bounds.
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "wire/limits.h"
#include "wire/sse.h"

using namespace cairva;

namespace {

struct Run {
  bool fed_ok = true;
  std::string out;
  std::optional<core::Tokens> usage;
  std::string provider_id;
  bool done = false;
};

Run relay(std::string_view stream, bool wants_usage, size_t piece_bytes) {
  wire::StreamRelay relay(wants_usage);
  Run run;
  for (size_t at = 0; at < stream.size() && run.fed_ok; at += piece_bytes) {
    run.fed_ok = relay.feed(stream.substr(at, piece_bytes), run.out);
  }
  run.usage = relay.usage();
  run.provider_id = std::string(relay.provider_id());
  run.done = relay.done_seen();
  relay.finish(run.out);
  return run;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool wants_usage = data[0] & 1;
  const size_t piece_bytes = (data[0] >> 1) + 1;
  const std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);

  const Run whole = relay(stream, wants_usage, stream.size() + 1);
  const Run pieces = relay(stream, wants_usage, piece_bytes);
  FUZZ_CHECK(whole.fed_ok && pieces.fed_ok);  // inputs stay far below sse_event_bytes_max
  FUZZ_CHECK(whole.out == pieces.out);
  FUZZ_CHECK(whole.usage == pieces.usage);
  FUZZ_CHECK(whole.provider_id == pieces.provider_id);
  FUZZ_CHECK(whole.done == pieces.done);

  const std::string_view done = "data: [DONE]\n\n";
  FUZZ_CHECK(std::string_view(whole.out).ends_with(done));
  if (wants_usage && !whole.usage) {
    FUZZ_CHECK(whole.out.find("\"usage_source\":\"pending\"") != std::string::npos);
  }
  if (whole.usage) {
    FUZZ_CHECK(whole.usage->input >= 0 && whole.usage->input <= wire::usage_tokens_max);
    FUZZ_CHECK(whole.usage->output >= 0 && whole.usage->output <= wire::usage_tokens_max);
  }

  // The client's stream is whole events, the last of them [DONE].
  wire::SseParser parser;
  parser.push(whole.out);
  bool last_done = false;
  for (;;) {
    auto next = parser.next();
    FUZZ_CHECK(next.ok());
    if (!next->has_value()) break;
    last_done = (*next)->is_done();
  }
  FUZZ_CHECK(last_done);
  FUZZ_CHECK(parser.pending_bytes() == 0);
  return 0;
}
