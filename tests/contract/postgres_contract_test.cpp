// The shared Store contract suite against PostgreSQL: each test gets a schema of its own
// in the database named by env CAIRVA_TEST_PG_URL (scripts/pg-test-cluster.sh url).
#include <gtest/gtest.h>

#include "store/postgres/postgres_store.h"
#include "store/postgres/test_schema.h"
#include "store_contract.h"

namespace cairva::contract {
namespace {

class PostgresHarness final : public StoreHarness {
 public:
  std::string name() const override { return "postgres"; }

  std::unique_ptr<store::Store> open_fresh(std::shared_ptr<ManualClock> clock,
                                           store::StoreOptions options) override {
    return open(std::move(clock), std::move(options));
  }
  std::unique_ptr<store::Store> reopen(std::shared_ptr<ManualClock> clock,
                                       store::StoreOptions options) override {
    return open(std::move(clock), std::move(options));
  }

 private:
  std::unique_ptr<store::Store> open(std::shared_ptr<ManualClock> clock,
                                     store::StoreOptions options) {
    if (!schema_.ok()) {
      ADD_FAILURE() << schema_.error();
      return nullptr;
    }
    options.url = schema_.url();
    options.use_database_clock = false;
    auto s = store::pg::PostgresStore::open(options, std::move(clock));
    if (!s.ok()) {
      ADD_FAILURE() << "PostgresStore::open: " << s.error().message;
      return nullptr;
    }
    return std::move(s).value();
  }

  store::pg::testing::TestSchema schema_;  // dropped with the harness
};

// Fails loudly (rather than skipping) when the test database is not configured.
TEST(PostgresContractEnvironment, TestDatabaseUrlIsSet) {
  ASSERT_TRUE(store::pg::testing::base_url().has_value())
      << store::pg::testing::missing_url_message;
}

INSTANTIATE_TEST_SUITE_P(Postgres, StoreContract, ::testing::Values(HarnessFactory([] {
                           return std::unique_ptr<StoreHarness>(
                               std::make_unique<PostgresHarness>());
                         })),
                         [](const auto&) { return std::string("postgres"); });

}  // namespace
}  // namespace cairva::contract
