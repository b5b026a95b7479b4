// torqued.v1.DynamicsService on the callback API: each handler validates the request against
// the model's layout, sizes the response arrays and hands the batch to the runner (inline when
// small, else the executor); Echo answers inline. Session (session.hpp) serves the same
// requests on a stream.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <set>

#include "server/access.hpp"
#include "server/batch.hpp"
#include "server/catalog.hpp"
#include "server/memory_budget.hpp"
#include "server/raw_call.hpp"
#include "server/validation.hpp"
#include "server/wire_counts.hpp"
#include "torqued/v1/dynamics.grpc.pb.h"

namespace torqued::server {

class SessionReactor;

// The per-call limits (config.hpp documents each; every one has a flag named in its error). The
// defaults are the flags' (config_test holds them equal); request_limits() in server.hpp makes
// them from the flags.
struct RequestLimits {
  int max_batch_states = 100000;
  std::int64_t max_message_bytes = 64LL << 20;
  std::int64_t max_workspace_bytes = 256LL << 20;
  int max_constraint_rows = 512;
  int max_contacts = 256;
  int max_kinematics_frames = 4096;
  int max_solver_iterations = 10000;
  int max_simulation_steps = 100000;
  int max_session_queued = 8;
};

// Every method raw, so that requests are decoded here (raw_call.hpp).
using DynamicsGrpc = v1::DynamicsService;
using RawDynamicsService = RawMethods<
    DynamicsGrpc::Service, DynamicsGrpc::WithRawCallbackMethod_InverseDynamics,
    DynamicsGrpc::WithRawCallbackMethod_ForwardDynamics,
    DynamicsGrpc::WithRawCallbackMethod_MassMatrix,
    DynamicsGrpc::WithRawCallbackMethod_HybridDynamics,
    DynamicsGrpc::WithRawCallbackMethod_FloatingBaseInverseDynamics,
    DynamicsGrpc::WithRawCallbackMethod_ConstrainedDynamics,
    DynamicsGrpc::WithRawCallbackMethod_Derivatives,
    DynamicsGrpc::WithRawCallbackMethod_CoriolisMatrix,
    DynamicsGrpc::WithRawCallbackMethod_Centroidal,
    DynamicsGrpc::WithRawCallbackMethod_NonlinearEffects,
    DynamicsGrpc::WithRawCallbackMethod_Gravity, DynamicsGrpc::WithRawCallbackMethod_Kinematics,
    DynamicsGrpc::WithRawCallbackMethod_Echo, DynamicsGrpc::WithRawCallbackMethod_ContactDynamics,
    DynamicsGrpc::WithRawCallbackMethod_Impact, DynamicsGrpc::WithRawCallbackMethod_Simulate,
    DynamicsGrpc::WithRawCallbackMethod_Session>;

class DynamicsService final : public RawDynamicsService {
 public:
  DynamicsService(const Catalog& catalog, BatchRunner& runner, Metrics& metrics,
                  MemoryBudget& budget, const AccessControl& access, const RequestLimits& limits,
                  const std::atomic<bool>& ready);

