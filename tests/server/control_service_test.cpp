// Tests ControlService.Solve end to end (server/services/control_*.cpp,
// server/compute/control_solver.cpp): over loopback, on two workers, a reach of the bundled arm
// gives bitwise the engine's FDDP in-process on the same problem (the knots' derivatives spread
// over the workers change nothing); the bundled quadruped shifts its trunk through a touchdown
// with its feet held; a warm start from a solution converges at once; a time budget and a
// deadline answer the best iterate, the budget within 2 s of its end here (the benchmark's figure
// is in docs/benchmarks.md), and the server is idle afterwards; control bounds hold; a model's
// solver kept between solves answers as a new one. Over an Mpc
// stream, the first message's answer is Solve's, a tick shifts the last solution and warm-starts
// it, new targets steer it, and a bad message is answered with its error while the stream goes
// on with its problem; a shutdown ends an open stream with UNAVAILABLE.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <thread>

#include "engine/algorithms/kinematics.hpp"
#include "engine/optimal_control/fddp.hpp"
#include "engine/optimal_control/multibody_problem.hpp"
#include "server/models/bundled_models.hpp"
#include "server/models/model_from_request.hpp"
#include "tests/server/server_process.hpp"
#include "torqued/v1/control.grpc.pb.h"

namespace torqued::testing {
namespace {

using Vector = Eigen::VectorXd;

struct LocalModel {
  ModelPtr model;
  std::string id;
};

class ControlServiceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    server_ = new ServerProcess(
        {dir_->path() / "data", repository_dir(), true, {"--workers=2", "--max-ocp-knots=20000"}});
    control_ = v1::ControlService::NewStub(server_->channel()).release();
    std::vector<std::string> errors;
    for (const auto& entry : server::read_bundled_models(repository_dir(), errors)) {
      server::BuiltModel built;
      ASSERT_TRUE(
          server::build_from_request(entry.request, server::model_limits(server::Config{}), built)
              .ok());
      (*models_)[built.model->name] = {built.model, built.id};
    }
  }
  static void TearDownTestSuite() {
    delete control_;
    delete server_;
    delete dir_;
    models_->clear();
  }

  static grpc::Status solve(const v1::SolveRequest& request, v1::SolveResponse& response,
                            double deadline_seconds = 120) {
    grpc::ClientContext context;
    context.set_deadline(deadline_in(deadline_seconds));
    return control_->Solve(&context, request, &response);
  }

  static const LocalModel& model(const std::string& name) { return models_->at(name); }

  static TempDir* dir_;
  static ServerProcess* server_;
  static v1::ControlService::Stub* control_;
  static std::map<std::string, LocalModel>* models_;
};

TempDir* ControlServiceTest::dir_ = nullptr;
ServerProcess* ControlServiceTest::server_ = nullptr;
v1::ControlService::Stub* ControlServiceTest::control_ = nullptr;
std::map<std::string, LocalModel>* ControlServiceTest::models_ =
    new std::map<std::string, LocalModel>();

void add_values(google::protobuf::RepeatedField<double>* field, const Vector& values) {
  field->Add(values.data(), values.data() + values.size());
}

v1::CostTerm cost(const std::string& name, v1::ResidualType type, double weight) {
  v1::CostTerm term;
  term.set_name(name);
  term.mutable_residual()->set_type(type);
  term.set_weight(weight);
  return term;
}

// The arm from a bent configuration to a point in front of it: its last link's origin to
// `target`, the state and the controls regularized (Crocoddyl's arm-reaching example).
constexpr int kReachKnots = 40;
const Vec3 kTarget(0.4, 0.2, 0.3);

