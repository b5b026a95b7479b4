// File handling of the model store: write-temp, fsync, rename, fsync-directory (see
// model_store.hpp).
#include "server/models/model_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <system_error>

#include "server/base/posix_file.hpp"
#include "server/models/model_id.hpp"

namespace torqued::server {
namespace {

constexpr std::string_view kSuffix = ".model";
constexpr std::string_view kTemporarySuffix = ".tmp";

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
}

// Whether `name` is one that save() gives its temporary files: <id>.<pid>.<counter>.tmp.
bool is_temporary_file_name(std::string_view name) {
  if (!name.ends_with(kTemporarySuffix)) return false;
  name.remove_suffix(kTemporarySuffix.size());
  const std::size_t counter = name.rfind('.');
  if (counter == std::string_view::npos || !all_digits(name.substr(counter + 1))) return false;
  name = name.substr(0, counter);
  const std::size_t pid = name.rfind('.');
  return pid != std::string_view::npos && all_digits(name.substr(pid + 1)) &&
         looks_like_model_id(std::string(name.substr(0, pid)));
}

// Reads the model file at `path` into `bytes`; returns why it is skipped, or "".
std::string read_model_file(const std::filesystem::path& path, std::int64_t max_bytes,
                            std::string& bytes) {
  // O_NOFOLLOW: a symbolic link fails (ELOOP) rather than leading out of the directory;
  // O_NONBLOCK: opening a FIFO does not block the start.
  FileDescriptor file(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat status {};
  if (file.get() < 0 || ::fstat(file.get(), &status) != 0) {
    const int error = errno;
    return error == ELOOP ? std::string("a symbolic link; the store follows none")
                          : std::string("cannot be read (") + std::strerror(error) + ")";
  }
  if (!S_ISREG(status.st_mode)) {
    return std::string(file_kind(status.st_mode)) + ", not a model file";
  }
  const auto too_large = [&](std::int64_t size) {
    return std::to_string(size) + " bytes, more than the largest registration (" +
           std::to_string(max_bytes) + " bytes, --max-model-bytes)";
  };
  if (status.st_size > max_bytes) return too_large(status.st_size);
  // The size is checked again on what is read: the file may have grown since fstat.
  if (const int error = read_at_most(file.get(), static_cast<std::size_t>(max_bytes), bytes);
      error != 0) {
    return std::string("cannot be read (") + std::strerror(error) + ")";
  }
  if (static_cast<std::int64_t>(bytes.size()) > max_bytes) {
    return too_large(static_cast<std::int64_t>(bytes.size()));
  }
  return "";
}

}  // namespace

ModelStore::ModelStore(std::filesystem::path directory, std::int64_t max_file_bytes)
    : directory_(std::move(directory)), max_file_bytes_(max_file_bytes) {
  std::filesystem::create_directories(directory_);
}

void ModelStore::remove_stale_temporary_files(std::vector<std::string>& warnings) {
  for (const auto& entry : std::filesystem::directory_iterator(directory_)) {
    const std::filesystem::path& path = entry.path();
    if (path.extension() != kTemporarySuffix) continue;
    struct stat status {};
    if (::lstat(path.c_str(), &status) != 0) {
      if (errno != ENOENT) warnings.push_back(path.string() + ": " + std::strerror(errno));
      continue;
    }
    if (!S_ISREG(status.st_mode) || !is_temporary_file_name(path.filename().string())) {
      warnings.push_back(path.string() + ": " + file_kind(status.st_mode) +
                         " the store did not write; left alone");
      continue;
    }
    // unlink removes neither a directory nor what a symbolic link leads to, whatever was put in
    // the file's place since lstat.
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      warnings.push_back(path.string() +
                         ": cannot remove this stale temporary file: " + std::strerror(errno));
    }
  }
}

std::filesystem::path ModelStore::path_of(const std::string& id) const {
  return directory_ / (id + std::string(kSuffix));
}

void ModelStore::sync_directory() const {
  FileDescriptor dir(::open(directory_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) throw_errno("open " + directory_.string());
  if (::fsync(dir.get()) != 0) throw_errno("fsync " + directory_.string());
}

void ModelStore::save(const std::string& id, const v1::RegisterModelRequest& request) {
  static std::atomic<unsigned> counter{0};
  const std::string bytes = request.SerializeAsString();
  const std::filesystem::path final_path = path_of(id);
  const std::filesystem::path temporary =
      directory_ / (id + "." + std::to_string(::getpid()) + "." + std::to_string(counter++) +
                    std::string(kTemporarySuffix));
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

void ModelStore::remove(const std::string& id) {
  if (::unlink(path_of(id).c_str()) != 0) {
    if (errno == ENOENT) return;
    throw_errno("unlink " + path_of(id).string());
  }
  sync_directory();
}

std::vector<StoredModel> ModelStore::load_all(std::vector<std::string>& errors) const {
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::directory_iterator(directory_)) {
    if (entry.path().extension() == kSuffix) paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<StoredModel> models;
  for (const auto& path : paths) {
    const auto skip = [&](const std::string& why) {
      errors.push_back(path.string() + ": " + why + "; skipped");
    };
    StoredModel m;
    m.id = path.stem().string();
    if (!looks_like_model_id(m.id)) {
      skip("not named like a model file of the store (<model id>.model)");
      continue;
    }
    std::string bytes;
    if (const std::string why = read_model_file(path, max_file_bytes_, bytes); !why.empty()) {
      skip(why);
      continue;
    }
    if (!m.request.ParseFromString(bytes)) {
      skip("not a readable model file");
      continue;
    }
    models.push_back(std::move(m));
  }
  return models;
}

}  // namespace torqued::server
