// stream_load: holds N concurrent streaming chat completions open against a target (the
// mock provider directly, or a gateway in front of it) and measures, per chunk, the time
// from the provider's send to our receive. The provider stamps each content chunk with its
// steady_clock microseconds (model switch `stamp`); steady_clock is CLOCK_MONOTONIC, one
// clock for every process on the machine. Run it once direct and once through the gateway:
// the difference of the two is the latency the gateway adds.
//
//   stream_load --url http://127.0.0.1:8080 --key cv_... --streams 10000 --chunks 20
//               --chunk-delay-ms 1000 --pid <gateway pid>[,<pid>…]
//
// Prints one line: "STREAM streams=… peak_open=… chunks=… p50_us=… p99_us=… max_us=…
// errors=… cpu_us_per_chunk=… rss_base_kb=… rss_peak_kb=… rss_per_stream_kb=…
// steady_chunks=… steady_p99_us=…", where steady counts only the chunks received while every
// stream was open and none had ended (no admission or settlement running), and the
// CPU and RSS figures are those of --pid (the system under test; several, comma-separated, as
// nginx's workers, are summed), from /proc.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = net::ip::tcp;

namespace {

constexpr auto nothrow = net::as_tuple(net::use_awaitable);
// Streams at most this many: each holds one socket here and two in a gateway.
constexpr int streams_max = 20000;
// Bytes read per read_some; an SSE event of the mock is ~200 bytes.
constexpr size_t read_buffer_bytes = 4096;
// Connections opened per tick while ramping up (2 per 1 ms: 2,000/s), so the listener's
// backlog never overflows. The tick is short because a stream's chunks keep the phase it
// opened at: with 20 per 10 ms tick (--ramp-per-tick 20 --ramp-tick-ms 10), ~100 streams
// shared each 10 ms phase and their chunks arrived together (a burst every 10 ms, not a
// steady rate); with 2 per 1 ms, ~10 share a phase.
constexpr int ramp_per_tick_default = 2;
constexpr int ramp_tick_ms_default = 1;
// How often the system under test's RSS is sampled.
constexpr auto rss_sample_period = std::chrono::milliseconds(100);
constexpr std::string_view stamp_marker = "stamp:";

struct Args {
  std::string host = "127.0.0.1";
  std::string port = "8080";
  std::string key;
  int streams = 100;
  int chunks = 20;
  int chunk_delay_ms = 1000;
  int ramp_per_tick = ramp_per_tick_default;
  int ramp_tick_ms = ramp_tick_ms_default;
  std::vector<int> pids;
};

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// CPU ticks (user+system) of a process, from /proc/PID/stat fields 14 and 15.
int64_t cpu_ticks(int pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto close = s.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream in(s.substr(close + 2));
  std::string field;
  int64_t utime = 0, stime = 0;
  for (int i = 3; i <= 15 && in >> field; ++i) {
    if (i == 14) utime = std::atoll(field.c_str());
    if (i == 15) stime = std::atoll(field.c_str());
  }
  return utime + stime;
}

// Sums a per-process figure over the processes under test.
template <class F>
int64_t sum_over(const std::vector<int>& pids, F f) {
  int64_t total = 0;
  for (int pid : pids) total += f(pid);
  return total;
}

int64_t rss_kb(int pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atoll(line.c_str() + 6);
  }
  return 0;
}

struct Totals {
  std::vector<int32_t> latency_us;  // one per stamped chunk
  std::vector<int32_t> steady_us;   // those received while all streams were open, none ended
  int streams = 0;                  // asked for
  int open = 0;
  int peak_open = 0;
  int done = 0;
  int errors = 0;
  int started = 0;
  std::string first_error;
};

void fail(Totals& t, const std::string& why) {
  if (t.errors++ == 0) t.first_error = why;
}

