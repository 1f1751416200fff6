// Fuzzes completion bodies: read_completion and the usage_source splice. Properties:
// nothing crashes; what is read is JSON to Boost.JSON too; the spliced body reads back
// with the same id, the usage kept (or null when pending), and usage_source set.
#include <boost/json.hpp>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "wire/completion.h"

using namespace cairva;

namespace {

// Boost.JSON's reading of `text`; `ok` false when it is not an object. Boost 1.81 refuses
// valid numbers whose exponent it cannot represent (found by this fuzzer): for those it
// cannot tell, `ok` is true and `checkable` false.
boost::json::value boost_parse(std::string_view text, bool& ok, bool& checkable) {
  boost::json::parse_options options;
  options.max_depth = 100000;
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(text, ec, {}, options);
  checkable = ec != boost::json::error::exponent_overflow;
  ok = !checkable || (!ec && v.is_object());
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  auto info = wire::read_completion(body);
  if (!info.ok()) {
    FUZZ_CHECK(body == wire::with_usage_source(body, false));
    return 0;
  }
  bool ok = false;
  bool checkable = false;
  boost_parse(body, ok, checkable);
  FUZZ_CHECK(ok);
  for (bool pending : {false, true}) {
    const std::string out = wire::with_usage_source(body, pending);
    const boost::json::value v = boost_parse(out, ok, checkable);
    FUZZ_CHECK(ok);
    auto again = wire::read_completion(out);
    FUZZ_CHECK(again.ok());
    FUZZ_CHECK(again->id == info->id);
    FUZZ_CHECK(again->usage == (pending ? std::nullopt : info->usage));
    if (!checkable) continue;
    const auto& obj = v.as_object();
    FUZZ_CHECK(obj.contains("usage_source"));
    if (pending) FUZZ_CHECK(obj.contains("usage"));
  }
  return 0;
}
