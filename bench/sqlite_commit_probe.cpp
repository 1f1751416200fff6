// sqlite_commit_probe: what one SQLite commit costs when it appends to ONE B-tree, the
// floor for a journal-first write path.
// Same settings as the embedded store (WAL, synchronous=NORMAL, cached statements); each
// commit appends `--ops` rows of `--bytes` bytes to a rowid table.
//
//   build-release/src/store/sqlite/sqlite_commit_probe --ops 10 --commits 20000
// Prints CPU per commit and per row. Compare with sqlite_store_bench, which drives the
// store's real schema (about ten B-trees touched per commit).
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "base/ids.h"
#include "store/sqlite/db.h"

using namespace cairva;
using namespace cairva::store::sqlite;

namespace {

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

int fail(const Status& s) {
  std::fprintf(stderr, "sqlite_commit_probe: %s\n", s.error().message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  int ops = 10, commits = 20'000, bytes = 200;
  bool known = argc % 2 == 1;  // flags come in pairs
  for (int i = 1; known && i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    int* target = k == "--ops"       ? &ops
                  : k == "--commits" ? &commits
                  : k == "--bytes"   ? &bytes
                                     : nullptr;
    if (target != nullptr) *target = std::atoi(argv[i + 1]);
    known = target != nullptr;
  }
  if (!known || ops < 1 || commits < 1 || bytes < 1) {
    std::fprintf(stderr, "usage: sqlite_commit_probe [--ops N] [--commits N] [--bytes N]\n");
    return 2;
  }
  const auto dir = std::filesystem::temp_directory_path() / new_id("cairva-commit-probe");
  std::filesystem::create_directories(dir);
  {
    auto db = Db::open((dir / "probe.db").string(), false);
    if (!db.ok()) return fail(db.error());
    Status s = db->exec(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
        " CREATE TABLE journal (seq INTEGER PRIMARY KEY, op TEXT NOT NULL)");
    if (!s.ok()) return fail(s);
    std::string row(static_cast<size_t>(bytes), 'x');
    const double cpu0 = cpu_seconds();
    for (int c = 0; c < commits && s.ok(); ++c) {
      s = db->exec("BEGIN IMMEDIATE");
      for (int i = 0; i < ops && s.ok(); ++i) {
        row[static_cast<size_t>(i) % row.size()]++;
        auto st = db->cached("INSERT INTO journal (op) VALUES (?)");
        s = st.ok() ? st->text(row).run() : Status(st.error());
      }
      if (s.ok()) s = db->exec("COMMIT");
    }
    if (!s.ok()) return fail(s);
    const double cpu = cpu_seconds() - cpu0;
    std::printf("sqlite_commit_probe ops=%d bytes=%d: %.1f us CPU per commit, %.2f us per row\n",
                ops, bytes, cpu / commits * 1e6, cpu / commits / ops * 1e6);
  }
  std::filesystem::remove_all(dir);
  return 0;
}
