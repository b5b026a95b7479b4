// Tests the step without Jacobians (engine/algorithms/discrete_step.hpp) and the shooting forward
// pass (rollout.hpp) on random trees with every joint kind, free and with rigid contacts, under
// each integrator:
// - step() without Jacobians against the same step with them: q⁺, v⁺ and λ (constrained_dynamics()
//   at the knot), and the knot's continuous derivatives against forward_dynamics_derivatives();
// - rollout() against its definition: u_k = ū_k + K_k (x_k ⊖ x̄_k) and a chain of steps;
// - its Fx, Fu against the steps' at its states, given in full and as their v⁺ rows with the
//   blocks of J_q and J_w, and the first-order closed-loop propagation
//   δx_{k+1} = (Fx_k + Fu_k K_k) δx_k against central differences of whole rollouts, which holds
//   ⊖ to Fx's tangent coordinates;
// - a contact schedule (a touchdown, a lift-off) against the chain of steps under each knot's
//   contacts, λ and the impulses at their offsets, contacts anchored where the phase begins, and a
//   one-phase schedule against the same rollout without one, bitwise.
#include "engine/algorithms/rollout.hpp"

#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "engine/model/build.hpp"
#include "engine/model/configuration.hpp"
#include "tests/engine/support/random_tree.hpp"