v1::SolveRequest reach(const LocalModel& arm, int knots = kReachKnots) {
  const Model& m = *arm.model;
  v1::SolveRequest r;
  r.set_model_id(arm.id);
  Vector q0 = Vector::Constant(m.nq, 0.3);
  add_values(r.mutable_q0(), q0);
  add_values(r.mutable_v0(), Vector::Zero(m.nv));
  r.set_knots(static_cast<std::uint32_t>(knots));
  r.set_dt(0.02);
  const std::string tip = m.body_names.back();
  for (v1::CostTerm* term : {r.add_running_costs(), r.add_terminal_costs()}) {
    const bool terminal = term == &r.terminal_costs(0);
    *term = cost(terminal ? "tip_final" : "tip", v1::RESIDUAL_TYPE_FRAME_TRANSLATION,
                 terminal ? 1e3 : 1.0);
    term->mutable_residual()->set_frame(tip);
    add_values(term->mutable_residual()->mutable_reference(), kTarget);
  }
  *r.add_running_costs() = cost("posture", v1::RESIDUAL_TYPE_STATE, 1e-2);
  *r.add_running_costs() = cost("effort", v1::RESIDUAL_TYPE_CONTROL, 1e-4);
  *r.add_terminal_costs() = cost("rest", v1::RESIDUAL_TYPE_STATE, 1.0);
  v1::CostTerm& rest = *r.mutable_terminal_costs(1);
  rest.mutable_activation()->set_type(v1::ACTIVATION_TYPE_WEIGHTED_QUADRATIC);
  for (int i = 0; i < 2 * m.nv; ++i) rest.mutable_activation()->add_weights(i < m.nv ? 0.0 : 1.0);
  return r;
}

// The same problem built in-process.
MultibodyProblem local_reach(const Model& m, int knots) {
  const int tip = m.find_frame(m.body_names.back());
  Vector x0(m.nq + m.nv);
  x0 << Vector::Constant(m.nq, 0.3), Vector::Zero(m.nv);
  Vector rest_state(m.nq + m.nv);
  rest_state << m.neutral_configuration(), Vector::Zero(m.nv);
  MultibodyDynamics dynamics;
  for (int k = 0; k < m.nv; ++k) dynamics.actuated_dofs.push_back(k);
  const auto translation = [&](double weight) {
    return CostTerm{.name = "tip",
                    .residual = {.type = ResidualType::kFrameTranslation,
                                 .frame = tip,
                                 .target = Vector(kTarget)},
                    .weight = weight};
  };
  KnotModel running{
      .dt = 0.02,
      .costs = {translation(1.0),
                {.name = "posture",
                 .residual = {.type = ResidualType::kState, .target = rest_state},
                 .weight = 1e-2},
                {.name = "effort",
                 .residual = {.type = ResidualType::kControl, .target = Vector::Zero(m.nv)},
                 .weight = 1e-4}}};
  Vector weights(2 * m.nv);
  weights << Vector::Zero(m.nv), Vector::Ones(m.nv);
  KnotModel terminal{
      .costs = {translation(1e3),
                {.name = "rest",
                 .residual = {.type = ResidualType::kState, .target = rest_state},
                 .activation = {.type = ActivationType::kWeightedQuadratic, .weights = weights},
                 .weight = 1.0}}};
  return MultibodyProblem(m, x0, dynamics, {running, terminal}, std::vector<int>(knots, 0), 1);
}

