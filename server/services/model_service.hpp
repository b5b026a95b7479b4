// torqued.v1.ModelService on the callback API: registration and deletion run on the executor
// (they build models and fsync files), lookups answer inline. SDF registrations run on a lane of
// their own (sdf_reads): libsdformat reads one document at a time (a process-wide lock) for up to
// 2 s, which on the executor held its workers from dynamics and from every other registration.
// The lane's one thread takes the connections' documents in turn (round robin, so one connection
// sending documents back to back delays another's by one read at most), and each waits there
// for what its reading reserves from the memory budget rather than failing while the budget is
// momentarily taken. Methods are raw (byte_buffers.hpp):
// a registration's size is checked against --max-model-bytes, and its rows, links, joints, loop
// closures and unknown fields are counted against the model limits (check_encoded_request()),
// before a byte of it is decoded, since a decoded message takes many times its wire size (an
// empty DH row some sixty times).
#pragma once

#include <atomic>
#include <cstdint>

#include "server/base/memory_budget.hpp"
#include "server/compute/batch_runner.hpp"
#include "server/models/model_catalog.hpp"
#include "server/transport/access_tokens.hpp"
#include "server/transport/byte_buffers.hpp"
#include "torqued/v1/model.grpc.pb.h"

namespace torqued::server {

using ModelGrpc = v1::ModelService;
using RawModelService =
    RawMethods<ModelGrpc::Service, ModelGrpc::WithRawCallbackMethod_RegisterModel,
               ModelGrpc::WithRawCallbackMethod_GetModel,
               ModelGrpc::WithRawCallbackMethod_ListModels,
               ModelGrpc::WithRawCallbackMethod_DeleteModel>;

class ModelService final : public RawModelService {
 public:
  // `ready` is false while the server loads its models (calls answer UNAVAILABLE).
  // An SDF registration reserves what libsdformat's reading may take from `budget`, and runs on
  // `sdf_reads` (one worker), in the turn of its connection.
  ModelService(ModelCatalog& catalog, BatchRunner& runner, Executor& sdf_reads, Metrics& metrics,
               MemoryBudget& budget, const AccessControl& access, const std::atomic<bool>& ready,
               std::int64_t max_model_bytes);

  grpc::ServerUnaryReactor* RegisterModel(grpc::CallbackServerContext* context,
                                          const grpc::ByteBuffer* request,
                                          grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* GetModel(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ListModels(grpc::CallbackServerContext* context,
                                       const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* DeleteModel(grpc::CallbackServerContext* context,
                                        const grpc::ByteBuffer* request,
                                        grpc::ByteBuffer* response) override;

 private:
  // Whether a call may start: its token (access_tokens.hpp), then the server's readiness.
  grpc::Status admit(const UnaryCall& call) const;

  ModelCatalog& catalog_;
  BatchRunner& runner_;
  Executor& sdf_reads_;
  Metrics& metrics_;
  MemoryBudget& budget_;
  const AccessControl& access_;
  const std::atomic<bool>& ready_;
  const std::int64_t max_model_bytes_;
};

}  // namespace torqued::server
