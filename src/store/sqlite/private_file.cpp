#include "store/sqlite/private_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace cairva::store::sqlite {

int open_private(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_EXCL | O_CLOEXEC, store_file_mode);
  if (fd >= 0) {
    if (::fchmod(fd, store_file_mode) != 0) {
      const int saved = errno;
      ::close(fd);
      ::unlink(path.c_str());
      errno = saved;
      return -1;
    }
    return fd;
  }
  // The file exists: it keeps the mode it has (an operator may have chosen it).
  if (errno != EEXIST || (flags & O_EXCL) != 0) return -1;
  return ::open(path.c_str(), (flags & ~O_CREAT) | O_CLOEXEC);
}

Status create_private_if_missing(const std::string& path) {
  const int fd = open_private(path, O_RDWR | O_CREAT);
  if (fd < 0) {
    return make_error(ErrorCode::store_unavailable, "sqlite: cannot create " + path + ": " +
                                                        std::generic_category().message(errno));
  }
  ::close(fd);
  return {};
}

}  // namespace cairva::store::sqlite
