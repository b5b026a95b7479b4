// Tests clients/cpp/torqued/client.cpp against real torqued processes on loopback: results equal
// the engine's in-process results bit for bit (the server runs the same engine code on the same
// doubles, and the wire carries doubles exactly), a model deleted on the server is re-registered
// transparently (also under threads sharing the client), UNAVAILABLE is retried until a late or
// restarted server answers, round_robin spreads calls over two servers, deadlines surface as
// DEADLINE_EXCEEDED, and list_models() walks every page of ListModels. Every method of the
// services has a client call (checked against their descriptors and the server's metrics),
// Session streams answer in order, call_method() calls any unary method by its descriptor, and
// solve() lays an optimal-control answer out by knot.
#include "torqued/client.hpp"

#include <google/protobuf/dynamic_message.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <functional>
#include <set>
#include <thread>
#include <tuple>

#include "engine/algorithms/aba.hpp"
#include "engine/algorithms/constrained_dynamics.hpp"
#include "engine/algorithms/crba.hpp"
#include "engine/algorithms/discrete_step.hpp"
#include "engine/algorithms/minverse.hpp"
#include "engine/algorithms/rnea.hpp"
#include "server/models/bundled_models.hpp"
#include "server/models/model_from_request.hpp"
#include "tests/server/server_process.hpp"

