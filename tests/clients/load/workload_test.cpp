// Tests torqued-load against a real torqued on loopback.
// - Its workloads (clients/cpp/load/workload.cpp): models are found by name, the numbers of a real
//   answer are counted, --echo's requests carry the real call's payload and ask for an answer of
//   the real call's size, and every batched method of DynamicsService, from its descriptor, gets
//   requests the server answers, unary and in a Session, with the state fields filled by name.
//   Solve sends its built-in problem from random starts, or the problem of a file, its model
//   named by name there; Mpc streams state those problems, then tick from their starts.
// - Its drivers (clients/cpp/load/driver.cpp), through the binary in each of its modes: unary
//   calls and Session streams, closed and open loop, on the callback API and on completion queues.
//   Every call of a run is answered OK and counted once. In the TSan stage the binary is built
//   with ThreadSanitizer and exits non-zero on a report: the callback Session driver once parsed
//   each answer in gRPC's completion of its read, on whichever gRPC thread ran it, which with 4
//   streams of 2 messages in flight was reported as a race in most runs of 200 calls. Solve runs
//   closed loop with more calls in flight than requests in its pool (a problem from a file is
//   one request): each call's request is the pool's next, never past its end. Mpc's ticks are
//   calls, its problems' solves are not; the driver once rewrote a tick in place outside the lock
//   its write's serialization was under, which ThreadSanitizer reported in 6 of 10 runs of the
//   Mpc runs below beside two CPU-bound processes.
#include "clients/cpp/load/workload.hpp"

#include <google/protobuf/reflection.h>
#include <grpcpp/support/proto_buffer_reader.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "tests/server/server_process.hpp"

namespace torqued::testing {
namespace {

class WorkloadTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    server_ = new ServerProcess({dir_->path() / "data", repository_dir(), false, {}});
  }
  static void TearDownTestSuite() {
    delete server_;
    delete dir_;
  }
  static v1::Model puma() {
    return load::resolve_model(server_->channel(), {"puma560", "", false});
  }
  // A floating base: a quaternion in q, nq != nv, and FloatingBaseInverseDynamics answers.
  static v1::Model quadruped() {
    return load::resolve_model(server_->channel(), {"quadruped", "", false});
  }

  static inline TempDir* dir_ = nullptr;
  static inline ServerProcess* server_ = nullptr;
};

TEST_F(WorkloadTest, ModelsAreFoundByName) {
  const v1::Model model = puma();
  EXPECT_EQ(model.name(), "puma560");
  EXPECT_EQ(model.nv(), 6);
  EXPECT_THROW(load::resolve_model(server_->channel(), {"no_such_model", "", false}),
               std::runtime_error);
}

TEST_F(WorkloadTest, RealAnswersAreCounted) {
  const v1::Model model = puma();
  load::WorkloadSpec spec;
  spec.rpc = "InverseDynamics";
  spec.batch = 3;
  EXPECT_EQ(load::real_response_values(server_->channel(), model, spec), 3u * 6);  // τ
  spec.rpc = "MassMatrix";
  spec.batch = 2;
  EXPECT_EQ(load::real_response_values(server_->channel(), model, spec), 2u * 36);  // M
}

