// Files written whole (see files.h).
#include <wm/support/error.h>
#include <wm/support/files.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace wm {

void writeFileAtomically(const std::string& path, const std::string& contents) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) WM_USER_ERROR() << path << ": cannot write (" << std::strerror(errno) << ")";
  auto fail = [&](const char* what) {
    int e = errno;
    close(fd);
    unlink(tmp.c_str());
    WM_USER_ERROR() << path << ": " << what << " (" << std::strerror(e) << ")";
  };
  size_t off = 0;
  while (off < contents.size()) {
    ssize_t n = write(fd, contents.data() + off, contents.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("cannot write");
    off += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0) fail("cannot flush to disk");
  if (close(fd) != 0) {
    int e = errno;
    unlink(tmp.c_str());
    WM_USER_ERROR() << path << ": cannot close (" << std::strerror(e) << ")";
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    unlink(tmp.c_str());
    WM_USER_ERROR() << path << ": cannot rename the temporary file into place (" << std::strerror(e)
                    << ")";
  }
}

} // namespace wm
