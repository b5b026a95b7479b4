// Tests server/compute/executor.cpp, batch.cpp and the shutdown path of server.cpp under load: 16
// client threads × 1,000 mixed calls all correct, a full queue answers RESOURCE_EXHAUSTED without
// hanging, derivative batches are split over the workers by their weight, and SIGTERM under load
// lets in-flight calls finish and exits 0.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <cstring>
#include <regex>
#include <thread>

#include "engine/algorithms/aba.hpp"
#include "engine/algorithms/rnea.hpp"
#include "server/models/bundled_models.hpp"
#include "server/models/model_from_request.hpp"
#include "tests/server/server_process.hpp"

namespace torqued::testing {
namespace {

// The bundled models, built locally, by name.
std::map<std::string, server::BuiltModel> local_models() {
  std::map<std::string, server::BuiltModel> out;
  std::vector<std::string> errors;
  for (const auto& entry : server::read_bundled_models(repository_dir(), errors)) {
    server::BuiltModel built;
    EXPECT_TRUE(
        server::build_from_request(entry.request, server::model_limits(server::Config{}), built)
            .ok());
    out[built.model->name] = built;
  }
  return out;
}

bool bitwise_equal(const google::protobuf::RepeatedField<double>& got,
                   const Eigen::VectorXd& want) {
  return got.size() == want.size() &&
         std::memcmp(got.data(), want.data(), want.size() * sizeof(double)) == 0;
}

TEST(LoadTest, SixteenThreadsTimesAThousandMixedCallsAreAllCorrect) {
  TempDir dir;
  ServerProcess server({dir.path() / "data", repository_dir(), false, {"--queue-capacity=4096"}});
  const auto models = local_models();
  constexpr int kThreads = 16;
  constexpr int kCalls = 1000;
  std::atomic<int> correct{0};
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto dynamics = server.dynamics();
      auto model_stub = server.models();
      const auto& [name, built] = *std::next(models.begin(), t % models.size());
      const Model& m = *built.model;
      Data data(m);
      v1::Model layout;
      {
        grpc::ClientContext context;
        context.set_deadline(deadline_in(60));
        v1::GetModelRequest request;
        request.set_model_id(built.id);
        if (!model_stub->GetModel(&context, request, &layout).ok()) {
          failures[t] = "GetModel failed";
          return;
        }
      }
      for (int i = 0; i < kCalls; ++i) {
        const int states = 1 + (i % 7);
        const auto q = random_configurations(layout, states, 1000 * t + i);
        const auto v = random_values(states * m.nv, 7 * i + t);
        grpc::ClientContext context;
        context.set_deadline(deadline_in(120));
        grpc::Status status;
        bool ok = false;
        switch (i % 4) {
          case 0: {
            v1::InverseDynamicsRequest r;
            r.set_model_id(built.id);
            r.set_batch_size(states);
            r.mutable_q()->Add(q.begin(), q.end());
            r.mutable_v()->Add(v.begin(), v.end());
            r.mutable_a()->Add(v.begin(), v.end());
            v1::InverseDynamicsResponse response;
            status = dynamics->InverseDynamics(&context, r, &response);
            const int s = states - 1;
            Eigen::Map<const Eigen::VectorXd> qs(q.data() + s * m.nq, m.nq);
            Eigen::Map<const Eigen::VectorXd> vs(v.data() + s * m.nv, m.nv);
            const Eigen::VectorXd tau = rnea(m, data, qs, vs, vs);
            ok = status.ok() && response.tau_size() == states * m.nv &&
                 std::memcmp(response.tau().data() + s * m.nv, tau.data(), m.nv * sizeof(double)) ==
                     0;
            break;
          }
          case 1: {
            v1::ForwardDynamicsRequest r;
            r.set_model_id(built.id);
            r.mutable_q()->Add(q.begin(), q.begin() + m.nq);
            r.mutable_v()->Add(v.begin(), v.begin() + m.nv);
            r.mutable_tau()->Add(v.begin(), v.begin() + m.nv);
            v1::ForwardDynamicsResponse response;
            status = dynamics->ForwardDynamics(&context, r, &response);
            Eigen::Map<const Eigen::VectorXd> qs(q.data(), m.nq), vs(v.data(), m.nv);
            ok = status.ok() && bitwise_equal(response.a(), aba(m, data, qs, vs, vs));
            break;
          }
          case 2: {
            v1::GravityRequest r;
            r.set_model_id(built.id);
            r.mutable_q()->Add(q.begin(), q.begin() + m.nq);
            v1::GravityResponse response;
            status = dynamics->Gravity(&context, r, &response);
            Eigen::Map<const Eigen::VectorXd> qs(q.data(), m.nq);
            ok = status.ok() && bitwise_equal(response.tau(), generalized_gravity(m, data, qs));
            break;
          }
          default: {
            v1::EchoRequest r;
            r.mutable_values()->Add(v.begin(), v.end());
            v1::EchoResponse response;
            status = dynamics->Echo(&context, r, &response);
            ok = status.ok() && response.values_size() == static_cast<int>(v.size()) &&
                 std::equal(v.begin(), v.end(), response.values().begin());
          }
        }
        if (!ok) {
          failures[t] = "call " + std::to_string(i) + " (" + name +
                        "): " + (status.ok() ? "wrong result" : status.error_message());
          return;
        }
        ++correct;
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& f : failures) EXPECT_TRUE(f.empty()) << f;
  EXPECT_EQ(correct.load(), kThreads * kCalls);
}

// Many large batches at once on one worker with room for two tasks in the queue.
TEST(LoadTest, FullQueueAnswersResourceExhaustedAtOnce) {
  TempDir dir;
  ServerProcess server({dir.path() / "data",
                        repository_dir(),
                        false,
                        {"--workers=1", "--queue-capacity=2", "--split-min-states=1000000"}});
  const auto models = local_models();
  const auto& quadruped = models.at("quadruped");
  const v1::Model layout = server.model_layout(quadruped.id);
  ASSERT_GT(layout.nv(), 0);
  v1::MassMatrixRequest request;
  request.set_model_id(quadruped.id);
  request.set_batch_size(2000);
  const auto q = random_configurations(layout, 2000, 3);
  request.mutable_q()->Add(q.begin(), q.end());
  request.set_inverse(true);
  constexpr int kCalls = 24;
  std::vector<grpc::StatusCode> codes(kCalls);
  std::vector<double> seconds(kCalls);
  std::vector<std::thread> threads;
  for (int i = 0; i < kCalls; ++i) {
    threads.emplace_back([&, i] {
      auto stub = server.dynamics();
      grpc::ClientContext context;
      context.set_deadline(deadline_in(300));
      v1::MassMatrixResponse response;
      const auto start = std::chrono::steady_clock::now();
      codes[i] = stub->MassMatrix(&context, request, &response).error_code();
      seconds[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    });
  }
  for (auto& t : threads) t.join();
  int exhausted = 0, ok = 0;
  double slowest_rejection = 0.0, fastest_success = 1e9;
  for (int i = 0; i < kCalls; ++i) {
    if (codes[i] == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      ++exhausted;
      slowest_rejection = std::max(slowest_rejection, seconds[i]);
    } else {
      EXPECT_EQ(codes[i], grpc::StatusCode::OK);
      ++ok;
      fastest_success = std::min(fastest_success, seconds[i]);
    }
  }
  EXPECT_GT(exhausted, 0);
  EXPECT_GT(ok, 0);
  std::cout << ok << " calls served, " << exhausted << " rejected; slowest rejection "
            << slowest_rejection << " s\n";
}

// Chunks the engine has computed with `algorithm` (torqued_engine_compute_seconds counts one per
// chunk), from a server's Prometheus text.
int computed_chunks(const ServerProcess& server, const std::string& algorithm) {
  const std::string text = http_get(server.metrics_port(), "/metrics");
  const std::regex line("torqued_engine_compute_seconds_count\\{algorithm=\"" + algorithm +
                        "\"\\} ([0-9.e+]+)");
  std::smatch match;
  return std::regex_search(text, match, line) ? static_cast<int>(std::stod(match[1])) : 0;
}

TEST(LoadTest, DerivativeBatchesAreSplitOverTheWorkersByTheirWeight) {
  // 20 states, far below --split-min-states (64): as many dynamics calls run as one chunk, but a
  // state's derivatives weigh 8 calls, so the batch is split over both workers. Weighed as one
  // call, a 100-knot Linearize of a humanoid (2.3 ms of engine work) ran on one worker.
  TempDir dir;
  ServerProcess server({dir.path() / "data", repository_dir(), true, {"--workers=2"}});
  const auto models = local_models();
  const auto& quadruped = models.at("quadruped");
  const v1::Model layout = server.model_layout(quadruped.id);
  ASSERT_EQ(layout.nv(), 18);
  constexpr int kStates = 20;
  const auto q = random_configurations(layout, kStates, 5);
  const auto v = random_values(std::size_t{kStates} * layout.nv(), 6);
  auto stub = server.dynamics();

  v1::LinearizeRequest linearize;
  linearize.set_model_id(quadruped.id);
  linearize.set_batch_size(kStates);
  linearize.mutable_q()->Add(q.begin(), q.end());
  linearize.mutable_v()->Add(v.begin(), v.end());
  linearize.mutable_u()->Add(v.begin(), v.end());
  linearize.set_dt(0.01);
  grpc::ClientContext linearize_context;
  v1::LinearizeResponse linearized;
  const int steps_before = computed_chunks(server, "euler_step");
  ASSERT_TRUE(stub->Linearize(&linearize_context, linearize, &linearized).ok());
  EXPECT_EQ(computed_chunks(server, "euler_step") - steps_before, 2);

  v1::DerivativesRequest derivatives;
  derivatives.set_model_id(quadruped.id);
  derivatives.set_batch_size(kStates);
  derivatives.mutable_q()->Add(q.begin(), q.end());
  derivatives.mutable_v()->Add(v.begin(), v.end());
  derivatives.mutable_tau()->Add(v.begin(), v.end());
  derivatives.set_of(v1::DERIVATIVES_OF_FORWARD_DYNAMICS);
  grpc::ClientContext derivatives_context;
  v1::DerivativesResponse derived;
  const int aba_before = computed_chunks(server, "aba_derivatives");
  ASSERT_TRUE(stub->Derivatives(&derivatives_context, derivatives, &derived).ok());
  EXPECT_EQ(computed_chunks(server, "aba_derivatives") - aba_before, 2);
}

TEST(LoadTest, SigtermUnderLoadFinishesInFlightCallsAndExitsZero) {
  // The drain must let the three batches finish: under AddressSanitizer, beside two CPU-bound
  // processes and the rest of the suite, they took over 120 s.
  const int drain_seconds = kSanitizedBuild ? 600 : 120;
  TempDir dir;
  ServerProcess server({dir.path() / "data",
                        repository_dir(),
                        true,
                        {"--workers=1", "--split-min-states=1000000",
                         "--drain-seconds=" + std::to_string(drain_seconds)}});
  const auto models = local_models();
  const auto& quadruped = models.at("quadruped");
  const v1::Model layout = server.model_layout(quadruped.id);
  ASSERT_GT(layout.nv(), 0);
  // Three long batches on one worker: when SIGTERM comes, one runs and two wait in the queue.
  constexpr int kStates = 40000;
  v1::ForwardDynamicsRequest request;
  request.set_model_id(quadruped.id);
  request.set_batch_size(kStates);
  const auto q = random_configurations(layout, kStates, 4);
  const auto v = random_values(static_cast<std::size_t>(kStates) * layout.nv(), 5);
  request.mutable_q()->Add(q.begin(), q.end());
  request.mutable_v()->Add(v.begin(), v.end());
  request.mutable_tau()->Add(v.begin(), v.end());
  constexpr int kCalls = 3;
  std::vector<grpc::Status> statuses(kCalls);
  std::vector<int> sizes(kCalls);
  std::vector<std::thread> threads;
  for (int i = 0; i < kCalls; ++i) {
    threads.emplace_back([&, i] {
      auto stub = server.dynamics();
      grpc::ClientContext context;
      context.set_deadline(deadline_in(drain_seconds + 180));
      v1::ForwardDynamicsResponse response;
      statuses[i] = stub->ForwardDynamics(&context, request, &response);
      sizes[i] = response.a_size();
    });
  }
  // SIGTERM once the server has taken all three calls (its started counter says so).
  const std::string started_line =
      "grpc_server_started_total{grpc_method=\"ForwardDynamics\",grpc_service=\"torqued.v1."
      "DynamicsService\",grpc_type=\"unary\"} 3";
  const auto end = deadline_in(120);
  while (http_get(server.metrics_port(), "/metrics").find(started_line) == std::string::npos &&
         std::chrono::system_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  server.signal(SIGTERM);
  for (auto& t : threads) t.join();
  const int status = server.wait_exit(drain_seconds + 60);
  ASSERT_TRUE(WIFEXITED(status)) << server.log();
  EXPECT_EQ(WEXITSTATUS(status), 0) << server.log();
  for (int i = 0; i < kCalls; ++i) {
    EXPECT_TRUE(statuses[i].ok()) << i << ": " << statuses[i].error_message();
    EXPECT_EQ(sizes[i], kStates * layout.nv());
  }
  EXPECT_NE(server.log().find("draining"), std::string::npos);
}

}  // namespace
}  // namespace torqued::testing
