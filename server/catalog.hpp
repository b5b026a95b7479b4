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

namespace torqued::server {

class Catalog {
 public:
  Catalog(Store& store, const ModelLimits& limits, Metrics& metrics);

  // Registers (idempotently) and returns the entry; `created` tells whether it is new.
  grpc::Status register_model(const v1::RegisterModelRequest& request, RegisteredModelPtr& out,
                              bool& created);
  // NOT_FOUND for an unknown id, FAILED_PRECONDITION for a repository model.
  grpc::Status delete_model(const std::string& id);
  RegisteredModelPtr find(const std::string& id) const { return registry_.find(id); }
  std::vector<RegisteredModelPtr> list() const { return registry_.list(); }

  // Start-up loading; both log what they load and skip (with a warning) what they cannot.
  // Returns the number of models loaded.
  int load_repository(const std::string& directory);
  int load_store();

 private:
  // Inserts a built model unless its id is registered; `persist` writes its store file first.
  grpc::Status add(BuiltModel built, const v1::RegisterModelRequest& request,
                   v1::ModelOrigin origin, bool persist, RegisteredModelPtr& out, bool& created);

  Store& store_;
  const ModelLimits limits_;
  Metrics& metrics_;
  Registry registry_;
  // Serializes changes (store file + registry entry) so that a register and a delete of the
  // same id cannot interleave.
  std::mutex write_mutex_;
};

}  // namespace torqued::server