namespace torqued::testing {
namespace {

using client::Client;
using client::ClientOptions;
using client::Matrix;

// The registration of a model file of the bundled repository.
v1::RegisterModelRequest bundled_request(const std::string& file) {
  v1::RegisterModelRequest request;
  std::string error;
  EXPECT_TRUE(server::read_model_file(repository_dir() + "/" + file, request, error)) << error;
  return request;
}

// The quadruped: a floating base (free-flyer quaternion in q), so nq != nv and the batches'
// shapes are checked as well as their values.
v1::RegisterModelRequest quadruped_request() { return bundled_request("quadruped.urdf"); }

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

// Waits (up to 10 s: the server counts a call once its answer is sent) until `method` has been
// answered OK at least once.
bool answered_ok(const ServerProcess& server, const std::string& method) {
  for (int k = 0; k < 1000; ++k) {
    if (handled_ok(server, method) > 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
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
  ASSERT_TRUE(
      server::build_from_request(request, server::model_limits(server::Config{}), built).ok());
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
  // The front feet as point contacts anchored at the world origin (an explicit all-zero anchor,
  // not where they stand).
  client::ConstrainedDynamicsOptions options;
  options.gains.set_position(10.0);
  for (const char* foot : {"FL_foot", "FR_foot"}) {
    v1::Constraint& c = options.constraints.emplace_back();
    c.set_name(foot);
    c.set_type(v1::CONSTRAINT_TYPE_POINT);
    c.mutable_frame1()->set_frame(foot);
    c.mutable_frame2()->mutable_placement();
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
  ASSERT_TRUE(
      server::build_from_request(request, server::model_limits(server::Config{}), built).ok());
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

// The client asks for the Euler steps' v⁺ rows and the blocks of J_q and J_w, and assembles Fx
// and Fu from them, for Linearize and for Rollout: they equal the engine's full Jacobians
// (step() at each knot, or at each step's state and control), to the rounding of
// the free-flyer's 6 × 6 products (the client's dynamic-size products may sum in another order
// than the engine's fixed-size ones): within 1e-15 of the largest entry.
TEST_F(ClientTest, LinearizeAndRolloutAssembleTheEnginesFxAndFu) {
  ServerProcess server(server_options("a"));
  Client client(options_for(server));
  const v1::RegisterModelRequest request = quadruped_request();
  const v1::Model layout = client.register_model(request);
  constexpr int kKnots = 4, kNv = 18, kNu = 12;
  const Matrix q = as_batch(random_configurations(layout, kKnots, 31), kKnots);
  const Matrix v = as_batch(random_values(kKnots * kNv, 32), kKnots);
  const Matrix u = as_batch(random_values(kKnots * kNu, 33), kKnots);
  server::BuiltModel built;
  ASSERT_TRUE(
      server::build_from_request(request, server::model_limits(server::Config{}), built).ok());
  const Model& model = *built.model;
  Data data(model);
  std::vector<int> actuated;
  for (int dof = 6; dof < kNv; ++dof) actuated.push_back(dof);

  for (const v1::Integrator integrator :
       {v1::INTEGRATOR_SEMI_IMPLICIT_EULER, v1::INTEGRATOR_EXPLICIT_EULER}) {
    Eigen::VectorXd q_next(model.nq), v_next(kNv);
    RowMajorMatrix fx(2 * kNv, 2 * kNv), fu(2 * kNv, kNu);
    // The engine's step from (q, v, u), in q_next, v_next, fx and fu.
    const auto engine_step = [&](const auto& q_k, const auto& v_k, const auto& u_k) {
      const StepSettings settings{.dt = 0.01,
                                  .integrator = integrator == v1::INTEGRATOR_EXPLICIT_EULER
                                                    ? Integrator::kExplicitEuler
                                                    : Integrator::kSemiImplicitEuler,
                                  .actuated_dofs = actuated};
      step(model, data, q_k.transpose(), v_k.transpose(), u_k.transpose(), settings,
           {.q_next = q_next, .v_next = v_next, .fx = fx, .fu = fu});
    };
    const auto expect_engines = [&](const Matrix& got_fx, const Matrix& got_fu,
                                    const std::string& what) {
      EXPECT_LE((got_fx - fx).cwiseAbs().maxCoeff(), 1e-15 * fx.cwiseAbs().maxCoeff()) << what;
      EXPECT_LE((got_fu - fu).cwiseAbs().maxCoeff(), 1e-15 * fu.cwiseAbs().maxCoeff()) << what;
      // The v⁺ rows come as the engine wrote them.
      EXPECT_EQ(got_fx.bottomRows(kNv), fx.bottomRows(kNv)) << what;
      EXPECT_EQ(got_fu.bottomRows(kNv), fu.bottomRows(kNv)) << what;
    };

    client::LinearizeOptions options;
    options.dt = 0.01;
    options.integrator = integrator;
    options.actuation = v1::ACTUATION_KIND_UNACTUATED_ROOT;
    const client::LinearizeResult got = client.linearize(layout.id(), q, v, u, options);
    ASSERT_EQ(got.fx.size(), static_cast<std::size_t>(kKnots));
    ASSERT_EQ(got.fu.size(), static_cast<std::size_t>(kKnots));
    for (int k = 0; k < kKnots; ++k) {
      engine_step(q.row(k), v.row(k), u.row(k));
      const std::string what = v1::Integrator_Name(integrator) + " knot " + std::to_string(k);
      EXPECT_EQ(Eigen::VectorXd(got.q_next.row(k).transpose()), q_next) << what;
      EXPECT_EQ(Eigen::VectorXd(got.v_next.row(k).transpose()), v_next) << what;
      expect_engines(got.fx[k], got.fu[k], what);
    }

    // Two rollouts of two steps from the first two knots, the controls of knots 0-1 and 2-3.
    client::RolloutOptions rollout_options;
    rollout_options.dt = 0.01;
    rollout_options.integrator = integrator;
    rollout_options.actuation = v1::ACTUATION_KIND_UNACTUATED_ROOT;
    rollout_options.jacobians = true;
    const client::RolloutResult rolled = client.rollout(
        layout.id(), q.topRows(2), v.topRows(2), {u.topRows(2), u.bottomRows(2)}, rollout_options);
    ASSERT_EQ(rolled.rollouts.size(), 2u);
    for (int r = 0; r < 2; ++r) {
      const client::RolloutTrajectory& rollout = rolled.rollouts[r];
      ASSERT_EQ(rollout.steps, 2) << rollout.error;
      ASSERT_EQ(rollout.fx.size(), 2u);
      for (int k = 0; k < 2; ++k) {
        engine_step(rollout.q.row(k), rollout.v.row(k), rollout.u.row(k));
        const std::string what = v1::Integrator_Name(integrator) + " rollout " + std::to_string(r) +
                                 " step " + std::to_string(k);
        expect_engines(rollout.fx[k], rollout.fu[k], what);
      }
    }
  }
}

// A trot's schedule through the client: the feet of the quadruped, then its FL-HR diagonal from
// knot 2, then the four again from knot 4 (a touchdown). Rollout's values per step come per knot as
// the layout places them, and Linearize at the rollout's own states gives them again: λ, the
// touchdown's impulses and the friction cones.
TEST_F(ClientTest, PhasesAndConesComePerKnot) {
  ServerProcess server(server_options("a"));
  Client client(options_for(server));
  const v1::Model layout = client.register_model(quadruped_request());
  constexpr int kKnots = 6, kNv = 18, kNu = 12;
  const Matrix q0 = as_batch(random_configurations(layout, 1, 41), 1);
  const Matrix v0 = as_batch(random_values(kNv, 42), 1);
  const Matrix u = as_batch(random_values(kKnots * kNu, 43), kKnots);
  const auto foot = [](const std::string& frame) {
    v1::Constraint c;
    c.set_type(v1::CONSTRAINT_TYPE_POINT);
    c.mutable_frame1()->set_frame(frame);
    return c;
  };
  std::vector<v1::ContactPhase> phases(3);
  for (const char* frame : {"FL_foot", "FR_foot", "HL_foot", "HR_foot"}) {
    *phases[0].add_contacts() = foot(frame);
    *phases[2].add_contacts() = foot(frame);
  }
  *phases[1].add_contacts() = foot("FL_foot");
  *phases[1].add_contacts() = foot("HR_foot");
  phases[1].set_first_knot(2);
  phases[2].set_first_knot(4);
  v1::FrictionCone cone;
  cone.set_friction(0.8);

  client::RolloutOptions rollout_options;
  rollout_options.dt = 0.01;
  rollout_options.actuation = v1::ACTUATION_KIND_UNACTUATED_ROOT;
  rollout_options.phases = phases;
  rollout_options.friction_cone = cone;
  rollout_options.gains.set_position(1e4);
  rollout_options.gains.set_velocity(100.0);
  const client::RolloutResult rolled = client.rollout(layout.id(), q0, v0, {u}, rollout_options);
  ASSERT_EQ(rolled.rollouts.size(), 1u);
  const client::RolloutTrajectory& trot = rolled.rollouts[0];
  ASSERT_EQ(trot.steps, kKnots) << trot.error;
  EXPECT_EQ(trot.multipliers.size(), 0) << "with phases λ comes per knot";
  ASSERT_TRUE(trot.knots.has_value());
  const client::KnotValues& rolled_knots = *trot.knots;
  ASSERT_EQ(rolled_knots.multipliers.size(), static_cast<std::size_t>(kKnots));
  const std::vector<Eigen::Index> rows = {12, 12, 6, 6, 12, 12};
  for (int k = 0; k < kKnots; ++k) {
    EXPECT_EQ(rolled_knots.multipliers[k].size(), rows[k]) << "knot " << k;
    EXPECT_EQ(rolled_knots.friction_cones[k].rows(), rows[k] / 3) << "knot " << k;
    EXPECT_EQ(rolled_knots.friction_cones[k].cols(), 5) << "knot " << k;
  }
  ASSERT_EQ(rolled_knots.impulses.size(), 1u);
  EXPECT_EQ(rolled_knots.impulses.begin()->first, 4);
  ASSERT_EQ(rolled_knots.phase_rows.size(), 3u);
  EXPECT_EQ(rolled_knots.phase_rows[1].size(), 2u);

  client::LinearizeOptions options;
  options.dt = 0.01;
  options.actuation = v1::ACTUATION_KIND_UNACTUATED_ROOT;
  options.phases = phases;
  options.friction_cone = cone;
  options.gains = rollout_options.gains;
  options.continuous_derivatives = true;
  const client::LinearizeResult linearized =
      client.linearize(layout.id(), trot.q.topRows(kKnots), trot.v.topRows(kKnots), u, options);
  ASSERT_TRUE(linearized.knots.has_value());
  const client::KnotValues& knots = *linearized.knots;
  // The step with Jacobians solves for λ through the derivatives' factors, the one without through
  // the dynamics': the same to rounding.
  const auto near = [](const auto& got, const auto& want) {
    return (got - want).cwiseAbs().maxCoeff() <= 1e-9 * std::max(1.0, want.cwiseAbs().maxCoeff());
  };
  for (int k = 0; k < kKnots; ++k) {
    EXPECT_TRUE(near(knots.multipliers[k], rolled_knots.multipliers[k])) << "knot " << k;
    EXPECT_TRUE(near(knots.friction_cones[k], rolled_knots.friction_cones[k])) << "knot " << k;
    EXPECT_EQ(knots.dmultipliers_dq[k].rows(), rows[k]) << "knot " << k;
    EXPECT_EQ(knots.dfriction_cones_dx[k].rows(), 5 * rows[k] / 3) << "knot " << k;
    EXPECT_EQ(knots.dfriction_cones_du[k].cols(), kNu) << "knot " << k;
  }
  EXPECT_TRUE(near(knots.impulses.at(4), rolled_knots.impulses.at(4)));
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

// What a client call of the coverage test below computes on: the quadruped and two states.
struct CallInputs {
  v1::RegisterModelRequest quadruped;
  v1::RegisterModelRequest pendulum;
  std::string id;
  Matrix q, v, a;
};

using ClientCall = std::function<void(Client&, const CallInputs&)>;

v1::SessionRequest session_gravity(const CallInputs& in) {
  v1::SessionRequest message;
  message.set_model_id(in.id);
  message.set_sequence(1);
  v1::GravityRequest& gravity = *message.mutable_gravity();
  gravity.set_batch_size(static_cast<std::uint32_t>(in.q.rows()));
  gravity.mutable_q()->Add(in.q.data(), in.q.data() + in.q.size());
  return message;
}

// The client call of each method of the services: a method missing here has no call yet (write
// it in client.hpp, then its entry here).
const std::map<std::string, ClientCall>& client_calls() {
  static const std::map<std::string, ClientCall> calls = {
      {"RegisterModel", [](Client& c, const CallInputs& in) { c.register_model(in.quadruped); }},
      {"GetModel", [](Client& c, const CallInputs& in) { c.get_model(in.id); }},
      {"ListModels", [](Client& c, const CallInputs&) { c.list_models(); }},
      {"DeleteModel",
       [](Client& c, const CallInputs& in) { c.delete_model(c.register_model(in.pendulum).id()); }},
      {"InverseDynamics",
       [](Client& c, const CallInputs& in) { c.inverse_dynamics(in.id, in.q, in.v, in.a); }},
      {"ForwardDynamics",
       [](Client& c, const CallInputs& in) { c.forward_dynamics(in.id, in.q, in.v, in.a); }},
      {"MassMatrix", [](Client& c, const CallInputs& in) { c.mass_matrix(in.id, in.q); }},
      {"HybridDynamics",
       [](Client& c, const CallInputs& in) {
         c.hybrid_dynamics(in.id, in.q, in.v, std::vector(18, v1::DOF_INPUT_FORCE), in.a, in.a);
       }},
      {"FloatingBaseInverseDynamics",
       [](Client& c, const CallInputs& in) {
         c.floating_base_inverse_dynamics(in.id, in.q, in.v, in.a);
       }},
      {"ConstrainedDynamics",
       [](Client& c, const CallInputs& in) {
         client::ConstrainedDynamicsOptions options;
         v1::Constraint& foot = options.constraints.emplace_back();
         foot.set_type(v1::CONSTRAINT_TYPE_POINT);
         foot.mutable_frame1()->set_frame("FL_foot");
         c.constrained_dynamics(in.id, in.q, in.v, Matrix(), in.a, options);
       }},
      {"Derivatives",
       [](Client& c, const CallInputs& in) {
         c.derivatives(in.id, v1::DERIVATIVES_OF_INVERSE_DYNAMICS, in.q, in.v, in.a);
         v1::Constraint foot;
         foot.set_type(v1::CONSTRAINT_TYPE_POINT);
         foot.mutable_frame1()->set_frame("FL_foot");
         const client::DerivativesResult held = c.derivatives(
             in.id, v1::DERIVATIVES_OF_CONSTRAINED_DYNAMICS, in.q, in.v, in.a, {}, {foot});
         EXPECT_EQ(held.multipliers.cols(), 3);
         ASSERT_EQ(held.dmultipliers_dq.size(), 2u);
         EXPECT_EQ(held.dmultipliers_dq[0].rows(), 3);
         EXPECT_EQ(held.dmultipliers_dq[0].cols(), 18);
         ASSERT_EQ(held.rows.size(), 1u);
         EXPECT_EQ(held.rows[0].name(), "constraints[0]");
       }},
      {"CoriolisMatrix",
       [](Client& c, const CallInputs& in) { c.coriolis_matrix(in.id, in.q, in.v); }},
      {"Centroidal", [](Client& c, const CallInputs& in) { c.centroidal(in.id, in.q, in.v); }},
      {"NonlinearEffects",
       [](Client& c, const CallInputs& in) { c.nonlinear_effects(in.id, in.q, in.v); }},
      {"Gravity", [](Client& c, const CallInputs& in) { c.gravity(in.id, in.q); }},
      {"Kinematics", [](Client& c, const CallInputs& in) { c.kinematics(in.id, in.q, in.v); }},
      {"Echo", [](Client& c, const CallInputs&) { c.echo("payload", Eigen::Vector2d(1, 2)); }},
      {"ContactDynamics",
       [](Client& c, const CallInputs& in) {
         c.contact_dynamics(in.id, in.q, in.v, in.a, {{"FL_foot"}});
       }},
      {"Impact",
       [](Client& c, const CallInputs& in) { c.impact(in.id, in.q, in.v, {{"FL_foot"}}, 0.5); }},
      {"Simulate",
       [](Client& c, const CallInputs& in) {
         client::SimulateOptions options;
         options.steps = 2;
         c.simulate(in.id, in.q, in.v, options);
       }},
      {"Linearize",
       [](Client& c, const CallInputs& in) {
         client::LinearizeOptions options;
         options.dt = 0.01;
         c.linearize(in.id, in.q, in.v, in.a, options);
         // Standing on one foot, with the contact force and its derivatives.
         v1::Constraint& foot = options.constraints.emplace_back();
         foot.set_type(v1::CONSTRAINT_TYPE_POINT);
         foot.mutable_frame1()->set_frame("FL_foot");
         options.continuous_derivatives = true;
         const client::LinearizeResult held = c.linearize(in.id, in.q, in.v, in.a, options);
         EXPECT_EQ(held.multipliers.cols(), 3);
         ASSERT_EQ(held.dmultipliers_dtau.size(), 2u);
         EXPECT_EQ(held.dmultipliers_dtau[0].rows(), 3);
         EXPECT_EQ(held.rows.size(), 1u);
       }},
      {"Rollout",
       [](Client& c, const CallInputs& in) {
         // Two rollouts of 3 steps on one foot, about a nominal held at the first start, with
         // the foot's placement and Jacobian at every state.
         client::RolloutOptions options;
         options.dt = 0.01;
         v1::Constraint& foot = options.constraints.emplace_back();
         foot.set_type(v1::CONSTRAINT_TYPE_POINT);
         foot.mutable_frame1()->set_frame("FL_foot");
         options.q_nominal = in.q.row(0).replicate(3, 1);
         options.v_nominal = in.v.row(0).replicate(3, 1);
         options.feedback.assign(3, Matrix::Constant(18, 36, 0.01));
         options.jacobians = true;
         options.frames = {"FL_foot"};
         options.frame_jacobians = true;
         const client::RolloutResult out =
             c.rollout(in.id, in.q, in.v,
                       {in.a.topRows(2).replicate(2, 1).topRows(3),
                        in.a.topRows(2).replicate(2, 1).bottomRows(3)},
                       options);
         ASSERT_EQ(out.rollouts.size(), 2u);
         const client::RolloutTrajectory& second = out.rollouts[1];
         EXPECT_EQ(second.q.rows(), 4);
         EXPECT_EQ(second.q.cols(), 19);
         EXPECT_EQ((second.q.row(0) - in.q.row(1)).norm(), 0.0);
         EXPECT_EQ(second.u.rows(), 3);
         ASSERT_EQ(second.fx.size(), 3u);
         EXPECT_EQ(second.fu[2].rows(), 36);
         EXPECT_EQ(second.fu[2].cols(), 18);
         EXPECT_EQ(second.multipliers.rows(), 3);
         EXPECT_EQ(second.multipliers.cols(), 3);
         ASSERT_EQ(second.frame_jacobians.size(), 4u);
         EXPECT_EQ(second.frame_jacobians[3][0].cols(), 18);
         EXPECT_EQ(second.frame_positions[0].rows(), 1);
         EXPECT_EQ(out.frames, std::vector<std::string>{"FL_foot"});
         // Fx and Fu, assembled from the v⁺ rows, are Linearize's at the states and controls.
         client::LinearizeOptions step;
         step.dt = options.dt;
         step.constraints = options.constraints;
         const client::LinearizeResult knots =
             c.linearize(in.id, second.q.topRows(3), second.v.topRows(3), second.u, step);
         for (int k = 0; k < 3; ++k) {
           EXPECT_LT((second.fx[k] - knots.fx[k]).cwiseAbs().maxCoeff(), 1e-12) << k;
           EXPECT_LT((second.fu[k] - knots.fu[k]).cwiseAbs().maxCoeff(), 1e-12) << k;
         }
       }},
      {"Solve",
       [](Client& c, const CallInputs& in) {
         // The quadruped from the first state towards rest at its neutral configuration over 3
         // knots, every DOF actuated.
         v1::SolveRequest request;
         request.set_model_id(in.id);
         client::copy_values(in.q.row(0), request.mutable_q0());
         client::copy_values(in.v.row(0), request.mutable_v0());
         request.set_knots(3);
         request.set_dt(0.01);
         request.add_running_costs()->mutable_residual()->set_type(v1::RESIDUAL_TYPE_CONTROL);
         request.add_terminal_costs()->mutable_residual()->set_type(v1::RESIDUAL_TYPE_STATE);
         const client::SolveResult solution = c.solve(request);
         EXPECT_EQ(solution.q.rows(), 4);
         EXPECT_EQ(solution.q.cols(), 19);
         EXPECT_EQ(solution.v.cols(), 18);
         EXPECT_EQ(solution.u.rows(), 3);
         EXPECT_EQ(solution.u.cols(), 18);
         EXPECT_TRUE(solution.feedback.empty());
         EXPECT_EQ(solution.cost_terms.size(), 2u);
       }},
      {"Mpc",
       [](Client& c, const CallInputs& in) {
         // The quadruped's Solve above on a stream, then a tick one knot later from its plan.
         v1::MpcRequest start;
         v1::SolveRequest& problem = *start.mutable_problem();
         problem.set_model_id(in.id);
         client::copy_values(in.q.row(0), problem.mutable_q0());
         client::copy_values(in.v.row(0), problem.mutable_v0());
         problem.set_knots(3);
         problem.set_dt(0.01);
         problem.add_running_costs()->mutable_residual()->set_type(v1::RESIDUAL_TYPE_CONTROL);
         problem.add_terminal_costs()->mutable_residual()->set_type(v1::RESIDUAL_TYPE_STATE);
         start.set_plan(true);
         client::Mpc mpc = c.mpc(start);
         const v1::SolveResponse& plan = mpc.first().solution();
         ASSERT_EQ(plan.q_size(), 4 * 19);
         v1::MpcRequest tick;
         tick.mutable_q()->Add(plan.q().begin() + 19, plan.q().begin() + 38);
         tick.mutable_v()->Add(plan.v().begin() + 18, plan.v().begin() + 36);
         tick.set_time(0.01);
         const v1::MpcResponse answer = mpc.tick(tick);
         EXPECT_EQ(answer.shift(), 1u);
         EXPECT_EQ(answer.u0_size(), 18);
         v1::MpcRequest early = tick;
         early.set_time(0.0);
         EXPECT_THROW(mpc.tick(early), client::Error);
         EXPECT_EQ(mpc.tick(tick).shift(), 0u);
         mpc.finish();
         EXPECT_THROW(c.mpc(tick), client::Error);  // no problem stated
       }},
      {"Session",
       [](Client& c, const CallInputs& in) {
         client::Session session = c.session();
         ASSERT_TRUE(session.write(session_gravity(in)));
         v1::SessionResponse answer;
         ASSERT_TRUE(session.read(&answer));
         EXPECT_EQ(answer.status().code(), 0) << answer.status().message();
         session.finish();
       }},
  };
  return calls;
}

// Every method of ModelService, DynamicsService and ControlService, from their descriptors, has its
// client call,
// and that call reaches that method (the server's metrics count it answered OK).
TEST_F(ClientTest, EveryMethodOfTheServicesHasAClientCall) {
  ServerProcess::Options options = server_options("a");
  options.metrics = true;
  ServerProcess server(options);
  Client client(options_for(server));
  CallInputs in{quadruped_request(), bundled_request("double_pendulum.urdf"), "", {}, {}, {}};
  const v1::Model layout = client.register_model(in.quadruped);
  in.id = layout.id();
  in.q = as_batch(random_configurations(layout, 2, 61), 2);
  in.v = as_batch(random_values(2 * 18, 62), 2);
  in.a = as_batch(random_values(2 * 18, 63), 2);

  std::set<std::string> methods;
  for (const google::protobuf::ServiceDescriptor* service : client::services()) {
    for (int m = 0; m < service->method_count(); ++m) {
      const std::string name = service->method(m)->name();
      methods.insert(name);
      EXPECT_EQ(client::find_method(name), service->method(m));
      const auto call = client_calls().find(name);
      if (call == client_calls().end()) {
        ADD_FAILURE() << service->full_name() << "." << name
                      << " has no client call: write it (clients/cpp/torqued/client.hpp) and its "
                         "entry in client_calls()";
        continue;
      }
      EXPECT_NO_THROW(call->second(client, in)) << name;
      EXPECT_TRUE(answered_ok(server, name)) << name << "'s client call does not reach it";
    }
  }
  for (const auto& [name, call] : client_calls()) {
    EXPECT_EQ(methods.count(name), 1u) << name << " is no method of the services";
  }
  EXPECT_EQ(client::find_method("NoSuchMethod"), nullptr);
}

// Crocoddyl's arm-reaching example on the bundled arm (control_service_test's reach): the tip of
// its last link from a bent configuration to a point in front of it, the state and the controls
// regularized, at rest at the end.
v1::SolveRequest reach_request(const std::string& arm_id, const Eigen::Vector3d& target) {
  v1::SolveRequest request;
  request.set_model_id(arm_id);
  client::copy_values(Eigen::VectorXd::Constant(6, 0.3), request.mutable_q0());
  client::copy_values(Eigen::VectorXd::Zero(6), request.mutable_v0());
  request.set_knots(40);
  request.set_dt(0.02);
  const auto term = [](google::protobuf::RepeatedPtrField<v1::CostTerm>* terms,
                       const std::string& name, v1::ResidualType type, double weight) {
    v1::CostTerm* added = terms->Add();
    added->set_name(name);
    added->mutable_residual()->set_type(type);
    added->set_weight(weight);
    return added;
  };
  for (const auto& [terms, name, weight] :
       {std::tuple(request.mutable_running_costs(), "tip", 1.0),
        std::tuple(request.mutable_terminal_costs(), "tip_final", 1e3)}) {
    v1::Residual& tip =
        *term(terms, name, v1::RESIDUAL_TYPE_FRAME_TRANSLATION, weight)->mutable_residual();
    tip.set_frame("link6");
    client::copy_values(target, tip.mutable_reference());
  }
  term(request.mutable_running_costs(), "posture", v1::RESIDUAL_TYPE_STATE, 1e-2);
  term(request.mutable_running_costs(), "effort", v1::RESIDUAL_TYPE_CONTROL, 1e-4);
  v1::Activation& rest =
      *term(request.mutable_terminal_costs(), "rest", v1::RESIDUAL_TYPE_STATE, 1.0)
           ->mutable_activation();
  rest.set_type(v1::ACTIVATION_TYPE_WEIGHTED_QUADRATIC);
  // The velocities only: the configuration at the end is the tip's to choose.
  client::copy_values(
      (Eigen::VectorXd(12) << Eigen::VectorXd::Zero(6), Eigen::VectorXd::Ones(6)).finished(),
      rest.mutable_weights());
  return request;
}

// solve() lays the answer out by knot, bit for bit as the stub receives it: states and controls
// one knot per row, the gains one nu × 2 nv matrix per knot. The tip reaches its target, a warm
// start from the solution converges at once, a model deleted on the server is registered again,
// and a bad problem is INVALID_ARGUMENT naming the field.
TEST_F(ClientTest, SolvesAReachLaidOutByKnot) {
  ServerProcess server(server_options("a"));
  Client client(options_for(server));
  const v1::Model arm = client.register_model(bundled_request("puma560.dh.txtpb"));
  ASSERT_EQ(arm.nq(), 6);
  ASSERT_EQ(arm.nv(), 6);
  const Eigen::Vector3d target(0.4, 0.2, 0.3);
  v1::SolveRequest request = reach_request(arm.id(), target);
  request.set_feedback(true);
  const client::SolveResult solution = client.solve(request);
  v1::SolveResponse answer;
  const grpc::Status status = with_deadline(60, [&](grpc::ClientContext* c) {
    return v1::ControlService::NewStub(server.channel())->Solve(c, request, &answer);
  });
  ASSERT_TRUE(status.ok()) << status.error_message();

  EXPECT_EQ(solution.stop_reason, v1::STOP_REASON_CONVERGED);
  EXPECT_EQ(answer.stop_reason(), v1::STOP_REASON_CONVERGED);
  ASSERT_EQ(solution.q.rows(), 41);
  ASSERT_EQ(solution.q.cols(), 6);
  ASSERT_EQ(solution.v.rows(), 41);
  ASSERT_EQ(solution.v.cols(), 6);
  ASSERT_EQ(solution.u.rows(), 40);
  ASSERT_EQ(solution.u.cols(), 6);
  ASSERT_EQ(solution.feedback.size(), 40u);
  for (int t = 0; t <= 40; ++t) {
    for (int i = 0; i < 6; ++i) {
      ASSERT_EQ(solution.q(t, i), answer.q(t * 6 + i)) << t;
      ASSERT_EQ(solution.v(t, i), answer.v(t * 6 + i)) << t;
      if (t < 40) {
        ASSERT_EQ(solution.u(t, i), answer.u(t * 6 + i)) << t;
      }
    }
  }
  for (int t = 0; t < 40; ++t) {
    ASSERT_EQ(solution.feedback[t].rows(), 6);
    ASSERT_EQ(solution.feedback[t].cols(), 12);
    for (int r = 0; r < 6; ++r) {
      for (int c = 0; c < 12; ++c) {
        ASSERT_EQ(solution.feedback[t](r, c), answer.feedback((t * 6 + r) * 12 + c)) << t;
      }
    }
  }
  ASSERT_EQ(solution.iterations.size(), static_cast<std::size_t>(answer.iterations_size()));
  for (int i = 0; i < answer.iterations_size(); ++i) {
    EXPECT_EQ(solution.iterations[i].cost(), answer.iterations(i).cost()) << i;
  }
  EXPECT_EQ(solution.cost, answer.cost());
  std::vector<std::string> names;
  for (const v1::CostValue& term : solution.cost_terms) names.push_back(term.name());
  EXPECT_EQ(names, (std::vector<std::string>{"tip", "posture", "effort", "tip_final", "rest"}));
  EXPECT_EQ(solution.cost_terms[3].value(), answer.cost_terms(3).value());
  EXPECT_TRUE(solution.feasible);
  EXPECT_EQ(solution.max_gap, answer.max_gap());
  EXPECT_GT(solution.solve_seconds, 0.0);
  EXPECT_EQ((solution.q.row(0) - Eigen::RowVectorXd::Constant(6, 0.3)).norm(), 0.0);

  client::KinematicsOptions tip;
  tip.frames = {"link6"};
  const client::KinematicsResult reached =
      client.kinematics(arm.id(), solution.q.bottomRows(1), Matrix(), tip);
  EXPECT_LT((reached.positions[0].row(0).transpose() - target).norm(), 1e-2);

  // A warm start from another start has gaps; from the solution's own, nothing left to gain.
  v1::SolveRequest moved = request;
  moved.set_q0(0, 0.31);
  client::warm_start(solution, moved);
  EXPECT_FALSE(moved.guess_feasible());
  EXPECT_EQ(moved.guess_u_size(), 40 * 6);
  client::warm_start(solution, request);
  EXPECT_TRUE(request.guess_feasible());
  EXPECT_EQ(request.guess_q_size(), 41 * 6);
  request.set_feedback(false);
  const client::SolveResult again = client.solve(request);
  EXPECT_EQ(again.stop_reason, v1::STOP_REASON_CONVERGED);
  EXPECT_LE(again.iterations.size(), 2u);
  EXPECT_LE(again.cost, solution.cost * (1 + 1e-9));
  EXPECT_TRUE(again.feedback.empty());

  // Deleted behind the client's back: registered again, as for the dynamics methods.
  ASSERT_TRUE(delete_on_server(server, arm.id()).ok());
  EXPECT_EQ(client.solve(request).stop_reason, v1::STOP_REASON_CONVERGED);

  request.set_dt(0.0);
  try {
    client.solve(request);
    ADD_FAILURE() << "a solve with dt 0 succeeded";
  } catch (const client::Error& e) {
    EXPECT_EQ(e.code(), grpc::StatusCode::INVALID_ARGUMENT) << e.what();
    EXPECT_NE(e.message().find("dt"), std::string::npos) << e.what();
  }
}

// A stream's answers come in the order of its messages, each one's as its unary call's; a
// failed message is answered with its status and the stream goes on.
TEST_F(ClientTest, SessionAnswersInOrderAsTheUnaryCalls) {
  ServerProcess server(server_options("a"));
  Client client(options_for(server));
  const v1::Model layout = client.register_model(quadruped_request());
  const Matrix q = as_batch(random_configurations(layout, 3, 71), 3);
  const Matrix v = as_batch(random_values(3 * 18, 72), 3);
  const Matrix a = as_batch(random_values(3 * 18, 73), 3);

  std::vector<v1::SessionRequest> messages(4);
  messages[0].set_model_id(layout.id());  // the stream's model from here on
  v1::GravityRequest& gravity = *messages[0].mutable_gravity();
  gravity.set_batch_size(3);
  gravity.mutable_q()->Add(q.data(), q.data() + q.size());
  v1::InverseDynamicsRequest& inverse = *messages[1].mutable_inverse_dynamics();
  inverse.set_batch_size(3);
  inverse.mutable_q()->Add(q.data(), q.data() + q.size());
  inverse.mutable_v()->Add(v.data(), v.data() + v.size());
  inverse.mutable_a()->Add(a.data(), a.data() + a.size());
  messages[2].mutable_gravity()->add_q(0.5);  // 1 number where 19 are due
  messages[3].mutable_echo()->add_values(2.5);

  client::Session session = client.session();
  for (std::size_t k = 0; k < messages.size(); ++k) {
    messages[k].set_sequence(100 + k);
    ASSERT_TRUE(session.write(messages[k]));
  }
  session.writes_done();
  std::vector<v1::SessionResponse> answers(messages.size());
  for (v1::SessionResponse& answer : answers) ASSERT_TRUE(session.read(&answer));
  v1::SessionResponse after_the_last;
  EXPECT_FALSE(session.read(&after_the_last));
  session.finish();

  for (std::size_t k = 0; k < answers.size(); ++k) EXPECT_EQ(answers[k].sequence(), 100 + k);
  const Matrix expected_gravity = client.gravity(layout.id(), q);
  ASSERT_EQ(answers[0].gravity().tau_size(), 3 * 18);
  EXPECT_EQ(as_batch({answers[0].gravity().tau().begin(), answers[0].gravity().tau().end()}, 3),
            expected_gravity);
  const Matrix expected_tau = client.inverse_dynamics(layout.id(), q, v, a);
  const auto& tau = answers[1].inverse_dynamics().tau();
  EXPECT_EQ(as_batch({tau.begin(), tau.end()}, 3), expected_tau);
  EXPECT_EQ(answers[2].status().code(), static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  EXPECT_NE(answers[2].status().message().find("q"), std::string::npos)
      << answers[2].status().message();
  EXPECT_FALSE(answers[2].has_gravity());
  ASSERT_EQ(answers[3].echo().values_size(), 1);
  EXPECT_EQ(answers[3].echo().values(0), 2.5);
}

// The call's deadline bounds the stream: a stream left waiting ends DEADLINE_EXCEEDED.
TEST_F(ClientTest, SessionEndsAtTheCallsDeadline) {
  ServerProcess server(server_options("a"));
  Client client(options_for(server));
  client::CallOptions call;
  // Room for the first answer, connection included, on shared CPUs: under TSan beside CPU-bound
  // work it took 1.2 s.
  const std::chrono::seconds deadline(test_support::kSanitizedBuild ? 5 : 1);
  call.deadline = deadline;
  const auto start = std::chrono::steady_clock::now();
  client::Session session = client.session(call);
  v1::SessionRequest echo;
  echo.mutable_echo()->add_values(1.0);
  ASSERT_TRUE(session.write(echo));
  v1::SessionResponse answer;
  ASSERT_TRUE(session.read(&answer));
  EXPECT_FALSE(session.read(&answer));  // nothing more was sent: waits out the deadline
  try {
    session.finish();
    ADD_FAILURE() << "a stream outlived its deadline";
  } catch (const client::Error& e) {
    EXPECT_EQ(e.code(), grpc::StatusCode::DEADLINE_EXCEEDED) << e.what();
  }
  // Generous: the bound only says that it was the deadline that ended it.
  EXPECT_LT(std::chrono::steady_clock::now() - start, deadline + std::chrono::seconds(15));
}

// call_method() takes any unary method by its descriptor, on generated or dynamic messages, with
// the typed methods' re-registration; it refuses streams and messages of other types.
TEST_F(ClientTest, CallMethodCallsAnyUnaryMethodByItsDescriptor) {
  ServerProcess server(server_options("a"));
  Client client(options_for(server));
  const v1::Model layout = client.register_model(quadruped_request());
  const Matrix q = as_batch(random_configurations(layout, 2, 81), 2);

  const google::protobuf::MethodDescriptor& method = *client::find_method("Gravity");
  google::protobuf::DynamicMessageFactory factory;
  std::unique_ptr<google::protobuf::Message> request(
      factory.GetPrototype(method.input_type())->New());
  std::unique_ptr<google::protobuf::Message> response(
      factory.GetPrototype(method.output_type())->New());
  v1::GravityRequest typed;
  typed.set_model_id(layout.id());
  typed.set_batch_size(2);
  typed.mutable_q()->Add(q.data(), q.data() + q.size());
  ASSERT_TRUE(request->ParseFromString(typed.SerializeAsString()));

  // Deleted behind the client's back: registered again, as for the typed methods.
  ASSERT_TRUE(delete_on_server(server, layout.id()).ok());
  client.call_method(method, *request, response.get());
  v1::GravityResponse answer;
  ASSERT_TRUE(answer.ParseFromString(response->SerializeAsString()));
  EXPECT_EQ(as_batch({answer.tau().begin(), answer.tau().end()}, 2),
            client.gravity(layout.id(), q));

  v1::ListModelsResponse listed;
  client.call_method(*client::find_method("ListModels"), v1::ListModelsRequest(), &listed);
  ASSERT_EQ(listed.models_size(), 1);
  EXPECT_EQ(listed.models(0).id(), layout.id());

  typed.set_model_id("00000000000000000000000000000000");
  v1::GravityResponse unanswered;
  try {
    client.call_method(method, typed, &unanswered);
    ADD_FAILURE() << "gravity of an unknown model succeeded";
  } catch (const client::Error& e) {
    EXPECT_EQ(e.code(), grpc::StatusCode::NOT_FOUND) << e.what();
  }
  v1::InverseDynamicsResponse wrong_type;
  EXPECT_THROW(client.call_method(method, typed, &wrong_type), std::invalid_argument);
  v1::SessionResponse stream_answer;
  EXPECT_THROW(
      client.call_method(*client::find_method("Session"), v1::SessionRequest(), &stream_answer),
      std::invalid_argument);
}

}  // namespace
}  // namespace torqued::testing
