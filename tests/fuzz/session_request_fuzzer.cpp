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

std::filesystem::path make_store_directory() {
  std::string pattern =
      (std::filesystem::temp_directory_path() / "torqued-fuzz-store-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return pattern;
}

// The service with the bundled models registered, and no threads: the executor has no workers,
// and every kernel runs on the fuzzing thread.
class Harness {
 public:
  Harness()
      : store_directory_(make_store_directory()),
        store_(store_directory_, Config{}.max_model_bytes),
        memory_(std::size_t{1} << 30),
        workspaces_(64 << 20, 64 << 20, memory_),
        catalog_(store_, model_limits(Config{}), metrics_, workspaces_),
        executor_(0, 0, nullptr, nullptr),
        runner_(executor_, workspaces_, metrics_, 64, 16, 0),
        service_(catalog_, runner_, metrics_, memory_, access_, fuzzing_limits(), ready_) {
    spdlog::set_level(spdlog::level::warn);
    if (catalog_.load_repository(TORQUED_REPOSITORY_DIR) == 0) {
      throw std::runtime_error("no bundled model in " TORQUED_REPOSITORY_DIR);
    }
    for (const RegisteredModelPtr& entry : catalog_.list()) ids_[entry->layout.name()] = entry->id;
  }
  ~Harness() {
    std::error_code ignored;
    std::filesystem::remove_all(store_directory_, ignored);
  }

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
    const auto named = ids_.find(model);
    int states = 0;
    PlannedWork job;
    Reservation memory;
    if (!service_
             .prepare_batch(named == ids_.end() ? model : named->second, request, response, states,
                            job, memory)
             .ok()) {
      return;
    }
    try {
      WorkerContext worker(workspaces_, Interruption{}, job.algorithm.workspaces);
      job.kernel(worker, 0, states);
    } catch (const SingularSystemError&) {
      return;
    } catch (const WorkspaceLimitError&) {
      return;
    }
    check_results_finite(*response, states);
  }

  const std::filesystem::path store_directory_;
  ModelStore store_;
  Metrics metrics_;
  MemoryBudget memory_;
  WorkspacePool workspaces_;
  ModelCatalog catalog_;
  Executor executor_;
  BatchRunner runner_;
  const std::atomic<bool> ready_{true};
  AccessControl access_;  // every call open
  DynamicsService service_;
  std::map<std::string, std::string> ids_;  // bundled model name -> id
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