  grpc::ServerUnaryReactor* InverseDynamics(grpc::CallbackServerContext* context,
                                            const grpc::ByteBuffer* request,
                                            grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ForwardDynamics(grpc::CallbackServerContext* context,
                                            const grpc::ByteBuffer* request,
                                            grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* MassMatrix(grpc::CallbackServerContext* context,
                                       const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* NonlinearEffects(grpc::CallbackServerContext* context,
                                             const grpc::ByteBuffer* request,
                                             grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Gravity(grpc::CallbackServerContext* context,
                                    const grpc::ByteBuffer* request,
                                    grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Kinematics(grpc::CallbackServerContext* context,
                                       const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* HybridDynamics(grpc::CallbackServerContext* context,
                                           const grpc::ByteBuffer* request,
                                           grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* FloatingBaseInverseDynamics(grpc::CallbackServerContext* context,
                                                        const grpc::ByteBuffer* request,
                                                        grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Derivatives(grpc::CallbackServerContext* context,
                                        const grpc::ByteBuffer* request,
                                        grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* CoriolisMatrix(grpc::CallbackServerContext* context,
                                           const grpc::ByteBuffer* request,
                                           grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Centroidal(grpc::CallbackServerContext* context,
                                       const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ConstrainedDynamics(grpc::CallbackServerContext* context,
                                                const grpc::ByteBuffer* request,
                                                grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Echo(grpc::CallbackServerContext* context,
                                 const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override;

  // Contacts (dynamics_service_contact.cpp).
  grpc::ServerUnaryReactor* ContactDynamics(grpc::CallbackServerContext* context,
                                            const grpc::ByteBuffer* request,
                                            grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Impact(grpc::CallbackServerContext* context,
                                   const grpc::ByteBuffer* request,
                                   grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Simulate(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override;

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Session(
      grpc::CallbackServerContext* context) override;

  // Echo's answer (unary and Session): RESOURCE_EXHAUSTED when response_values would exceed the
  // largest message, or when the answer does not fit the memory budget (else reserved in
  // `memory`).
  grpc::Status echo(const v1::EchoRequest& request, v1::EchoResponse* response,
                    Reservation& memory) const;

  // Ends every open Session (UNAVAILABLE once its pending messages are answered) and refuses new
  // ones: the first step of a graceful shutdown, since open streams would otherwise hold the
  // drain until its deadline.
  void drain();

  // What a batched request runs once it is checked and its response sized. `cost` is the work
  // of one state in units of one dynamics call (a Simulate trajectory costs its steps), for the
  // runner's inline and split decisions.
  struct BatchJob {
    Algorithm algorithm;
    ChunkKernel kernel;
    std::int64_t cost = 1;
  };

  // Every check of a batched request against the model `model_id` (the request's own model_id
  // is not read), then the response sized and the work on `states` states described in `job`;
  // `memory` holds the response's reservation. Shared by the unary RPCs and Session.
  template <typename Request, typename Response>
  grpc::Status prepare_batch(const std::string& model_id, const Request& request,
                             Response* response, int& states, BatchJob& job,
                             Reservation& memory) const {
    RegisteredModelPtr entry;
    grpc::Status status = prepare(model_id, request.batch_size(), request.q(), entry, states);
    if (status.ok()) status = plan(entry, states, &request, response, job, memory);
    if (status.ok()) status = check_workspace(*entry, job.algorithm);
    return status;
  }

  BatchRunner& runner() const { return runner_; }
  Metrics& metrics() const { return metrics_; }
  MemoryBudget& budget() const { return budget_; }

 private:
  friend class SessionReactor;

  // RESOURCE_EXHAUSTED when the workspace `algorithm` binds for the model would pass
  // --max-workspace-bytes, before anything is allocated for the call.
  grpc::Status check_workspace(const RegisteredModel& entry, Algorithm algorithm) const;

  // A response of `values` numbers: RESOURCE_EXHAUSTED past --max-message-bytes, or when the
  // response and its encoding, both held until the call ends, do not fit the memory budget; else
  // reserved in `memory`.
  grpc::Status reserve_response(std::int64_t values, Reservation& memory) const;

  // The checks every dynamics call starts with: server ready, known model, batch size, q.
  grpc::Status prepare(const std::string& model_id, std::uint32_t batch_size, const DoubleArray& q,
                       RegisteredModelPtr& model, int& states) const;

  // The rest of a batched call's checks, one overload per request type: the request's other
  // fields against the model, the response sized, and the work described in `job`.
  grpc::Status plan(const RegisteredModelPtr& entry, int n,
                    const v1::InverseDynamicsRequest* request,
                    v1::InverseDynamicsResponse* response, BatchJob& job,
                    Reservation& memory) const;
  grpc::Status plan(const RegisteredModelPtr& entry, int n,
                    const v1::ForwardDynamicsRequest* request,
                    v1::ForwardDynamicsResponse* response, BatchJob& job,
                    Reservation& memory) const;
  grpc::Status plan(const RegisteredModelPtr& entry, int n, const v1::MassMatrixRequest* request,
                    v1::MassMatrixResponse* response, BatchJob& job, Reservation& memory) const;
  grpc::Status plan(const RegisteredModelPtr& entry, int n,
                    const v1::NonlinearEffectsRequest* request,
                    v1::NonlinearEffectsResponse* response, BatchJob& job,
                    Reservation& memory) const;
  grpc::Status plan(const RegisteredModelPtr& entry, int n, const v1::GravityRequest* request,
                    v1::GravityResponse* response, BatchJob& job, Reservation& memory) const;
  grpc::Status plan(const RegisteredModelPtr& entry, int n, const v1::KinematicsRequest* request,
                    v1::KinematicsResponse* response, BatchJob& job, Reservation& memory) const;
  grpc::Status plan(const RegisteredModelPtr& entry, int n,
                    const v1::HybridDynamicsRequest* request, v1::HybridDynamicsResponse* response,
                    BatchJob& job, Reservation& memory) const;
  grpc::Status plan(const RegisteredModelPtr& entry, int n,
                    const v1::FloatingBaseInverseDynamicsRequest* request,
                    v1::FloatingBaseInverseDynamicsResponse* response, BatchJob& job,
                    Reservation& memory) const;
  grpc::Status plan(const RegisteredModelPtr& entry, int n, const v1::DerivativesRequest* request,
                    v1::DerivativesResponse* response, BatchJob& job, Reservation& memory) const;
  grpc::Status plan(const RegisteredModelPtr& entry, int n,
                    const v1::CoriolisMatrixRequest* request, v1::CoriolisMatrixResponse* response,
                    BatchJob& job, Reservation& memory) const;
  grpc::Status plan(const RegisteredModelPtr& entry, int n, const v1::CentroidalRequest* request,
                    v1::CentroidalResponse* response, BatchJob& job, Reservation& memory) const;
  grpc::Status plan(const RegisteredModelPtr& entry, int n,
                    const v1::ConstrainedDynamicsRequest* request,
                    v1::ConstrainedDynamicsResponse* response, BatchJob& job,
                    Reservation& memory) const;
  // Contacts (dynamics_service_contact.cpp).
  grpc::Status plan(const RegisteredModelPtr& entry, int n,
                    const v1::ContactDynamicsRequest* request,
                    v1::ContactDynamicsResponse* response, BatchJob& job,
                    Reservation& memory) const;
  grpc::Status plan(const RegisteredModelPtr& entry, int n, const v1::ImpactRequest* request,
                    v1::ImpactResponse* response, BatchJob& job, Reservation& memory) const;
  grpc::Status plan(const RegisteredModelPtr& entry, int n, const v1::SimulateRequest* request,
                    v1::SimulateResponse* response, BatchJob& job, Reservation& memory) const;

  // A unary batched call: the request decoded, prepare_batch(), then its work runs (inline or
  // across the workers) and the response is encoded; any non-OK status finishes the call with it.
  template <typename Request, typename Response>
  grpc::ServerUnaryReactor* serve_batch(grpc::CallbackServerContext* context, Method method,
                                        const grpc::ByteBuffer* request_bytes,
                                        grpc::ByteBuffer* response_bytes) {
    const Call call(context, method, metrics_, &budget_);
    // Owned by the completion below, which the runner always calls once; the work reads the
    // request and writes the response in place until then.
    struct Exchange {
      Request request;
      Response response;
    };
    auto exchange = std::make_shared<Exchange>();
    grpc::Status status = access_.check(*context, method);
    if (status.ok()) {
      status =
          call.reserve(decoded_bytes(*request_bytes, Request::descriptor()), "the decoded request");
    }
    if (status.ok()) status = decode(*request_bytes, "request", exchange->request);
    int states = 0;
    BatchJob job;
    Reservation response_memory;
    if (status.ok()) {
      status = prepare_batch(exchange->request.model_id(), exchange->request, &exchange->response,
                             states, job, response_memory);
    }
    call.hold(std::move(response_memory));
    if (!status.ok()) return call.finish(status);
    runner_.run(
        context, states, job.algorithm, std::move(job.kernel),
        [call, exchange, response_bytes, states](grpc::Status s) {
          if (s.ok()) s = check_results_finite(exchange->response, states);
          if (s.ok()) s = encode(exchange->response, response_bytes);
          call.finish(s);
        },
        job.cost);
    return call.reactor();
  }

  const Catalog& catalog_;
  BatchRunner& runner_;
  Metrics& metrics_;
  MemoryBudget& budget_;
  const AccessControl& access_;
  const RequestLimits limits_;
  const std::atomic<bool>& ready_;
  // Open Session streams, ended by drain().
  std::mutex sessions_mutex_;
  std::set<SessionReactor*> sessions_;
  bool draining_ = false;
};

}  // namespace torqued::server
