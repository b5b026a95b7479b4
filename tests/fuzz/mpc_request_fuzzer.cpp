// libFuzzer target: an Mpc stream's messages, read and solved in turn as the server's stream
// does (server/services/mpc_window.hpp) against the bundled models (deploy/models), in process
// and without a network. The input is a sequence of MpcRequests, each prefixed by its length as
// a varint (protobuf's delimited format), at most 8; each is decoded as the server decodes it,
// prepared against the stream's problem and last solution, and when it passes, solved on the
// fuzzing thread and committed. The problems, their updates, new problems, states, times, shifts
// and iteration counts are all fuzzed.
//
// A problem's model_id naming a bundled model ("quadruped", "puma560", ...) stands for that
// model's id. The limits are lowered further than solve_request_fuzzer's (12 knots, 4 iterations a
// message), since an input holds several solves. A solve may end in
// SingularSystemError or SolveOverflow (FAILED_PRECONDITION in the server, the stream unchanged);
// any other exception is a bug, since the server would answer it with INTERNAL.
#include <google/protobuf/io/coded_stream.h>
#include <grpcpp/impl/codegen/proto_utils.h>  // decode()'s SerializationTraits for messages
#include <grpcpp/support/byte_buffer.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "engine/algorithms/aba.hpp"
#include "server/services/mpc_window.hpp"
#include "server/transport/byte_buffers.hpp"
#include "tests/fuzz/bundled_catalog.hpp"

namespace torqued::server {
namespace {

constexpr int kMaxMessages = 8;

RequestLimits mpc_fuzzing_limits() {
  RequestLimits limits = control_fuzzing_limits();
  limits.max_ocp_knots = 12;
  limits.max_ocp_iterations = 4;
  return limits;
}

class Harness {
 public:
  void run(const std::uint8_t* data, std::size_t size) {
    google::protobuf::io::CodedInputStream input(data, static_cast<int>(size));
    MpcWindow window;
    const MpcWindow::FindModel find_model = [this](const std::string& id, const std::string&,
                                                   RegisteredModelPtr& entry) {
      entry = bundled_.catalog().find(bundled_.id_of(id));
      return entry ? grpc::Status::OK : grpc::Status(grpc::StatusCode::NOT_FOUND, "no model");
    };
    for (int m = 0; m < kMaxMessages; ++m) {
      std::uint32_t length = 0;
      std::string bytes;
      if (!input.ReadVarint32(&length) || !input.ReadString(&bytes, static_cast<int>(length))) {
        return;
      }
      grpc::Slice slice(bytes.data(), bytes.size());
      const grpc::ByteBuffer buffer(&slice, 1);
      v1::MpcRequest request;
      if (!decode(buffer, "message", request).ok()) continue;
      // A problem's unset iteration count (100 in the server) is read as the limit here.
      if (request.has_problem() && !request.problem().solver().has_max_iterations()) {
        request.mutable_problem()->mutable_solver()->set_max_iterations(
            static_cast<std::uint32_t>(limits_.max_ocp_iterations));
      }
      if (!window.prepare(planning_, find_model, 1, request).ok()) continue;
      v1::SolveResponse solution;
      SolveRemains remains;
      try {
        solve(window.plan(), bundled_.workspaces(), nullptr, 1, SolveLimit{}, solution, remains);
      } catch (const SingularSystemError&) {
        continue;
      } catch (const SolveOverflow&) {
        continue;
      }
      v1::MpcResponse response;
      window.commit(request, solution, response);
      if (!finite(response.u0()) || !finite(response.feedback0()) ||
          !std::isfinite(solution.cost())) {
        throw std::logic_error("a tick answered values that are not finite");
      }
    }
  }

 private:
  BundledCatalog bundled_;
  const RequestLimits limits_ = mpc_fuzzing_limits();
  const Planning planning_{limits_, bundled_.memory()};
};

}  // namespace
}  // namespace torqued::server

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static torqued::server::Harness harness;
  harness.run(data, size);
  return 0;
}
