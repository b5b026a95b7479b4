// The model catalog: the one place models come and go. It builds models from requests, keeps
// the registry and the store consistent (a model is acknowledged only once its file is durable),
// and loads the repository and the store at start.
#pragma once

#include <grpcpp/support/status.h>

#include <mutex>
#include <string>
#include <vector>

#include "server/base/metrics.hpp"
#include "server/models/model_from_request.hpp"
#include "server/models/model_store.hpp"
#include "server/models/served_models.hpp"

namespace torqued::server {

// What the layer that computes keeps per model, its workspaces (compute/workspace_pool.hpp), told
// when models come and go.
class ModelWorkspaces {
 public:
  virtual ~ModelWorkspaces() = default;
  // The heap bytes of the workspace every call on `model` binds at least: a model past
  // --max-workspace-bytes with it is refused at registration.
  virtual std::size_t base_bytes(const Model& model) const = 0;
  // A model is registered: its first workspace may be made.
  virtual void registered(const RegisteredModel& model) = 0;
  // A model is deleted (its `deleted` flag set): its workspaces go.
  virtual void deleted(const RegisteredModel& model) = 0;
};

class ModelCatalog {
 public:
  ModelCatalog(ModelStore& store, const ModelLimits& limits, Metrics& metrics,
               ModelWorkspaces& workspaces);

  // Registers (idempotently) and returns the entry; `created` tells whether it is new, and
  // `warnings` are those of building this request's document: documents that map to one id may
  // warn differently (the id leaves out the reader's warnings, e.g. an ignored URDF tag), and the
  // entry keeps the first one's. RESOURCE_EXHAUSTED when the model's workspace, the store or the
  // model count passes a limit (or the disk is full); store failures never show a path or an
  // errno (they are logged).
  grpc::Status register_model(const v1::RegisterModelRequest& request, RegisteredModelPtr& out,
                              bool& created, std::vector<std::string>& warnings);
  // NOT_FOUND for an unknown id, FAILED_PRECONDITION for a repository model.
  grpc::Status delete_model(const std::string& id);
  RegisteredModelPtr find(const std::string& id) const { return registry_.find(id); }
  const ModelLimits& limits() const { return limits_; }
  std::vector<RegisteredModelPtr> list() const { return registry_.list(); }

  // Start-up loading; both log what they load and skip (with a warning) what they cannot.
  // Returns the number of models loaded.
  int load_repository(const std::string& directory);
  int load_store();

 private:
  // Inserts a built model unless its id is registered; `persist` writes its store file first,
  // `stored` says that the model has a store file (written now or earlier).
  grpc::Status add(BuiltModel built, const v1::RegisterModelRequest& request,
                   v1::ModelOrigin origin, bool persist, bool stored, RegisteredModelPtr& out,
                   bool& created);

  ModelStore& store_;
  const ModelLimits limits_;
  Metrics& metrics_;
  ModelWorkspaces& workspaces_;
  ServedModels registry_;
  std::int64_t store_bytes_ = 0;  // under write_mutex_
  // Serializes changes (store file + registry entry) so that a register and a delete of the
  // same id cannot interleave.
  std::mutex write_mutex_;
};

}  // namespace torqued::server
