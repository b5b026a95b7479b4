// What the service fuzzers share: the bundled models (deploy/models) registered in a catalog over
// a store in a fresh temporary directory, with the memory budget and workspace pool the services
// take, and the models' ids by name, since a content hash is nothing a mutation would find; the
// control fuzzers' limits, and a check of an answer's values.
#pragma once

#include <google/protobuf/repeated_field.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>

#include "server/base/config.hpp"
#include "server/models/model_catalog.hpp"
#include "server/services/dynamics_plans.hpp"

namespace torqued::server {

// Whether every value of an answer's array is finite.
inline bool finite(const google::protobuf::RepeatedField<double>& values) {
  for (const double x : values) {
    if (!std::isfinite(x)) return false;
  }
  return true;
}

// The limits of the control fuzzers: every problem small enough to solve in milliseconds.
inline RequestLimits control_fuzzing_limits() {
  RequestLimits limits = request_limits(Config{});
  limits.max_message_bytes = 1 << 20;
  limits.max_workspace_bytes = 64 << 20;
  limits.max_constraint_rows = 64;
  limits.max_phases = 8;
  limits.max_ocp_knots = 24;
  limits.max_cost_terms = 16;
  limits.max_ocp_iterations = 8;
  return limits;
}

class BundledCatalog {
 public:
  BundledCatalog()
      : store_directory_(make_store_directory()),
        store_(store_directory_, Config{}.max_model_bytes),
        memory_(std::size_t{1} << 30),
        workspaces_(64 << 20, 64 << 20, memory_),
        catalog_(store_, model_limits(Config{}), metrics_, workspaces_) {
    spdlog::set_level(spdlog::level::warn);
    if (catalog_.load_repository(TORQUED_REPOSITORY_DIR) == 0) {
      throw std::runtime_error("no bundled model in " TORQUED_REPOSITORY_DIR);
    }
    for (const RegisteredModelPtr& entry : catalog_.list()) ids_[entry->layout.name()] = entry->id;
  }
  ~BundledCatalog() {
    std::error_code ignored;
    std::filesystem::remove_all(store_directory_, ignored);
  }

  // The id a request's model_id stands for: a bundled model's name means its id.
  const std::string& id_of(const std::string& model_id) const {
    const auto named = ids_.find(model_id);
    return named == ids_.end() ? model_id : named->second;
  }

  Metrics& metrics() { return metrics_; }
  MemoryBudget& memory() { return memory_; }
  WorkspacePool& workspaces() { return workspaces_; }
  ModelCatalog& catalog() { return catalog_; }

 private:
  static std::filesystem::path make_store_directory() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "torqued-fuzz-store-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    return pattern;
  }

  const std::filesystem::path store_directory_;
  ModelStore store_;
  Metrics metrics_;
  MemoryBudget memory_;
  WorkspacePool workspaces_;
  ModelCatalog catalog_;
  std::map<std::string, std::string> ids_;  // bundled model name -> id
};

}  // namespace torqued::server
