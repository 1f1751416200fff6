// ConnectionPool against a real PostgreSQL (env CAIRVA_TEST_PG_URL).
#include "store/postgres/pool.h"

#include <gtest/gtest.h>

#include "store/postgres/test_schema.h"

namespace cairva::store::pg {
namespace {

TEST(ConnectionPool, ExhaustedPoolIsStoreUnavailableAfterTheWait) {
  auto url = testing::base_url();
  ASSERT_TRUE(url) << testing::missing_url_message;
  ConnectionPool pool(*url, 1, /*wait_ms=*/20);
  auto held = pool.acquire();
  ASSERT_TRUE(held.ok()) << held.error().message;
  auto second = pool.acquire();
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code, ErrorCode::store_unavailable);
}

TEST(ConnectionPool, ReturnedConnectionIsReused) {
  auto url = testing::base_url();
  ASSERT_TRUE(url) << testing::missing_url_message;
  ConnectionPool pool(*url, 1, 20);
  int backend_pid = 0;
  {
    auto lease = pool.acquire();
    ASSERT_TRUE(lease.ok());
    auto r = (*lease)->exec("SELECT pg_backend_pid()");
    ASSERT_TRUE(r.ok());
    backend_pid = static_cast<int>(get_i64(r->get(), 0, 0));
  }
  auto again = pool.acquire();
  ASSERT_TRUE(again.ok());
  auto r = (*again)->exec("SELECT pg_backend_pid()");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(get_i64(r->get(), 0, 0), backend_pid);
}

TEST(ConnectionPool, ConnectionLeftInATransactionIsNotReused) {
  auto url = testing::base_url();
  ASSERT_TRUE(url) << testing::missing_url_message;
  ConnectionPool pool(*url, 1, 20);
  int backend_pid = 0;
  {
    auto lease = pool.acquire();
    ASSERT_TRUE(lease.ok());
    ASSERT_TRUE((*lease)->exec("BEGIN").ok());
    auto r = (*lease)->exec("SELECT pg_backend_pid()");
    ASSERT_TRUE(r.ok());
    backend_pid = static_cast<int>(get_i64(r->get(), 0, 0));
  }
  auto again = pool.acquire();
  ASSERT_TRUE(again.ok());
  auto r = (*again)->exec("SELECT pg_backend_pid()");
  ASSERT_TRUE(r.ok());
  EXPECT_NE(get_i64(r->get(), 0, 0), backend_pid);
}

}  // namespace
}  // namespace cairva::store::pg
