// The operation log's files: frames read back as written, torn tails, segments and their
// deletion.
#include "store/sqlite/oplog.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <boost/crc.hpp>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

namespace cairva::store::sqlite::oplog {
namespace {

namespace fs = std::filesystem;

writes::Record record(std::mt19937_64& rng) {
  writes::Record r;
  r.kind = static_cast<writes::Record::Kind>(1 + rng() % 7);
  std::array<std::string, writes::Record::texts> texts;
  for (auto& t : texts) {
    t.resize(rng() % 40);
    for (auto& c : t) c = static_cast<char>(rng());  // any byte, NUL included
  }
  r.set_texts(std::vector<std::string_view>(texts.begin(), texts.end()));
  for (auto& n : r.num_slots) n = static_cast<int64_t>(rng());  // negative too
  return r;
}

struct Seen {
  int64_t seq;
  writes::Record r;
};

std::vector<Seen> read_all(const std::string& db) {
  std::vector<Seen> out;
  const Status s = read_log(db, [&](int64_t seq, writes::Record&& r) {
    out.push_back({seq, std::move(r)});
    return Status{};
  });
  EXPECT_TRUE(s.ok()) << s.error().message;
  return out;
}

std::vector<fs::path> segment_files(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().starts_with("log.db-oplog.")) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string file_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class OplogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("cairva-oplog-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    db_ = (dir_ / "log.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Commits `frames` frames of 1 to 3 random records from `seq` on; returns what it wrote.
  std::vector<Seen> write(Log& log, int frames, int64_t& seq, std::mt19937_64& rng) {
    std::vector<Seen> wrote;
    for (int f = 0; f < frames; ++f) {
      const int n = 1 + static_cast<int>(rng() % 3);
      for (int i = 0; i < n; ++i) {
        wrote.push_back({seq, record(rng)});
        log.add(seq++, wrote.back().r);
      }
      const Status s = log.commit();
      EXPECT_TRUE(s.ok()) << s.error().message;
    }
    return wrote;
  }

  // Directories in the way of the names of the segments after the first (as a full disk
  // would refuse new files); removed by the caller.
  std::vector<fs::path> block_next_segments() {
    std::vector<fs::path> blocked;
    for (int64_t seq = 2; seq < 400; ++seq) {
      char name[64];
      std::snprintf(name, sizeof name, "log.db-oplog.%020lld", static_cast<long long>(seq));
      blocked.push_back(dir_ / name);
      fs::create_directory(blocked.back());
    }
    return blocked;
  }

  // Commits one-record frames that may not use the reserve until one is refused; returns
  // the refusal and adds what landed to `wrote`.
  Status commit_until_refused(Log& log, int64_t& seq, std::vector<Seen>& wrote,
                              std::mt19937_64& rng) {
    Status refused;
    for (int i = 0; i < 100 && refused.ok(); ++i) {
      const writes::Record r = record(rng);
      log.add(seq, r);
      refused = log.commit(/*may_use_reserve=*/false);
      if (refused.ok()) wrote.push_back({seq++, r});
    }
    return refused;
  }

  // A log whose first record is number 1, with `sync = "normal"`.
  std::unique_ptr<Log> start(uint64_t segment_bytes = oplog_segment_bytes) {
    auto log = Log::start(db_, 1, false, segment_bytes);
    EXPECT_TRUE(log.ok()) << log.error().message;
    return log.ok() ? std::move(*log) : nullptr;
  }

  fs::path dir_;
  std::string db_;
};

void expect_same(const std::vector<Seen>& got, const std::vector<Seen>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].seq, want[i].seq);
    EXPECT_TRUE(got[i].r == want[i].r) << "record " << want[i].seq;
  }
}

TEST_F(OplogTest, RecordsComeBackAsWrittenInOrderAcrossSegments) {
  std::mt19937_64 rng(7);
  auto log = start(/*segment_bytes=*/2048);
  ASSERT_NE(log, nullptr);
  int64_t seq = 1;
  const auto wrote = write(*log, 200, seq, rng);
  EXPECT_GT(log->segments(), 10u);
  EXPECT_EQ(segment_files(dir_).size(), log->segments());
  expect_same(read_all(db_), wrote);
}

