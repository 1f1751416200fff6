#include "base/error_code.h"

#include <gtest/gtest.h>

namespace cairva {

TEST(ErrorCode, MapsEachCodeToTheSpecStatus) {
  EXPECT_EQ(http_status(ErrorCode::invalid_api_key), 401);
  EXPECT_EQ(http_status(ErrorCode::allocation_depleted), 402);
  EXPECT_EQ(http_status(ErrorCode::allocation_exhausted), 402);
  EXPECT_EQ(http_status(ErrorCode::allocation_not_active), 403);
  EXPECT_EQ(http_status(ErrorCode::rate_limited), 429);
  EXPECT_EQ(http_status(ErrorCode::request_too_large), 413);
  EXPECT_EQ(http_status(ErrorCode::store_unavailable), 503);
  EXPECT_EQ(http_status(ErrorCode::provider_timeout), 504);
  EXPECT_EQ(wire_name(ErrorCode::not_pending), "not_pending");
}

}  // namespace cairva