TEST_F(ControlServiceTest, ReachIsTheEnginesFddpBitwise) {
  const LocalModel& arm = model("puma560");
  const Model& m = *arm.model;
  v1::SolveRequest request = reach(arm);
  request.set_feedback(true);
  v1::SolveResponse response;
  const grpc::Status status = solve(request, response);
  ASSERT_TRUE(status.ok()) << status.error_message();

  MultibodyProblem problem = local_reach(m, kReachKnots);
  Fddp fddp(problem);
  std::vector<Vector> xs, us;
  problem.cold_start(xs, us);
  const FddpOutcome outcome = fddp.solve(xs, us, false);
  ASSERT_EQ(outcome, FddpOutcome::kConverged);
  EXPECT_EQ(response.stop_reason(), v1::STOP_REASON_CONVERGED);
  ASSERT_EQ(response.iterations_size(), static_cast<int>(fddp.iterations().size()));
  for (int i = 0; i < response.iterations_size(); ++i) {
    EXPECT_EQ(response.iterations(i).cost(), fddp.iterations()[static_cast<std::size_t>(i)].cost);
  }
  ASSERT_EQ(response.q_size(), (kReachKnots + 1) * m.nq);
  ASSERT_EQ(response.u_size(), kReachKnots * m.nv);
  ASSERT_EQ(response.feedback_size(), kReachKnots * m.nv * 2 * m.nv);
  for (int t = 0; t <= kReachKnots; ++t) {
    const Vector& x = fddp.xs()[static_cast<std::size_t>(t)];
    for (int i = 0; i < m.nq; ++i) ASSERT_EQ(response.q(t * m.nq + i), x[i]) << t;
    for (int i = 0; i < m.nv; ++i) ASSERT_EQ(response.v(t * m.nv + i), x[m.nq + i]) << t;
    if (t == kReachKnots) break;
    for (int i = 0; i < m.nv; ++i) {
      ASSERT_EQ(response.u(t * m.nv + i), fddp.us()[static_cast<std::size_t>(t)][i]) << t;
    }
    const Eigen::MatrixXd& k = fddp.feedback()[static_cast<std::size_t>(t)];
    for (int r = 0; r < m.nv; ++r) {
      for (int c = 0; c < 2 * m.nv; ++c) {
        ASSERT_EQ(response.feedback((t * m.nv + r) * 2 * m.nv + c), -k(r, c)) << t;
      }
    }
  }
  // The cost's terms add up to it, and to the solver's cost (summed in another order).
  ASSERT_EQ(response.cost_terms_size(), 5);
  EXPECT_EQ(response.cost_terms(0).name(), "tip");
  EXPECT_EQ(response.cost_terms(3).name(), "tip_final");
  double sum = 0.0;
  for (const v1::CostValue& term : response.cost_terms()) sum += term.value();
  EXPECT_NEAR(sum, response.cost(), 1e-12 * response.cost());
  EXPECT_NEAR(response.cost(), fddp.cost(), 1e-12 * fddp.cost());
  EXPECT_TRUE(response.feasible());
  EXPECT_LT(response.max_gap(), 1e-12);
  EXPECT_GT(response.solve_seconds(), 0.0);
  // The tip reaches the target.
  Data data(m);
  forward_kinematics(m, data, fddp.xs().back().head(m.nq));
  EXPECT_LT(
      (frame_placement(m, data, m.find_frame(m.body_names.back())).translation - kTarget).norm(),
      1e-2);
}

TEST_F(ControlServiceTest, WarmStartFromASolutionConvergesAtOnce) {
  const LocalModel& arm = model("puma560");
  v1::SolveRequest request = reach(arm);
  v1::SolveResponse first;
  ASSERT_TRUE(solve(request, first).ok());
  *request.mutable_guess_q() = first.q();
  *request.mutable_guess_v() = first.v();
  *request.mutable_guess_u() = first.u();
  request.set_guess_feasible(true);
  v1::SolveResponse second;
  const grpc::Status status = solve(request, second);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(second.stop_reason(), v1::STOP_REASON_CONVERGED);
  EXPECT_LE(second.iterations_size(), 2);
  EXPECT_LE(second.cost(), first.cost() * (1 + 1e-9));
}

// The reach with every torque within ±20 N m, below gravity's at the start, in `iterations`.
v1::SolveRequest bounded_reach(const LocalModel& arm, int iterations) {
  v1::SolveRequest request = reach(arm);
  request.mutable_solver()->set_max_iterations(static_cast<std::uint32_t>(iterations));
  for (int i = 0; i < arm.model->nv; ++i) {
    request.mutable_control_bounds()->add_lower(-20.0);
    request.mutable_control_bounds()->add_upper(20.0);
  }
  return request;
}