// Scans complete SSE lines in `pending` for stamps; keeps the unfinished tail.
void scan_lines(std::string& pending, Totals& t) {
  size_t start = 0;
  for (;;) {
    const auto nl = pending.find('\n', start);
    if (nl == std::string::npos) break;
    std::string_view line(pending.data() + start, nl - start);
    const auto at = line.find(stamp_marker);
    if (at != std::string_view::npos) {
      int64_t sent = 0;
      const char* b = line.data() + at + stamp_marker.size();
      auto [p, ec] = std::from_chars(b, line.data() + line.size(), sent);
      if (ec == std::errc{}) {
        const auto us = static_cast<int32_t>(std::max<int64_t>(0, now_us() - sent));
        t.latency_us.push_back(us);
        if (t.open == t.streams && t.done == 0) t.steady_us.push_back(us);
      }
    }
    start = nl + 1;
  }
  pending.erase(0, start);
}

net::awaitable<void> one_stream(const Args& a, tcp::endpoint ep, Totals& t) {
  tcp::socket s(co_await net::this_coro::executor);
  auto [cec] = co_await s.async_connect(ep, nothrow);
  if (cec) {
    fail(t, "connect: " + cec.message());
    co_return;
  }
  s.set_option(tcp::no_delay(true));
  ++t.open;
  t.peak_open = std::max(t.peak_open, t.open);
  const std::string body =
      "{\"model\":\"mock?stamp&chunks=" + std::to_string(a.chunks) +
      "&chunk-delay-ms=" + std::to_string(a.chunk_delay_ms) +
      "\",\"stream\":true,\"max_tokens\":64,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
  std::string req = "POST /v1/chat/completions HTTP/1.1\r\nHost: " + a.host +
                    "\r\nContent-Type: application/json\r\n";
  if (!a.key.empty()) req += "Authorization: Bearer " + a.key + "\r\n";
  req += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  auto [wec, wn] = co_await net::async_write(s, net::buffer(req), nothrow);
  if (wec) {
    --t.open;
    fail(t, "write: " + wec.message());
    co_return;
  }
  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::buffer_body> p;
  p.body_limit(boost::none);
  auto [hec, hn] = co_await bhttp::async_read_header(s, buffer, p, nothrow);
  if (hec || p.get().result_int() != 200) {
    --t.open;
    fail(t,
         hec ? "read header: " + hec.message() : "status " + std::to_string(p.get().result_int()));
    co_return;
  }
  std::array<char, read_buffer_bytes> buf;
  std::string pending;
  while (!p.is_done()) {
    p.get().body().data = buf.data();
    p.get().body().size = buf.size();
    auto [ec, n] = co_await bhttp::async_read_some(s, buffer, p, nothrow);
    if (ec == bhttp::error::need_buffer) ec = {};
    const size_t got = buf.size() - p.get().body().size;
    pending.append(buf.data(), got);
    scan_lines(pending, t);
    if (ec) {
      fail(t, "read body: " + ec.message());
      break;
    }
  }
  --t.open;
  ++t.done;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string_view k = argv[i];
    std::string v = argv[i + 1];
    if (k == "--url") {
      // http://HOST:PORT
      auto rest = v.substr(v.find("//") + 2);
      auto colon = rest.rfind(':');
      a.host = rest.substr(0, colon);
      a.port = rest.substr(colon + 1);
      if (!a.port.empty() && a.port.back() == '/') a.port.pop_back();
    } else if (k == "--key")
      a.key = v;
    else if (k == "--streams")
      a.streams = std::min(std::atoi(v.c_str()), streams_max);
    else if (k == "--chunks")
      a.chunks = std::atoi(v.c_str());
    else if (k == "--chunk-delay-ms")
      a.chunk_delay_ms = std::atoi(v.c_str());
    else if (k == "--ramp-per-tick")
      a.ramp_per_tick = std::max(1, std::atoi(v.c_str()));
    else if (k == "--ramp-tick-ms")
      a.ramp_tick_ms = std::max(1, std::atoi(v.c_str()));
    else if (k == "--pid") {
      std::istringstream list(v);
      for (std::string one; std::getline(list, one, ',');) {
        if (std::atoi(one.c_str()) > 0) a.pids.push_back(std::atoi(one.c_str()));
      }
    } else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      std::exit(2);
    }
  }
  return a;
}