// A write the process did not finish (a crash, a full disk) leaves a torn last frame: the
// frames before it are read, it is not, and the next commit writes over it.
TEST_F(OplogTest, ATornTailIsNotReadAndIsWrittenOver) {
  std::mt19937_64 rng(11);
  auto log = start();
  ASSERT_NE(log, nullptr);
  int64_t seq = 1;
  auto wrote = write(*log, 3, seq, rng);
  const fs::path file = segment_files(dir_).at(0);
  const std::string whole = file_bytes(file);
  // The space the segment reserved at its creation outlives a probe, which writes past the
  // last frame and cuts that back (where the file system reserves space at all).
  const auto allocated = [&file] {
    struct stat st {};
    EXPECT_EQ(::stat(file.c_str(), &st), 0);
    return static_cast<uint64_t>(st.st_blocks) * 512;
  };
  const uint64_t reserved = allocated();
  ASSERT_TRUE(log->probe(seq).ok());
  EXPECT_EQ(fs::file_size(file), whole.size());
  if (reserved >= oplog_segment_bytes + oplog_reserve_bytes) {
    EXPECT_GE(allocated(), reserved);
  } else {
    std::fprintf(stderr, "note: this file system reserved %llu bytes, not checked\n",
                 static_cast<unsigned long long>(reserved));
  }
  const auto put = [&file](const std::string& bytes) {
    std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
  };

  // Cut into the last frame: its records are gone, the others stay.
  put(whole.substr(0, whole.size() - 3));
  const auto before_last = read_all(db_);
  ASSERT_LT(before_last.size(), wrote.size());
  ASSERT_FALSE(before_last.empty());
  expect_same(before_last,
              std::vector<Seen>(wrote.begin(),
                                wrote.begin() + static_cast<std::ptrdiff_t>(before_last.size())));
  // One changed byte in the last frame instead: its checksum fails, so it is not read either.
  std::string changed = whole;
  changed[changed.size() - 2] ^= 1;
  put(changed);
  expect_same(read_all(db_), before_last);
  put(whole);
  expect_same(read_all(db_), wrote);

  // A probe (what the writer does while the disk fails) writes past the last intact frame
  // and takes it back.
  ASSERT_TRUE(log->probe(seq).ok());
  EXPECT_EQ(fs::file_size(file), whole.size());
  // Bytes a failed write left there (had cutting them failed too) are written over: the
  // log's next commit lands right after its last intact frame.
  put(whole + std::string(3 * frame_header_bytes, '\xab'));
  const auto more = write(*log, 2, seq, rng);
  wrote.insert(wrote.end(), more.begin(), more.end());
  expect_same(read_all(db_), wrote);
}

TEST_F(OplogTest, TrimDeletesOnlySegmentsWhoseRecordsAreAllApplied) {
  std::mt19937_64 rng(3);
  auto log = start(/*segment_bytes=*/1024);
  ASSERT_NE(log, nullptr);
  int64_t seq = 1;
  const auto wrote = write(*log, 60, seq, rng);
  const size_t segments = log->segments();
  ASSERT_GT(segments, 4u);
  const int64_t applied = wrote[wrote.size() / 2].seq;
  EXPECT_TRUE(log->trim_due(applied));
  log->trim(applied);
  EXPECT_FALSE(log->trim_due(applied));
  EXPECT_LT(log->segments(), segments);
  EXPECT_EQ(segment_files(dir_).size(), log->segments());
  // Nothing past `applied` went, and what is left starts within one segment of it.
  const auto left = read_all(db_);
  ASSERT_FALSE(left.empty());
  EXPECT_LE(left.front().seq, applied + 1);
  EXPECT_EQ(left.back().seq, wrote.back().seq);
  for (size_t i = 1; i < left.size(); ++i) EXPECT_EQ(left[i].seq, left[i - 1].seq + 1);
  // Everything applied: all but the segment being written.
  log->trim(wrote.back().seq);
  EXPECT_EQ(log->segments(), 1u);
  EXPECT_EQ(segment_files(dir_).size(), 1u);
}

