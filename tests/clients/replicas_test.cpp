// Replicas on one machine, as a Kubernetes Deployment runs them: three torqued processes on
// three loopback addresses, each a fresh data directory (a new pod's empty volume) over the
// bundled repository, and one C++ client with round_robin over the three.
// - A rolling restart under steady load, one replica at a time with SIGTERM (each drains, exits
//   0, comes back and reports SERVING before the next goes): no call fails, and a model
//   registered through one replica is served by all, the restarted ones included (the client
//   registers it again where a replica answers NOT_FOUND).
// - A large batch split across the replicas (ClientOptions::split_parts) is answered bitwise
//   as one call answers it, and every replica computes a part.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <array>
#include <atomic>
#include <cstring>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

#include "server/models/bundled_models.hpp"
#include "tests/server/server_process.hpp"
#include "torqued/client.hpp"

namespace torqued::testing {
namespace {

using client::Client;
using client::ClientOptions;
using client::Matrix;

constexpr int kReplicas = 3;

Matrix as_batch(const std::vector<double>& flat, int states) {
  return Eigen::Map<const Matrix>(flat.data(), states, static_cast<int>(flat.size()) / states);
}

// Bitwise equality: the same shape and the same bytes.
bool same_bits(const Matrix& a, const Matrix& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         std::memcmp(a.data(), b.data(), sizeof(double) * a.size()) == 0;
}

bool same_bits(const client::Matrices& a, const client::Matrices& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!same_bits(a[i], b[i])) return false;
  }
  return true;
}

class ReplicasTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < kReplicas; ++i) start(i, 0);
  }

  // Starts replica i on 127.0.0.(i + 1) with a new data directory; waits for SERVING.
  void start(int i, int port) {
    ServerProcess::Options options;
    options.data_dir =
        temp_.path() / ("replica-" + std::to_string(i) + "-" + std::to_string(starts_++));
    options.address = "127.0.0." + std::to_string(i + 1);
    options.port = port;
    options.metrics = true;
    replicas_[i] = std::make_unique<ServerProcess>(options);
    ASSERT_TRUE(replicas_[i]->running()) << replicas_[i]->log();
  }

  std::string target() const {
    std::string target = "ipv4:";
    for (int i = 0; i < kReplicas; ++i) {
      if (i > 0) target += ',';
      target += replicas_[i]->address();
    }
    return target;
  }

  // Calls `call` until every replica's `method` counter has grown, at most 30 s: round_robin
  // picks among connected replicas only, and a connection may still be on its way.
  template <typename Call>
  bool until_every_replica_answers(const std::string& method, Call call) {
    std::array<int, kReplicas> before{};
    for (int i = 0; i < kReplicas; ++i) before[i] = handled_ok(*replicas_[i], method);
    const auto give_up = deadline_in(30);
    while (std::chrono::system_clock::now() < give_up) {
      for (int k = 0; k < 3 * kReplicas; ++k) call();
      bool all = true;
      for (int i = 0; i < kReplicas; ++i) all &= handled_ok(*replicas_[i], method) > before[i];
      if (all) return true;
    }
    return false;
  }

  TempDir temp_;
  int starts_ = 0;
  std::array<std::unique_ptr<ServerProcess>, kReplicas> replicas_;
};

TEST_F(ReplicasTest, RollingRestartUnderLoadFailsNoCall) {
  ClientOptions options;
  options.target = target();
  Client client(options);
  // Not in the repository (the bundled quadruped has a floating base): registered through
  // whichever replica the registration reaches, and nowhere else.
  v1::RegisterModelRequest request;
  std::string error;
  ASSERT_TRUE(server::read_model_file(repository_dir() + "/quadruped.urdf", request, error))
      << error;
  request.set_base(v1::BASE_TYPE_FIXED);
  request.set_name("quadruped_fixed");
  const v1::Model registered = client.register_model(request);
  int holders = 0;
  for (const auto& replica : replicas_) {
    v1::GetModelRequest get;
    get.set_model_id(registered.id());
    v1::Model held;
    holders += with_deadline(10, [&](grpc::ClientContext* c) {
                 return replica->models()->GetModel(c, get, &held);
               }).ok();
  }
  EXPECT_EQ(holders, 1);
  std::string arm_id;
  for (const v1::ModelSummary& model : client.list_models()) {
    if (model.name() == "stanford_arm") arm_id = model.id();
  }
  ASSERT_FALSE(arm_id.empty());
  const v1::Model arm = client.get_model(arm_id);
  const Matrix arm_q = as_batch(random_configurations(arm, 4, 7), 4);
  const Matrix q = as_batch(random_configurations(registered, 8, 8), 8);
  const Matrix v = as_batch(random_values(8 * registered.nv(), 9), 8);
  const Matrix a = as_batch(random_values(8 * registered.nv(), 10), 8);
  const Matrix want_arm = client.gravity(arm_id, arm_q);
  const Matrix want_tau = client.inverse_dynamics(registered.id(), q, v, a);

  // Steady load: four threads, each one call after the other, alternating the bundled model and
  // the registered one; every answer is checked against the one before the restarts.
  std::atomic<bool> stop{false};
  std::atomic<long> calls{0};
  std::mutex failures_mutex;
  std::map<std::string, int> failures;
  std::vector<std::thread> load;
  for (int t = 0; t < 4; ++t) {
    load.emplace_back([&, t] {
      for (long n = t; !stop; ++n) {
        try {
          const bool same =
              n % 2 ? same_bits(client.gravity(arm_id, arm_q), want_arm)
                    : same_bits(client.inverse_dynamics(registered.id(), q, v, a), want_tau);
          if (!same) throw std::runtime_error("a different answer");
        } catch (const std::exception& e) {
          const std::lock_guard lock(failures_mutex);
          ++failures[e.what()];
        }
        ++calls;
      }
    });
  }
  const auto steady = [] { std::this_thread::sleep_for(std::chrono::seconds(1)); };
  steady();
  int restarts = 0;
  for (int i = 0; i < kReplicas; ++i) {
    const int port = replicas_[i]->port();
    replicas_[i]->signal(SIGTERM);
    const int status = replicas_[i]->wait_exit(60);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "replica " << i << " wait status " << status << "\n"
        << replicas_[i]->log();
    start(i, port);
    ++restarts;
    steady();
  }
  // Every replica, each restarted with an empty store, serves the registered model.
  EXPECT_TRUE(until_every_replica_answers("InverseDynamics", [&] {
    EXPECT_TRUE(same_bits(client.inverse_dynamics(registered.id(), q, v, a), want_tau));
  }));
  stop = true;
  for (std::thread& thread : load) thread.join();

  long failed = 0;
  for (const auto& [what, count] : failures) {
    ADD_FAILURE() << count << " calls failed: " << what;
    failed += count;
  }
  std::cout << "rolling restart: " << calls << " calls, " << failed << " failed, " << restarts
            << " restarts\n";
  RecordProperty("calls", static_cast<int>(calls));
  RecordProperty("failed", static_cast<int>(failed));
  RecordProperty("restarts", restarts);
  EXPECT_GT(calls, 0);
  EXPECT_EQ(restarts, kReplicas);
}

