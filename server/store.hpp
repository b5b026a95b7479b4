// The model store: one file per registered model under the data directory, named by model id
// and holding the RegisterModelRequest that produced it (binary proto). Writes go to a temporary
// file that is fsynced and renamed, and the directory is fsynced, so an acknowledged model
// survives kill -9 and a power cut, and a crash never leaves a half-written model file.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "torqued/v1/model.pb.h"

namespace torqued::server {

struct StoredModel {
  std::string id;  // from the file name
  v1::RegisterModelRequest request;
};

class Store {
 public:
  // Creates the directory if needed and removes temporary files a crash left behind. Throws
  // std::filesystem::filesystem_error when the directory cannot be used.
  explicit Store(std::filesystem::path directory);

  const std::filesystem::path& directory() const { return directory_; }

  // Durably writes the model's file. Throws std::system_error on I/O failure.
  void save(const std::string& id, const v1::RegisterModelRequest& request);
  // Durably removes the model's file (no error if it is absent).
  void remove(const std::string& id);
  // Every readable model file; unreadable ones are reported in `errors` and skipped.
  std::vector<StoredModel> load_all(std::vector<std::string>& errors) const;

 private:
  std::filesystem::path path_of(const std::string& id) const;
  void sync_directory() const;

  std::filesystem::path directory_;
};

}  // namespace torqued::server