TEST_F(ControlServiceTest, ControlBoundsHold) {
  // The arm cannot hold itself, and box-FDDP does not converge within the iterations; its
  // iterates keep to the bounds.
  const v1::SolveRequest request = bounded_reach(model("puma560"), 20);
  v1::SolveResponse response;
  const grpc::Status status = solve(request, response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  double largest = 0.0;
  for (const double u : response.u()) largest = std::max(largest, std::abs(u));
  EXPECT_LE(largest, 20.0);
  EXPECT_NE(response.stop_reason(), v1::STOP_REASON_REGULARIZATION_LIMIT);
}

// A model's solver is kept between solves and rebound to the next problem: the reach answers
// bitwise the same after a bounded reach and a longer one have used the solver (its problem's
// bounds, then FDDP's buffers for other knots).
TEST_F(ControlServiceTest, AKeptSolverAnswersAsANewOne) {
  const LocalModel& arm = model("puma560");
  v1::SolveRequest request = reach(arm);
  request.set_feedback(true);
  v1::SolveResponse first;
  ASSERT_TRUE(solve(request, first).ok());
  v1::SolveResponse other;
  ASSERT_TRUE(solve(bounded_reach(arm, 5), other).ok());
  ASSERT_TRUE(solve(reach(arm, kReachKnots + 7), other).ok());
  v1::SolveResponse again;
  ASSERT_TRUE(solve(request, again).ok());
  ASSERT_EQ(again.iterations_size(), first.iterations_size());
  for (int i = 0; i < first.iterations_size(); ++i) {
    EXPECT_EQ(again.iterations(i).cost(), first.iterations(i).cost()) << i;
  }
  const auto same = [](const auto& a, const auto& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  };
  EXPECT_TRUE(same(again.q(), first.q()));
  EXPECT_TRUE(same(again.v(), first.v()));
  EXPECT_TRUE(same(again.u(), first.u()));
  EXPECT_TRUE(same(again.feedback(), first.feedback()));
  EXPECT_EQ(again.cost(), first.cost());
  EXPECT_EQ(again.max_gap(), first.max_gap());
}

// The quadruped on three feet lowers its fourth (FL) at knot 10, then shifts its trunk on all
// four: a touchdown inside the horizon, contact forces and their friction cone among the costs.
TEST_F(ControlServiceTest, QuadrupedShiftsItsTrunkThroughATouchdown) {
  const LocalModel& quadruped = model("quadruped");
  const Model& m = *quadruped.model;
  constexpr int kKnots = 30;
  Vector q0 = m.neutral_configuration();
  q0[2] = 0.0;  // the bundled robot's feet touch z = 0 at its neutral configuration, trunk at 0
  v1::SolveRequest r;
  r.set_model_id(quadruped.id);
  add_values(r.mutable_q0(), q0);
  add_values(r.mutable_v0(), Vector::Zero(m.nv));
  r.set_knots(kKnots);
  r.set_dt(0.02);
  r.mutable_actuation()->set_kind(v1::ACTUATION_KIND_UNACTUATED_ROOT);
  // Baumgarte's gains pull back the stance feet's O(dt²) drift of each step.
  r.mutable_gains()->set_position(100.0);
  r.mutable_gains()->set_velocity(20.0);
  const std::vector<std::string> feet = {"FL_foot", "FR_foot", "HL_foot", "HR_foot"};
  for (const int first_knot : {0, 10}) {
    v1::ContactPhase& phase = *r.add_phases();
    phase.set_first_knot(first_knot);
    for (const std::string& foot : feet) {
      if (first_knot == 0 && foot == "FL_foot") continue;
      v1::Constraint& contact = *phase.add_contacts();
      contact.set_type(v1::CONSTRAINT_TYPE_POINT);
      contact.mutable_frame1()->set_frame(foot);
    }
  }
  Data data(m);
  forward_kinematics(m, data, q0);
  const Vec3 trunk = frame_placement(m, data, m.find_frame("trunk")).translation;
  const Vec3 shifted = trunk + Vec3(0.02, 0.01, 0.0);
  for (v1::CostTerm* term : {r.add_running_costs(), r.add_terminal_costs()}) {
    const bool terminal = term == &r.terminal_costs(0);
    *term = cost(terminal ? "trunk_final" : "trunk", v1::RESIDUAL_TYPE_FRAME_TRANSLATION,
                 terminal ? 1e3 : 10.0);
    term->mutable_residual()->set_frame("trunk");
    add_values(term->mutable_residual()->mutable_reference(), shifted);
  }
  Vector state_weights(2 * m.nv);
  state_weights << Vector::Zero(3), Vector::Constant(3, 100.0), Vector::Constant(m.nv - 6, 1.0),
      Vector::Constant(m.nv, 0.1);
  v1::CostTerm& posture = *r.add_running_costs();
  posture = cost("posture", v1::RESIDUAL_TYPE_STATE, 1.0);
  add_values(posture.mutable_residual()->mutable_reference(),
             (Vector(m.nq + m.nv) << q0, Vector::Zero(m.nv)).finished());
  posture.mutable_activation()->set_type(v1::ACTIVATION_TYPE_WEIGHTED_QUADRATIC);
  add_values(posture.mutable_activation()->mutable_weights(), state_weights);
  // At rest at the end: without it the last step would buy the trunk's last millimetres with
  // joint velocities whose Euler step lifts the feet.
  v1::CostTerm& rest = *r.add_terminal_costs();
  rest = posture;
  rest.set_name("posture_final");
  *r.add_running_costs() = cost("effort", v1::RESIDUAL_TYPE_CONTROL_GRAVITY, 1e-3);
  v1::CostTerm& force = *r.add_running_costs();
  force = cost("front_left_force", v1::RESIDUAL_TYPE_CONTACT_FORCE, 1e-6);
  force.mutable_residual()->set_frame("FL_foot");
  force.set_first_knot(10);
  v1::CostTerm& cone = *r.add_running_costs();
  cone = cost("front_right_cone", v1::RESIDUAL_TYPE_FRICTION_CONE, 10.0);
  cone.mutable_residual()->set_frame("FR_foot");
  cone.mutable_residual()->mutable_cone()->set_friction(0.7);
  cone.mutable_activation()->set_type(v1::ACTIVATION_TYPE_QUADRATIC_BARRIER);
  for (int face = 0; face < 4; ++face) {
    cone.mutable_activation()->add_lower(0.0);
    cone.mutable_activation()->add_upper(std::numeric_limits<double>::infinity());
  }
  r.mutable_solver()->set_max_iterations(50);
  v1::SolveResponse response;
  const grpc::Status status = solve(r, response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.stop_reason(), v1::STOP_REASON_CONVERGED);
  ASSERT_GE(response.iterations_size(), 1);
  EXPECT_LT(response.cost(), response.iterations(0).cost());
  // The trunk reaches its target; the stance feet stay where they stood.
  const Eigen::Map<const Vector> q_final(response.q().data() + kKnots * m.nq, m.nq);
  Data final_data(m);
  forward_kinematics(m, final_data, q_final);
  EXPECT_LT((frame_placement(m, final_data, m.find_frame("trunk")).translation - shifted).norm(),
            5e-3);
  for (const char* foot : {"FR_foot", "HL_foot", "HR_foot"}) {
    const int f = m.find_frame(foot);
    EXPECT_LT(
        (frame_placement(m, final_data, f).translation - frame_placement(m, data, f).translation)
            .norm(),
        1e-3)
        << foot;
  }
  ASSERT_EQ(response.cost_terms_size(), 7);
  EXPECT_EQ(response.cost_terms(3).name(), "front_left_force");
  EXPECT_GT(response.cost_terms(3).value(), 0.0);
}

// A long horizon: 10,000 knots, or 1,000 under a sanitizer, whose allocations alone (FDDP's
// matrices of every knot, before the solve can be interrupted) take seconds for 10,000.
constexpr int kLongHorizon = kSanitizedBuild ? 1000 : 10000;

// A long reach with a 100 ms budget: the best iterate, soon after the budget, and nothing left
// running on the server.
TEST_F(ControlServiceTest, TimeBudgetAnswersTheBestIterate) {
  const LocalModel& arm = model("puma560");
  v1::SolveRequest request = reach(arm, kLongHorizon);
  request.set_max_seconds(0.1);
  request.mutable_solver()->set_max_iterations(1000);
  request.mutable_solver()->set_stop_threshold(0.0);
  v1::SolveResponse response;
  const auto start = std::chrono::steady_clock::now();
  const grpc::Status status = solve(request, response);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.stop_reason(), v1::STOP_REASON_TIME_BUDGET);
  EXPECT_EQ(response.q_size(), (kLongHorizon + 1) * arm.model->nq);
  EXPECT_LT(seconds, 0.1 + 2.0);
  // Idle: the busy-workers gauge back to zero.
  bool idle = false;
  for (int i = 0; i < 50 && !idle; ++i) {
    const std::string page = http_get(server_->metrics_port(), "/metrics");
    idle = page.find("torqued_executor_busy_workers 0") != std::string::npos;
    if (!idle) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(idle);
}

// A deadline the solve cannot finish within ends it with its best iterate, not an error: 1 s, or
// 10 s under a sanitizer. ThreadSanitizer's server took more than 1 s before its first pass over
// 1,000 knots could be timed; and with the CPUs crowded, the client and the server disagreed on
// the deadline by 600 ms, more than a 5 s deadline's margin (250 ms), less than 10 s's (1 s).
constexpr double kSolveDeadline = kSanitizedBuild ? 10.0 : 1.0;

TEST_F(ControlServiceTest, DeadlineAnswersTheBestIterate) {
  const LocalModel& arm = model("puma560");
  v1::SolveRequest request = reach(arm, kLongHorizon);
  request.mutable_solver()->set_max_iterations(1000);
  request.mutable_solver()->set_stop_threshold(0.0);
  v1::SolveResponse response;
  const grpc::Status status = solve(request, response, kSolveDeadline);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.stop_reason(), v1::STOP_REASON_TIME_BUDGET);
}

