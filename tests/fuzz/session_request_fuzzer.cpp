// libFuzzer target: a DynamicsService.Session message decoded from bytes as the server decodes it,
// dispatched as Session dispatches it (visit_session_request), checked and planned by the
// service's own prepare_batch() against the bundled models (deploy/models), and, when the
// request passes, computed by its planned kernel on a pooled workspace, then its results
// checked for finiteness: every request kind, its validation, and the engine on
// fuzzed-but-validated states, in process and without a network.
//
// Model ids are content hashes that no mutation would find, so a model_id naming a bundled model
// ("quadruped", "puma560", ...) stands for that model's id. The server's limits are lowered
// (batch, steps, iterations, contacts) so that every input is computed in milliseconds; the
// checks are the server's. A computation may end in SingularSystemError (FAILED_PRECONDITION) or
// WorkspaceLimitError (RESOURCE_EXHAUSTED) as in the server; any other exception is a bug, since
// the server would answer it with INTERNAL.
#include <grpcpp/impl/codegen/proto_utils.h>  // decode()'s SerializationTraits for messages
#include <grpcpp/support/byte_buffer.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>

#include "engine/algorithms/aba.hpp"
#include "server/app/server.hpp"
#include "server/compute/batch_runner.hpp"
#include "server/compute/executor.hpp"
#include "server/models/model_catalog.hpp"
#include "server/services/dynamics_service.hpp"
#include "server/services/session_stream.hpp"
#include "server/transport/access_tokens.hpp"
#include "tests/fuzz/bundled_catalog.hpp"

namespace torqued::server {
namespace {

RequestLimits fuzzing_limits() {
  RequestLimits limits = request_limits(Config{});
  limits.max_batch_states = 8;
  limits.max_message_bytes = 1 << 20;
  limits.max_workspace_bytes = 64 << 20;
  limits.max_constraint_rows = 64;
  limits.max_contacts = 8;
  limits.max_kinematics_frames = 64;
  limits.max_solver_iterations = 100;
  limits.max_simulation_steps = 50;
  return limits;
}

// The service with the bundled models registered, and no threads: the executor has no workers,
// and every kernel runs on the fuzzing thread.
class Harness {
 public:
  Harness()
      : executor_(0, 0, nullptr, nullptr),
        runner_(executor_, bundled_.workspaces(), bundled_.metrics(), 64, 16, 0),
        service_(bundled_.catalog(), runner_, bundled_.metrics(), bundled_.memory(), access_,
                 fuzzing_limits(), ready_) {}

  void run(const v1::SessionRequest& message) {
    v1::SessionResponse response;
    if (message.request_case() == v1::SessionRequest::kEcho) {
      Reservation memory;
      service_.echo(message.echo(), response.mutable_echo(), memory);
      return;
    }
    visit_session_request(message, response, [&](auto, const auto& request, auto* result) {
      compute(request.model_id().empty() ? message.model_id() : request.model_id(), request,
              result);
    });
  }

 private:
  template <typename Request, typename Response>
  void compute(const std::string& model, const Request& request, Response* response) {
    int states = 0;
    PlannedWork job;
    Reservation memory;
    if (!service_.prepare_batch(bundled_.id_of(model), request, response, states, job, memory)
             .ok()) {
      return;
    }
    try {
      WorkerContext worker(bundled_.workspaces(), Interruption{}, job.algorithm.workspaces);
      job.kernel(worker, 0, states);
    } catch (const SingularSystemError&) {
      return;
    } catch (const WorkspaceLimitError&) {
      return;
    }
    check_results_finite(*response, states);
  }

  BundledCatalog bundled_;
  Executor executor_;
  BatchRunner runner_;
  const std::atomic<bool> ready_{true};
  AccessControl access_;  // every call open
  DynamicsService service_;
};

}  // namespace
}  // namespace torqued::server

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static torqued::server::Harness harness;
  grpc::Slice slice(data, size);
  const grpc::ByteBuffer bytes(&slice, 1);
  torqued::v1::SessionRequest message;
  if (torqued::server::decode(bytes, "message 1", message).ok()) harness.run(message);
  return 0;
}
