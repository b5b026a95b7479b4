// The robot problem's residuals and knots against central differences, on random floating trees
// with contacts: every residual's R_x and R_u (1e-6), each knot's cost gradient (contact forces
// and friction cones through the step's multipliers, across a touchdown), the Gauss-Newton
// Hessian of a residual that is linear in x, the quasi-static controls' equilibrium, and a problem
// assigned another's arguments solving as a new one, its evaluated cost terms the iterate's.
#include "engine/optimal_control/multibody_problem.hpp"

#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <numeric>
#include <random>

#include "engine/algorithms/jacobian.hpp"
#include "engine/algorithms/rnea.hpp"
#include "engine/algorithms/world_frame.hpp"
#include "engine/model/build.hpp"
#include "engine/model/configuration.hpp"
#include "engine/optimal_control/fddp.hpp"
#include "engine/optimal_control/quasi_static.hpp"
#include "tests/engine/support/central_differences.hpp"
#include "tests/engine/support/random_tree.hpp"

namespace torqued {
namespace {

constexpr double kStep = 1e-4;
constexpr double kTolerance = 1e-6;
// A knot's cost computed with its derivatives and without, relative: a contact-force term's
// force is the contact solve's λ, factored differently on the two paths, so they agree to a few
// ulps times the solve's conditioning (2.4e-12 with FMA, -march=native), not to 1e-12.
constexpr double kSameCost = 1e-11;

// Largest |a − b| over max(1, |b|).
double relative_error(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  return (a - b).cwiseAbs().maxCoeff() / std::max(1.0, b.cwiseAbs().maxCoeff());
}

struct Robot {
  ModelPtr model;
  Eigen::VectorXd q, v, u;
  std::vector<int> actuated;
  std::vector<BilateralConstraint> contacts;
  std::vector<int> contact_frames;  // a frame on each contact's body (for the cone's turn)
};

// A random floating tree, a random state and controls, and its feet in contact at q, each with a
// frame placed where the contact is.
Robot random_robot(std::uint64_t seed) {
  test_support::RandomTreeOptions options;
  options.min_links = 6;
  options.max_links = 12;
  options.floating_base = true;
  ModelSpec spec = test_support::random_tree_spec(seed, options);
  Robot robot;
  robot.model = build_model(spec);
  std::mt19937_64 rng(seed);
  const test_support::RandomState state = test_support::random_state(*robot.model, rng);
  robot.q = state.q;
  robot.v = state.v;
  robot.actuated.resize(robot.model->nv - 6);
  std::iota(robot.actuated.begin(), robot.actuated.end(), 6);
  robot.u = test_support::uniform_vector(rng, static_cast<int>(robot.actuated.size()), -5, 5);
  robot.contacts = test_support::random_feet(*robot.model, rng, robot.q);
  // Frames at the contacts: massless links welded where they are, which build_model() merges
  // into frames of the contacts' bodies (the bodies and their numbers stay).
  for (std::size_t c = 0; c < robot.contacts.size(); ++c) {
    const std::string name = "contact" + std::to_string(c);
    LinkSpec& link = spec.links.emplace_back();
    link.name = name;
    JointSpec& weld = spec.joints.emplace_back();
    weld.name = name + "_weld";
    weld.type = JointType::kFixed;
    weld.parent_link = robot.model->body_names[robot.contacts[c].body1];
    weld.child_link = name;
    weld.origin = robot.contacts[c].placement1;
  }
  const std::vector<std::string> bodies = robot.model->body_names;
  robot.model = build_model(spec);
  EXPECT_EQ(robot.model->body_names, bodies);
  for (std::size_t c = 0; c < robot.contacts.size(); ++c) {
    robot.contact_frames.push_back(robot.model->find_frame("contact" + std::to_string(c)));
  }
  return robot;
}

// The state moved along tangent direction k by h.
Eigen::VectorXd moved_state(const Model& model, const Eigen::VectorXd& x, int k, double h) {
  Eigen::VectorXd dx = Eigen::VectorXd::Zero(2 * model.nv);
  dx[k] = h;
  Eigen::VectorXd out(x.size());
  out.head(model.nq) = integrate(model, x.head(model.nq), dx.head(model.nv));
  out.tail(model.nv) = x.tail(model.nv) + dx.tail(model.nv);
  return out;
}

// One of each residual that reads no multipliers, with random targets.
std::vector<Residual> kinematic_residuals(const Robot& robot, std::mt19937_64& rng) {
  const Model& model = *robot.model;
  const int frame = robot.contact_frames.back();
  const int nu = static_cast<int>(robot.actuated.size());
  std::vector<Residual> out;
  Residual state{.type = ResidualType::kState};
  state.target.resize(model.nq + model.nv);
  state.target << random_configuration(model, rng),
      test_support::uniform_vector(rng, model.nv, -1, 1);
  out.push_back(state);
  out.push_back(
      {.type = ResidualType::kControl, .target = test_support::uniform_vector(rng, nu, -1, 1)});
  out.push_back({.type = ResidualType::kControlGravity});
  out.push_back({.type = ResidualType::kFrameTranslation,
                 .frame = frame,
                 .target = test_support::uniform_vector(rng, 3, -1, 1)});
  out.push_back({.type = ResidualType::kFramePlacement,
                 .frame = frame,
                 .placement = test_support::random_transform(rng)});
  out.push_back({.type = ResidualType::kFrameRotation,
                 .frame = frame,
                 .placement = test_support::random_transform(rng)});
  out.push_back({.type = ResidualType::kFrameVelocity,
                 .frame = frame,
                 .target = test_support::uniform_vector(rng, 6, -1, 1),
                 .velocity_frame = ReferenceFrame::kLocal});
  out.push_back({.type = ResidualType::kFrameVelocity,
                 .frame = frame,
                 .target = test_support::uniform_vector(rng, 6, -1, 1),
                 .velocity_frame = ReferenceFrame::kLocalWorldAligned});
  out.push_back(
      {.type = ResidualType::kCenterOfMass, .target = test_support::uniform_vector(rng, 3, -1, 1)});
  return out;
}

class MultibodyProblemTest : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(MultibodyProblemTest, ResidualDerivativesMatchCentralDifferences) {
  const Robot robot = random_robot(GetParam());
  const Model& model = *robot.model;
  std::mt19937_64 rng(GetParam() + 100);
  Data data(model);
  ResidualWorkspace workspace(model);
  const int nv = model.nv, nu = static_cast<int>(robot.u.size());
  const Eigen::VectorXd none;
  const Eigen::MatrixXd no_rates;
  Eigen::VectorXd x(model.nq + nv);
  x << robot.q, robot.v;
  for (const Residual& residual : kinematic_residuals(robot, rng)) {
    SCOPED_TRACE(static_cast<int>(residual.type));
    const int size = residual_size(model, residual, nu, {});
    const auto value = [&](const Eigen::VectorXd& at, const Eigen::VectorXd& u, bool derivatives,
                           Eigen::MatrixXd* rx, Eigen::MatrixXd* ru) {
      const KnotPoint point{at.head(model.nq), at.tail(nv), u, robot.actuated, {}, none,
                            no_rates,          no_rates};
      place_in_world(model, data, at.data());
      Eigen::VectorXd r(size);
      Eigen::MatrixXd rx_out(size, 2 * nv), ru_out(size, nu);
      evaluate_residual(model, data, workspace, residual, point, derivatives, r, rx_out, ru_out);
      if (rx != nullptr) *rx = rx_out;
      if (ru != nullptr) *ru = ru_out;
      return r;
    };
    Eigen::MatrixXd rx, ru;
    value(x, robot.u, true, &rx, &ru);
    const Eigen::MatrixXd rx_fd =
        test_support::central_differences(2 * nv, kStep, [&](int k, double h) {
          return value(moved_state(model, x, k, h), robot.u, false, nullptr, nullptr);
        });
    const Eigen::MatrixXd ru_fd =
        test_support::central_differences(nu, kStep, [&](int k, double h) {
          return value(x, robot.u + h * Eigen::VectorXd::Unit(nu, k), false, nullptr, nullptr);
        });
    EXPECT_LT(relative_error(rx, rx_fd), kTolerance);
    EXPECT_LT(relative_error(ru, ru_fd), kTolerance);
    EXPECT_EQ(residual_depends_on_velocity(residual), rx.rightCols(nv).norm() > 0.0);
    EXPECT_EQ(residual_depends_on_control(residual), ru.norm() > 0.0);
  }
}

// Every kind of cost term on a knot in contact with the robot's feet.
std::vector<CostTerm> every_cost(const Robot& robot, std::mt19937_64& rng) {
  const Model& model = *robot.model;
  KnotModel running;
  int index = 0;
  for (const Residual& residual : kinematic_residuals(robot, rng)) {
    const int size = residual_size(model, residual, static_cast<int>(robot.u.size()), {});
    running.costs.push_back(
        {.name = "term" + std::to_string(index++),
         .residual = residual,
         .activation = {.type = ActivationType::kWeightedQuadratic,
                        .weights = test_support::uniform_vector(rng, size, 0.1, 2)},
         .weight = 0.7});
  }
  for (std::size_t c = 0; c < robot.contacts.size(); ++c) {
    const int rows = constraint_dimension(robot.contacts[c].type);
    running.costs.push_back({.name = "force" + std::to_string(c),
                             .residual = {.type = ResidualType::kContactForce,
                                          .contact = static_cast<int>(c),
                                          .target = test_support::uniform_vector(rng, rows, -5, 5)},
                             .weight = 1e-3});
    // A barrier whose faces are crossed either way: smooth where the test differentiates it
    // (a random λ lies off the faces' kinks, none of which is exactly at a bound).
    running.costs.push_back({.name = "cone" + std::to_string(c),
                             .residual = {.type = ResidualType::kFrictionCone,
                                          .frame = robot.contact_frames[c],
                                          .contact = static_cast<int>(c),
                                          .cone = {.friction = 0.7, .faces = 4}},
                             .activation = {.type = ActivationType::kQuadraticBarrier,
                                            .lower = Eigen::VectorXd::Zero(4),
                                            .upper = Eigen::VectorXd::Constant(4, 1e-3)},
                             .weight = 1e-2});
  }
  running.costs.push_back(
      {.name = "smooth",
       .residual = {.type = ResidualType::kCenterOfMass, .target = Eigen::Vector3d(0.1, 0.2, 0.3)},
       .activation = {.type = ActivationType::kSmooth1Norm, .smoothing = 0.5},
       .weight = 2.0});
  return running.costs;
}

// A problem of one running knot (with `touchdown`) holding `costs`, and the terminal knot with
// `terminal_cost`.
MultibodyProblem knot_problem(const Robot& robot, bool touchdown, std::vector<CostTerm> costs,
                              const CostTerm& terminal_cost) {
  const Model& model = *robot.model;
  KnotModel terminal;
  terminal.costs.push_back(terminal_cost);
  const KnotModel running{
      .dt = 0.01, .contacts = robot.contacts, .touchdown = touchdown, .costs = std::move(costs)};
  Eigen::VectorXd x0(model.nq + model.nv);
  x0 << robot.q, robot.v;
  return MultibodyProblem(model, x0, {.actuated_dofs = robot.actuated}, {running, terminal}, {0},
                          1);
}

TEST_P(MultibodyProblemTest, KnotCostGradientsMatchCentralDifferences) {
  const Robot robot = random_robot(GetParam());
  const Model& model = *robot.model;
  const int nv = model.nv, nu = static_cast<int>(robot.u.size());
  std::mt19937_64 rng(GetParam() + 200);
  const std::vector<CostTerm> costs = every_cost(robot, rng);
  // Each term alone, then all of them.
  std::vector<std::vector<CostTerm>> problems;
  for (const CostTerm& term : costs) problems.push_back({term});
  problems.push_back(costs);
  for (const bool touchdown : {false, true}) {
    for (const std::vector<CostTerm>& terms : problems) {
      SCOPED_TRACE((touchdown ? "touchdown, " : "in contact, ") +
                   (terms.size() == 1 ? terms.front().name : std::string("every term")));
      MultibodyProblem problem = knot_problem(robot, touchdown, terms, costs.front());
      auto worker = problem.make_worker();
      const Eigen::VectorXd& x = problem.initial_state();
      KnotValues values(model.nq + nv, 2 * nv, nu);
      problem.differentiate_knot(*worker, 0, x, robot.u, values);
      Eigen::VectorXd next(model.nq + nv);
      const auto cost = [&](const Eigen::VectorXd& at, const Eigen::VectorXd& u) {
        return Eigen::VectorXd::Constant(1, problem.evaluate_knot(*worker, 0, at, u, next));
      };
      EXPECT_NEAR(cost(x, robot.u)[0], values.cost, kSameCost * std::abs(values.cost));
      const Eigen::MatrixXd lx_fd = test_support::central_differences(
          2 * nv, kStep,
          [&](int k, double h) { return cost(moved_state(model, x, k, h), robot.u); });
      const Eigen::MatrixXd lu_fd = test_support::central_differences(
          nu, kStep,
          [&](int k, double h) { return cost(x, robot.u + h * Eigen::VectorXd::Unit(nu, k)); });
      EXPECT_LT(relative_error(values.lx.transpose(), lx_fd), kTolerance);
      EXPECT_LT(relative_error(values.lu.transpose(), lu_fd), kTolerance);
      // The step's own Jacobians come with the costs': x⁺ ⊖ x⁺(0) along x and u.
      problem.evaluate_knot(*worker, 0, x, robot.u, next);
      // (To rounding: with its Jacobians the constrained step solves through M⁻¹.)
      EXPECT_LT(relative_error(values.next, next), 1e-10);
      const Eigen::VectorXd reached = next;
      const auto step_from = [&](const Eigen::VectorXd& at, const Eigen::VectorXd& u) {
        problem.evaluate_knot(*worker, 0, at, u, next);
        Eigen::VectorXd out(2 * nv);
        problem.difference(reached, next, out);
        return out;
      };
      const Eigen::MatrixXd fx_fd = test_support::central_differences(
          2 * nv, kStep,
          [&](int k, double h) { return step_from(moved_state(model, x, k, h), robot.u); });
      const Eigen::MatrixXd fu_fd =
          test_support::central_differences(nu, kStep, [&](int k, double h) {
            return step_from(x, robot.u + h * Eigen::VectorXd::Unit(nu, k));
          });
      EXPECT_LT(relative_error(values.fx, fx_fd), kTolerance);
      EXPECT_LT(relative_error(values.fu, fu_fd), kTolerance);
      // The terminal knot: the state residual alone.
      KnotValues terminal(model.nq + nv, 2 * nv, nu);
      problem.differentiate_knot(*worker, 1, x, robot.u, terminal);
      const Eigen::MatrixXd terminal_fd =
          test_support::central_differences(2 * nv, kStep, [&](int k, double h) {
            return Eigen::VectorXd::Constant(
                1, problem.evaluate_knot(*worker, 1, moved_state(model, x, k, h), robot.u, next));
          });
      EXPECT_LT(relative_error(terminal.lx.transpose(), terminal_fd), kTolerance);
      // Each term's value, scaled by dt, sums to the cost.
      std::vector<double> term_values(terms.size());
      problem.cost_terms(*worker, 0, x, robot.u, term_values);
      EXPECT_NEAR(std::accumulate(term_values.begin(), term_values.end(), 0.0), values.cost,
                  kSameCost * std::abs(values.cost));
    }
  }
}

TEST_P(MultibodyProblemTest, GaussNewtonHessianOfATranslationIsJacobianSquared) {
  const Robot robot = random_robot(GetParam());
  const Model& model = *robot.model;
  const int nv = model.nv, nu = static_cast<int>(robot.u.size());
  const int frame = robot.contact_frames.front();
  KnotModel terminal;
  terminal.costs.push_back({.name = "reach",
                            .residual = {.type = ResidualType::kFrameTranslation,
                                         .frame = frame,
                                         .target = Eigen::Vector3d(0.3, -0.2, 0.1)},
                            .weight = 3.0});
  Eigen::VectorXd x0(model.nq + nv);
  x0 << robot.q, robot.v;
  MultibodyProblem problem(model, x0, {.actuated_dofs = robot.actuated},
                           {KnotModel{.dt = 0.01}, terminal}, {0}, 1);
  auto worker = problem.make_worker();
  KnotValues values(model.nq + nv, 2 * nv, nu);
  problem.differentiate_knot(*worker, 1, x0, robot.u, values);
  Data data(model);
  forward_kinematics(model, data, robot.q);
  Eigen::MatrixXd jacobian(6, nv);
  frame_jacobian(model, data, frame, ReferenceFrame::kLocalWorldAligned, jacobian);
  const Eigen::MatrixXd expected = 3.0 * jacobian.topRows(3).transpose() * jacobian.topRows(3);
  EXPECT_LT((values.lxx.topLeftCorner(nv, nv) - expected).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_EQ(values.lxx.bottomRows(nv).norm(), 0.0);
}

TEST_P(MultibodyProblemTest, QuasiStaticControlsHoldTheRobotStill) {
  const Robot robot = random_robot(GetParam());
  const Model& model = *robot.model;
  Data data(model);
  Eigen::VectorXd u(robot.actuated.size());
  quasi_static_controls(model, data, robot.q, robot.actuated, robot.contacts, u);
  // At rest under u and the contacts' forces, nothing accelerates: [B Kᵀ] [u; λ] = g(q) is
  // consistent whenever the feet carry every unactuated direction, as a weld on a foot does.
  Eigen::VectorXd tau = Eigen::VectorXd::Zero(model.nv);
  for (std::size_t c = 0; c < robot.actuated.size(); ++c) tau[robot.actuated[c]] = u[c];
  const Eigen::VectorXd rest = Eigen::VectorXd::Zero(model.nv);
  const Eigen::VectorXd gravity = generalized_gravity(model, data, robot.q);
  MultibodyProblem problem(
      model, (Eigen::VectorXd(model.nq + model.nv) << robot.q, rest).finished(),
      {.actuated_dofs = robot.actuated},
      {KnotModel{.dt = 0.01, .contacts = robot.contacts}, KnotModel{}}, {0}, 1);
  std::vector<Eigen::VectorXd> xs, us;
  problem.cold_start(xs, us);
  ASSERT_EQ(us.size(), 1u);
  EXPECT_LT((us[0] - u).cwiseAbs().maxCoeff(), 1e-12);
  Eigen::VectorXd next(model.nq + model.nv);
  problem.evaluate(0, xs[0], us[0], next);
  EXPECT_LT(next.tail(model.nv).cwiseAbs().maxCoeff(), 1e-9 * std::max(1.0, gravity.norm()));
}

// An FDDP and its problem reused for other problems of the same sizes (MultibodyProblem::assign):
// a problem with contacts, a touchdown and bounded controls after a free one (its workers rebuilt
// for the contacts' rows), then the free one again, each solve bitwise that of a new problem and
// a new FDDP, and each knot's cost terms as the solve last evaluated them bitwise the iterate's.
TEST_P(MultibodyProblemTest, AnAssignedProblemSolvesAsANewOne) {
  const Robot robot = random_robot(GetParam());
  const Model& model = *robot.model;
  const int nv = model.nv, nu = static_cast<int>(robot.u.size());
  Eigen::VectorXd x0(model.nq + nv);
  x0 << robot.q, Eigen::VectorXd::Zero(nv);
  Eigen::VectorXd rest(model.nq + nv);
  rest << robot.q, Eigen::VectorXd::Zero(nv);
  const std::vector<CostTerm> regularization = {
      {.name = "posture",
       .residual = {.type = ResidualType::kState, .target = rest},
       .weight = 1.0},
      {.name = "effort",
       .residual = {.type = ResidualType::kControl, .target = Eigen::VectorXd::Zero(nu)},
       .weight = 1e-3}};
  struct Arguments {
    Eigen::VectorXd x0;
    MultibodyDynamics dynamics;
    std::vector<KnotModel> models;
    std::vector<int> knot_models;
  };
  constexpr int kKnots = 6;
  Arguments free{x0,
                 {.actuated_dofs = robot.actuated},
                 {KnotModel{.dt = 0.01, .costs = regularization},
                  KnotModel{.costs = {regularization.front()}}},
                 std::vector<int>(kKnots, 0)};
  std::vector<CostTerm> held = regularization;
  held.push_back({.name = "force",
                  .residual = {.type = ResidualType::kContactForce,
                               .contact = 0,
                               .target = Eigen::VectorXd::Zero(
                                   constraint_dimension(robot.contacts.front().type))},
                  .weight = 1e-4});
  Arguments contact{
      x0,
      {.actuated_dofs = robot.actuated},
      {KnotModel{.dt = 0.01, .contacts = robot.contacts, .costs = held},
       KnotModel{.dt = 0.01, .contacts = robot.contacts, .touchdown = true, .costs = held},
       KnotModel{.costs = {regularization.front()}}},
      {1, 0, 0, 0, 0, 0}};
  contact.dynamics.control_bounds = {Eigen::VectorXd::Constant(nu, -2.0),
                                     Eigen::VectorXd::Constant(nu, 2.0)};
  const auto solve = [&](MultibodyProblem& problem, Fddp& fddp) {
    std::vector<Eigen::VectorXd> xs, us;
    problem.cold_start(xs, us);
    for (Eigen::VectorXd& u : us) u = u.cwiseMax(-2.0).cwiseMin(2.0);
    return fddp.solve(xs, us, false, {.max_iterations = 4});
  };
  const auto terminal = [](const Arguments& a) { return static_cast<int>(a.models.size()) - 1; };
  MultibodyProblem reused(model, free.x0, free.dynamics, free.models, free.knot_models,
                          terminal(free));
  Fddp reused_fddp(reused);
  solve(reused, reused_fddp);
  int rolled_out = 0;
  for (const Arguments* next : {&contact, &free}) {
    SCOPED_TRACE(next == &contact ? "contacts after the free problem" : "the free one after");
    reused.assign(next->x0, next->dynamics, next->models, next->knot_models, terminal(*next));
    ASSERT_TRUE(reused_fddp.fits());
    MultibodyProblem fresh(model, next->x0, next->dynamics, next->models, next->knot_models,
                           terminal(*next));
    Fddp fresh_fddp(fresh);
    ASSERT_EQ(solve(reused, reused_fddp), solve(fresh, fresh_fddp));
    ASSERT_EQ(reused_fddp.iterations().size(), fresh_fddp.iterations().size());
    for (std::size_t i = 0; i < fresh_fddp.iterations().size(); ++i) {
      EXPECT_EQ(reused_fddp.iterations()[i].cost, fresh_fddp.iterations()[i].cost) << i;
      EXPECT_EQ(reused_fddp.iterations()[i].gaps, fresh_fddp.iterations()[i].gaps) << i;
    }
    for (int t = 0; t < kKnots; ++t) {
      EXPECT_EQ(reused_fddp.us()[t], fresh_fddp.us()[t]) << t;
      EXPECT_EQ(reused_fddp.feedback()[t], fresh_fddp.feedback()[t]) << t;
    }
    EXPECT_EQ(reused_fddp.xs().back(), fresh_fddp.xs().back());
    // The problem's last evaluation of each knot is the rolled-out iterate's.
    if (!reused_fddp.rolled_out()) continue;  // the last iteration found no step
    ++rolled_out;
    auto worker = reused.make_worker();
    for (int t = 0; t <= kKnots; ++t) {
      std::vector<double> terms(reused.knot_model(t).costs.size());
      reused.cost_terms(*worker, t, reused_fddp.xs()[t],
                        t < kKnots ? reused_fddp.us()[t] : Eigen::VectorXd::Zero(nu), terms);
      const std::span<const double> evaluated = reused.evaluated_terms(t);
      EXPECT_TRUE(std::equal(terms.begin(), terms.end(), evaluated.begin(), evaluated.end())) << t;
    }
  }
  EXPECT_GT(rolled_out, 0);
  // Arguments that do not fit the model throw and leave the problem as it was.
  Arguments wrong = free;
  wrong.knot_models.back() = 7;
  EXPECT_THROW(
      reused.assign(wrong.x0, wrong.dynamics, wrong.models, wrong.knot_models, terminal(wrong)),
      std::invalid_argument);
  EXPECT_EQ(reused.knots(), kKnots);
  EXPECT_EQ(reused.knot_model(kKnots).costs.size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(RandomTrees, MultibodyProblemTest, ::testing::Values(1u, 2u, 3u, 4u));

}  // namespace
}  // namespace torqued