// When no new segment can be created (a full disk; here a directory in the way), commits
// that may use the reserve still land in the current segment; the others fail until a
// probe creates the next segment.
TEST_F(OplogTest, WithoutANewSegmentOnlyCommitsAllowedTheReserveLand) {
  std::mt19937_64 rng(13);
  auto log = start(/*segment_bytes=*/1024);
  ASSERT_NE(log, nullptr);
  const std::vector<fs::path> blocked = block_next_segments();
  std::vector<Seen> wrote;
  int64_t seq = 1;
  const Status refused = commit_until_refused(*log, seq, wrote, rng);
  ASSERT_FALSE(refused.ok()) << "the segment never filled";
  EXPECT_NE(refused.error().message.find("open"), std::string::npos) << refused.error().message;
  // The same record, as a settlement would send it: into the reserve.
  for (int i = 0; i < 5; ++i) {
    const writes::Record r = record(rng);
    log->add(seq, r);
    ASSERT_TRUE(log->commit(/*may_use_reserve=*/true).ok());
    wrote.push_back({seq++, r});
  }
  EXPECT_EQ(log->segments(), 1u);
  EXPECT_FALSE(log->probe(seq).ok());
  for (const auto& d : blocked) fs::remove(d);
  ASSERT_TRUE(log->probe(seq).ok());  // creates the next segment
  EXPECT_EQ(log->segments(), 2u);
  const auto more = write(*log, 1, seq, rng);
  wrote.insert(wrote.end(), more.begin(), more.end());
  expect_same(read_all(db_), wrote);
}

// The next segment made ahead (by the journal thread) becomes the next segment by a
// rename; the one it follows keeps its frames as written.
TEST_F(OplogTest, TheSpareBecomesTheNextSegment) {
  std::mt19937_64 rng(17);
  auto log = start(/*segment_bytes=*/1024);
  ASSERT_NE(log, nullptr);
  const fs::path spare = dir_ / "log.db-oplog-spare";
  EXPECT_TRUE(log->spare_due());
  ASSERT_TRUE(log->prepare_spare().ok());
  EXPECT_FALSE(log->spare_due());
  ASSERT_TRUE(fs::exists(spare));
  int64_t seq = 1;
  std::vector<Seen> wrote;
  while (log->segments() == 1) {
    const auto more = write(*log, 1, seq, rng);
    wrote.insert(wrote.end(), more.begin(), more.end());
  }
  EXPECT_FALSE(fs::exists(spare));
  EXPECT_TRUE(log->spare_due());
  EXPECT_EQ(segment_files(dir_).size(), 2u);
  expect_same(read_all(db_), wrote);
  // Twice more, and once without a spare: every record comes back, in order.
  for (int round = 0; round < 3; ++round) {
    if (round < 2) {
      ASSERT_TRUE(log->prepare_spare().ok());
    }
    const size_t segments = log->segments();
    while (log->segments() == segments) {
      const auto more = write(*log, 1, seq, rng);
      wrote.insert(wrote.end(), more.begin(), more.end());
    }
  }
  EXPECT_EQ(segment_files(dir_).size(), 5u);
  expect_same(read_all(db_), wrote);
}

// A spare whose move is refused (its name taken: here a directory) stays for the next try,
// and reading the log never takes it for a segment.
TEST_F(OplogTest, ASpareThatCannotTakeItsNameIsKept) {
  std::mt19937_64 rng(19);
  auto log = start(/*segment_bytes=*/1024);
  ASSERT_NE(log, nullptr);
  ASSERT_TRUE(log->prepare_spare().ok());
  const std::vector<fs::path> blocked = block_next_segments();
  std::vector<Seen> wrote;
  int64_t seq = 1;
  const Status refused = commit_until_refused(*log, seq, wrote, rng);
  ASSERT_FALSE(refused.ok()) << "the segment never filled";
  EXPECT_TRUE(fs::exists(dir_ / "log.db-oplog-spare"));
  EXPECT_FALSE(log->spare_due());
  expect_same(read_all(db_), wrote);
  for (const auto& d : blocked) fs::remove(d);
  ASSERT_TRUE(log->probe(seq).ok());  // moves to the spare
  EXPECT_FALSE(fs::exists(dir_ / "log.db-oplog-spare"));
  EXPECT_EQ(log->segments(), 2u);
  const auto more = write(*log, 1, seq, rng);
  wrote.insert(wrote.end(), more.begin(), more.end());
  expect_same(read_all(db_), wrote);
}