// We hold one socket per stream.
void raise_open_files_limit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return;
  lim.rlim_cur = lim.rlim_max;
  (void)::setrlimit(RLIMIT_NOFILE, &lim);
}

int64_t percentile(std::vector<int32_t>& v, double q) {
  if (v.empty()) return 0;
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  return v[i];
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  raise_open_files_limit();
  net::io_context ctx(1);
  tcp::resolver resolver(ctx);
  const tcp::endpoint ep = *resolver.resolve(a.host, a.port).begin();
  Totals t;
  t.latency_us.reserve(static_cast<size_t>(a.streams) * static_cast<size_t>(a.chunks));
  t.steady_us.reserve(t.latency_us.capacity());
  t.streams = a.streams;
  const int64_t rss_base = sum_over(a.pids, rss_kb);
  int64_t rss_peak = rss_base;
  const int64_t ticks0 = sum_over(a.pids, cpu_ticks);

  // Ramp: a few connections per tick; then sample RSS until every stream has ended.
  net::co_spawn(
      ctx,
      [&]() -> net::awaitable<void> {
        net::steady_timer tick(ctx);
        auto next = std::chrono::steady_clock::now();
        while (t.started < a.streams) {
          for (int i = 0; i < a.ramp_per_tick && t.started < a.streams; ++i, ++t.started) {
            net::co_spawn(ctx, one_stream(a, ep, t), net::detached);
          }
          next += std::chrono::milliseconds(
              a.ramp_tick_ms);  // absolute: a late tick does not shift every later phase
          tick.expires_at(next);
          co_await tick.async_wait(net::use_awaitable);
        }
      },
      net::detached);
  net::co_spawn(
      ctx,
      [&]() -> net::awaitable<void> {
        net::steady_timer tick(ctx);
        while (t.started < a.streams || t.done + t.errors < a.streams) {
          rss_peak = std::max(rss_peak, sum_over(a.pids, rss_kb));
          tick.expires_after(rss_sample_period);
          co_await tick.async_wait(net::use_awaitable);
        }
      },
      net::detached);
  ctx.run();

  const int64_t ticks = sum_over(a.pids, cpu_ticks) - ticks0;
  const size_t chunks = t.latency_us.size();
  const double cpu_per_chunk = chunks ? static_cast<double>(ticks) /
                                            static_cast<double>(sysconf(_SC_CLK_TCK)) * 1e6 /
                                            static_cast<double>(chunks)
                                      : 0;
  const int64_t p50 = percentile(t.latency_us, 0.50);
  const int64_t p99 = percentile(t.latency_us, 0.99);
  const int64_t mx =
      t.latency_us.empty() ? 0 : *std::max_element(t.latency_us.begin(), t.latency_us.end());
  std::printf(
      "STREAM streams=%d peak_open=%d completed=%d chunks=%zu p50_us=%lld p99_us=%lld max_us=%lld "
      "errors=%d "
      "cpu_us_per_chunk=%.1f rss_base_kb=%lld rss_peak_kb=%lld rss_per_stream_kb=%.1f "
      "steady_chunks=%zu "
      "steady_p99_us=%lld\n",
      a.streams, t.peak_open, t.done, chunks, static_cast<long long>(p50),
      static_cast<long long>(p99), static_cast<long long>(mx), t.errors, cpu_per_chunk,
      static_cast<long long>(rss_base), static_cast<long long>(rss_peak),
      t.peak_open ? static_cast<double>(rss_peak - rss_base) / t.peak_open : 0.0,
      t.steady_us.size(), static_cast<long long>(percentile(t.steady_us, 0.99)));
  if (t.errors)
    std::fprintf(stderr, "stream_load: %d errors, first: %s\n", t.errors, t.first_error.c_str());
  return t.errors ? 1 : 0;
}
