// torqued.v1.ModelService on the callback API: registration and deletion run on the executor
// (they build models and fsync files), lookups answer inline.
#pragma once

#include <atomic>

#include "server/batch.hpp"
#include "server/catalog.hpp"
#include "torqued/v1/model.grpc.pb.h"

namespace torqued::server {

class ModelService final : public v1::ModelService::CallbackService {
 public:
  // `ready` is false while the server loads its models (calls answer UNAVAILABLE).
  ModelService(Catalog& catalog, BatchRunner& runner, Metrics& metrics,
               const std::atomic<bool>& ready);

  grpc::ServerUnaryReactor* RegisterModel(grpc::CallbackServerContext* context,
                                          const v1::RegisterModelRequest* request,
                                          v1::RegisterModelResponse* response) override;
  grpc::ServerUnaryReactor* GetModel(grpc::CallbackServerContext* context,
                                     const v1::GetModelRequest* request,
                                     v1::Model* response) override;
  grpc::ServerUnaryReactor* ListModels(grpc::CallbackServerContext* context,
                                       const v1::ListModelsRequest* request,
                                       v1::ListModelsResponse* response) override;
  grpc::ServerUnaryReactor* DeleteModel(grpc::CallbackServerContext* context,
                                        const v1::DeleteModelRequest* request,
                                        v1::DeleteModelResponse* response) override;

 private:
  Catalog& catalog_;
  BatchRunner& runner_;
  Metrics& metrics_;
  const std::atomic<bool>& ready_;
};

}  // namespace torqued::server