// A spare left by a run that stopped (or crashed) before using it holds no record: start
// removes it; closing the log removes its own.
TEST_F(OplogTest, SparesDoNotOutliveTheLog) {
  std::ofstream(dir_ / "log.db-oplog-spare", std::ios::binary) << "left over";
  {
    auto log = start();
    ASSERT_NE(log, nullptr);
    EXPECT_FALSE(fs::exists(dir_ / "log.db-oplog-spare"));
    ASSERT_TRUE(log->prepare_spare().ok());
    EXPECT_TRUE(fs::exists(dir_ / "log.db-oplog-spare"));
  }
  EXPECT_FALSE(fs::exists(dir_ / "log.db-oplog-spare"));
  EXPECT_EQ(segment_files(dir_).size(), 1u);
}

TEST_F(OplogTest, StartDeletesTheReplayedSegments) {
  std::mt19937_64 rng(5);
  int64_t seq = 1;
  {
    auto log = start(/*segment_bytes=*/1024);
    ASSERT_NE(log, nullptr);
    write(*log, 30, seq, rng);
    ASSERT_GT(segment_files(dir_).size(), 1u);
  }
  auto log = Log::start(db_, seq, false);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(segment_files(dir_).size(), 1u);
  EXPECT_TRUE(read_all(db_).empty());
  auto more = write(**log, 1, seq, rng);
  expect_same(read_all(db_), more);
}

// The format says CRC-32: logs written by earlier builds (Boost's crc_32_type) still read.
TEST(OplogFrame, TheChecksumIsTheStandardCrc32) {
  FrameBuilder frame;
  const writes::Record r = writes::pack(writes::InsertRequest{.id = "req_1", .started_at = 42});
  frame.add(7, r);
  const std::string bytes(frame.seal());
  boost::crc_32_type reference;
  reference.process_bytes(bytes.data() + 4, 4);  // the length field
  reference.process_bytes(bytes.data() + frame_header_bytes, bytes.size() - frame_header_bytes);
  uint32_t stored = 0;
  std::memcpy(&stored, bytes.data() + 8, 4);
  EXPECT_EQ(stored, reference.checksum());
}

// A frame whose checksum holds was written whole: if its records do not parse, the file
// is not this format's, and reading says so rather than skip acknowledged writes.
TEST(OplogFrame, AnIntactFrameWithUnreadableRecordsIsAnError) {
  FrameBuilder frame;
  const writes::Record r = writes::pack(writes::InsertRequest{.id = "abc"});
  frame.add(1, r);
  const std::string good(frame.seal());
  int calls = 0;
  auto count = [&calls](int64_t, writes::Record&&) {
    ++calls;
    return Status{};
  };
  auto read = read_frames(good, count);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(*read, good.size());
  EXPECT_EQ(calls, 1);

  // The same records one byte short, in a frame whose length and checksum say so.
  const std::string payload = good.substr(frame_header_bytes, good.size() - frame_header_bytes - 1);
  const auto length = static_cast<uint32_t>(payload.size());
  boost::crc_32_type crc;
  crc.process_bytes(&length, sizeof length);
  crc.process_bytes(payload.data(), payload.size());
  const uint32_t sum = crc.checksum();
  std::string bad(frame_header_bytes, '\0');
  std::memcpy(bad.data(), &frame_magic, 4);
  std::memcpy(bad.data() + 4, &length, 4);
  std::memcpy(bad.data() + 8, &sum, 4);
  bad += payload;
  calls = 0;
  read = read_frames(bad, count);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.error().message.find("unreadable records"), std::string::npos)
      << read.error().message;
  EXPECT_EQ(calls, 0);
  // Torn instead (the checksum fails): the end of what is readable, not an error.
  bad[bad.size() - 1] ^= 1;
  read = read_frames(bad, count);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(*read, 0u);
}