// ---- Mpc ----

using MpcStream = grpc::ClientReaderWriter<v1::MpcRequest, v1::MpcResponse>;

v1::MpcResponse exchange(MpcStream& stream, const v1::MpcRequest& request) {
  v1::MpcResponse response;
  EXPECT_TRUE(stream.Write(request));
  EXPECT_TRUE(stream.Read(&response));
  EXPECT_EQ(response.sequence(), request.sequence());
  return response;
}

// The stream's first message: `problem`, with its plan in the answer when `plan`.
v1::MpcRequest start_message(const v1::SolveRequest& problem, bool plan) {
  v1::MpcRequest request;
  request.set_sequence(1);
  *request.mutable_problem() = problem;
  request.set_plan(plan);
  return request;
}

// The tick of a controller that measured the plan's state at `knot`, `knot` steps later.
v1::MpcRequest tick(const v1::SolveResponse& plan, const Model& m, int knot, double dt,
                    std::uint64_t sequence) {
  v1::MpcRequest request;
  request.set_sequence(sequence);
  request.mutable_q()->Add(plan.q().begin() + knot * m.nq, plan.q().begin() + (knot + 1) * m.nq);
  request.mutable_v()->Add(plan.v().begin() + knot * m.nv, plan.v().begin() + (knot + 1) * m.nv);
  request.set_time(knot * dt);
  request.set_plan(true);
  return request;
}