TEST_F(WorkloadTest, EchoCarriesTheRealPayloadAndAsksForTheRealAnswerSize) {
  const v1::Model model = puma();
  load::WorkloadSpec spec;
  spec.rpc = "InverseDynamics";
  spec.batch = 3;
  spec.pool = 2;
  spec.echo = true;
  spec.echo_response_values = load::real_response_values(server_->channel(), model, spec);
  const load::Workload workload = load::make_workload(model, spec);
  EXPECT_EQ(workload.method, "/torqued.v1.DynamicsService/Echo");
  ASSERT_EQ(workload.unary_requests.size(), 2u);

  grpc::ByteBuffer buffer = workload.unary_requests.front();
  v1::EchoRequest request;
  ASSERT_TRUE(
      (grpc::GenericDeserialize<grpc::ProtoBufferReader, v1::EchoRequest>(&buffer, &request)).ok());
  EXPECT_EQ(request.payload(), model.id());
  EXPECT_EQ(request.values_size(), 3 * (6 + 6 + 6));  // q, v and a of 3 states
  EXPECT_EQ(request.response_values(), 18u);

  grpc::ClientContext context;
  context.set_deadline(deadline_in(30));
  v1::EchoResponse response;
  ASSERT_TRUE(server_->dynamics()->Echo(&context, request, &response).ok());
  EXPECT_EQ(response.values_size(), 18);
  EXPECT_EQ(workload.session_requests.front().echo().response_values(), 18u);
}

const google::protobuf::ServiceDescriptor& dynamics_service() {
  return *v1::SessionRequest::descriptor()->file()->FindServiceByName("DynamicsService");
}

bool batched(const google::protobuf::MethodDescriptor& method) {
  return !method.client_streaming() && method.input_type()->FindFieldByName("model_id") &&
         method.input_type()->FindFieldByName("batch_size");
}

std::unique_ptr<google::protobuf::Message> parse(const google::protobuf::Message& prototype,
                                                 grpc::ByteBuffer buffer) {
  std::unique_ptr<google::protobuf::Message> message(prototype.New());
  EXPECT_TRUE((grpc::GenericDeserialize<grpc::ProtoBufferReader, google::protobuf::Message>(
                   &buffer, message.get()))
                  .ok());
  return message;
}

// The number that says which oneof member of `message` (SessionRequest or SessionResponse) of
// message type `type` is set; 0 when it has none of that type.
int field_number_of_type(const google::protobuf::Descriptor& message,
                         const google::protobuf::Descriptor& type) {
  for (int i = 0; i < message.field_count(); ++i) {
    if (message.field(i)->message_type() == &type) return message.field(i)->number();
  }
  return 0;
}

// A new batched method of the service runs under torqued-load with no code of its own: every one
// the descriptor has gets requests the server answers OK, as unary calls and on a Session.
TEST_F(WorkloadTest, EveryBatchedMethodOfTheDescriptorIsAnswered) {
  const v1::Model model = quadruped();
  const std::vector<std::string>& known = load::known_rpcs();
  int methods = 0;
  for (int m = 0; m < dynamics_service().method_count(); ++m) {
    const google::protobuf::MethodDescriptor& method = *dynamics_service().method(m);
    load::WorkloadSpec spec;
    spec.rpc = method.name();
    spec.batch = 3;
    spec.pool = 2;
    if (!batched(method)) {
      EXPECT_EQ(std::count(known.begin(), known.end(), method.name()), 0) << method.name();
      EXPECT_THROW(load::make_workload(model, spec), std::runtime_error) << method.name();
      continue;
    }
    ++methods;
    EXPECT_EQ(std::count(known.begin(), known.end(), method.name()), 1) << method.name();
    const load::Workload workload = load::make_workload(model, spec);
    EXPECT_EQ(workload.method, "/torqued.v1.DynamicsService/" + method.name());
    EXPECT_EQ(workload.response_prototype->GetDescriptor(), method.output_type());
    ASSERT_EQ(workload.unary_requests.size(), 2u);

    grpc::ByteBuffer answer;
    const grpc::Status status = load::call_raw(
        server_->channel(), workload.method, workload.unary_requests[1], &answer, deadline_in(60));
    ASSERT_TRUE(status.ok()) << method.name() << ": " << status.error_message();
    const auto response = parse(*workload.response_prototype, answer);
    const google::protobuf::FieldDescriptor* states =
        method.output_type()->FindFieldByName("batch_size");
    ASSERT_NE(states, nullptr) << method.name();
    EXPECT_EQ(response->GetReflection()->GetUInt32(*response, states), 3u) << method.name();

    // On a Session the stream carries the model, set on its first message.
    grpc::ClientContext context;
    context.set_deadline(deadline_in(60));
    auto stream = server_->dynamics()->Session(&context);
    v1::SessionRequest first = workload.session_requests[0];
    first.set_model_id(model.id());
    ASSERT_TRUE(stream->Write(first));
    ASSERT_TRUE(stream->Write(workload.session_requests[1]));
    ASSERT_TRUE(stream->WritesDone());
    for (int k = 0; k < 2; ++k) {
      v1::SessionResponse reply;
      ASSERT_TRUE(stream->Read(&reply)) << method.name();
      EXPECT_EQ(reply.status().code(), 0) << method.name() << ": " << reply.status().message();
      EXPECT_EQ(reply.response_case(),
                field_number_of_type(*v1::SessionResponse::descriptor(), *method.output_type()))
          << method.name();
    }
    EXPECT_TRUE(stream->Finish().ok()) << method.name();
  }
  // Then every method of ControlService (Solve, Mpc), which no Session message carries.
  const google::protobuf::ServiceDescriptor& control =
      *v1::SolveRequest::descriptor()->file()->FindServiceByName("ControlService");
  ASSERT_EQ(static_cast<std::size_t>(methods + control.method_count()), known.size());
  for (int m = 0; m < control.method_count(); ++m) {
    EXPECT_EQ(known[methods + m], control.method(m)->name());
  }
}