// One record's payload in the layout the format documents (oplog_frame.h), slot by slot:
// what every earlier build wrote for the same write.
std::string slots_payload(int64_t seq, writes::Record::Kind kind,
                          std::vector<std::string_view> texts, std::vector<int64_t> nums) {
  texts.resize(writes::Record::texts);
  nums.resize(writes::Record::nums);
  std::string out(reinterpret_cast<const char*>(&seq), sizeof seq);
  out += static_cast<char>(kind);
  for (const auto t : texts) {
    const auto n = static_cast<uint32_t>(t.size());
    out.append(reinterpret_cast<const char*>(&n), sizeof n).append(t);
  }
  for (const int64_t n : nums) out.append(reinterpret_cast<const char*>(&n), sizeof n);
  return out;
}

// `r`'s frame holds `expected` byte for byte, and reads back as `r`.
void expect_frame(const writes::Record& r, const std::string& expected) {
  FrameBuilder frame;
  frame.add(9, r);
  const std::string bytes(frame.seal());
  EXPECT_EQ(bytes.substr(frame_header_bytes), expected);
  std::vector<writes::Record> back;
  auto read = read_frames(bytes, [&](int64_t seq, writes::Record&& got) {
    EXPECT_EQ(seq, 9);
    back.push_back(std::move(got));
    return Status{};
  });
  ASSERT_TRUE(read.ok());
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0], r);
}