TEST_F(ControlServiceTest, MpcAnswersSolvesFirstThenShiftsAndWarmStarts) {
  const LocalModel& arm = model("puma560");
  const Model& m = *arm.model;
  const v1::SolveRequest problem = reach(arm);
  v1::SolveRequest with_gains = problem;
  with_gains.set_feedback(true);
  v1::SolveResponse solved;
  ASSERT_TRUE(solve(with_gains, solved).ok());

  grpc::ClientContext context;
  context.set_deadline(deadline_in(120));
  std::unique_ptr<MpcStream> stream = control_->Mpc(&context);
  const v1::MpcResponse first = exchange(*stream, start_message(problem, true));
  ASSERT_EQ(first.status().code(), 0) << first.status().message();
  EXPECT_EQ(first.shift(), 0u);
  EXPECT_EQ(first.solution().iterations_size(), solved.iterations_size());
  EXPECT_EQ(first.solution().cost(), solved.cost());
  ASSERT_EQ(first.u0_size(), m.nv);
  ASSERT_EQ(first.feedback0_size(), m.nv * 2 * m.nv);
  for (int i = 0; i < m.nv; ++i) EXPECT_EQ(first.u0(i), solved.u(i)) << i;
  for (int i = 0; i < first.feedback0_size(); ++i)
    EXPECT_EQ(first.feedback0(i), solved.feedback(i));

  // Three knots later, at the plan's state: the plan shifted by three, one iteration.
  v1::MpcRequest later = tick(first.solution(), m, 3, problem.dt(), 2);
  const v1::MpcResponse shifted = exchange(*stream, later);
  ASSERT_EQ(shifted.status().code(), 0) << shifted.status().message();
  EXPECT_EQ(shifted.shift(), 3u);
  EXPECT_EQ(shifted.solution().iterations_size(), 1);
  ASSERT_EQ(shifted.solution().q_size(), (kReachKnots + 1) * m.nq);
  for (int i = 0; i < m.nq; ++i) EXPECT_EQ(shifted.solution().q(i), later.q(i));
  // The shifted plan warm-started the iteration: it ends far below one from a cold start.
  v1::SolveRequest cold = problem;
  *cold.mutable_q0() = later.q();
  *cold.mutable_v0() = later.v();
  cold.mutable_solver()->set_max_iterations(1);
  v1::SolveResponse cold_iteration;
  ASSERT_TRUE(solve(cold, cold_iteration).ok());
  EXPECT_LT(shifted.solution().cost(), 0.5 * cold_iteration.cost());

  // Without the plan the answer is u₀, K₀ and the solve's figures.
  later = tick(shifted.solution(), m, 1, problem.dt(), 3);
  later.set_time(4 * problem.dt());
  later.set_plan(false);
  const v1::MpcResponse brief = exchange(*stream, later);
  ASSERT_EQ(brief.status().code(), 0) << brief.status().message();
  EXPECT_EQ(brief.shift(), 1u);
  EXPECT_EQ(brief.solution().q_size(), 0);
  EXPECT_EQ(brief.solution().feedback_size(), 0);
  EXPECT_EQ(brief.u0_size(), m.nv);
  EXPECT_GT(brief.solution().cost(), 0.0);

  stream->WritesDone();
  v1::MpcResponse none;
  EXPECT_FALSE(stream->Read(&none));
  const grpc::Status ended = stream->Finish();
  EXPECT_TRUE(ended.ok()) << ended.error_message();
}

