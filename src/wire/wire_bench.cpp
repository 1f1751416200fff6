// Inspection + rewrite of chat requests from 1 KB to 1 MB, and the SSE relay per chunk.
// Run: build-*/src/wire/wire_bench
#include <benchmark/benchmark.h>

#include <string>

#include "wire/chat_request.h"
#include "wire/sse.h"

namespace {

// A chat request of about `bytes` bytes: many user/assistant turns, a tools array, limits.
std::string chat_body(size_t bytes) {
  std::string body =
      R"({"model":"gpt-4o","stream":true,"max_tokens":4096,"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}],"messages":[)";
  const std::string turn =
      R"({"role":"user","content":"Tell me about the weather in Paris, and say \"bonjour\" — s'il vous plaît.\nThanks!"},)"
      R"({"role":"assistant","content":"It is 18°C and cloudy in Paris today; bonjour! 😀"},)";
  while (body.size() + turn.size() < bytes) body += turn;
  body += R"({"role":"user","content":"ok"}]})";
  return body;
}

// The same size in fewer, longer messages (pasted documents, code): about 4 KB each.
std::string long_message_body(size_t bytes) {
  std::string body = R"({"model":"gpt-4o","max_tokens":4096,"messages":[)";
  std::string paragraph;
  while (paragraph.size() < 4000) {
    paragraph +=
        R"(int main() {\n  std::printf(\"%d\\n\", 42);\n}\n Le café coûte 3 €; naïve façade. )";
  }
  const std::string turn = R"({"role":"user","content":")" + paragraph + R"("},)";
  while (body.size() + turn.size() < bytes) body += turn;
  body += R"({"role":"user","content":"ok"}]})";
  return body;
}

void BM_InspectAndRewrite(benchmark::State& state) {
  const std::string body = chat_body(static_cast<size_t>(state.range(0)));
  for ([[maybe_unused]] auto _ : state) {
    auto r = cairva::wire::inspect_chat_request(body);
    if (!r.ok()) state.SkipWithError("inspection failed");
    std::string out = cairva::wire::rewrite_chat_request(
        body, *r, {.per_choice_limit = 100, .include_usage = true});
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_InspectAndRewrite)
    ->RangeMultiplier(4)
    ->Range(1 << 10, 1 << 20)
    ->Unit(benchmark::kMicrosecond);

void BM_InspectAndRewriteLongMessages(benchmark::State& state) {
  const std::string body = long_message_body(static_cast<size_t>(state.range(0)));
  for ([[maybe_unused]] auto _ : state) {
    auto r = cairva::wire::inspect_chat_request(body);
    if (!r.ok()) state.SkipWithError("inspection failed");
    std::string out = cairva::wire::rewrite_chat_request(
        body, *r, {.per_choice_limit = 100, .include_usage = true});
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_InspectAndRewriteLongMessages)->Arg(1 << 20)->Unit(benchmark::kMicrosecond);

void BM_InspectOnly(benchmark::State& state) {
  const std::string body = chat_body(static_cast<size_t>(state.range(0)));
  for ([[maybe_unused]] auto _ : state) {
    auto r = cairva::wire::inspect_chat_request(body);
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_InspectOnly)->Arg(1 << 20)->Unit(benchmark::kMicrosecond);

// The gateway's way: a body it owns, with the parser's padding reserved in its capacity,
// read in place rather than copied.
void BM_InspectOnlyInPlace(benchmark::State& state) {
  std::string body = chat_body(static_cast<size_t>(state.range(0)));
  body.reserve(body.size() + 64);  // SIMDJSON_PADDING
  for ([[maybe_unused]] auto _ : state) {
    auto r = cairva::wire::inspect_chat_request(body);
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_InspectOnlyInPlace)->Arg(1 << 20)->Unit(benchmark::kMicrosecond);

void BM_RelayChunk(benchmark::State& state) {
  const std::string chunk =
      R"(data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1700000000,"model":"gpt-x","usage":null,"choices":[{"index":0,"delta":{"content":"Hello"}}]})"
      "\n\n";
  cairva::wire::StreamRelay relay(state.range(0) != 0);
  std::string out;
  out.reserve(1 << 12);
  for ([[maybe_unused]] auto _ : state) {
    out.clear();
    if (!relay.feed(chunk, out)) state.SkipWithError("relay failed");
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_RelayChunk)->Arg(0)->Arg(1);

}  // namespace

BENCHMARK_MAIN();
