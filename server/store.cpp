// File handling of the model store: write-temp, fsync, rename, fsync-directory (see store.hpp).
#include "server/store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <fstream>
#include <sstream>
#include <system_error>

#include "server/model_id.hpp"

namespace torqued::server {
namespace {

constexpr const char* kSuffix = ".model";
constexpr const char* kTemporarySuffix = ".tmp";

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

// Closes a file descriptor on scope exit.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

}  // namespace

Store::Store(std::filesystem::path directory) : directory_(std::move(directory)) {
  std::filesystem::create_directories(directory_);
  for (const auto& entry : std::filesystem::directory_iterator(directory_)) {
    if (entry.path().extension() == kTemporarySuffix) std::filesystem::remove(entry.path());
  }
}

std::filesystem::path Store::path_of(const std::string& id) const {
  return directory_ / (id + kSuffix);
}

void Store::sync_directory() const {
  FileDescriptor dir(::open(directory_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) throw_errno("open " + directory_.string());
  if (::fsync(dir.get()) != 0) throw_errno("fsync " + directory_.string());
}

void Store::save(const std::string& id, const v1::RegisterModelRequest& request) {
  static std::atomic<unsigned> counter{0};
  const std::string bytes = request.SerializeAsString();
  const std::filesystem::path final_path = path_of(id);
  const std::filesystem::path temporary =
      directory_ /
      (id + "." + std::to_string(::getpid()) + "." + std::to_string(counter++) + kTemporarySuffix);
  FileDescriptor file(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (file.get() < 0) throw_errno("create " + temporary.string());
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(file.get(), bytes.data() + written, bytes.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      std::filesystem::remove(temporary);
      throw std::system_error(error, std::generic_category(), "write " + temporary.string());
    }
    written += static_cast<std::size_t>(n);
  }
  if (::fsync(file.get()) != 0 || ::close(file.release()) != 0) {
    const int error = errno;
    std::filesystem::remove(temporary);
    throw std::system_error(error, std::generic_category(), "fsync " + temporary.string());
  }
  if (::rename(temporary.c_str(), final_path.c_str()) != 0) {
    const int error = errno;
    std::filesystem::remove(temporary);
    throw std::system_error(error, std::generic_category(), "rename " + final_path.string());
  }
  sync_directory();
}

void Store::remove(const std::string& id) {
  if (::unlink(path_of(id).c_str()) != 0) {
    if (errno == ENOENT) return;
    throw_errno("unlink " + path_of(id).string());
  }
  sync_directory();
}

std::vector<StoredModel> Store::load_all(std::vector<std::string>& errors) const {
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::directory_iterator(directory_)) {
    if (entry.is_regular_file() && entry.path().extension() == kSuffix) {
      paths.push_back(entry.path());
    }
  }
  std::sort(paths.begin(), paths.end());
  std::vector<StoredModel> models;
  for (const auto& path : paths) {
    StoredModel m;
    m.id = path.stem().string();
    std::ifstream in(path, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    if (!in || !looks_like_model_id(m.id) || !m.request.ParseFromString(bytes.str())) {
      errors.push_back(path.string() + ": not a readable model file, skipped");
      continue;
    }
    models.push_back(std::move(m));
  }
  return models;
}

}  // namespace torqued::server