// The example problem of the docs: the bundled arm's reach (clients/cpp/examples), its model named
// by name. The repository's root is two levels above its model repository (deploy/models).
const std::string kReachProblem =
    (std::filesystem::path(repository_dir()).parent_path().parent_path() /
     "clients/cpp/examples/puma560_reach.json")
        .string();

v1::SolveRequest parse_solve_request(grpc::ByteBuffer buffer) {
  v1::SolveRequest request;
  EXPECT_TRUE(
      (grpc::GenericDeserialize<grpc::ProtoBufferReader, v1::SolveRequest>(&buffer, &request))
          .ok());
  return request;
}

// Solve's built-in problem: a random start per request (a valid configuration, velocities in
// [-1, 1]) towards rest, over the knots and step of SolveRequest's `example` options, which the
// server solves; it has no Session messages and one problem per call.
TEST_F(WorkloadTest, SolveSendsABuiltInProblemFromRandomStarts) {
  const v1::Model model = quadruped();
  load::WorkloadSpec spec;
  spec.rpc = "Solve";
  spec.pool = 3;
  const load::Workload workload = load::make_workload(model, spec);
  EXPECT_EQ(workload.method, "/torqued.v1.ControlService/Solve");
  EXPECT_EQ(workload.response_prototype->GetDescriptor(), v1::SolveResponse::descriptor());
  EXPECT_TRUE(workload.session_requests.empty());
  ASSERT_EQ(workload.unary_requests.size(), 3u);
  std::set<double> first_coordinates;
  for (const grpc::ByteBuffer& buffer : workload.unary_requests) {
    const v1::SolveRequest request = parse_solve_request(buffer);
    EXPECT_EQ(request.model_id(), model.id());
    EXPECT_EQ(request.knots(), 10u);
    EXPECT_EQ(request.dt(), 0.01);
    ASSERT_EQ(request.q0_size(), 19);
    ASSERT_EQ(request.v0_size(), 18);
    double norm = 0.0;  // the free-flyer's quaternion, q0[3..6]
    for (int k = 3; k < 7; ++k) norm += request.q0(k) * request.q0(k);
    EXPECT_NEAR(norm, 1.0, 1e-12);
    for (const double v : request.v0()) EXPECT_LE(std::abs(v), 1.0);
    first_coordinates.insert(request.q0(0));
    ASSERT_EQ(request.running_costs_size(), 2);
    EXPECT_EQ(request.running_costs(1).residual().type(), v1::RESIDUAL_TYPE_CONTROL);
    ASSERT_EQ(request.terminal_costs_size(), 1);
    EXPECT_EQ(request.terminal_costs(0).weight(), 100.0);

    grpc::ByteBuffer answer;
    const grpc::Status status =
        load::call_raw(server_->channel(), workload.method, buffer, &answer, deadline_in(60));
    ASSERT_TRUE(status.ok()) << status.error_message();
    const auto response = parse(*workload.response_prototype, answer);
    const auto& solution = static_cast<const v1::SolveResponse&>(*response);
    EXPECT_EQ(solution.stop_reason(), v1::STOP_REASON_CONVERGED);
    ASSERT_EQ(solution.q_size(), 11 * 19);
    EXPECT_EQ(solution.q(0), request.q0(0));
    EXPECT_LT(solution.cost(), solution.iterations(0).cost());
  }
  EXPECT_EQ(first_coordinates.size(), 3u) << "three starts";

  spec.batch = 2;
  EXPECT_THROW(load::make_workload(model, spec), std::runtime_error);
}

