// The shared Store contract suite against the embedded SQLite store: each test gets a
// fresh database file in a temporary directory.
#include <gtest/gtest.h>

#include <filesystem>

#include "store/sqlite/sqlite_store.h"
#include "store_contract.h"

namespace cairva::contract {
namespace {

class SqliteHarness final : public StoreHarness {
 public:
  SqliteHarness() {
    dir_ = std::filesystem::temp_directory_path() /
           ("cairva-contract-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  ~SqliteHarness() override { std::filesystem::remove_all(dir_); }

  std::string name() const override { return "sqlite"; }
  bool marks_in_flight_pending_on_reopen() const override { return true; }

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
    const std::string path = (dir_ / "cairva.db").string();
    options.url = "sqlite://" + path;
    auto s = store::sqlite::SqliteStore::open(path, options, std::move(clock));
    if (!s.ok()) {
      ADD_FAILURE() << "SqliteStore::open: " << s.error().message;
      return nullptr;
    }
    return std::move(s).value();
  }

  static inline int counter_ = 0;
  std::filesystem::path dir_;
};

INSTANTIATE_TEST_SUITE_P(Sqlite, StoreContract, ::testing::Values(HarnessFactory([] {
                           return std::unique_ptr<StoreHarness>(std::make_unique<SqliteHarness>());
                         })),
                         [](const auto&) { return std::string("sqlite"); });

}  // namespace
}  // namespace cairva::contract
