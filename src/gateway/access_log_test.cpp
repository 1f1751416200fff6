#include "gateway/access_log.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace cairva::gateway {
namespace {

namespace json = boost::json;

// 2026-11-30T19:12:08.123Z
constexpr UnixMicros t_us = 1'796'065'928'123'456;

AccessRecord booked() {
  AccessRecord r;
  r.time = t_us;
  r.client = "10.0.0.7";
  r.method = "POST";
  r.path = "/v1/chat/completions";
  r.status = 200;
  r.allocation_id = "alloc_1";
  r.request_id = "req_1";
  r.provider_request_id = "chatcmpl-9";
  r.model = "gpt-4o-mini";
  r.booked = {12, 7};
  r.outcome = "booked";
  r.latency_us = 12'345;
  return r;
}

std::string line_of(const AccessRecord& r, AccessLogFormat f) {
  std::string out;
  format_access_line(r, f, out);
  return out;
}

TEST(AccessLine, TextIsOneLineOfKeysAndValues) {
  EXPECT_EQ(
      line_of(booked(), AccessLogFormat::text),
      "2026-11-30T19:12:08.123Z client=10.0.0.7 method=POST path=/v1/chat/completions status=200 "
      "allocation_id=alloc_1 request_id=req_1 provider_request_id=chatcmpl-9 model=gpt-4o-mini "
      "input_tokens=12 "
      "output_tokens=7 outcome=booked latency_ms=12.345\n");
}

TEST(AccessLine, TimeIsRfc3339UtcWithMillisecondsAcrossSeconds) {
  AccessRecord r = booked();
  for (const UnixMicros t : {t_us, t_us + 1, t_us + 876'543, t_us + 876'544 + 1'000'000,
                             t_us + 3'000'000'000, UnixMicros{0}, UnixMicros{-1}, t_us}) {
    r.time = t;
    const std::string line = line_of(r, AccessLogFormat::text);
    EXPECT_EQ(line.substr(0, line.find(' ')), format_rfc3339_millis(t)) << t;
    const std::string json_line = line_of(r, AccessLogFormat::json);
    EXPECT_EQ(json_line.substr(9, 24), format_rfc3339_millis(t)) << t;
  }
}

TEST(AccessLine, TextShowsAbsentFieldsAsADash) {
  AccessRecord r;
  r.time = t_us;
  r.client = "::1";
  r.method = "GET";
  r.path = "/healthz";
  r.status = 200;
  r.request_id = "req_2";
  r.outcome = "-";
  EXPECT_EQ(
      line_of(r, AccessLogFormat::text),
      "2026-11-30T19:12:08.123Z client=::1 method=GET path=/healthz status=200 allocation_id=- "
      "request_id=req_2 "
      "provider_request_id=- model=- input_tokens=0 output_tokens=0 outcome=- latency_ms=0.000\n");
}

TEST(AccessLine, TextEscapesWhatAClientSentSoItCannotForgeALine) {
  AccessRecord r = booked();
  r.model = "m\n2026-01-01T00:00:00.000Z client=1.2.3.4 \"x\"\\";  // a literal: lives on
  r.path = "/v1/\x1b[31m";
  const std::string line = line_of(r, AccessLogFormat::text);
  EXPECT_EQ(line.find('\n'), line.size() - 1) << line;
  EXPECT_NE(line.find(R"(model="m\x0a2026-01-01T00:00:00.000Z client=1.2.3.4 \"x\"\\")"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find(R"(path="/v1/\x1b[31m")"), std::string::npos) << line;
}

TEST(AccessLine, JsonIsOneObjectPerLineWithEveryField) {
  const std::string line = line_of(booked(), AccessLogFormat::json);
  ASSERT_EQ(line.back(), '\n');
  const json::object o = json::parse(line).as_object();
  EXPECT_EQ(o.at("time").as_string(), "2026-11-30T19:12:08.123Z");
  EXPECT_EQ(o.at("client").as_string(), "10.0.0.7");
  EXPECT_EQ(o.at("method").as_string(), "POST");
  EXPECT_EQ(o.at("path").as_string(), "/v1/chat/completions");
  EXPECT_EQ(o.at("status").as_int64(), 200);
  EXPECT_EQ(o.at("allocation_id").as_string(), "alloc_1");
  EXPECT_EQ(o.at("request_id").as_string(), "req_1");
  EXPECT_EQ(o.at("provider_request_id").as_string(), "chatcmpl-9");
  EXPECT_EQ(o.at("model").as_string(), "gpt-4o-mini");
  EXPECT_EQ(o.at("input_tokens").as_int64(), 12);
  EXPECT_EQ(o.at("output_tokens").as_int64(), 7);
  EXPECT_EQ(o.at("outcome").as_string(), "booked");
  EXPECT_DOUBLE_EQ(o.at("latency_ms").to_number<double>(), 12.345);
  EXPECT_EQ(o.size(), 13u);
}

TEST(AccessLine, JsonStaysValidWhateverBytesAClientSent) {
  AccessRecord r = booked();
  const std::string model("caf\xc3\xa9 \"q\" \\ \n \x01 \xff", 17);
  r.model = model;
  r.provider_request_id = {};
  const std::string line = line_of(r, AccessLogFormat::json);
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  const json::object o = json::parse(line).as_object();
  EXPECT_EQ(std::string(o.at("model").as_string()),
            std::string("caf\u00c3\u00a9 \"q\" \\ \n \x01 \u00ff"));
  EXPECT_TRUE(o.at("provider_request_id").is_null());
}

TEST(AccessLine, ClientFieldsAreBounded) {
  AccessRecord r = booked();
  const std::string long_path = "/" + std::string(10'000, 'a');
  r.path = long_path;
  const std::string line = line_of(r, AccessLogFormat::text);
  EXPECT_LT(line.size(), 1000u);
  EXPECT_NE(line.find("path=/" + std::string(access_log_field_bytes_max - 1, 'a') + " "),
            std::string::npos);
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(AccessLog, WritesEveryLineByExitAndReopensTheFileByItsPath) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("cairva-access-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / "access.log";
  {
    auto log = AccessLog::open(path.string(), AccessLogFormat::text);
    ASSERT_TRUE(log.ok()) << log.error().message;
    AccessRecord r = booked();
    (*log)->write(r);
    // Rotation: the file is renamed, then the log is told; later lines go to a new file.
    std::filesystem::rename(path, dir / "access.log.1");
    (*log)->reopen();
    r.request_id = "req_after";
    // The reopen happens on the writer's next turn; lines written before it reach the
    // renamed file, so wait for the new file before writing.
    for (int i = 0; i < 1000 && !std::filesystem::exists(path); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_TRUE(std::filesystem::exists(path));
    (*log)->write(r);
    EXPECT_EQ((*log)->dropped(), 0);
  }
  const std::string old_file = read_file(dir / "access.log.1");
  const std::string new_file = read_file(path);
  EXPECT_NE(old_file.find("request_id=req_1 "), std::string::npos);
  EXPECT_EQ(old_file.find("req_after"), std::string::npos);
  EXPECT_NE(new_file.find("request_id=req_after "), std::string::npos);
  EXPECT_EQ(std::filesystem::status(path).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  std::filesystem::remove_all(dir);
}

TEST(AccessLog, AFileThatCannotBeOpenedIsAClearError) {
  auto log = AccessLog::open("/nonexistent-dir/cairva/access.log", AccessLogFormat::text);
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(log.error().message.rfind(
                "server.access_log_path: cannot open /nonexistent-dir/cairva/access.log: ", 0),
            0u);
}

}  // namespace
}  // namespace cairva::gateway