// --solve-request's problem is one request, sent as the file has it but for its model_id, the
// model's id where the file names it by name; with --echo its numbers, nested ones included, go
// out in an Echo that asks for as many numbers as Solve answers with.
TEST_F(WorkloadTest, SolveSendsTheProblemOfAFile) {
  const v1::SolveRequest problem = load::read_solve_request(kReachProblem);
  EXPECT_EQ(problem.model_id(), "puma560");
  const v1::Model model = load::resolve_model(server_->channel(), {problem.model_id(), "", false});
  load::WorkloadSpec spec;
  spec.rpc = "Solve";
  spec.solve_request = problem;
  const load::Workload workload = load::make_workload(model, spec);
  ASSERT_EQ(workload.unary_requests.size(), 1u);
  v1::SolveRequest sent = parse_solve_request(workload.unary_requests[0]);
  EXPECT_EQ(sent.model_id(), model.id());
  sent.set_model_id(problem.model_id());
  EXPECT_EQ(sent.SerializeAsString(), problem.SerializeAsString());
  grpc::ByteBuffer answer;
  const grpc::Status status = load::call_raw(server_->channel(), workload.method,
                                             workload.unary_requests[0], &answer, deadline_in(60));
  ASSERT_TRUE(status.ok()) << status.error_message();
  v1::SolveResponse solution;
  ASSERT_TRUE(
      (grpc::GenericDeserialize<grpc::ProtoBufferReader, v1::SolveResponse>(&answer, &solution))
          .ok());
  EXPECT_EQ(solution.stop_reason(), v1::STOP_REASON_CONVERGED);
  EXPECT_EQ(solution.cost_terms_size(), 5);

  spec.echo = true;
  spec.echo_response_values = load::real_response_values(server_->channel(), model, spec);
  // The answer's arrays: q and v of 41 states and u of 40, 6 DOFs.
  EXPECT_EQ(spec.echo_response_values, 41u * 12 + 40 * 6);
  const load::Workload echo = load::make_workload(model, spec);
  EXPECT_EQ(echo.method, "/torqued.v1.DynamicsService/Echo");
  ASSERT_EQ(echo.session_requests.size(), 1u);
  grpc::ByteBuffer buffer = echo.unary_requests[0];
  v1::EchoRequest request;
  ASSERT_TRUE(
      (grpc::GenericDeserialize<grpc::ProtoBufferReader, v1::EchoRequest>(&buffer, &request)).ok());
  EXPECT_EQ(request.payload(), model.id());
  // q0 and v0, the two tips' targets and the rest term's weights.
  EXPECT_EQ(request.values_size(), 6 + 6 + 3 + 3 + 12);
  EXPECT_EQ(request.response_values(), spec.echo_response_values);

  const std::filesystem::path broken = dir_->path() / "broken.json";
  std::ofstream(broken) << R"({"model_id": "puma560", "knots": "many"})";
  try {
    load::read_solve_request(broken.string());
    ADD_FAILURE() << "a malformed problem was read";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(broken.string()), std::string::npos) << e.what();
  }
}

