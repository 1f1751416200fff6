// The Coalescer against apply(): the same records, one by one or coalesced in random
// transactions (with random flushes, as reads and admin writes between them cause), must
// leave every table identical.
#include "store/sqlite/writes.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "store/sqlite/schema.h"

namespace cairva::store::sqlite {
namespace {

constexpr UnixMicros t0_us = 1'767'225'600LL * micros_per_second;

std::string dump(Db& db) {
  std::string out;
  for (const char* sql :
       {"SELECT * FROM requests ORDER BY id", "SELECT * FROM usage_events ORDER BY seq",
        "SELECT * FROM allocations ORDER BY id", "SELECT * FROM agreements ORDER BY id",
        "SELECT * FROM conflicts ORDER BY seq"}) {
    auto s = db.prepare(sql);
    EXPECT_TRUE(s.ok());
    const int columns = s->col_count();
    for (;;) {
      auto row = s->step();
      EXPECT_TRUE(row.ok());
      if (!row.ok() || !*row) break;
      for (int c = 0; c < columns; ++c) out += (s->col_null(c) ? "NULL" : s->col_text(c)) + "|";
      out += "\n";
    }
    out += "--\n";
  }
  return out;
}

// A random but valid history: starts, noted provider ids, every kind of end, late
// bookings after usage_pending, conflicts and state changes, over two allocations.
std::vector<writes::Record> history(std::mt19937& rng, int steps) {
  std::vector<writes::Record> out;
  std::vector<std::string> open;     // started, not ended
  std::vector<std::string> pending;  // usage_pending, may still be booked
  std::unordered_map<std::string, std::string> allocation_of;
  int next = 0;
  auto pick = [&](std::vector<std::string>& v) {
    const size_t i = rng() % v.size();
    std::string id = v[i];
    v.erase(v.begin() + static_cast<std::ptrdiff_t>(i));
    return id;
  };
  auto book = [&](const std::string& req, int n) {
    out.push_back(writes::book(UsageEventRow{"evt_" + std::to_string(n),
                                             allocation_of[req],
                                             req,
                                             "prov_" + std::to_string(n),
                                             {int64_t(rng() % 50), int64_t(rng() % 50)},
                                             core::EventSource::provider,
                                             core::Finality::reported,
                                             "",
                                             t0_us + n}));
  };
  for (int step = 0; step < steps; ++step) {
    const int n = next++;
    const std::string alloc = (rng() % 2) ? "alloc_a" : "alloc_b";
    switch (open.empty() ? 0 : rng() % 8) {
      case 0:
      case 1: {
        const std::string id = "req_" + std::to_string(n);
        RequestRow r{id,           alloc,        core::RequestState::in_flight,
                     t0_us + n,    std::nullopt, "m",
                     (n % 2) == 0, {5, 9},       ""};
        out.push_back(writes::insert_request(r, "key_" + alloc));
        open.push_back(id);
        allocation_of[id] = alloc;
        break;
      }
      case 2:
        book(pick(open), n);
        break;
      case 3:
        out.push_back(writes::pack(writes::BookAsDuplicate{pick(open), "prov_dup", t0_us + n}));
        break;
      case 4:
        out.push_back(writes::pack(writes::FailRequest{
            pick(open), (n % 3) ? "" : "prov_f" + std::to_string(n), t0_us + n}));
        break;
      case 5: {
        const std::string id = pick(open);
        out.push_back(writes::pack(
            writes::MarkUsagePending{id, (n % 2) ? "" : "prov_p" + std::to_string(n)}));
        pending.push_back(id);
        break;
      }
      case 6:
        if (!pending.empty() && rng() % 2) {
          book(pick(pending), n);  // late usage
        } else {
          out.push_back(writes::insert_conflict(ConflictRow{
              "cfl_" + std::to_string(n), alloc, "req_x", "prov_x", {1, 2}, {3, 4}, t0_us + n}));
          out.push_back(writes::set_states(
              alloc, "agr_" + alloc,
              (n % 2) ? core::AllocationState::suspended : core::AllocationState::active,
              core::AgreementState::in_force));
        }
        break;
      case 7: {
        // The provider's id noted while the request runs; a late note for an ended request.
        const std::string& id = (!pending.empty() && rng() % 4 == 0)
                                    ? pending[rng() % pending.size()]
                                    : open[rng() % open.size()];
        out.push_back(writes::pack(writes::NoteProviderId{id, "prov_n" + std::to_string(n)}));
        break;
      }
    }
  }
  return out;
}

Db fresh(const std::filesystem::path& path) {
  std::filesystem::remove(path);
  auto db = Db::open(path.string(), false);
  EXPECT_TRUE(db.ok());
  EXPECT_TRUE(prepare_database(*db, false).ok());
  for (const char* a : {"alloc_a", "alloc_b"}) {
    const std::string alloc = a;
    AgreementRow agr{
        "agr_" + alloc,
        "s",
        "b",
        "openai",
        {},
        {{t0_us, t0_us + 86'400 * micros_per_second}, {100, 100000, 10}, {1'000'000, 1'000'000}},
        core::AgreementState::in_force,
        t0_us};
    EXPECT_TRUE(writes::insert_agreement(agr, alloc, core::AllocationState::active, "key_" + alloc,
                                         "hash_" + alloc)(*db)
                    .ok());
  }
  return std::move(db).value();
}

// The Coalescer's held starts are views; an empty one (no data pointer) must still bind ''.
TEST(Stmt, AnEmptyViewBindsTheEmptyStringNotNull) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("cairva-stmt-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    Db db = fresh(dir / "s.db");
    for (const bool by_ref : {false, true}) {
      auto s = db.prepare("SELECT ? IS NULL, length(?)");
      ASSERT_TRUE(s.ok());
      const std::string_view empty;
      ASSERT_EQ(empty.data(), nullptr);
      if (by_ref) {
        s->text_ref(empty).text_ref(empty);
      } else {
        s->text(empty).text(empty);
      }
      auto row = s->step();
      ASSERT_TRUE(row.ok() && *row);
      EXPECT_EQ(s->col_text(0), "0") << (by_ref ? "text_ref" : "text");
      EXPECT_EQ(s->col_text(1), "0");
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(Coalescer, LeavesTheTablesAsApplyingEachRecordDoes) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("cairva-writes-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    const auto records = history(rng, 400);
    Db one_by_one = fresh(dir / "a.db");
    ASSERT_TRUE(one_by_one.exec("BEGIN").ok());
    for (const auto& r : records) ASSERT_TRUE(writes::apply(one_by_one, r).ok()) << "seed " << seed;
    ASSERT_TRUE(one_by_one.exec("COMMIT").ok());

    Db coalesced = fresh(dir / "b.db");
    size_t i = 0;
    while (i < records.size()) {
      const size_t n = 1 + rng() % 60;  // one transaction
      writes::Coalescer c;
      ASSERT_TRUE(coalesced.exec("BEGIN").ok());
      for (size_t k = 0; k < n && i < records.size(); ++k, ++i) {
        ASSERT_TRUE(c.add(coalesced, records[i], i).ok()) << "seed " << seed << " record " << i;
        if (rng() % 10 == 0) {
          ASSERT_TRUE(c.flush(coalesced).ok());  // a read between them
        }
      }
      ASSERT_TRUE(c.flush(coalesced).ok());
      ASSERT_TRUE(coalesced.exec("COMMIT").ok());
    }
    const std::string expected = dump(one_by_one);
    EXPECT_EQ(dump(coalesced), expected) << "seed " << seed;
    EXPECT_NE(expected.find("booked"), std::string::npos);  // the history did book
  }
  std::filesystem::remove_all(dir);
}

writes::Record start_in_alloc_a(const std::string& id, int n) {
  RequestRow r{id,        "alloc_a",    core::RequestState::in_flight,
               t0_us + n, std::nullopt, "m",
               false,     {5, 9},       ""};
  return writes::insert_request(r, "key_alloc_a");
}

// One transaction for the whole history: starts held back and events are inserted in
// groups of apply_rows_per_insert, and records naming a request whose row is still held
// (a late booking, a note after usage_pending) find it written first.
TEST(Coalescer, OneLargeTransactionLeavesTheTablesAsApplyingEachRecordDoes) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("cairva-writes-large-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    std::mt19937 rng(seed);
    const auto records = history(rng, 600);
    Db one_by_one = fresh(dir / "a.db");
    ASSERT_TRUE(one_by_one.exec("BEGIN").ok());
    for (const auto& r : records) ASSERT_TRUE(writes::apply(one_by_one, r).ok()) << "seed " << seed;
    ASSERT_TRUE(one_by_one.exec("COMMIT").ok());

    Db coalesced = fresh(dir / "b.db");
    writes::Coalescer c;
    ASSERT_TRUE(coalesced.exec("BEGIN").ok());
    for (size_t i = 0; i < records.size(); ++i)
      ASSERT_TRUE(c.add(coalesced, records[i], i).ok()) << "record " << i;
    ASSERT_TRUE(c.flush(coalesced).ok());
    ASSERT_TRUE(coalesced.exec("COMMIT").ok());
    EXPECT_EQ(dump(coalesced), dump(one_by_one)) << "seed " << seed;
  }
  std::filesystem::remove_all(dir);
}

// A row that cannot be inserted fails its own op, even inside a group of rows.
TEST(Coalescer, AFailedRowInAGroupNamesItsOwnOp) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("cairva-writes-fail-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    Db db = fresh(dir / "f.db");
    std::vector<writes::Record> records;
    for (int n = 0; n < 40; ++n) {
      const std::string id = "req_" + std::to_string(n == 21 ? 5 : n);  // op 21 repeats req_5
      records.push_back(start_in_alloc_a(id, n));
    }
    writes::Coalescer c;
    ASSERT_TRUE(db.exec("BEGIN").ok());
    for (size_t i = 0; i < records.size(); ++i) ASSERT_TRUE(c.add(db, records[i], i).ok());
    EXPECT_FALSE(c.flush(db).ok());
    EXPECT_EQ(c.failed_op(), 21u);
    ASSERT_TRUE(db.exec("ROLLBACK").ok());
  }
  std::filesystem::remove_all(dir);
}

TEST(Coalescer, AFailedEventInAGroupNamesItsOwnOp) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("cairva-writes-fail-ev-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    Db db = fresh(dir / "f.db");
    std::vector<writes::Record> records;
    for (int n = 0; n < 20; ++n) {
      const std::string id = "req_" + std::to_string(n);
      records.push_back(start_in_alloc_a(id, n));
    }
    for (int n = 0; n < 20; ++n) {
      const std::string event = "evt_" + std::to_string(n == 17 ? 3 : n);  // op 37 repeats evt_3
      const std::string n_ = std::to_string(n);
      records.push_back(writes::book(UsageEventRow{event,
                                                   "alloc_a",
                                                   "req_" + n_,
                                                   "prov_" + n_,
                                                   {1, 2},
                                                   core::EventSource::provider,
                                                   core::Finality::reported,
                                                   "",
                                                   t0_us + 100 + n}));
    }
    writes::Coalescer c;
    ASSERT_TRUE(db.exec("BEGIN").ok());
    for (size_t i = 0; i < records.size(); ++i) ASSERT_TRUE(c.add(db, records[i], i).ok());
    EXPECT_FALSE(c.flush(db).ok());
    EXPECT_EQ(c.failed_op(), 37u);
    ASSERT_TRUE(db.exec("ROLLBACK").ok());
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cairva::store::sqlite
