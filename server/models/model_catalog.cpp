// Registration, deletion and start-up loading of models (see model_catalog.hpp).
#include "server/models/model_catalog.hpp"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <system_error>

#include "server/base/status_messages.hpp"
#include "server/models/bundled_models.hpp"
#include "server/models/model_layout.hpp"

namespace torqued::server {

namespace {

// A store failure as the client sees it: a full disk is RESOURCE_EXHAUSTED (retrying at once
// cannot help), anything else INTERNAL; the path and the error go to the log only.
grpc::Status store_failure(const std::system_error& e, const char* action) {
  const int error = e.code().value();
  if (e.code().category() == std::generic_category() && (error == ENOSPC || error == EDQUOT)) {
    return {grpc::StatusCode::RESOURCE_EXHAUSTED,
            std::string("the server's model store is full: cannot ") + action + " the model"};
  }
  return {grpc::StatusCode::INTERNAL,
          std::string("the server's model store failed: cannot ") + action + " the model"};
}

}  // namespace

ModelCatalog::ModelCatalog(ModelStore& store, const ModelLimits& limits, Metrics& metrics,
                           ModelWorkspaces& workspaces)
    : store_(store), limits_(limits), metrics_(metrics), workspaces_(workspaces) {}

grpc::Status ModelCatalog::add(BuiltModel built, const v1::RegisterModelRequest& request,
                               v1::ModelOrigin origin, bool persist, bool stored,
                               RegisteredModelPtr& out, bool& created) {
  if (RegisteredModelPtr existing = registry_.find(built.id)) {
    out = std::move(existing);
    created = false;
    return grpc::Status::OK;
  }
  // What the part of a workspace every call shares costs (each call's algorithms add theirs,
  // checked against the same limit before the call runs).
  const std::size_t workspace_bytes = workspaces_.base_bytes(*built.model);
  if (static_cast<std::int64_t>(workspace_bytes) > limits_.max_workspace_bytes) {
    return over_limit("the model's workspace bytes", static_cast<std::int64_t>(workspace_bytes),
                      limits_.max_workspace_bytes, "--max-workspace-bytes");
  }
  const std::size_t stored_bytes = stored ? request.ByteSizeLong() : 0;
  std::lock_guard lock(write_mutex_);
  if (RegisteredModelPtr existing = registry_.find(built.id)) {
    out = std::move(existing);
    created = false;
    return grpc::Status::OK;
  }
  if (static_cast<std::int64_t>(registry_.size()) >= limits_.max_models) {
    return over_limit("models held", static_cast<std::int64_t>(registry_.size()) + 1,
                      limits_.max_models, "--max-models");
  }
  if (persist && store_bytes_ + static_cast<std::int64_t>(stored_bytes) > limits_.max_store_bytes) {
    return over_limit("model store bytes", store_bytes_ + static_cast<std::int64_t>(stored_bytes),
                      limits_.max_store_bytes, "--max-store-bytes");
  }
  if (persist) {
    try {
      store_.save(built.id, request);
    } catch (const std::system_error& e) {
      spdlog::error("store: cannot save model {}: {}", built.id, e.what());
      return store_failure(e, "save");
    }
  }
  store_bytes_ += static_cast<std::int64_t>(stored_bytes);
  auto entry = std::make_shared<RegisteredModel>();
  entry->id = built.id;
  entry->layout = make_layout(*built.model, built.id, origin);
  entry->model = std::move(built.model);
  entry->stored_bytes = stored_bytes;
  out = registry_.insert(std::move(entry));
  created = true;
  workspaces_.registered(*out);
  metrics_.set_models_registered(registry_.size());
  return grpc::Status::OK;
}

grpc::Status ModelCatalog::register_model(const v1::RegisterModelRequest& request,
                                          RegisteredModelPtr& out, bool& created,
                                          std::vector<std::string>& warnings) {
  BuiltModel built;
  if (grpc::Status s = build_from_request(request, limits_, built); !s.ok()) return s;
  warnings = built.model->warnings;
  return add(std::move(built), request, v1::MODEL_ORIGIN_REGISTERED, true, true, out, created);
}

grpc::Status ModelCatalog::delete_model(const std::string& id) {
  std::lock_guard lock(write_mutex_);
  const RegisteredModelPtr model = registry_.find(id);
  if (!model) return {grpc::StatusCode::NOT_FOUND, "model_id: no model " + quote_input(id)};
  if (model->layout.origin() == v1::MODEL_ORIGIN_REPOSITORY) {
    return {grpc::StatusCode::FAILED_PRECONDITION,
            "model_id: " + quote_input(id) +
                " comes from the model repository; remove its file instead"};
  }
  try {
    store_.remove(id);
  } catch (const std::system_error& e) {
    spdlog::error("store: cannot remove model {}: {}", id, e.what());
    return store_failure(e, "remove");
  }
  registry_.erase(id);
  store_bytes_ -= static_cast<std::int64_t>(model->stored_bytes);
  model->deleted.store(true, std::memory_order_release);
  workspaces_.deleted(*model);
  metrics_.set_models_registered(registry_.size());
  return grpc::Status::OK;
}

int ModelCatalog::load_repository(const std::string& directory) {
  std::vector<std::string> errors;
  const std::vector<BundledModel> entries = read_bundled_models(directory, errors);
  for (const std::string& e : errors) spdlog::warn("repository: {}", e);
  int loaded = 0;
  for (const BundledModel& entry : entries) {
    RegisteredModelPtr model;
    bool created = false;
    BuiltModel built;
    grpc::Status s = build_from_request(entry.request, limits_, built);
    if (s.ok()) {
      s = add(std::move(built), entry.request, v1::MODEL_ORIGIN_REPOSITORY, false, false, model,
              created);
    }
    if (!s.ok()) {
      spdlog::warn("repository: {}: {}", entry.path, s.error_message());
      continue;
    }
    spdlog::info("repository: {} -> model {} \"{}\" (nq {}, nv {})", entry.path, model->id,
                 model->layout.name(), model->layout.nq(), model->layout.nv());
    for (const std::string& w : model->layout.warnings()) {
      spdlog::info("repository: {}: warning: {}", entry.path, w);
    }
    ++loaded;
  }
  return loaded;
}

int ModelCatalog::load_store() {
  std::vector<std::string> errors;
  const std::vector<StoredModel> stored = store_.load_all(errors);
  for (const std::string& e : errors) spdlog::warn("store: {}", e);
  int loaded = 0;
  for (const StoredModel& s : stored) {
    BuiltModel built;
    if (grpc::Status status = build_from_request(s.request, limits_, built); !status.ok()) {
      spdlog::warn("store: model {} no longer builds, skipped: {}", s.id, status.error_message());
      continue;
    }
    RegisteredModelPtr model;
    bool created = false;
    // A changed canonical form (a new engine version) keeps the model under its new id.
    const bool renamed = built.id != s.id;
    if (renamed) spdlog::warn("store: model {} now hashes to {}; renaming", s.id, built.id);
    if (grpc::Status status = add(std::move(built), s.request, v1::MODEL_ORIGIN_REGISTERED, renamed,
                                  true, model, created);
        !status.ok()) {
      spdlog::warn("store: model {}: {}", s.id, status.error_message());
      continue;
    }

    if (renamed) {
      try {
        store_.remove(s.id);
      } catch (const std::system_error& e) {
        spdlog::warn("store: cannot remove {}: {}", s.id, e.what());
      }
    }
    ++loaded;
  }
  return loaded;
}

}  // namespace torqued::server