namespace torqued {
namespace {

constexpr double kDt = 0.01;
// Four knots: on seed 5 (RK4 in contact) the fifth step nears a singular contact set, and δ grows
// by 1e5 through it, beyond the range where central differences of whole rollouts are linear.
constexpr int kKnots = 4;

struct Case {
  std::uint64_t seed;
  Integrator integrator;
  bool in_contact;  // a 6D and a 3D contact with the world on the tree's last bodies
  BaumgarteGains baumgarte = {};
};

struct Robot {
  ModelPtr model;
  Eigen::VectorXd q0, v0;
  std::vector<int> actuated;  // all but the free-flyer root
  std::vector<double> controls;
  std::vector<BilateralConstraint> contacts;
};

Robot robot(const Case& c) {
  test_support::RandomTreeOptions options;
  options.min_links = 6;
  options.max_links = 12;
  options.floating_base = true;
  Robot r;
  r.model = build_model(test_support::random_tree_spec(c.seed, options));
  const Model& model = *r.model;
  std::mt19937_64 rng(c.seed);
  const test_support::RandomState state = test_support::random_state(model, rng);
  r.q0 = state.q;
  r.v0 = state.v;
  r.actuated.resize(model.nv - 6);
  std::iota(r.actuated.begin(), r.actuated.end(), 6);
  const Eigen::VectorXd controls =
      test_support::uniform_vector(rng, kKnots * static_cast<int>(r.actuated.size()), -5.0, 5.0);
  r.controls.assign(controls.data(), controls.data() + controls.size());
  if (c.in_contact) r.contacts = test_support::random_feet(model, rng, r.q0);
  return r;
}

// The case's step: its integrator, the robot's actuation and contacts, the case's gains.
StepSettings settings(const Robot& r, const Case& c) {
  return {.dt = kDt,
          .integrator = c.integrator,
          .actuated_dofs = r.actuated,
          .constraints = r.contacts,
          .gains = c.baumgarte};
}

// A rollout's arrays.
struct Trajectory {
  Trajectory(const Model& model, int nu, int rows, bool jacobians)
      : q((kKnots + 1) * model.nq),
        v((kKnots + 1) * model.nv),
        u(kKnots * nu),
        fx(jacobians ? kKnots * 4 * model.nv * model.nv : 0),
        fu(jacobians ? kKnots * 2 * model.nv * nu : 0),
        multipliers(kKnots * rows) {}
  RolloutOutput output() { return {q, v, u, fx, fu, multipliers}; }
  Eigen::Map<const Eigen::VectorXd> q_at(const Model& model, int k) const {
    return {q.data() + k * model.nq, model.nq};
  }
  Eigen::Map<const Eigen::VectorXd> v_at(const Model& model, int k) const {
    return {v.data() + k * model.nv, model.nv};
  }
  std::vector<double> q, v, u, fx, fu, multipliers;
};

double max_abs(const std::vector<double>& a, const std::vector<double>& b) {
  double out = 0.0;
  for (std::size_t k = 0; k < a.size(); ++k) out = std::max(out, std::abs(a[k] - b[k]));
  return out;
}

class RolloutTest : public ::testing::TestWithParam<Case> {};

TEST_P(RolloutTest, StepAloneMatchesTheJacobianTakingStep) {
  const Case c = GetParam();
  const Robot r = robot(c);
  const Model& model = *r.model;
  const int nv = model.nv, nu = static_cast<int>(r.actuated.size());
  const int rows = constraint_rows(model, r.contacts);
  const Eigen::Map<const Eigen::VectorXd> u(r.controls.data(), nu);
  Data data(model);
  Eigen::VectorXd q_next(model.nq), v_next(nv), lambda(rows);
  step(model, data, r.q0, r.v0, u, settings(r, c),
       {.q_next = q_next,
        .v_next = v_next,
        .multipliers = {lambda.data(), static_cast<std::size_t>(rows)}});
  Eigen::VectorXd q_expected(model.nq), v_expected(nv), lambda_knot(rows);
  RowMajorMatrix fx(2 * nv, 2 * nv), fu(2 * nv, nu), da_dq(nv, nv), da_dv(nv, nv), da_dtau(nv, nv),
      dlambda_dq(rows, nv), dlambda_dv(rows, nv), dlambda_dtau(rows, nv);
  const auto values = [](RowMajorMatrix& m) {
    return std::span<double>(m.data(), static_cast<std::size_t>(m.size()));
  };
  const KnotDerivatives knot{values(da_dq),      values(da_dv),      values(da_dtau),
                             values(dlambda_dq), values(dlambda_dv), values(dlambda_dtau)};
  step(model, data, r.q0, r.v0, u, settings(r, c),
       {.q_next = q_expected,
        .v_next = v_expected,
        .fx = fx,
        .fu = fu,
        .multipliers = {lambda_knot.data(), static_cast<std::size_t>(rows)},
        .knot_derivatives = &knot});
  // The continuous dynamics' derivatives at the knot, whatever the integrator's last stage.
  Eigen::VectorXd tau = Eigen::VectorXd::Zero(nv);
  for (int k = 0; k < nu; ++k) tau[r.actuated[k]] = u[k];
  const AbaDerivativesWorkspace& d =
      forward_dynamics_derivatives(model, data, r.q0, r.v0, tau, r.contacts, c.baumgarte);
  EXPECT_EQ((da_dq - d.ddq_dq).cwiseAbs().maxCoeff(), 0.0);
  EXPECT_EQ((da_dv - d.ddq_dv).cwiseAbs().maxCoeff(), 0.0);
  EXPECT_EQ((da_dtau - d.ddq_dtau).cwiseAbs().maxCoeff(), 0.0);
  if (rows > 0) {
    const ConstrainedDerivativesWorkspace& cd = data.workspace<ConstrainedDerivativesWorkspace>();
    EXPECT_EQ((lambda_knot - cd.lambda.head(rows)).cwiseAbs().maxCoeff(), 0.0);
    EXPECT_EQ((dlambda_dq - cd.dlambda_dq.topRows(rows)).cwiseAbs().maxCoeff(), 0.0);
    EXPECT_EQ((dlambda_dv - cd.dlambda_dv.topRows(rows)).cwiseAbs().maxCoeff(), 0.0);
    EXPECT_EQ((dlambda_dtau - cd.dlambda_dtau.topRows(rows)).cwiseAbs().maxCoeff(), 0.0);
  }
  // ABA or the constrained dynamics against the derivatives' own q̈: rounding, times κ(M).
  EXPECT_LT((q_next - q_expected).cwiseAbs().maxCoeff(), 1e-10);
  EXPECT_LT((v_next - v_expected).cwiseAbs().maxCoeff(), 1e-10 * std::max(1.0, v_expected.norm()));
  if (rows > 0) {
    Eigen::VectorXd ddq(nv), lambda_expected(rows);
    constrained_dynamics(model, data, r.q0, r.v0, tau, r.contacts, c.baumgarte, ddq,
                         lambda_expected);
    EXPECT_EQ((lambda - lambda_expected).cwiseAbs().maxCoeff(), 0.0) << "λ at the knot";
  }
}

TEST_P(RolloutTest, FollowsItsDefinitionWithAndWithoutJacobians) {
  const Case c = GetParam();
  const Robot r = robot(c);
  const Model& model = *r.model;
  const int nv = model.nv, nx = 2 * nv, nu = static_cast<int>(r.actuated.size());
  const int rows = constraint_rows(model, r.contacts);
  std::mt19937_64 rng(c.seed + 100);
  // A nominal trajectory off the rollout's (the open-loop one from a moved start) and small gains.
  Data data(model);
  Trajectory nominal(model, nu, rows, false);
  const Eigen::VectorXd moved_start =
      integrate(model, r.q0, test_support::uniform_vector(rng, nv, -0.05, 0.05));
  rollout(model, data, moved_start, r.v0, kKnots, r.controls, settings(r, c), {}, nominal.output());
  const std::span<const double> q_nominal(nominal.q.data(), kKnots * model.nq);
  const std::span<const double> v_nominal(nominal.v.data(), kKnots * nv);
  const Eigen::VectorXd gain_values = test_support::uniform_vector(rng, kKnots * nu * nx, -1, 1);
  const std::vector<double> gains(gain_values.data(), gain_values.data() + gain_values.size());
  const RolloutFeedback feedback{q_nominal, v_nominal, gains};

  Trajectory values(model, nu, rows, false), linearized(model, nu, rows, true);
  rollout(model, data, r.q0, r.v0, kKnots, r.controls, settings(r, c), feedback, values.output());
  rollout(model, data, r.q0, r.v0, kKnots, r.controls, settings(r, c), feedback,
          linearized.output());

  // The definition, step by step, at the values rollout's own states.
  Data scratch(model);
  for (int k = 0; k < kKnots; ++k) {
    const auto q = values.q_at(model, k);
    const auto v = values.v_at(model, k);
    Eigen::VectorXd error(nx);
    error << difference(model, Eigen::VectorXd(nominal.q_at(model, k)), Eigen::VectorXd(q)),
        v - nominal.v_at(model, k);
    const Eigen::VectorXd u =
        Eigen::Map<const Eigen::VectorXd>(r.controls.data() + k * nu, nu) +
        Eigen::Map<const RowMajorMatrix>(gains.data() + k * nu * nx, nu, nx) * error;
    const Eigen::Map<const Eigen::VectorXd> applied(values.u.data() + k * nu, nu);
    EXPECT_LT((applied - u).cwiseAbs().maxCoeff(), 1e-12 * std::max(1.0, u.norm())) << "knot " << k;
    Eigen::VectorXd q_next(model.nq), v_next(nv), lambda(rows);
    step(model, scratch, q, v, applied, settings(r, c),
         {.q_next = q_next,
          .v_next = v_next,
          .multipliers = {lambda.data(), static_cast<std::size_t>(rows)}});
    EXPECT_EQ((q_next - values.q_at(model, k + 1)).cwiseAbs().maxCoeff(), 0.0) << "knot " << k;
    EXPECT_EQ((v_next - values.v_at(model, k + 1)).cwiseAbs().maxCoeff(), 0.0) << "knot " << k;
    if (rows > 0) {
      const Eigen::Map<const Eigen::VectorXd> got(values.multipliers.data() + k * rows, rows);
      EXPECT_EQ((got - lambda).cwiseAbs().maxCoeff(), 0.0) << "λ, knot " << k;
    }

    // The Jacobians are the step's at the linearized rollout's states.
    const auto lq = linearized.q_at(model, k);
    const auto lv = linearized.v_at(model, k);
    const Eigen::Map<const Eigen::VectorXd> lu(linearized.u.data() + k * nu, nu);
    Eigen::VectorXd q_step(model.nq), v_step(nv);
    RowMajorMatrix fx(nx, nx), fu(nx, nu);
    step(model, scratch, lq, lv, lu, settings(r, c),
         {.q_next = q_step, .v_next = v_step, .fx = fx, .fu = fu});
    EXPECT_EQ((fx - Eigen::Map<const RowMajorMatrix>(linearized.fx.data() + k * nx * nx, nx, nx))
                  .cwiseAbs()
                  .maxCoeff(),
              0.0)
        << "Fx, knot " << k;
    EXPECT_EQ((fu - Eigen::Map<const RowMajorMatrix>(linearized.fu.data() + k * nx * nu, nx, nu))
                  .cwiseAbs()
                  .maxCoeff(),
              0.0)
        << "Fu, knot " << k;
    if (rows > 0) {
      const Eigen::Map<const Eigen::VectorXd> got(linearized.multipliers.data() + k * rows, rows);
      Eigen::VectorXd tau = Eigen::VectorXd::Zero(nv), ddq(nv), lambda_at(rows);
      for (int j = 0; j < nu; ++j) tau[r.actuated[j]] = lu[j];
      constrained_dynamics(model, scratch, lq, lv, tau, r.contacts, c.baumgarte, ddq, lambda_at);
      EXPECT_LT((got - lambda_at).cwiseAbs().maxCoeff(), 1e-9 * std::max(1.0, lambda_at.norm()))
          << "λ, knot " << k;
    }
  }
  // The two rollouts see the same states, to the rounding of ABA against its derivatives' q̈.
  const double scale =
      1.0 +
      Eigen::Map<const Eigen::VectorXd>(values.v.data(), values.v.size()).cwiseAbs().maxCoeff();
  EXPECT_LT(max_abs(values.q, linearized.q), 1e-9 * scale);
  EXPECT_LT(max_abs(values.v, linearized.v), 1e-9 * scale);
}

// With velocity_rows the Euler steps' Fx and Fu come as their v⁺ rows, bitwise those of the full
// Jacobians, and the multi-DOF joints' blocks of J_q and J_w, from which the q⁺ rows follow
// (discrete_step.hpp): assembled here, they are the full Jacobians' to rounding.
TEST_P(RolloutTest, VelocityRowsAndBlocksGiveTheFullJacobians) {
  const Case c = GetParam();
  if (c.integrator == Integrator::kRungeKutta4) GTEST_SKIP() << "an RK4 step has no velocity rows";
  const Robot r = robot(c);
  const Model& model = *r.model;
  const int nv = model.nv, nx = 2 * nv, nu = static_cast<int>(r.actuated.size());
  const int rows = constraint_rows(model, r.contacts);
  const auto block_values = integration_block_values(model);
  Data data(model);
  Trajectory full(model, nu, rows, true), by_rows(model, nu, rows, false);
  by_rows.fx.resize(kKnots * nv * nx);
  by_rows.fu.resize(kKnots * nv * nu);
  std::vector<double> integrate_dq(kKnots * block_values), integrate_dw(kKnots * block_values);
  rollout(model, data, r.q0, r.v0, kKnots, r.controls, settings(r, c), {}, full.output());
  RolloutOutput velocity_rows = by_rows.output();
  velocity_rows.velocity_rows = true;
  velocity_rows.integrate_dq = integrate_dq;
  velocity_rows.integrate_dw = integrate_dw;
  rollout(model, data, r.q0, r.v0, kKnots, r.controls, settings(r, c), {}, velocity_rows);
  EXPECT_EQ(max_abs(by_rows.q, full.q), 0.0);
  EXPECT_EQ(max_abs(by_rows.v, full.v), 0.0);

  const bool explicit_step = c.integrator == Integrator::kExplicitEuler;
  for (int k = 0; k < kKnots; ++k) {
    const Eigen::Map<const RowMajorMatrix> fx(full.fx.data() + k * nx * nx, nx, nx);
    const Eigen::Map<const RowMajorMatrix> fu(full.fu.data() + k * nx * nu, nx, nu);
    const Eigen::Map<const RowMajorMatrix> dv_dx(by_rows.fx.data() + k * nv * nx, nv, nx);
    const Eigen::Map<const RowMajorMatrix> dv_du(by_rows.fu.data() + k * nv * nu, nv, nu);
    EXPECT_EQ((dv_dx - fx.bottomRows(nv)).cwiseAbs().maxCoeff(), 0.0) << "knot " << k;
    EXPECT_EQ((dv_du - fu.bottomRows(nv)).cwiseAbs().maxCoeff(), 0.0) << "knot " << k;
    // J_q and J_w: 1 on the 1-DOF joints, the blocks on the others, in joint order.
    Eigen::MatrixXd jq = Eigen::MatrixXd::Identity(nv, nv), jw = jq;
    std::size_t at = k * block_values;
    for (int i = 1; i < model.nbodies(); ++i) {
      const int dofs = joint_nv(model.joints[i].type), first = model.joints[i].idx_v;
      if (dofs < 2) continue;
      jq.block(first, first, dofs, dofs) =
          Eigen::Map<const RowMajorMatrix>(integrate_dq.data() + at, dofs, dofs);
      jw.block(first, first, dofs, dofs) =
          Eigen::Map<const RowMajorMatrix>(integrate_dw.data() + at, dofs, dofs);
      at += static_cast<std::size_t>(dofs) * dofs;
    }
    Eigen::MatrixXd q_rows_x(nv, nx), q_rows_u(nv, nu);
    if (explicit_step) {
      q_rows_x << jq, kDt * jw;
      q_rows_u.setZero();
    } else {
      q_rows_x = kDt * jw * dv_dx;
      q_rows_x.leftCols(nv) += jq;
      q_rows_u = kDt * jw * dv_du;
    }
    const double scale = 1.0 + fx.cwiseAbs().maxCoeff() + fu.cwiseAbs().maxCoeff();
    EXPECT_LT((q_rows_x - fx.topRows(nv)).cwiseAbs().maxCoeff(), 1e-14 * scale) << "knot " << k;
    EXPECT_LT((q_rows_u - fu.topRows(nv)).cwiseAbs().maxCoeff(), 1e-14 * scale) << "knot " << k;
  }
}

TEST_P(RolloutTest, ClosedLoopPerturbationsPropagateByFxPlusFuK) {
  const Case c = GetParam();
  const Robot r = robot(c);
  const Model& model = *r.model;
  const int nv = model.nv, nx = 2 * nv, nu = static_cast<int>(r.actuated.size());
  const int rows = constraint_rows(model, r.contacts);
  std::mt19937_64 rng(c.seed + 200);
  Data data(model);
  // The nominal is the open-loop trajectory itself, with its Jacobians: x_k ⊖ x̄_k then has
  // the identity as its derivative at x̄_k.
  Trajectory nominal(model, nu, rows, true);
  rollout(model, data, r.q0, r.v0, kKnots, r.controls, settings(r, c), {}, nominal.output());
  const Eigen::VectorXd gain_values = test_support::uniform_vector(rng, kKnots * nu * nx, -1, 1);
  const std::vector<double> gains(gain_values.data(), gain_values.data() + gain_values.size());
  const RolloutFeedback feedback{std::span<const double>(nominal.q.data(), kKnots * model.nq),
                                 std::span<const double>(nominal.v.data(), kKnots * nv), gains};

  Eigen::VectorXd delta = test_support::uniform_vector(rng, nx, -1.0, 1.0);
  Eigen::VectorXd predicted = delta;
  for (int k = 0; k < kKnots; ++k) {
    const Eigen::Map<const RowMajorMatrix> fx(nominal.fx.data() + k * nx * nx, nx, nx);
    const Eigen::Map<const RowMajorMatrix> fu(nominal.fu.data() + k * nx * nu, nx, nu);
    const Eigen::Map<const RowMajorMatrix> gain(gains.data() + k * nu * nx, nu, nx);
    predicted = (fx + fu * gain) * predicted;
  }
  // x_K(h) ⊖ x_K(0) for a start moved by h δ, by fourth-order central differences.
  const auto end_moved = [&](double h) {
    Trajectory moved(model, nu, rows, false);
    const Eigen::VectorXd q0 = integrate(model, r.q0, h * delta.head(nv));
    const Eigen::VectorXd v0 = r.v0 + h * delta.tail(nv);
    rollout(model, data, q0, v0, kKnots, r.controls, settings(r, c), feedback, moved.output());
    Eigen::VectorXd out(nx);
    out << difference(model, Eigen::VectorXd(nominal.q_at(model, kKnots)),
                      Eigen::VectorXd(moved.q_at(model, kKnots))),
        moved.v_at(model, kKnots) - nominal.v_at(model, kKnots);
    return out;
  };
  constexpr double h = 1e-4;
  const Eigen::VectorXd measured =
      (8.0 * (end_moved(h) - end_moved(-h)) - (end_moved(2 * h) - end_moved(-2 * h))) / (12.0 * h);
  EXPECT_LT(
      (measured - predicted).cwiseAbs().maxCoeff() / std::max(1.0, predicted.cwiseAbs().maxCoeff()),
      1e-6);
}

TEST(RolloutTest, StopsBetweenKnotsWhenInterrupted) {
  const Robot r = robot({3, Integrator::kSemiImplicitEuler, false});
  const Model& model = *r.model;
  const int nu = static_cast<int>(r.actuated.size());
  Data data(model);
  int polls = 0;
  data.interruption = {[](const void* state) {
                         int& count = *static_cast<int*>(const_cast<void*>(state));
                         return ++count > 2;
                       },
                       &polls};
  Trajectory out(model, nu, 0, false);
  std::fill(out.q.begin(), out.q.end(), -7.0);
  EXPECT_THROW(rollout(model, data, r.q0, r.v0, kKnots, r.controls,
                       {.dt = kDt, .actuated_dofs = r.actuated}, {}, out.output()),
               Interrupted);
  // Two steps taken: x₀, x₁, x₂ written, x₃ on as they were.
  EXPECT_NE(out.q[2 * model.nq], -7.0);
  EXPECT_EQ(out.q[3 * model.nq], -7.0);
}

// Six knots in three phases on the robot's two contacts A and B: A alone, then B touches down (with
// restitution), then A lifts off. B is anchored where it touches down and stays there in the last
// phase, and Baumgarte's position gain reads the anchor.
TEST(PhasedRolloutTest, FollowsTheStepsOfEachKnotsPhase) {
  constexpr int kPhasedKnots = 6;
  for (const Integrator integrator :
       {Integrator::kSemiImplicitEuler, Integrator::kExplicitEuler, Integrator::kRungeKutta4}) {
    SCOPED_TRACE(static_cast<int>(integrator));
    // The first seed whose two contacts are independent.
    Case c{4, integrator, true, {100.0, 20.0}};
    Robot r = robot(c);
    while (r.contacts.size() < 2 && c.seed < 40) {
      ++c.seed;
      r = robot(c);
    }
    const Model& model = *r.model;
    ASSERT_EQ(r.contacts.size(), 2u);
    const int nq = model.nq, nv = model.nv, nx = 2 * nv;
    const int nu = static_cast<int>(r.actuated.size());
    std::vector<double> controls;
    for (int k = 0; k < kPhasedKnots; ++k) {
      controls.insert(controls.end(), r.controls.begin(), r.controls.begin() + nu);
    }
    std::vector<BilateralConstraint> first{r.contacts[0]}, both = r.contacts, last{r.contacts[1]};
    const std::vector<int> anchored{1}, stays{0};
    const ContactPhase phases[] = {
        {.first_knot = 0, .contacts = first},
        {.first_knot = 2, .contacts = both, .anchored_at_start = anchored, .restitution = 0.3},
        {.first_knot = 4, .contacts = last, .anchored_at_start = stays}};
    StepSettings base = settings(r, c);
    base.constraints = {};
    base.friction_cone = {.friction = 0.8, .faces = 4};
    const ScheduleRows rows = schedule_rows(model, kPhasedKnots, {}, phases);
    EXPECT_EQ(rows.contacts, 8u);
    const std::size_t cone_values = rows.contacts * 5;
    const int rows_a = constraint_dimension(r.contacts[0].type);
    const int rows_b = constraint_dimension(r.contacts[1].type);
    EXPECT_EQ(rows.multipliers,
              static_cast<std::size_t>(2 * rows_a + 2 * (rows_a + rows_b) + 2 * rows_b));
    EXPECT_EQ(rows.impulses, static_cast<std::size_t>(rows_a + rows_b));
    const auto sizes = [&](std::size_t per_knot) { return kPhasedKnots * per_knot; };
    std::vector<double> q(sizes(nq) + nq), v(sizes(nv) + nv), u(sizes(nu)), fx(sizes(nx * nx)),
        fu(sizes(nx * nu)), lambda(rows.multipliers), impulses(rows.impulses), cones(cone_values),
        dcones_dx(cone_values * nx), dcones_du(cone_values * nu);
    Data data(model);
    rollout(model, data, r.q0, r.v0, kPhasedKnots, controls, base, {},
            {q, v, u, fx, fu, lambda, false, {}, {}, impulses, cones, dcones_dx, dcones_du},
            phases);

    // The chain of steps, each under its knot's phase.
    Eigen::VectorXd q_k = r.q0, v_k = r.v0;
    std::size_t lambda_at = 0, cones_at = 0;
    Data scratch(model);
    for (int k = 0; k < kPhasedKnots; ++k) {
      SCOPED_TRACE("knot " + std::to_string(k));
      const std::vector<BilateralConstraint>& held = k < 2 ? first : k < 4 ? both : last;
      if (k == 2) {
        forward_kinematics(model, scratch, q_k);
        const Transform foot = scratch.oMi[r.contacts[1].body1] * r.contacts[1].placement1;
        EXPECT_EQ(both[1].placement2.translation, foot.translation) << "B anchored at touchdown";
      }
      if (k == 4) {
        EXPECT_EQ(last[0].placement2.translation, both[1].placement2.translation)
            << "B stays where it touched down";
      }
      StepSettings knot = base;
      knot.constraints = held;
      knot.touchdown = k == 2;
      knot.restitution = k == 2 ? 0.3 : 0.0;
      const int m = constraint_rows(model, held);
      const auto knot_cones = static_cast<Eigen::Index>(held.size() * 5);
      Eigen::VectorXd q_next(nq), v_next(nv), knot_lambda(m), knot_impulses(m), cone(knot_cones);
      RowMajorMatrix knot_fx(nx, nx), knot_fu(nx, nu), dcone_dx(knot_cones, nx),
          dcone_du(knot_cones, nu);
      const Eigen::Map<const Eigen::VectorXd> u_k(controls.data() + k * nu, nu);
      step(model, scratch, q_k, v_k, u_k, knot,
           {.q_next = q_next,
            .v_next = v_next,
            .fx = knot_fx,
            .fu = knot_fu,
            .multipliers = {knot_lambda.data(), static_cast<std::size_t>(m)},
            .impulses = k == 2 ? std::span<double>(knot_impulses.data(), m) : std::span<double>(),
            .friction_cones = {cone.data(), static_cast<std::size_t>(knot_cones)},
            .dfriction_cones_dx = {dcone_dx.data(), static_cast<std::size_t>(dcone_dx.size())},
            .dfriction_cones_du = {dcone_du.data(), static_cast<std::size_t>(dcone_du.size())}});
      EXPECT_EQ(q_next, Eigen::Map<const Eigen::VectorXd>(q.data() + (k + 1) * nq, nq));
      EXPECT_EQ(v_next, Eigen::Map<const Eigen::VectorXd>(v.data() + (k + 1) * nv, nv));
      EXPECT_EQ(knot_fx, Eigen::Map<const RowMajorMatrix>(fx.data() + k * nx * nx, nx, nx));
      EXPECT_EQ(knot_fu, Eigen::Map<const RowMajorMatrix>(fu.data() + k * nx * nu, nx, nu));
      EXPECT_EQ(knot_lambda, Eigen::Map<const Eigen::VectorXd>(lambda.data() + lambda_at, m));
      if (k == 2) {
        EXPECT_EQ(knot_impulses, Eigen::Map<const Eigen::VectorXd>(impulses.data(), m));
        EXPECT_GT(knot_impulses.cwiseAbs().maxCoeff(), 0.0) << "the touchdown has an impulse";
      }
      EXPECT_EQ(cone, Eigen::Map<const Eigen::VectorXd>(cones.data() + cones_at, knot_cones));
      EXPECT_EQ(dcone_dx,
                Eigen::Map<const RowMajorMatrix>(dcones_dx.data() + cones_at * nx, knot_cones, nx));
      EXPECT_EQ(dcone_du,
                Eigen::Map<const RowMajorMatrix>(dcones_du.data() + cones_at * nu, knot_cones, nu));
      cones_at += static_cast<std::size_t>(knot_cones);
      lambda_at += static_cast<std::size_t>(m);
      q_k = q_next;
      v_k = v_next;
    }

    // One phase of A: the rollout without a schedule, bitwise.
    const ContactPhase one[] = {{.first_knot = 0, .contacts = first}};
    std::vector<double> q1(q.size()), v1(v.size()), u1(u.size()), fx1(fx.size()), fu1(fu.size()),
        lambda1(sizes(rows_a)), q2(q.size()), v2(v.size()), u2(u.size()), fx2(fx.size()),
        fu2(fu.size()), lambda2(sizes(rows_a));
    rollout(model, data, r.q0, r.v0, kPhasedKnots, controls, base, {},
            {q1, v1, u1, fx1, fu1, lambda1}, one);
    StepSettings held_a = base;
    held_a.constraints = first;
    rollout(model, data, r.q0, r.v0, kPhasedKnots, controls, held_a, {},
            {q2, v2, u2, fx2, fu2, lambda2});
    EXPECT_EQ(q1, q2);
    EXPECT_EQ(v1, v2);
    EXPECT_EQ(fx1, fx2);
    EXPECT_EQ(fu1, fu2);
    EXPECT_EQ(lambda1, lambda2);
  }
}

std::vector<Case> cases() {
  std::vector<Case> out;
  const Integrator integrators[] = {Integrator::kSemiImplicitEuler, Integrator::kExplicitEuler,
                                    Integrator::kRungeKutta4};
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    out.push_back({seed, integrators[seed % 3], seed > 3});
  }
  // Contacts held by Baumgarte's gains, which reach the steps' Jacobians through ∂λ.
  for (std::uint64_t seed = 7; seed <= 9; ++seed) {
    out.push_back({seed, integrators[seed % 3], true, {400.0, 40.0}});
  }
  return out;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  static constexpr const char* kIntegrators[] = {"_semi_implicit_euler", "_explicit_euler",
                                                 "_runge_kutta_4"};
  return "seed" + std::to_string(info.param.seed) +
         kIntegrators[static_cast<int>(info.param.integrator)] +
         (info.param.in_contact ? "_in_contact" : "") +
         (info.param.baumgarte.position > 0.0 ? "_baumgarte" : "");
}

INSTANTIATE_TEST_SUITE_P(RandomTrees, RolloutTest, ::testing::ValuesIn(cases()), case_name);

}  // namespace
}  // namespace torqued
