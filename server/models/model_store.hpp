// The model store: one file per registered model under the data directory, named by model id
// and holding the RegisterModelRequest that produced it (binary proto). Writes go to a temporary
// file that is fsynced and renamed, and the directory is fsynced, so an acknowledged model
// survives kill -9 and a power cut, and a crash never leaves a half-written model file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "torqued/v1/model.pb.h"

namespace torqued::server {

struct StoredModel {
  std::string id;  // from the file name
  v1::RegisterModelRequest request;
};

class ModelStore {
 public:
  // Creates the directory if needed. Throws std::filesystem::filesystem_error when it cannot be.
  // No model file larger than `max_file_bytes` (the largest registration, --max-model-bytes) is
  // ever read.
  ModelStore(std::filesystem::path directory, std::int64_t max_file_bytes);

  // Removes the temporary files of save() that a crash left behind: regular files named
  // <id>.<pid>.<counter>.tmp, and nothing else. Other entries named *.tmp (directories, symbolic
  // links, files of other names) are left alone and reported in `warnings`. Throws
  // std::filesystem::filesystem_error when the directory cannot be listed.
  void remove_stale_temporary_files(std::vector<std::string>& warnings);

  const std::filesystem::path& directory() const { return directory_; }

  // Durably writes the model's file. Throws std::system_error on I/O failure.
  void save(const std::string& id, const v1::RegisterModelRequest& request);
  // Durably removes the model's file (no error if it is absent).
  void remove(const std::string& id);
  // Every model file: a regular file <id>.model of at most max_file_bytes, opened without following
  // a symbolic link, so nothing outside the directory is read. Other entries named *.model, and
  // files that cannot be read or parsed, are reported in `errors` and skipped.
  std::vector<StoredModel> load_all(std::vector<std::string>& errors) const;

 private:
  std::filesystem::path path_of(const std::string& id) const;
  void sync_directory() const;

  std::filesystem::path directory_;
  std::int64_t max_file_bytes_;
};

}  // namespace torqued::server