TEST_F(ControlServiceTest, MpcNewTargetsSteerThePlan) {
  const LocalModel& arm = model("puma560");
  const Model& m = *arm.model;
  grpc::ClientContext context;
  context.set_deadline(deadline_in(120));
  std::unique_ptr<MpcStream> stream = control_->Mpc(&context);
  const v1::MpcResponse first = exchange(*stream, start_message(reach(arm), true));
  ASSERT_EQ(first.status().code(), 0) << first.status().message();

  const Vec3 moved(0.3, -0.2, 0.4);
  v1::MpcRequest steer = tick(first.solution(), m, 1, 0.02, 2);
  steer.set_iterations(50);
  for (const char* name : {"tip", "tip_final"}) {
    v1::TermUpdate& update = *steer.add_updates();
    update.set_name(name);
    add_values(update.mutable_reference(), moved);
  }
  const v1::MpcResponse steered = exchange(*stream, steer);
  ASSERT_EQ(steered.status().code(), 0) << steered.status().message();
  Data data(*arm.model);
  const Vector q_final =
      Eigen::Map<const Vector>(steered.solution().q().data() + kReachKnots * m.nq, m.nq);
  forward_kinematics(m, data, q_final);
  update_frame_placements(m, data);
  const Vec3 tip =
      data.oMf[static_cast<std::size_t>(m.find_frame(m.body_names.back()))].translation;
  EXPECT_LT((tip - moved).norm(), 5e-3) << tip.transpose();
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(ControlServiceTest, MpcAnswersABadMessageAndGoesOn) {
  const LocalModel& arm = model("puma560");
  const Model& m = *arm.model;
  grpc::ClientContext context;
  context.set_deadline(deadline_in(120));
  std::unique_ptr<MpcStream> stream = control_->Mpc(&context);
  const auto refused = [&](const v1::MpcRequest& request, const std::string& names) {
    const v1::MpcResponse answer = exchange(*stream, request);
    EXPECT_EQ(answer.status().code(), grpc::StatusCode::INVALID_ARGUMENT) << names;
    EXPECT_NE(answer.status().message().find(names), std::string::npos)
        << answer.status().message();
    EXPECT_EQ(answer.u0_size(), 0);
  };
  v1::MpcRequest request;
  request.set_sequence(1);
  refused(request, "problem");
  *request.mutable_problem() = reach(arm);
  request.mutable_problem()->set_dt(-1.0);
  refused(request, "problem.dt");
  request.mutable_problem()->set_dt(0.02);
  const v1::MpcResponse first = exchange(*stream, request);
  ASSERT_EQ(first.status().code(), 0) << first.status().message();

  v1::MpcRequest no_state;
  no_state.set_time(0.1);
  refused(no_state, "q");
  v1::MpcRequest state;
  state.set_sequence(4);
  add_values(state.mutable_q(), Vector::Constant(m.nq, 0.3));
  add_values(state.mutable_v(), Vector::Zero(m.nv));
  state.set_time(0.1);
  v1::MpcRequest too_early = state;
  too_early.set_time(-1.0);
  refused(too_early, "time");
  v1::MpcRequest unknown = state;
  unknown.add_updates()->set_name("nowhere");
  refused(unknown, "updates[0].name");
  v1::MpcRequest shorter = state;
  *shorter.mutable_problem() = reach(arm, kReachKnots - 1);
  refused(shorter, "problem.knots");
  v1::MpcRequest wrong_size = state;
  wrong_size.add_updates()->set_name("tip");
  wrong_size.mutable_updates(0)->add_reference(1.0);
  refused(wrong_size, "reference");

  const v1::MpcResponse goes_on = exchange(*stream, state);
  ASSERT_EQ(goes_on.status().code(), 0) << goes_on.status().message();
  EXPECT_EQ(goes_on.shift(), 5u);
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

// Last: it stops the suite's server.
TEST_F(ControlServiceTest, MpcShutdownEndsAnOpenStreamWithUnavailableAndExitsCleanly) {
  grpc::ClientContext context;
  context.set_deadline(deadline_in(120));
  std::unique_ptr<MpcStream> stream = control_->Mpc(&context);
  ASSERT_EQ(exchange(*stream, start_message(reach(model("puma560")), false)).status().code(), 0);

  const auto signalled = std::chrono::steady_clock::now();
  server_->signal(SIGTERM);
  v1::MpcResponse response;
  while (stream->Read(&response)) {
  }
  const grpc::Status status = stream->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  const int exit_status = server_->wait_exit(30.0);
  ASSERT_TRUE(WIFEXITED(exit_status)) << server_->log();
  EXPECT_EQ(WEXITSTATUS(exit_status), 0);
  // The drain deadline is 60 s: an open stream must not hold the shutdown until then.
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - signalled).count(),
            20.0)
      << server_->log();
}

}  // namespace
}  // namespace torqued::testing
