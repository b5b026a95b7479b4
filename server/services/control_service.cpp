// ControlService's registration and handler (see control_service.hpp).
#include "server/services/control_service.hpp"

#include <grpcpp/impl/codegen/server_callback_handlers.h>

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "engine/algorithms/interruption.hpp"
#include "server/base/wire_counts.hpp"
#include "server/compute/batch_runner.hpp"
#include "server/services/control_plan.hpp"
#include "server/services/mpc_stream.hpp"
#include "server/services/request_checks.hpp"
#include "server/transport/byte_buffers.hpp"
#include "server/transport/unary_call.hpp"

namespace torqued::server {
namespace {

using UnaryHandler = grpc::internal::CallbackUnaryHandler<grpc::ByteBuffer, grpc::ByteBuffer>;
using BidiHandler = grpc::internal::CallbackBidiHandler<grpc::ByteBuffer, grpc::ByteBuffer>;

const google::protobuf::ServiceDescriptor& control_service_descriptor() {
  return *v1::SolveRequest::descriptor()->file()->FindServiceByName("ControlService");
}

// When the solve's time budget ends, and when its answer must be complete: the deadline less a
// margin to send it, a tenth of the time left when the solve starts, at most 1 s. Completing a
// 1,000-knot answer and sending it took some 40 ms under ThreadSanitizer on an idle machine, but
// the margin must also hold what neither side controls when processes crowd the CPUs: there, the
// server once saw a client's deadline 600 ms later than the client did, and a starved client's
// deadline timer fired before it read an answer sent 300 ms early. A tenth keeps a short deadline's
// margin short.
void time_limits(const grpc::CallbackServerContext& context, double max_seconds,
                 SolveLimit& limit) {
  using std::chrono::steady_clock;
  const steady_clock::time_point now = steady_clock::now();
  if (max_seconds > 0) {
    limit.budget_end = now + std::chrono::duration_cast<steady_clock::duration>(
                                 std::chrono::duration<double>(std::min(max_seconds, 1e9)));
  }
  const auto deadline = deadline_of(context);
  if (deadline != std::chrono::system_clock::time_point::max()) {
    const auto left = std::chrono::duration_cast<steady_clock::duration>(
        deadline - std::chrono::system_clock::now());
    const auto margin = std::min<steady_clock::duration>(left / 10, std::chrono::seconds(1));
    limit.answer_by = now + left - margin;
  }
}

}  // namespace

std::vector<std::string> ControlService::algorithm_names() {
  return {std::string(kFddp.name), std::string(kBoxFddp.name)};
}

ControlService::ControlService(const ModelCatalog& catalog, Executor& executor,
                               WorkspacePool& workspaces, Metrics& metrics, MemoryBudget& budget,
                               const AccessControl& access, const RequestLimits& limits,
                               double max_call_seconds, const std::atomic<bool>& ready)
    : catalog_(catalog),
      executor_(executor),
      workspaces_(workspaces),
      metrics_(metrics),
      budget_(budget),
      access_(access),
      limits_(limits),
      max_call_seconds_(max_call_seconds),
      ready_(ready),
      solve_method_(method_id(control_service_descriptor().full_name(), "Solve")),
      mpc_method_(method_id(control_service_descriptor().full_name(), "Mpc")) {
  const google::protobuf::ServiceDescriptor& service = control_service_descriptor();
  const google::protobuf::MethodDescriptor& solve = *service.FindMethodByName("Solve");
  MarkMethodRawCallback(solve.index(), new UnaryHandler([this](grpc::CallbackServerContext* context,
                                                               const grpc::ByteBuffer* request,
                                                               grpc::ByteBuffer* response) {
                          return serve_solve(context, request, response);
                        }));
  const google::protobuf::MethodDescriptor& mpc = *service.FindMethodByName("Mpc");
  MarkMethodRawCallback(mpc.index(), new BidiHandler([this](grpc::CallbackServerContext* context) {
                          return open_mpc(context);
                        }));
  for (int m = 0; m < service.method_count(); ++m) {
    if (service.method(m) != &solve && service.method(m) != &mpc) {
      throw std::logic_error(service.method(m)->full_name() +
                             " has no handler in server/services/control_service.cpp");
    }
  }
}

grpc::ServerUnaryReactor* ControlService::serve_solve(grpc::CallbackServerContext* context,
                                                      const grpc::ByteBuffer* request_bytes,
                                                      grpc::ByteBuffer* response_bytes) {
  const UnaryCall call(context, solve_method_, metrics_, &budget_);
  struct Exchange {
    v1::SolveRequest request;
    v1::SolveResponse response;
    PlannedSolve plan;
    // The request's checks and plan, counted in the solve's compute time; the wait for a worker
    // is not.
    std::chrono::steady_clock::duration planning{};
    // Freed with the exchange, after the answer is sent.
    SolveRemains remains;
  };
  auto exchange = std::make_shared<Exchange>();
  grpc::Status status = access_.check(*context, solve_method_);
  if (status.ok()) {
    status = call.reserve(decoded_bytes(*request_bytes, v1::SolveRequest::descriptor()),
                          "the decoded request");
  }
  if (status.ok()) status = decode(*request_bytes, "request", exchange->request);
  RegisteredModelPtr entry;
  if (status.ok()) status = find_model(exchange->request.model_id(), "model_id", entry);
  if (!status.ok()) return call.finish(status);
  CallTask task = [this, call, exchange, response_bytes] {
    const grpc::Status status = solve_in_call(*call.context(), exchange->plan, exchange->planning,
                                              exchange->response, exchange->remains);
    return status.ok() ? encode(exchange->response, response_bytes) : status;
  };
  // When the call would start at once, a worker is woken before the plan, which it waits for;
  // else a request that fails its checks is answered here, without waiting for a worker.
  const std::string peer = client_address(*context);
  std::shared_ptr<PendingInput> pending;
  if (executor_.starts_at_once(peer)) {
    pending = std::make_shared<PendingInput>();
    if (!run_call_task(executor_, peer, call, std::move(task), pending)) {
      return call.reactor();
    }
  }
  Reservation memory;
  const std::chrono::steady_clock::time_point planning_start = std::chrono::steady_clock::now();
  status =
      plan_solve(planning_, entry, exchange->request, executor_.workers(), exchange->plan, memory);
  exchange->planning = std::chrono::steady_clock::now() - planning_start;
  call.hold(std::move(memory));
  if (pending) {
    pending->open(status);
    return call.reactor();
  }
  if (!status.ok()) return call.finish(status);
  run_call_task(executor_, peer, call, std::move(task));
  return call.reactor();
}

grpc::Status ControlService::find_model(const std::string& id, const std::string& field,
                                        RegisteredModelPtr& entry) const {
  if (!ready_.load(std::memory_order_acquire)) {
    return {grpc::StatusCode::UNAVAILABLE, "the server is still loading its models; retry shortly"};
  }
  entry = catalog_.find(id);
  if (!entry) {
    return {grpc::StatusCode::NOT_FOUND,
            field + ": no model " + quote_input(id) + " on this server (register it first)"};
  }
  return grpc::Status::OK;
}

grpc::Status ControlService::solve_in_call(grpc::CallbackServerContext& context,
                                           const PlannedSolve& plan,
                                           std::chrono::steady_clock::duration planning,
                                           v1::SolveResponse& response, SolveRemains& remains) {
  const CallLimit limit = call_limit(&context, max_call_seconds_);
  SolveLimit solve_limit{&call_should_stop, &limit};
  time_limits(context, plan.max_seconds, solve_limit);
  const Algorithm algorithm = plan.dynamics.control_bounds.lower.size() > 0 ? kBoxFddp : kFddp;
  const Clock::time_point start = metrics_.start();
  try {
    solve(plan, workspaces_, &executor_, executor_.workers(), solve_limit, response, remains);
  } catch (const SingularSystemError& e) {
    return {grpc::StatusCode::FAILED_PRECONDITION, e.what()};
  } catch (const SolveOverflow& e) {
    return {grpc::StatusCode::FAILED_PRECONDITION, e.what()};
  } catch (const Interrupted&) {
    const grpc::Status alive = check_alive(limit);
    return alive.ok() ? grpc::Status(grpc::StatusCode::CANCELLED, "the call was cancelled") : alive;
  } catch (const WorkspaceLimitError& e) {
    return {grpc::StatusCode::RESOURCE_EXHAUSTED, e.what()};
  } catch (const std::bad_alloc&) {
    return {grpc::StatusCode::RESOURCE_EXHAUSTED,
            "the server could not allocate the memory this call needs"};
  }
  metrics_.compute(algorithm.name, start - planning);
  response.set_solve_seconds(response.solve_seconds() +
                             std::chrono::duration<double>(planning).count());
  return grpc::Status::OK;
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* ControlService::open_mpc(
    grpc::CallbackServerContext* context) {
  std::lock_guard lock(streams_mutex_);
  auto* stream = new MpcReactor(*this, context, access_.check(*context, mpc_method_));
  streams_.insert(stream);
  if (draining_) stream->drain();
  return stream;
}

void ControlService::drain() {
  std::lock_guard lock(streams_mutex_);
  draining_ = true;
  for (MpcReactor* stream : streams_) stream->drain();
}

}  // namespace torqued::server
