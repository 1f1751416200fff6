#include "store/sqlite/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "store/sqlite/private_file.h"

namespace cairva::store::sqlite {

Result<std::unique_ptr<FileLock>> FileLock::acquire(const std::string& db_path) {
  const std::string path = db_path + ".lock";
  const int fd = open_private(path, O_RDWR | O_CREAT);
  if (fd < 0) {
    return make_error(ErrorCode::store_unavailable, "store " + db_path + ": cannot open " + path +
                                                        ": " +
                                                        std::generic_category().message(errno));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char buf[32] = {};
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    ::close(fd);
    std::string pid = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "unknown";
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    return make_error(
        ErrorCode::store_unavailable,
        "store " + db_path + " is in use by another cairva process (pid " + pid + ")");
  }
  const std::string me = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, me.data(), me.size(), 0) < 0) {
    // The pid is only for the message; the lock itself is held.
  }
  return std::unique_ptr<FileLock>(new FileLock(fd));
}

bool FileLock::in_use(const std::string& db_path) {
  const std::string path = db_path + ".lock";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;  // no lock file: nobody ever served this file here
  // flock locks are per open file description: this one conflicts with a holder's.
  const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);  // releases the shared lock if it was taken
  return held;
}

FileLock::~FileLock() {
  ::flock(fd_, LOCK_UN);
  ::close(fd_);
}

}  // namespace cairva::store::sqlite