// Mpc: a stream per problem of the pool states the problem (the built-in one, as Solve's), then
// ticks from its start, --mpc-shift knots of dt apart, with --mpc-iterations; the server answers
// them. With --echo, the Echo carries a tick's state and asks for as many numbers as a tick's
// answer has: u0 and K0 of every DOF.
TEST_F(WorkloadTest, MpcStatesAProblemThenTicksFromItsStart) {
  const v1::Model model = quadruped();
  load::WorkloadSpec spec;
  spec.rpc = "Mpc";
  spec.pool = 2;
  spec.mpc_iterations = 2;
  spec.mpc_shift = 3;
  const load::Workload workload = load::make_workload(model, spec);
  EXPECT_EQ(workload.method, "/torqued.v1.ControlService/Mpc");
  EXPECT_EQ(workload.response_prototype->GetDescriptor(), v1::MpcResponse::descriptor());
  EXPECT_TRUE(workload.unary_requests.empty());
  ASSERT_EQ(workload.mpc_problems.size(), 2u);
  ASSERT_EQ(workload.mpc_ticks.size(), 2u);
  EXPECT_EQ(workload.tick_seconds, 3 * 0.01);
  EXPECT_EQ(workload.request_bytes, workload.mpc_ticks[0].ByteSizeLong());
  for (int k = 0; k < 2; ++k) {
    const v1::SolveRequest& problem = workload.mpc_problems[k].problem();
    EXPECT_EQ(problem.model_id(), model.id());
    EXPECT_EQ(problem.knots(), 10u);
    const v1::MpcRequest& tick = workload.mpc_ticks[k];
    EXPECT_FALSE(tick.has_problem());
    EXPECT_EQ(tick.q().size(), 19);
    EXPECT_TRUE(std::equal(tick.q().begin(), tick.q().end(), problem.q0().begin()));
    EXPECT_TRUE(std::equal(tick.v().begin(), tick.v().end(), problem.v0().begin()));
    EXPECT_EQ(tick.iterations(), 2u);
  }
  EXPECT_NE(workload.mpc_problems[0].problem().q0(0), workload.mpc_problems[1].problem().q0(0));

  spec.echo = true;
  spec.echo_response_values = load::real_response_values(server_->channel(), model, spec);
  EXPECT_EQ(spec.echo_response_values, 18u + 18 * 36);
  const load::Workload echo = load::make_workload(model, spec);
  EXPECT_EQ(echo.method, "/torqued.v1.DynamicsService/Echo");
  EXPECT_TRUE(echo.mpc_problems.empty());
  ASSERT_EQ(echo.unary_requests.size(), 2u);
  grpc::ByteBuffer buffer = echo.unary_requests[0];
  v1::EchoRequest request;
  ASSERT_TRUE(
      (grpc::GenericDeserialize<grpc::ProtoBufferReader, v1::EchoRequest>(&buffer, &request)).ok());
  EXPECT_EQ(request.values_size(), 19 + 18);
  EXPECT_EQ(request.response_values(), spec.echo_response_values);

  spec.echo = false;
  spec.mpc_shift = 0;
  EXPECT_THROW(load::make_workload(model, spec), std::runtime_error);
  spec.mpc_shift = 1;
  spec.batch = 2;
  EXPECT_THROW(load::make_workload(model, spec), std::runtime_error);
}

