// torqued.v1.DynamicsService on the callback API. Its batched methods come from the table of
// dynamics_rpcs.hpp: each is registered raw (requests are decoded here, so that one that does not
// decode is INVALID_ARGUMENT saying what could not be read), checked against its model, planned
// (its row's plan) and run by the batch runner, inline when small, else across the executor's
// workers. Echo answers inline. Session (session_stream.hpp) serves the same requests on a stream.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>

#include "server/base/memory_budget.hpp"
#include "server/base/rpc_methods.hpp"
#include "server/base/wire_counts.hpp"
#include "server/compute/batch_runner.hpp"
#include "server/models/model_catalog.hpp"
#include "server/services/dynamics_plans.hpp"
#include "server/services/dynamics_rpcs.hpp"
#include "server/services/request_checks.hpp"
#include "server/transport/access_tokens.hpp"
#include "server/transport/byte_buffers.hpp"
#include "torqued/v1/dynamics.grpc.pb.h"

namespace torqued::server {

class SessionReactor;

class DynamicsService final : public v1::DynamicsService::Service {
 public:
  // Registers every method of the service: the table's rows, Echo and Session. Throws
  // std::logic_error naming a method of the service's descriptor that nothing serves.
  DynamicsService(const ModelCatalog& catalog, BatchRunner& runner, Metrics& metrics,
                  MemoryBudget& budget, const AccessControl& access, const RequestLimits& limits,
                  const std::atomic<bool>& ready);
  // gRPC's shutdown waited for every stream's OnDone, in its own uninstrumented code; taking the
  // lock orders the last stream's removal before the set's destruction where ThreadSanitizer
  // sees it.
  ~DynamicsService() override { std::lock_guard lock(sessions_mutex_); }

  // Echo's answer (unary and Session): RESOURCE_EXHAUSTED when it would exceed the largest
  // message, or when it does not fit the memory budget (else reserved in `memory`).
  grpc::Status echo(const v1::EchoRequest& request, v1::EchoResponse* response,
                    Reservation& memory) const;

  // Ends every open Session (UNAVAILABLE once its pending messages are answered) and refuses new
  // ones: the first step of a graceful shutdown, since open streams would otherwise hold the
  // drain until its deadline.
  void drain();

  // Every check of a batched request against the model `model_id` (the request's own model_id
  // is not read), then the response sized and the work on `states` states described in `work`;
  // `memory` holds the response's reservation. Shared by the unary RPCs and Session.
  template <typename Request, typename Response>
  grpc::Status prepare_batch(const std::string& model_id, const Request& request,
                             Response* response, int& states, PlannedWork& work,
                             Reservation& memory) const {
    RegisteredModelPtr entry;
    grpc::Status status = prepare(model_id, request.batch_size(), request.q(), entry, states);
    if (status.ok()) {
      status =
          BatchRpcTaking<Request>::plan(planning_, entry, states, &request, response, work, memory);
    }
    if (status.ok()) status = check_workspace(*entry, work.algorithm);
    return status;
  }

  BatchRunner& runner() const { return runner_; }
  Metrics& metrics() const { return metrics_; }
  MemoryBudget& budget() const { return budget_; }
  // The method that takes requests of type `request`.
  static MethodId method_of(const google::protobuf::Descriptor& request);

 private:
  friend class SessionReactor;

  // The checks every dynamics call starts with: server ready, known model, batch size, q.
  grpc::Status prepare(const std::string& model_id, std::uint32_t batch_size, const DoubleArray& q,
                       RegisteredModelPtr& model, int& states) const;
  // RESOURCE_EXHAUSTED when the workspace `algorithm` binds for the model would pass
  // --max-workspace-bytes, before anything is allocated for the call.
  grpc::Status check_workspace(const RegisteredModel& entry, Algorithm algorithm) const;

  // A unary batched call: the request decoded, prepare_batch(), then its work runs (inline or
  // across the workers) and the response is encoded; any non-OK status finishes the call with it.
  template <typename Request, typename Response>
  grpc::ServerUnaryReactor* serve_batch(grpc::CallbackServerContext* context, MethodId method,
                                        const grpc::ByteBuffer* request_bytes,
                                        grpc::ByteBuffer* response_bytes);
  grpc::ServerUnaryReactor* serve_echo(grpc::CallbackServerContext* context,
                                       const grpc::ByteBuffer* request_bytes,
                                       grpc::ByteBuffer* response_bytes);
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* open_session(
      grpc::CallbackServerContext* context);

  const ModelCatalog& catalog_;
  BatchRunner& runner_;
  Metrics& metrics_;
  MemoryBudget& budget_;
  const AccessControl& access_;
  const RequestLimits limits_;
  const Planning planning_{limits_, budget_};
  const std::atomic<bool>& ready_;
  const MethodId echo_method_;
  const MethodId session_method_;
  // Open Session streams, ended by drain().
  std::mutex sessions_mutex_;
  std::set<SessionReactor*> sessions_;
  bool draining_ = false;
};

template <typename Request, typename Response>
grpc::ServerUnaryReactor* DynamicsService::serve_batch(grpc::CallbackServerContext* context,
                                                       MethodId method,
                                                       const grpc::ByteBuffer* request_bytes,
                                                       grpc::ByteBuffer* response_bytes) {
  const UnaryCall call(context, method, metrics_, &budget_);
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
  PlannedWork work;
  Reservation response_memory;
  if (status.ok()) {
    status = prepare_batch(exchange->request.model_id(), exchange->request, &exchange->response,
                           states, work, response_memory);
  }
  call.hold(std::move(response_memory));
  if (!status.ok()) return call.finish(status);
  runner_.run(
      context, states, work.algorithm, std::move(work.kernel),
      [call, exchange, response_bytes, states](grpc::Status s) {
        if (s.ok()) s = check_results_finite(exchange->response, states);
        if (s.ok()) s = encode(exchange->response, response_bytes);
        call.finish(s);
      },
      work.cost);
  return call.reactor();
}

}  // namespace torqued::server
