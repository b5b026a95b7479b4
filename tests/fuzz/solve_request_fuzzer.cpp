// libFuzzer target: a ControlService.SolveRequest decoded from bytes as the server decodes it,
// checked and read by the service's own plan (plan_solve) against the bundled models
// (deploy/models), and, when it passes, solved by the service's solver (control_solver.hpp) on
// the fuzzing thread, then its answer checked for finiteness: the problem's validation, every
// residual and activation, and FDDP on fuzzed-but-validated problems, in process and without a
// network.
//
// Model ids are content hashes that no mutation would find, so a model_id naming a bundled model
// ("quadruped", "puma560", ...) stands for that model's id. The limits are lowered (knots,
// iterations, terms) so that every input is solved in milliseconds. A solve may end in
// SingularSystemError or SolveOverflow (FAILED_PRECONDITION in the server); any other exception
// is a bug, since the server would answer it with INTERNAL.
#include <grpcpp/impl/codegen/proto_utils.h>  // decode()'s SerializationTraits for messages
#include <grpcpp/support/byte_buffer.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "engine/algorithms/aba.hpp"
#include "server/services/control_plan.hpp"
#include "server/transport/byte_buffers.hpp"
#include "tests/fuzz/bundled_catalog.hpp"

namespace torqued::server {
namespace {

// The bundled models registered, and the plan's limits and budget.
class Harness {
 public:
  void run(const v1::SolveRequest& request) {
    const RegisteredModelPtr entry = bundled_.catalog().find(bundled_.id_of(request.model_id()));
    if (!entry) return;
    PlannedSolve plan;
    Reservation memory;
    if (!plan_solve(planning_, entry, request, 1, plan, memory).ok()) return;
    v1::SolveResponse response;
    try {
      SolveRemains remains;
      solve(plan, bundled_.workspaces(), nullptr, 1, SolveLimit{}, response, remains);
    } catch (const SingularSystemError&) {
      return;
    } catch (const SolveOverflow&) {
      return;
    }
    if (!finite(response.q()) || !finite(response.v()) || !finite(response.u()) ||
        !std::isfinite(response.cost())) {
      throw std::logic_error("a solve answered values that are not finite");
    }
  }

 private:
  BundledCatalog bundled_;
  const RequestLimits limits_ = control_fuzzing_limits();
  const Planning planning_{limits_, bundled_.memory()};
};

}  // namespace
}  // namespace torqued::server

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static torqued::server::Harness harness;
  grpc::Slice slice(data, size);
  const grpc::ByteBuffer bytes(&slice, 1);
  torqued::v1::SolveRequest request;
  if (torqued::server::decode(bytes, "request", request).ok()) harness.run(request);
  return 0;
}