// The state fields are filled by their names (the methods that need more leave some empty), the
// others stay empty; Session messages are the unary requests less their model id.
TEST_F(WorkloadTest, RequestsFillTheStateFieldsByName) {
  const v1::Model model = quadruped();
  const int nq = model.nq(), nv = model.nv();
  // Per method, the double fields filled; every other double field is empty.
  const std::map<std::string, std::set<std::string>> filled = {
      {"InverseDynamics", {"q", "v", "a"}},
      {"ForwardDynamics", {"q", "v", "tau"}},
      {"Gravity", {"q"}},
      {"HybridDynamics", {"q", "v", "a", "tau"}},
      {"Derivatives", {"q", "v", "a"}},
      {"ConstrainedDynamics", {"q", "v", "tau"}},
      {"ContactDynamics", {"q", "v", "tau"}},
      {"Simulate", {"q", "v", "tau"}},
  };
  for (const auto& [rpc, fields] : filled) {
    load::WorkloadSpec spec;
    spec.rpc = rpc;
    spec.batch = 2;
    spec.pool = 1;
    const load::Workload workload = load::make_workload(model, spec);
    const google::protobuf::MethodDescriptor& method = *dynamics_service().FindMethodByName(rpc);
    const google::protobuf::Message& prototype =
        *google::protobuf::MessageFactory::generated_factory()->GetPrototype(method.input_type());
    const auto request = parse(prototype, workload.unary_requests[0]);
    const google::protobuf::Descriptor& d = *request->GetDescriptor();
    const google::protobuf::Reflection& r = *request->GetReflection();
    EXPECT_EQ(r.GetString(*request, d.FindFieldByName("model_id")), model.id());
    EXPECT_EQ(r.GetUInt32(*request, d.FindFieldByName("batch_size")), 2u);
    for (int i = 0; i < d.field_count(); ++i) {
      const google::protobuf::FieldDescriptor& f = *d.field(i);
      if (!f.is_repeated() || f.cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_DOUBLE) {
        continue;
      }
      const auto values = r.GetRepeatedFieldRef<double>(*request, &f);
      if (!fields.count(f.name())) {
        EXPECT_TRUE(values.empty()) << rpc << "." << f.name();
        continue;
      }
      ASSERT_EQ(values.size(), 2 * (f.name() == "q" ? nq : nv)) << rpc << "." << f.name();
      for (const double x : values) EXPECT_LE(std::abs(x), 1.0) << rpc << "." << f.name();
      if (f.name() != "q") continue;
      for (int s = 0; s < 2; ++s) {  // the free-flyer's quaternion, q[3..6] of each state
        double norm = 0.0;
        for (int k = 3; k < 7; ++k) norm += values.Get(s * nq + k) * values.Get(s * nq + k);
        EXPECT_NEAR(norm, 1.0, 1e-12) << rpc << " state " << s;
      }
    }
    // The Session message carries the same request, less its model id.
    const v1::SessionRequest& message = workload.session_requests[0];
    EXPECT_EQ(message.request_case(), field_number_of_type(*v1::SessionRequest::descriptor(), d));
    const google::protobuf::Message& carried = message.GetReflection()->GetMessage(
        message, message.GetDescriptor()->FindFieldByNumber(message.request_case()));
    std::unique_ptr<google::protobuf::Message> copy(request->New());
    copy->CopyFrom(*request);
    copy->GetReflection()->ClearField(copy.get(), d.FindFieldByName("model_id"));
    EXPECT_EQ(carried.SerializeAsString(), copy->SerializeAsString()) << rpc;
  }
}

struct Mode {
  const char* name;
  const char* flags;
};
void PrintTo(const Mode& mode, std::ostream* os) { *os << mode.flags; }

class LoadDriverTest : public WorkloadTest, public ::testing::WithParamInterface<Mode> {};

constexpr int kCalls = 1000;