// Every kind's record, from its builder or its struct, keeps the slots logs already on disk hold,
// and reads back through its kind's names.
TEST(OplogFrame, EachBuildersRecordKeepsItsSlotsAndReadsBackByName) {
  using K = writes::Record::Kind;
  const RequestRow request{"req_1", "alloc_1",    core::RequestState::in_flight,
                           1000,    std::nullopt, "gpt",
                           true,    {5, 9},       ""};
  const writes::Record start = writes::insert_request(request, "key_1");
  expect_frame(
      start, slots_payload(9, K::insert_request, {"req_1", "alloc_1", "key_1", "in_flight", "gpt"},
                           {1000, 1, 5, 9}));
  const auto s = start.as<writes::InsertRequest>();
  EXPECT_EQ(s.id, "req_1");
  EXPECT_EQ(s.allocation_id, "alloc_1");
  EXPECT_EQ(s.key_id, "key_1");
  EXPECT_EQ(s.state, "in_flight");
  EXPECT_EQ(s.model, "gpt");
  EXPECT_EQ(s.started_at, 1000);
  EXPECT_EQ(s.stream, 1);
  EXPECT_EQ(s.hold_input, 5);
  EXPECT_EQ(s.hold_output, 9);

  const UsageEventRow event{"evt_1",
                            "alloc_1",
                            "req_1",
                            "prov_1",
                            {3, 4},
                            core::EventSource::reconciliation,
                            core::Finality::confirmed,
                            "ev",
                            2000};
  const writes::Record booked = writes::book(event);
  expect_frame(booked,
               slots_payload(9, K::book,
                             {"evt_1", "alloc_1", "req_1", "prov_1", core::to_string(event.source),
                              core::to_string(event.finality), "ev"},
                             {3, 4, 2000}));
  const auto b = booked.as<writes::Book>();
  EXPECT_EQ(b.id, "evt_1");
  EXPECT_EQ(b.allocation_id, "alloc_1");
  EXPECT_EQ(b.request_id, "req_1");
  EXPECT_EQ(b.provider_request_id, "prov_1");
  EXPECT_EQ(b.source, core::to_string(event.source));
  EXPECT_EQ(b.finality, core::to_string(event.finality));
  EXPECT_EQ(b.evidence, "ev");
  EXPECT_EQ(b.input, 3);
  EXPECT_EQ(b.output, 4);
  EXPECT_EQ(b.booked_at, 2000);
  const writes::Record reported =
      writes::book_reported({"evt_2", "alloc_1", "req_1", "prov_1", {}, {}, {}, 3, 4, 2000});
  expect_frame(
      reported,
      slots_payload(9, K::book, {"evt_2", "alloc_1", "req_1", "prov_1", "provider", "reported", ""},
                    {3, 4, 2000}));
  EXPECT_EQ(reported.as<writes::Book>().source, "provider");

  // The request-row changes share one shape: request id, provider id, finished_at.
  const writes::Record duplicate = writes::pack(writes::BookAsDuplicate{"req_1", "prov_1", 3000});
  expect_frame(duplicate, slots_payload(9, K::book_as_duplicate, {"req_1", "prov_1"}, {3000}));
  EXPECT_EQ(duplicate.as<writes::BookAsDuplicate>().finished_at, 3000);
  const writes::Record failed = writes::pack(writes::FailRequest{"req_1", "", 3001});
  expect_frame(failed, slots_payload(9, K::fail_request, {"req_1", ""}, {3001}));
  const auto f = failed.as<writes::FailRequest>();
  EXPECT_EQ(f.request_id, "req_1");
  EXPECT_EQ(f.provider_request_id, "");
  EXPECT_EQ(f.finished_at, 3001);
  const writes::Record pending = writes::pack(writes::MarkUsagePending{"req_1", "prov_2"});
  expect_frame(pending, slots_payload(9, K::mark_usage_pending, {"req_1", "prov_2"}, {}));
  EXPECT_EQ(pending.as<writes::MarkUsagePending>().provider_request_id, "prov_2");
  const writes::Record noted = writes::pack(writes::NoteProviderId{"req_1", "prov_3"});
  expect_frame(noted, slots_payload(9, K::note_provider_id, {"req_1", "prov_3"}, {}));
  EXPECT_EQ(noted.as<writes::NoteProviderId>().request_id, "req_1");
  const writes::Record kept = writes::pack(writes::KeepReported{"req_1", "prov_4", 7, 8});
  expect_frame(kept, slots_payload(9, K::keep_reported, {"req_1", "prov_4"}, {7, 8}));
  const auto k = kept.as<writes::KeepReported>();
  EXPECT_EQ(k.provider_request_id, "prov_4");
  EXPECT_EQ(k.input, 7);
  EXPECT_EQ(k.output, 8);

  const writes::Record conflict =
      writes::insert_conflict({"cfl_1", "alloc_1", "req_1", "prov_1", {1, 2}, {3, 4}, 4000});
  expect_frame(conflict,
               slots_payload(9, K::insert_conflict, {"cfl_1", "alloc_1", "req_1", "prov_1"},
                             {1, 2, 3, 4, 4000}));
  const auto c = conflict.as<writes::InsertConflict>();
  EXPECT_EQ(c.id, "cfl_1");
  EXPECT_EQ(c.provider_request_id, "prov_1");
  EXPECT_EQ(c.reported_output, 2);
  EXPECT_EQ(c.booked_input, 3);
  EXPECT_EQ(c.recorded_at, 4000);
  const writes::Record states = writes::set_states(
      "alloc_1", "agr_1", core::AllocationState::suspended, core::AgreementState::in_force);
  expect_frame(states,
               slots_payload(9, K::set_states,
                             {"alloc_1", "agr_1", core::to_string(core::AllocationState::suspended),
                              core::to_string(core::AgreementState::in_force)},
                             {}));
  const auto st = states.as<writes::SetStates>();
  EXPECT_EQ(st.allocation_id, "alloc_1");
  EXPECT_EQ(st.agreement_id, "agr_1");
  EXPECT_EQ(st.state, core::to_string(core::AllocationState::suspended));
  EXPECT_EQ(st.agreement_state, core::to_string(core::AgreementState::in_force));
}

}  // namespace
}  // namespace cairva::store::sqlite::oplog