TEST_F(ReplicasTest, SplitBatchEqualsOneCallBitwise) {
  ClientOptions whole_options;
  whole_options.target = target();
  Client whole(whole_options);
  ClientOptions split_options = whole_options;
  split_options.split_parts = kReplicas;
  split_options.split_min_states = 100;
  Client split(split_options);

  std::string dog_id;
  for (const v1::ModelSummary& model : whole.list_models()) {
    if (model.name() == "quadruped") dog_id = model.id();
  }
  ASSERT_FALSE(dog_id.empty());
  const v1::Model dog = whole.get_model(dog_id);
  // 1,001 states: parts of 334, 334 and 333.
  constexpr int kStates = 1001;
  const Matrix q = as_batch(random_configurations(dog, kStates, 21), kStates);
  const Matrix v = as_batch(random_values(kStates * dog.nv(), 22), kStates);
  const Matrix tau = as_batch(random_values(kStates * dog.nv(), 23), kStates);

  // Every replica connected before the split call, so that round_robin spreads its parts.
  ASSERT_TRUE(until_every_replica_answers("Gravity", [&] { split.gravity(dog_id, q.topRows(1)); }));
  std::array<int, kReplicas> before{};
  for (int i = 0; i < kReplicas; ++i) before[i] = handled_ok(*replicas_[i], "ForwardDynamics");
  const Matrix a = split.forward_dynamics(dog_id, q, v, tau).a;
  for (int i = 0; i < kReplicas; ++i) {
    EXPECT_GT(handled_ok(*replicas_[i], "ForwardDynamics"), before[i]) << "replica " << i;
  }
  EXPECT_TRUE(same_bits(a, whole.forward_dynamics(dog_id, q, v, tau).a));

  // Per-state matrices, names of the whole call, and per-state enums and counts.
  client::MassMatrixOptions inverse;
  inverse.inverse = true;
  const client::MassMatrixResult m_split = split.mass_matrix(dog_id, q, inverse);
  const client::MassMatrixResult m_whole = whole.mass_matrix(dog_id, q, inverse);
  EXPECT_TRUE(same_bits(m_split.mass_matrix, m_whole.mass_matrix));
  EXPECT_TRUE(same_bits(m_split.inverse, m_whole.inverse));
  const client::KinematicsResult k_split = split.kinematics(dog_id, q, v);
  const client::KinematicsResult k_whole = whole.kinematics(dog_id, q, v);
  EXPECT_EQ(k_split.frames, k_whole.frames);
  EXPECT_TRUE(same_bits(k_split.positions, k_whole.positions));
  EXPECT_TRUE(same_bits(k_split.velocities, k_whole.velocities));
  const std::vector<client::PointContact> feet = {{"FL_foot", {0, 0, 0}, {0, 0, 1}, 0.8},
                                                  {"HR_foot", {0, 0, 0}, {0, 0, 1}, 0.8}};
  const client::ContactResult c_split = split.contact_dynamics(dog_id, q, v, tau, feet);
  const client::ContactResult c_whole = whole.contact_dynamics(dog_id, q, v, tau, feet);
  EXPECT_TRUE(same_bits(c_split.velocities, c_whole.velocities));
  EXPECT_TRUE(same_bits(c_split.forces, c_whole.forces));
  EXPECT_EQ(c_split.modes, c_whole.modes);
  EXPECT_EQ(c_split.status, c_whole.status);
  EXPECT_EQ(c_split.iterations, c_whole.iterations);
  EXPECT_EQ(c_split.residual.size(), kStates);
  EXPECT_EQ(std::memcmp(c_split.residual.data(), c_whole.residual.data(), sizeof(double) * kStates),
            0);

  // An error in a part is the call's error.
  try {
    split.gravity("no-such-model", q);
    ADD_FAILURE() << "gravity on an unknown model succeeded";
  } catch (const client::Error& e) {
    EXPECT_EQ(e.code(), grpc::StatusCode::NOT_FOUND) << e.what();
  }
}

}  // namespace
}  // namespace torqued::testing
