// Reading the files that flags and the data directory name, where something other than a regular
// file may stand: a FIFO blocks open() and read() until a writer comes, a device can be endless,
// and a symbolic link can lead anywhere. Callers open with O_NONBLOCK, check with fstat that they
// got a regular file, and read a bounded number of bytes.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <string>
#include <utility>

namespace torqued::server {

// Closes a file descriptor on scope exit.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(FileDescriptor&& other) noexcept : fd_(other.release()) {}
  FileDescriptor& operator=(FileDescriptor&& other) noexcept {
    if (this != &other) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = other.release();
    }
    return *this;
  }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// "a directory", "a FIFO", ... for messages about what stands where a regular file was expected.
inline const char* file_kind(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

// Reads `fd` to its end, but no more than max_bytes + 1 bytes, so that the caller can tell a file
// larger than max_bytes (content.size() > max_bytes). Returns 0, or the errno of a failed read.
inline int read_at_most(int fd, std::size_t max_bytes, std::string& content) {
  content.clear();
  char buffer[1 << 16];
  while (content.size() <= max_bytes) {
    const std::size_t wanted = std::min(sizeof(buffer), max_bytes + 1 - content.size());
    const ssize_t n = ::read(fd, buffer, wanted);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) break;
    content.append(buffer, static_cast<std::size_t>(n));
  }
  return 0;
}

}  // namespace torqued::server
