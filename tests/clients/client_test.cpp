// Tests clients/cpp/torqued/client.cpp against real torqued processes on loopback: results equal
// the engine's in-process results bit for bit (the server runs the same engine code on the same
// doubles, and the wire carries doubles exactly), a model deleted on the server is re-registered
// transparently (also under threads sharing the client), UNAVAILABLE is retried until a late or
// restarted server answers, round_robin spreads calls over two servers, deadlines surface as
// DEADLINE_EXCEEDED, and list_models() walks every page of ListModels.
#include "torqued/client.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include <thread>

#include "engine/algorithms/aba.hpp"
#include "engine/algorithms/constrained_dynamics.hpp"
#include "engine/algorithms/crba.hpp"
#include "engine/algorithms/minverse.hpp"
#include "engine/algorithms/rnea.hpp"
#include "server/models/model_from_request.hpp"
#include "server/models/bundled_models.hpp"
#include "tests/server/server_process.hpp"

namespace torqued::testing {
namespace {

using client::Client;
using client::ClientOptions;
using client::Matrix;

// The quadruped of the bundled repository: a floating base (free-flyer quaternion in q), so
// nq != nv and the batches' shapes are checked as well as their values.
v1::RegisterModelRequest quadruped_request() {
  v1::RegisterModelRequest request;
  std::string error;
  EXPECT_TRUE(server::read_model_file(repository_dir() + "/quadruped.urdf", request, error))
      << error;
  return request;
}

Matrix as_batch(const std::vector<double>& flat, int states) {
  return Eigen::Map<const Matrix>(flat.data(), states, static_cast<int>(flat.size()) / states);
}

// Deletes model `id` on the server behind the clients' backs (another client, an operator).
grpc::Status delete_on_server(const ServerProcess& server, const std::string& id) {
  v1::DeleteModelRequest request;
  request.set_model_id(id);
  v1::DeleteModelResponse response;
  return with_deadline(10, [&](grpc::ClientContext* c) {
    return server.models()->DeleteModel(c, request, &response);
  });
}

// Servers start with an empty repository, so that models exist only once registered.
class ClientTest : public ::testing::Test {
 protected:
  ServerProcess::Options server_options(const std::string& name, int port = 0) {
    ServerProcess::Options options;
    options.data_dir = temp_.path() / name;
    options.repository = (temp_.path() / "empty-repository").string();
    std::filesystem::create_directories(options.repository);
    options.port = port;
    return options;
  }

  static ClientOptions options_for(const ServerProcess& server) {
    ClientOptions options;
    options.target = server.address();
    return options;
  }

