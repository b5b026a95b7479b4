// The model catalog: the one place models come and go. It builds models from requests, keeps
// the registry and the store consistent (a model is acknowledged only once its file is durable),
// and loads the repository and the store at start.
#pragma once

#include <grpcpp/support/status.h>

#include <mutex>
#include <string>

#include "server/metrics.hpp"
#include "server/model_source.hpp"
#include "server/registry.hpp"
#include "server/store.hpp"
#include "server/workspace.hpp"

namespace torqued::server {

class Catalog {
 public:
  // New models' first workspaces go to `workspaces` (they are built at registration to learn
  // their size), and deleted models' workspaces are freed there.
  Catalog(Store& store, const ModelLimits& limits, Metrics& metrics, WorkspacePool& workspaces);

  // Registers (idempotently) and returns the entry; `created` tells whether it is new.
  // RESOURCE_EXHAUSTED when the model's workspace, the store or the model count passes a limit
  // (or the disk is full); store failures never show a path or an errno (they are logged).
  grpc::Status register_model(const v1::RegisterModelRequest& request, RegisteredModelPtr& out,
                              bool& created);
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

  Store& store_;
  const ModelLimits limits_;
  Metrics& metrics_;
  WorkspacePool& workspaces_;
  Registry registry_;
  std::int64_t store_bytes_ = 0;  // under write_mutex_
  // Serializes changes (store file + registry entry) so that a register and a delete of the
  // same id cannot interleave.
  std::mutex write_mutex_;
};

}  // namespace torqued::server
