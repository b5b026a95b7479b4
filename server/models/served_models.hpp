// The registry: a read-mostly map from model id to an immutable RegisteredModel shared by
// pointer, so that deleting a model never breaks a request already running on it.
#pragma once

#include <atomic>
#include <memory>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/model/model.hpp"
#include "torqued/v1/model.pb.h"

namespace torqued::server {

struct RegisteredModel {
  std::string id;
  ModelPtr model;
  v1::Model layout;
  std::size_t stored_bytes = 0;  // of its store file; 0 for a repository model
  // Set when the model is deleted, so that workspaces still leased for it are freed when they
  // come back instead of being kept (workspace_pool.hpp).
  mutable std::atomic<bool> deleted{false};
};

using RegisteredModelPtr = std::shared_ptr<const RegisteredModel>;

class ServedModels {
 public:
  RegisteredModelPtr find(const std::string& id) const;
  // Inserts unless the id is present; returns the entry now registered under the id.
  RegisteredModelPtr insert(RegisteredModelPtr model);
  bool erase(const std::string& id);
  // Sorted by name, then id.
  std::vector<RegisteredModelPtr> list() const;
  std::size_t size() const;

 private:
  mutable std::shared_mutex mutex_;
  std::unordered_map<std::string, RegisteredModelPtr> models_;
};

}  // namespace torqued::server