  TempDir temp_;
};

TEST_F(ClientTest, ResultsEqualTheEngineBitForBit) {
  ServerProcess server(server_options("a"));
  Client client(options_for(server));
  const v1::RegisterModelRequest request = quadruped_request();
  const v1::Model layout = client.register_model(request);
  ASSERT_EQ(layout.nq(), 19);
  ASSERT_EQ(layout.nv(), 18);

  constexpr int kStates = 7;
  const Matrix q = as_batch(random_configurations(layout, kStates, 11), kStates);
  const Matrix v = as_batch(random_values(kStates * 18, 12), kStates);
  const Matrix a = as_batch(random_values(kStates * 18, 13), kStates);
  const Matrix tau = as_batch(random_values(kStates * 18, 14), kStates);

  const Matrix id = client.inverse_dynamics(layout.id(), q, v, a);
  const client::ForwardDynamicsResult fd = client.forward_dynamics(layout.id(), q, v, tau);
  client::MassMatrixOptions with_inverse;
  with_inverse.inverse = true;
  const client::MassMatrixResult mm = client.mass_matrix(layout.id(), q, with_inverse);
  const Matrix g = client.gravity(layout.id(), q);
  const Matrix nle = client.nonlinear_effects(layout.id(), q, v);
  ASSERT_EQ(id.rows(), kStates);
  ASSERT_EQ(id.cols(), 18);
  ASSERT_EQ(fd.a.rows(), kStates);
  ASSERT_EQ(fd.algorithm, v1::FORWARD_DYNAMICS_ALGORITHM_ABA);
  ASSERT_EQ(mm.mass_matrix.size(), static_cast<std::size_t>(kStates));
  ASSERT_EQ(mm.inverse.size(), static_cast<std::size_t>(kStates));

  server::BuiltModel built;
  ASSERT_TRUE(server::build_from_request(request, server::model_limits(server::Config{}), built).ok());
  ASSERT_EQ(built.id, layout.id());
  const Model& model = *built.model;
  Data data(model);
  for (int s = 0; s < kStates; ++s) {
    const Eigen::VectorXd qs = q.row(s).transpose(), vs = v.row(s).transpose();
    // Exact equality: same code, same inputs, doubles carried exactly by protobuf.
    EXPECT_EQ(Eigen::VectorXd(id.row(s).transpose()),
              rnea(model, data, qs, vs, Eigen::VectorXd(a.row(s).transpose())))
        << "state " << s;
    EXPECT_EQ(Eigen::VectorXd(fd.a.row(s).transpose()),
              aba(model, data, qs, vs, Eigen::VectorXd(tau.row(s).transpose())))
        << "state " << s;
    EXPECT_EQ(Eigen::MatrixXd(mm.mass_matrix[s]), crba(model, data, qs)) << "state " << s;
    EXPECT_EQ(Eigen::MatrixXd(mm.inverse[s]), Eigen::MatrixXd(minverse(model, data, qs)))
        << "state " << s;
    EXPECT_EQ(Eigen::VectorXd(g.row(s).transpose()), generalized_gravity(model, data, qs))
        << "state " << s;
    EXPECT_EQ(Eigen::VectorXd(nle.row(s).transpose()), nonlinear_effects(model, data, qs, vs))
        << "state " << s;
  }

  // A column-major Eigen matrix and a single state (1 × nq row) are accepted too.
  const Eigen::MatrixXd q_column_major = q;
  EXPECT_EQ(client.gravity(layout.id(), q_column_major), g);
  EXPECT_EQ(client.gravity(layout.id(), q.row(2)), g.row(2));
}

TEST_F(ClientTest, ConstrainedDynamicsEqualsTheEngineBitForBit) {
  ServerProcess server(server_options("a"));
  Client client(options_for(server));
  const v1::RegisterModelRequest request = quadruped_request();
  const v1::Model layout = client.register_model(request);
  constexpr int kStates = 5;
  const Matrix q = as_batch(random_configurations(layout, kStates, 21), kStates);
  const Matrix v = as_batch(random_values(kStates * 18, 22), kStates);
  const Matrix tau = as_batch(random_values(kStates * 18, 23), kStates);
  // The front feet as point contacts on the ground plane z = 0.
  client::ConstrainedDynamicsOptions options;
  options.gains.set_position(10.0);
  for (const char* foot : {"FL_foot", "FR_foot"}) {
    v1::Constraint& c = options.constraints.emplace_back();
    c.set_name(foot);
    c.set_type(v1::CONSTRAINT_TYPE_POINT);
    c.mutable_frame1()->set_frame(foot);
  }
  const client::ConstrainedDynamicsResult r =
      client.constrained_dynamics(layout.id(), q, v, Matrix(), tau, options);
  ASSERT_EQ(r.a.rows(), kStates);
  ASSERT_EQ(r.a.cols(), 18);
  ASSERT_EQ(r.multipliers.cols(), 6);
  EXPECT_EQ(r.tau.cols(), 0);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[1].name(), "FR_foot");
  EXPECT_EQ(r.rows[1].offset(), 3);