TEST_P(LoadDriverTest, EveryCallIsAnsweredAndCountedOnce) {
  const std::filesystem::path report = dir_->path() / (std::string(GetParam().name) + ".json");
  const std::filesystem::path output = dir_->path() / (std::string(GetParam().name) + ".out");
  const std::string command = std::string(TORQUED_LOAD_BINARY) + " --target " + server_->address() +
                              " --model double_pendulum --warmup 0 --requests " +
                              std::to_string(kCalls) + " " + GetParam().flags + " --json " +
                              report.string() + " > " + output.string() + " 2>&1";
  const int status = std::system(command.c_str());
  std::ifstream printed(output);
  const std::string out((std::istreambuf_iterator<char>(printed)), {});
  ASSERT_TRUE(WIFEXITED(status)) << out;
  ASSERT_EQ(WEXITSTATUS(status), 0) << out;

  std::ifstream file(report);
  const nlohmann::json json = nlohmann::json::parse(file);
  EXPECT_EQ(json["calls"], kCalls);
  EXPECT_EQ(json["errors"], 0);
  EXPECT_EQ(json["codes"], nlohmann::json({{"OK", kCalls}}));
}

INSTANTIATE_TEST_SUITE_P(
    Modes, LoadDriverTest,
    ::testing::Values(Mode{"UnaryClosedLoop", "--concurrency 4"},
                      Mode{"UnaryOpenLoop", "--rate 2000"},
                      Mode{"SessionClosedLoopPipelined", "--session --concurrency 4 --pipeline 2"},
                      Mode{"SessionOpenLoop", "--session --concurrency 3 --rate 2000"},
                      Mode{"UnaryOnCompletionQueues", "--completion-queue --concurrency 2"},
                      Mode{"SessionOnCompletionQueues",
                           "--completion-queue --session --concurrency 2 --pipeline 3"}),
    [](const ::testing::TestParamInfo<Mode>& info) { return std::string(info.param.name); });

// Runs the binary with `flags` until it has measured `calls` calls; its JSON report.
nlohmann::json run_binary(const std::string& name, const std::string& flags, int calls,
                          const std::filesystem::path& dir, const std::string& target) {
  const std::filesystem::path report = dir / (name + ".json"), output = dir / (name + ".out");
  const std::string command = std::string(TORQUED_LOAD_BINARY) + " --target " + target +
                              " --warmup 0 --requests " + std::to_string(calls) + " " + flags +
                              " --json " + report.string() + " > " + output.string() + " 2>&1";
  const int status = std::system(command.c_str());
  std::ifstream printed(output);
  const std::string out((std::istreambuf_iterator<char>(printed)), {});
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  std::ifstream file(report);
  return nlohmann::json::parse(file, nullptr, false);
}

// Solve through the binary, the built-in problem and the file's, two calls in flight: the file's
// problem is a pool of one request, and its model_id names the model. Mpc through the binary:
// two streams, their ticks the calls, closed loop and paced.
TEST_F(WorkloadTest, TheBinarySolvesEveryCall) {
  constexpr int kSolves = 40;
  struct Run {
    std::string name, flags, model;
  };
  for (const Run& run :
       {Run{"SolveBuiltIn", "--model double_pendulum --rpc Solve --concurrency 2",
            "double_pendulum"},
        Run{"SolveFromAFile", "--solve-request " + kReachProblem + " --concurrency 2", "puma560"},
        Run{"MpcTicks", "--model double_pendulum --rpc Mpc --concurrency 2", "double_pendulum"},
        Run{"MpcTicksOpenLoop",
            "--solve-request " + kReachProblem +
                " --rpc Mpc --mpc-shift 2 --concurrency 2 --rate 400",
            "puma560"}}) {
    const nlohmann::json json =
        run_binary(run.name, run.flags, kSolves, dir_->path(), server_->address());
    ASSERT_FALSE(json.is_discarded()) << run.name;
    EXPECT_EQ(json["rpc"], run.name.rfind("Mpc", 0) == 0 ? "Mpc" : "Solve") << run.name;
    EXPECT_EQ(json["model"], run.model) << run.name;
    EXPECT_EQ(json["calls"], kSolves) << run.name;
    EXPECT_EQ(json["codes"], nlohmann::json({{"OK", kSolves}})) << run.name;
  }
}

}  // namespace
}  // namespace torqued::testing
