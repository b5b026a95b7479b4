// torqued.v1.DynamicsService on the callback API: each handler validates the request against
// the model's layout, sizes the response arrays and hands the batch to the executor; Echo
// answers inline.
#pragma once

#include <atomic>
#include <cstdint>

#include "server/batch.hpp"
#include "server/catalog.hpp"
#include "server/validation.hpp"
#include "torqued/v1/dynamics.grpc.pb.h"

namespace torqued::server {

struct RequestLimits {
  int max_batch_states = 100000;
  std::int64_t max_message_bytes = 256LL << 20;
};

class DynamicsService final : public v1::DynamicsService::CallbackService {
 public:
  DynamicsService(const Catalog& catalog, BatchRunner& runner, Metrics& metrics,
                  const RequestLimits& limits, const std::atomic<bool>& ready);

  grpc::ServerUnaryReactor* InverseDynamics(grpc::CallbackServerContext* context,
                                            const v1::InverseDynamicsRequest* request,
                                            v1::InverseDynamicsResponse* response) override;
  grpc::ServerUnaryReactor* ForwardDynamics(grpc::CallbackServerContext* context,
                                            const v1::ForwardDynamicsRequest* request,
                                            v1::ForwardDynamicsResponse* response) override;
  grpc::ServerUnaryReactor* MassMatrix(grpc::CallbackServerContext* context,
                                       const v1::MassMatrixRequest* request,
                                       v1::MassMatrixResponse* response) override;
  grpc::ServerUnaryReactor* NonlinearEffects(grpc::CallbackServerContext* context,
                                             const v1::NonlinearEffectsRequest* request,
                                             v1::NonlinearEffectsResponse* response) override;
  grpc::ServerUnaryReactor* Gravity(grpc::CallbackServerContext* context,
                                    const v1::GravityRequest* request,
                                    v1::GravityResponse* response) override;
  grpc::ServerUnaryReactor* Kinematics(grpc::CallbackServerContext* context,
                                       const v1::KinematicsRequest* request,
                                       v1::KinematicsResponse* response) override;
  grpc::ServerUnaryReactor* HybridDynamics(grpc::CallbackServerContext* context,
                                           const v1::HybridDynamicsRequest* request,
                                           v1::HybridDynamicsResponse* response) override;
  grpc::ServerUnaryReactor* FloatingBaseInverseDynamics(
      grpc::CallbackServerContext* context, const v1::FloatingBaseInverseDynamicsRequest* request,
      v1::FloatingBaseInverseDynamicsResponse* response) override;
  grpc::ServerUnaryReactor* Derivatives(grpc::CallbackServerContext* context,
                                        const v1::DerivativesRequest* request,
                                        v1::DerivativesResponse* response) override;
  grpc::ServerUnaryReactor* CoriolisMatrix(grpc::CallbackServerContext* context,
                                           const v1::CoriolisMatrixRequest* request,
                                           v1::CoriolisMatrixResponse* response) override;
  grpc::ServerUnaryReactor* Centroidal(grpc::CallbackServerContext* context,
                                       const v1::CentroidalRequest* request,
                                       v1::CentroidalResponse* response) override;
  grpc::ServerUnaryReactor* Echo(grpc::CallbackServerContext* context,
                                 const v1::EchoRequest* request,
                                 v1::EchoResponse* response) override;

 private:
  // The checks every dynamics call starts with: server ready, known model, batch size, q.
  grpc::Status prepare(const std::string& model_id, std::uint32_t batch_size, const DoubleArray& q,
                       RegisteredModelPtr& model, int& states) const;

  // What a batched call runs once its request is checked and its response sized.
  struct BatchJob {
    Algorithm algorithm;
    ChunkKernel kernel;
  };

  // The shape every batched RPC shares: prepare(), then `plan(model, states, job)` checks the
  // request's other fields, sizes the response and describes the work, which then runs across
  // the workers. Any non-OK status from either step finishes the call with it.
  template <typename Request, typename Plan>
  grpc::ServerUnaryReactor* serve_batch(grpc::CallbackServerContext* context, Method method,
                                        const Request& request, Plan plan) {
    const Call call(context, method, metrics_);
    RegisteredModelPtr entry;
    int states = 0;
    grpc::Status status =
        prepare(request.model_id(), request.batch_size(), request.q(), entry, states);
    if (status.ok()) {
      BatchJob job;
      status = plan(entry, states, job);
      if (status.ok()) {
        runner_.run(call, states, job.algorithm, std::move(job.kernel));
        return call.reactor();
      }
    }
    return call.finish(status);
  }

  const Catalog& catalog_;
  BatchRunner& runner_;
  Metrics& metrics_;
  const RequestLimits limits_;
  const std::atomic<bool>& ready_;
};

}  // namespace torqued::server
