// Files written whole (see files.h).
#include <wm/support/error.h>
#include <wm/support/files.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

namespace wm {

namespace {

/// The file a path names: a symbolic link's target (so that the rename replaces the file and
/// keeps the link); the path itself when it does not exist yet.
std::string resolved(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return path;
  char buf[PATH_MAX];
  if (!realpath(path.c_str(), buf)) return path; // a dangling link: written as a new file
  return buf;
}

enum class Kind { Missing, Regular, Directory, Other };

Kind kindOf(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return Kind::Missing;
  if (S_ISREG(st.st_mode)) return Kind::Regular;
  return S_ISDIR(st.st_mode) ? Kind::Directory : Kind::Other;
}

/// Writes all of `contents` to fd; false (errno set) on any failure.
bool writeAll(int fd, const std::string& contents) {
  size_t off = 0;
  while (off < contents.size()) {
    ssize_t n = write(fd, contents.data() + off, contents.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    off += static_cast<size_t>(n);
  }
  return true;
}

} // namespace

void writeFileAtomically(const std::string& given, const std::string& contents) {
  std::string path = resolved(given);
  Kind kind = kindOf(path);
  if (kind == Kind::Directory) WM_USER_ERROR() << given << ": is a directory";
  if (kind == Kind::Other) {
    int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) WM_USER_ERROR() << given << ": cannot write (" << std::strerror(errno) << ")";
    bool ok = writeAll(fd, contents);
    int e = errno;
    if (close(fd) != 0 && ok) {
      ok = false;
      e = errno;
    }
    if (!ok) WM_USER_ERROR() << given << ": cannot write (" << std::strerror(e) << ")";
    return;
  }
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) WM_USER_ERROR() << given << ": cannot write (" << std::strerror(errno) << ")";
  auto fail = [&](const char* what) {
    int e = errno;
    close(fd);
    unlink(tmp.c_str());
    WM_USER_ERROR() << given << ": " << what << " (" << std::strerror(e) << ")";
  };
  if (!writeAll(fd, contents)) fail("cannot write");
  if (fsync(fd) != 0) fail("cannot flush to disk");
  if (close(fd) != 0) {
    int e = errno;
    unlink(tmp.c_str());
    WM_USER_ERROR() << given << ": cannot close (" << std::strerror(e) << ")";
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    unlink(tmp.c_str());
    WM_USER_ERROR() << given << ": cannot rename the temporary file into place ("
                    << std::strerror(e) << ")";
  }
}

void checkWritable(const std::string& given, const std::string& what) {
  std::string path = resolved(given);
  Kind kind = kindOf(path);
  if (kind == Kind::Directory) WM_USER_ERROR() << what << " " << given << ": is a directory";
  if (kind == Kind::Other) {
    int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0 && errno != ENXIO) // ENXIO: a FIFO nobody reads yet
      WM_USER_ERROR() << what << " " << given << ": cannot write (" << std::strerror(errno) << ")";
    if (fd >= 0) close(fd);
    return;
  }
  // The file will be created beside itself and renamed: the directory must take a new file.
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    WM_USER_ERROR() << what << " " << given << ": cannot write (" << std::strerror(errno) << ")";
  close(fd);
  unlink(tmp.c_str());
}

bool requireRegularFile(const std::string& path) {
  Kind kind = kindOf(path);
  if (kind == Kind::Directory || kind == Kind::Other)
    WM_USER_ERROR() << path << ": not a regular file";
  return kind == Kind::Regular;
}

void checkStdout() {
  std::cout.flush();
  bool bad = !std::cout.good();
  if (std::fflush(stdout) != 0) bad = true;
  if (bad) {
    std::cout.clear();
    WM_USER_ERROR() << "stdout: cannot write (" << std::strerror(errno ? errno : EIO) << ")";
  }
}

std::string selfExecutable() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw InternalError("cannot find this process's executable");
  return std::string(buf, static_cast<size_t>(n));
}

} // namespace wm