  server::BuiltModel built;
  ASSERT_TRUE(server::build_from_request(request, server::model_limits(server::Config{}), built).ok());
  const Model& model = *built.model;
  Data data(model);
  std::vector<BilateralConstraint> feet;
  for (const char* foot : {"FL_foot", "FR_foot"}) {
    const Frame& frame = model.frames[model.find_frame(foot)];
    feet.push_back(
        {foot, ConstraintType::kPoint, frame.body, frame.placement, 0, Transform::Identity()});
  }
  Eigen::VectorXd ddq(18), lambda(6);
  for (int s = 0; s < kStates; ++s) {
    constrained_dynamics(model, data, q.row(s).transpose(), v.row(s).transpose(),
                         tau.row(s).transpose(), feet, {10.0, 0.0}, ddq, lambda);
    EXPECT_EQ(Eigen::VectorXd(r.a.row(s).transpose()), ddq) << "state " << s;
    EXPECT_EQ(Eigen::VectorXd(r.multipliers.row(s).transpose()), lambda) << "state " << s;
  }
}

TEST_F(ClientTest, ModelDeletedOnTheServerIsReRegistered) {
  ServerProcess server(server_options("a"));
  const ClientOptions options = options_for(server);
  Client client(options);
  const v1::Model layout = client.register_model(quadruped_request());
  const Matrix q = as_batch(random_configurations(layout, 3, 21), 3);
  const Matrix before = client.gravity(layout.id(), q);

  // Someone else deletes it (another client, an operator): this client does not know.
  ASSERT_TRUE(delete_on_server(server, layout.id()).ok());

  EXPECT_EQ(client.gravity(layout.id(), q), before);
  EXPECT_EQ(client.get_model(layout.id()).id(), layout.id());

  // A model this client deleted itself stays deleted.
  client.delete_model(layout.id());
  try {
    client.gravity(layout.id(), q);
    ADD_FAILURE() << "gravity of a deleted model succeeded";
  } catch (const client::Error& e) {
    EXPECT_EQ(e.code(), grpc::StatusCode::NOT_FOUND) << e.what();
  }
  // Without re-registration the NOT_FOUND surfaces at once.
  ClientOptions no_reregistration = options;
  no_reregistration.reregister = false;
  Client plain(no_reregistration);
  plain.register_model(quadruped_request());
  ASSERT_TRUE(delete_on_server(server, layout.id()).ok());
  try {
    plain.gravity(layout.id(), q);
    ADD_FAILURE() << "gravity succeeded without re-registration";
  } catch (const client::Error& e) {
    EXPECT_EQ(e.code(), grpc::StatusCode::NOT_FOUND) << e.what();
  }
}

// The Client promises that threads may share it: four threads compute on one client while the
// model is deleted on the server and re-registered by whichever thread meets the NOT_FOUND
// first (the TSan stage of tests/run.sh checks the sharing itself).
TEST_F(ClientTest, ThreadsShareOneClientThroughADeletionAndReRegistration) {
  ServerProcess server(server_options("a"));
  Client client(options_for(server));
  const v1::Model layout = client.register_model(quadruped_request());
  const Matrix q = as_batch(random_configurations(layout, 4, 22), 4);
  const Matrix expected = client.gravity(layout.id(), q);
  std::vector<std::thread> threads;
  std::vector<int> equal(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) equal[t] += client.gravity(layout.id(), q) == expected ? 1 : 0;
    });
  }
  EXPECT_TRUE(delete_on_server(server, layout.id()).ok());
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(equal, std::vector<int>(4, 25));
}

TEST_F(ClientTest, RetriesUntilALateOrRestartedServerAnswers) {
  const int port = free_port();
  ClientOptions options;
  options.target = "127.0.0.1:" + std::to_string(port);
  // The server may take seconds to start on a loaded machine: a generous budget, bounded.
  options.max_attempts = 100;
  options.max_backoff = std::chrono::milliseconds(500);
  options.deadline = std::chrono::seconds(60);
  Client client(options);

  // Nothing listens yet: the call is refused (UNAVAILABLE) until the server comes up.
  std::unique_ptr<ServerProcess> server;
  std::thread starter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    server = std::make_unique<ServerProcess>(server_options("a", port));
  });
  const v1::Model layout = client.register_model(quadruped_request());
  starter.join();
  ASSERT_TRUE(server->running());
  const Matrix q = as_batch(random_configurations(layout, 2, 31), 2);
  const Matrix before = client.gravity(layout.id(), q);

  // kill -9 and a restart on the same port with the same store: the channel reconnects.
  server->signal(SIGKILL);
  server->wait_exit(30);
  std::thread restarter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    server = std::make_unique<ServerProcess>(server_options("a", port));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(client.gravity(layout.id(), q), before);
  restarter.join();

  // With too few attempts against nothing, UNAVAILABLE surfaces.
  server.reset();
  ClientOptions impatient = options;
  impatient.max_attempts = 2;
  Client quick(impatient);
  try {
    quick.list_models();
    ADD_FAILURE() << "list_models succeeded with no server";
  } catch (const client::Error& e) {
    EXPECT_EQ(e.code(), grpc::StatusCode::UNAVAILABLE) << e.what();
    EXPECT_NE(std::string(e.what()).find("after 2 attempts"), std::string::npos) << e.what();
  }
}

TEST_F(ClientTest, RoundRobinSpreadsCallsOverServers) {
  ServerProcess::Options first = server_options("a"), second = server_options("b");
  first.metrics = second.metrics = true;
  ServerProcess a(first), b(second);
  ClientOptions options;
  options.target = "ipv4:" + a.address() + "," + b.address();
  Client client(options);
  // Registered on one of them; the other answers NOT_FOUND and gets it re-registered.
  const v1::Model layout = client.register_model(quadruped_request());
  const Matrix q = as_batch(random_configurations(layout, 1, 41), 1);
  const Matrix want = client.gravity(layout.id(), q);
  // round_robin picks among the connected servers only, and the second connection may still be
  // in progress on a loaded machine: call until both have answered, for at most 30 s.
  int calls = 1, on_a = 0, on_b = 0;
  const auto give_up = deadline_in(30);
  while ((on_a == 0 || on_b == 0) && std::chrono::system_clock::now() < give_up) {
    for (int i = 0; i < 10; ++i, ++calls) EXPECT_EQ(client.gravity(layout.id(), q), want);
    on_a = handled_ok(a, "Gravity");
    on_b = handled_ok(b, "Gravity");
  }
  EXPECT_GT(on_a, 0);
  EXPECT_GT(on_b, 0);
  EXPECT_EQ(on_a + on_b, calls);
  v1::GetModelRequest get;
  get.set_model_id(layout.id());
  v1::Model held;
  for (const ServerProcess* server : {&a, &b}) {
    EXPECT_TRUE(with_deadline(10, [&](grpc::ClientContext* c) {
                  return server->models()->GetModel(c, get, &held);
                }).ok());
  }
}

// Models with 16 KiB names (the largest --max-name-bytes) fill a ListModels page each (a page
// stays under 64 KiB, its token included): the client lists them all, in order.
TEST_F(ClientTest, ListModelsWalksEveryPage) {
  ServerProcess::Options options = server_options("a");
  options.extra_args = {"--max-name-bytes=16384"};
  ServerProcess server(options);
  Client client(options_for(server));
  std::vector<std::string> names;
  for (int i = 0; i < 5; ++i) {
    v1::RegisterModelRequest request = quadruped_request();
    request.set_name(std::string(16380, 'q') + std::to_string(1000 + i));
    client.register_model(request);
    names.push_back(request.name());
  }
  v1::ListModelsResponse first_page;
  ASSERT_TRUE(with_deadline(10, [&](grpc::ClientContext* c) {
                return server.models()->ListModels(c, {}, &first_page);
              }).ok());
  EXPECT_LT(first_page.models_size(), 5);
  std::vector<std::string> listed;
  for (const v1::ModelSummary& model : client.list_models()) listed.push_back(model.name());
  EXPECT_EQ(listed, names);
}

TEST_F(ClientTest, DeadlineSurfacesAsDeadlineExceeded) {
  ServerProcess server(server_options("a"));
  const ClientOptions options = options_for(server);
  Client client(options);
  const v1::Model layout = client.register_model(quadruped_request());
  // 50 000 states take far more than a millisecond to send and compute (~0.1 s of ABA alone).
  constexpr int kStates = 50000;
  const Matrix q = as_batch(random_configurations(layout, kStates, 51), kStates);
  const Matrix v = Matrix::Zero(kStates, 18), tau = Matrix::Zero(kStates, 18);
  client::CallOptions call;
  call.deadline = std::chrono::milliseconds(1);
  try {
    client.forward_dynamics(layout.id(), q, v, tau, {}, call);
    ADD_FAILURE() << "a 50 000-state call finished within 1 ms";
  } catch (const client::Error& e) {
    EXPECT_EQ(e.code(), grpc::StatusCode::DEADLINE_EXCEEDED) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("DEADLINE_EXCEEDED: ", 0), 0u) << e.what();
  }
  // The client's default deadline applies when the call sets none.
  ClientOptions short_default = options;
  short_default.deadline = std::chrono::milliseconds(1);
  Client hurried(short_default);
  try {
    hurried.forward_dynamics(layout.id(), q, v, tau);
    ADD_FAILURE() << "a 50 000-state call finished within 1 ms";
  } catch (const client::Error& e) {
    EXPECT_EQ(e.code(), grpc::StatusCode::DEADLINE_EXCEEDED) << e.what();
  }
  // And the server still answers normally afterwards.
  EXPECT_EQ(client.gravity(layout.id(), q.topRows(3)).rows(), 3);
}

}  // namespace
}  // namespace torqued::testing
