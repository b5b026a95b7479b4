// FDDP against what an optimal control must satisfy, on Euclidean problems small enough to check
// in closed form: the linear-quadratic regulator's batch solution, and the stationarity of a
// nonlinear problem's cost (the unicycle of Crocoddyl's examples) along every control; and the
// gap it reports for the iterate it rolled out, against the iterate's own.
#include "engine/optimal_control/fddp.hpp"

#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <span>

namespace torqued {
namespace {

// A problem on ℝⁿ (⊕ and ⊖ are + and −) whose knots are given as functions; the derivatives by
// central differences of the step and the cost (the Hessians of the costs given, as least squares
// give them).
class EuclideanProblem : public ShootingProblem {
 public:
  using Step = std::function<Eigen::VectorXd(const Eigen::VectorXd&, const Eigen::VectorXd&)>;
  using Cost = std::function<double(const Eigen::VectorXd&, const Eigen::VectorXd&)>;

  EuclideanProblem(int knots, Eigen::VectorXd x0, int nu, Step step, Cost running, Cost terminal,
                   Eigen::MatrixXd lxx, Eigen::MatrixXd luu, Eigen::MatrixXd lxx_terminal)
      : knots_(knots),
        x0_(std::move(x0)),
        nu_(nu),
        step_(std::move(step)),
        running_(std::move(running)),
        terminal_(std::move(terminal)),
        lxx_(std::move(lxx)),
        luu_(std::move(luu)),
        lxx_terminal_(std::move(lxx_terminal)) {}

  int knots() const override { return knots_; }
  int state_size() const override { return static_cast<int>(x0_.size()); }
  int tangent_size() const override { return static_cast<int>(x0_.size()); }
  int control_size() const override { return nu_; }
  const Eigen::VectorXd& initial_state() const override { return x0_; }
  const ControlBounds* control_bounds() const override {
    return bounds.lower.size() > 0 ? &bounds : nullptr;
  }
  void integrate(const Eigen::VectorXd& x, const Eigen::VectorXd& dx,
                 Eigen::VectorXd& out) const override {
    out = x + dx;
  }
  void difference(const Eigen::VectorXd& x0, const Eigen::VectorXd& x1,
                  Eigen::VectorXd& out) const override {
    out = x1 - x0;
  }
  double evaluate(int t, const Eigen::VectorXd& x, const Eigen::VectorXd& u,
                  Eigen::VectorXd& next) override {
    ++evaluations;
    if (t == knots_) return terminal_(x, u);
    next = step_(x, u);
    return running_(x, u);
  }
  void differentiate(std::span<const Eigen::VectorXd> xs, std::span<const Eigen::VectorXd> us,
                     std::span<KnotValues> values) override {
    const Eigen::VectorXd none;
    for (int t = 0; t <= knots_; ++t) {
      KnotValues& v = values[t];
      const Eigen::VectorXd& u = t < knots_ ? us[t] : none;
      const Cost& cost = t < knots_ ? running_ : terminal_;
      v.cost = cost(xs[t], u);
      v.lx = gradient([&](const Eigen::VectorXd& x) { return cost(x, u); }, xs[t]);
      if (t == knots_) {
        v.lxx = lxx_terminal_;
        continue;
      }
      v.next = step_(xs[t], u);
      v.lu = gradient([&](const Eigen::VectorXd& w) { return cost(xs[t], w); }, u);
      v.lxx = lxx_;
      v.luu = luu_;
      v.lxu.setZero();
      v.fx = jacobian([&](const Eigen::VectorXd& x) { return step_(x, u); }, xs[t]);
      v.fu = jacobian([&](const Eigen::VectorXd& w) { return step_(xs[t], w); }, u);
    }
  }

  int evaluations = 0;
  ControlBounds bounds;  // none while empty

 private:
  static constexpr double kStep = 1e-6;

  static Eigen::VectorXd gradient(const std::function<double(const Eigen::VectorXd&)>& f,
                                  const Eigen::VectorXd& at) {
    Eigen::VectorXd g(at.size());
    for (Eigen::Index i = 0; i < at.size(); ++i) {
      Eigen::VectorXd plus = at, minus = at;
      plus[i] += kStep;
      minus[i] -= kStep;
      g[i] = (f(plus) - f(minus)) / (2.0 * kStep);
    }
    return g;
  }
  static Eigen::MatrixXd jacobian(const std::function<Eigen::VectorXd(const Eigen::VectorXd&)>& f,
                                  const Eigen::VectorXd& at) {
    Eigen::MatrixXd j(f(at).size(), at.size());
    for (Eigen::Index i = 0; i < at.size(); ++i) {
      Eigen::VectorXd plus = at, minus = at;
      plus[i] += kStep;
      minus[i] -= kStep;
      j.col(i) = (f(plus) - f(minus)) / (2.0 * kStep);
    }
    return j;
  }

  int knots_;
  Eigen::VectorXd x0_;
  int nu_;
  Step step_;
  Cost running_, terminal_;
  Eigen::MatrixXd lxx_, luu_, lxx_terminal_;
};

// x⁺ = A x + B u, ℓ = ½ xᵀ Q x + ½ uᵀ R u, ℓ_T = ½ xᵀ Q_T x: a double integrator in 2D.
struct Regulator {
  static constexpr int kKnots = 20;
  static constexpr double kDt = 0.1;
  Eigen::MatrixXd a = Eigen::MatrixXd::Identity(4, 4), b = Eigen::MatrixXd::Zero(4, 2);
  Eigen::MatrixXd q = Eigen::MatrixXd::Identity(4, 4), r = 0.1 * Eigen::MatrixXd::Identity(2, 2);
  Eigen::MatrixXd q_terminal = 100.0 * Eigen::MatrixXd::Identity(4, 4);
  Eigen::VectorXd x0 = (Eigen::VectorXd(4) << 1.0, -0.5, 0.3, 0.2).finished();

  Regulator() {
    a(0, 2) = a(1, 3) = kDt;
    b(2, 0) = b(3, 1) = kDt;
  }

  EuclideanProblem problem() const {
    return EuclideanProblem(
        kKnots, x0, 2,
        [this](const auto& x, const auto& u) -> Eigen::VectorXd { return a * x + b * u; },
        [this](const auto& x, const auto& u) { return 0.5 * x.dot(q * x) + 0.5 * u.dot(r * u); },
        [this](const auto& x, const auto&) { return 0.5 * x.dot(q_terminal * x); }, q, r,
        q_terminal);
  }

  // The batch solution: X = Φ x0 + Γ U, minimized over U in closed form.
  Eigen::VectorXd optimal_controls() const {
    const int n = 4, m = 2, k = kKnots;
    Eigen::MatrixXd phi((k + 1) * n, n), gamma = Eigen::MatrixXd::Zero((k + 1) * n, k * m);
    phi.topRows(n).setIdentity();
    for (int t = 1; t <= k; ++t) {
      phi.middleRows(t * n, n) = a * phi.middleRows((t - 1) * n, n);
      gamma.middleRows(t * n, n) = a * gamma.middleRows((t - 1) * n, n);
      gamma.block(t * n, (t - 1) * m, n, m) = b;
    }
    Eigen::MatrixXd q_bar = Eigen::MatrixXd::Zero((k + 1) * n, (k + 1) * n);
    for (int t = 0; t < k; ++t) q_bar.block(t * n, t * n, n, n) = q;
    q_bar.block(k * n, k * n, n, n) = q_terminal;
    Eigen::MatrixXd r_bar = Eigen::MatrixXd::Zero(k * m, k * m);
    for (int t = 0; t < k; ++t) r_bar.block(t * m, t * m, m, m) = r;
    const Eigen::MatrixXd hessian = gamma.transpose() * q_bar * gamma + r_bar;
    return hessian.ldlt().solve(-gamma.transpose() * q_bar * phi * x0);
  }
};

std::vector<Eigen::VectorXd> rollout(EuclideanProblem& problem,
                                     const std::vector<Eigen::VectorXd>& us) {
  std::vector<Eigen::VectorXd> xs{problem.initial_state()};
  Eigen::VectorXd next;
  for (int t = 0; t < problem.knots(); ++t) {
    problem.evaluate(t, xs.back(), us[t], next);
    xs.push_back(next);
  }
  return xs;
}

double total_cost(EuclideanProblem& problem, const std::vector<Eigen::VectorXd>& us) {
  const std::vector<Eigen::VectorXd> xs = rollout(problem, us);
  double cost = 0.0;
  Eigen::VectorXd next;
  for (int t = 0; t <= problem.knots(); ++t) {
    cost += problem.evaluate(t, xs[t], t < problem.knots() ? us[t] : Eigen::VectorXd(), next);
  }
  return cost;
}

TEST(FddpTest, SolvesTheRegulatorFromARolloutInOneStep) {
  const Regulator lqr;
  EuclideanProblem problem = lqr.problem();
  const std::vector<Eigen::VectorXd> us(Regulator::kKnots, Eigen::VectorXd::Zero(2));
  Fddp solver(problem);
  ASSERT_EQ(solver.solve(rollout(problem, us), us, true), FddpOutcome::kConverged);
  const Eigen::VectorXd expected = lqr.optimal_controls();
  for (int t = 0; t < Regulator::kKnots; ++t) {
    // μ = 1e-9 on Q_uu and V_xx, finite-difference gradients: 1e-6.
    EXPECT_LT((solver.us()[t] - expected.segment(2 * t, 2)).norm(), 1e-6) << "knot " << t;
  }
  // One full step solves a quadratic problem; the second iteration only confirms it.
  EXPECT_LE(solver.iterations().size(), 2u);
  EXPECT_EQ(solver.iterations().front().step, 1.0);
}

TEST(FddpTest, ClosesTheGapsOfAnInfeasibleGuess) {
  const Regulator lqr;
  EuclideanProblem problem = lqr.problem();
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0.0, 1.0);
  std::vector<Eigen::VectorXd> xs(Regulator::kKnots + 1), us(Regulator::kKnots);
  for (auto& x : xs) x = Eigen::VectorXd::NullaryExpr(4, [&] { return noise(rng); });
  for (auto& u : us) u = Eigen::VectorXd::NullaryExpr(2, [&] { return noise(rng); });
  Fddp solver(problem);
  ASSERT_EQ(solver.solve(xs, us, false), FddpOutcome::kConverged);
  EXPECT_TRUE(solver.feasible());
  const Eigen::VectorXd expected = lqr.optimal_controls();
  for (int t = 0; t < Regulator::kKnots; ++t) {
    EXPECT_LT((solver.us()[t] - expected.segment(2 * t, 2)).norm(), 1e-6) << "knot " << t;
  }
  // The trajectory is the rollout of its controls (gaps closed to rounding).
  const std::vector<Eigen::VectorXd> rolled = rollout(problem, solver.us());
  for (int t = 0; t <= Regulator::kKnots; ++t) {
    EXPECT_LT((solver.xs()[t] - rolled[t]).lpNorm<Eigen::Infinity>(), 1e-12) << "knot " << t;
  }
  EXPECT_GT(solver.iterations().front().gaps, 0.1);
}

// The unicycle of Crocoddyl's examples: (x, y, θ) driven by (v, ω) to the origin.
constexpr double kDt = 0.1, kStateWeight = 10.0, kControlWeight = 1.0;

EuclideanProblem unicycle() {
  const Eigen::VectorXd x0 = (Eigen::VectorXd(3) << -1.0, -1.0, 1.0).finished();
  return EuclideanProblem(
      30, x0, 2,
      [](const Eigen::VectorXd& x, const Eigen::VectorXd& u) -> Eigen::VectorXd {
        return x + kDt * Eigen::Vector3d(u[0] * std::cos(x[2]), u[0] * std::sin(x[2]), u[1]);
      },
      [](const Eigen::VectorXd& x, const Eigen::VectorXd& u) {
        return 0.5 * kStateWeight * kDt * x.squaredNorm() +
               0.5 * kControlWeight * kDt * u.squaredNorm();
      },
      [](const Eigen::VectorXd& x, const Eigen::VectorXd&) {
        return 0.5 * 1000.0 * x.squaredNorm();
      },
      kStateWeight* kDt* Eigen::MatrixXd::Identity(3, 3),
      kControlWeight* kDt* Eigen::MatrixXd::Identity(2, 2),
      1000.0 * Eigen::MatrixXd::Identity(3, 3));
}

TEST(FddpTest, ConvergesOnANonlinearProblemToAStationaryCost) {
  EuclideanProblem problem = unicycle();
  const std::vector<Eigen::VectorXd> xs(31, problem.initial_state());
  const std::vector<Eigen::VectorXd> us(30, Eigen::VectorXd::Zero(2));
  Fddp solver(problem);
  ASSERT_EQ(solver.solve(xs, us, false), FddpOutcome::kConverged);
  // The cost falls at every iteration once the gaps are closed.
  const auto& log = solver.iterations();
  for (std::size_t i = 2; i < log.size(); ++i) EXPECT_LE(log[i].cost, log[i - 1].cost + 1e-12);
  // Stationary along every control: the rolled-out cost's central differences.
  std::vector<Eigen::VectorXd> controls = solver.us();
  const double h = 1e-6;
  double largest = 0.0;
  for (std::size_t t = 0; t < controls.size(); ++t) {
    for (int i = 0; i < 2; ++i) {
      controls[t][i] += h;
      const double plus = total_cost(problem, controls);
      controls[t][i] -= 2.0 * h;
      const double minus = total_cost(problem, controls);
      controls[t][i] += h;
      largest = std::max(largest, std::abs(plus - minus) / (2.0 * h));
    }
  }
  // The Gauss-Newton Hessian and finite-difference derivatives: 1e-5 of a cost of order 1.
  EXPECT_LT(largest, 1e-5);
  EXPECT_LT(solver.cost(), total_cost(problem, us));
}

// The unicycle whose knots arrive one at a time from the last, as a problem spread over threads
// hands them over: the knots not yet announced are NaN, so a backward step that read one early
// would spoil the solve.
class KnotByKnotUnicycle final : public EuclideanProblem {
 public:
  KnotByKnotUnicycle() : EuclideanProblem(unicycle()) {}

  void differentiate_overlapping(std::span<const Eigen::VectorXd> xs,
                                 std::span<const Eigen::VectorXd> us, std::span<KnotValues> values,
                                 const std::function<void(int from)>& ready) override {
    std::vector<KnotValues> computed(values.begin(), values.end());
    differentiate(xs, us, computed);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (KnotValues& v : values) {
      v.next.setConstant(nan);
      v.fx.setConstant(nan);
      v.lx.setConstant(nan);
      v.lxx.setConstant(nan);
      v.cost = nan;
    }
    for (int t = knots(); t >= 0; --t) {
      values[static_cast<std::size_t>(t)] = computed[static_cast<std::size_t>(t)];
      ready(t);
      ++announcements;
    }
  }

  int announcements = 0;
};

TEST(FddpTest, BackwardPassOverlappingTheDerivativesGivesTheSameSolve) {
  EuclideanProblem whole = unicycle();
  KnotByKnotUnicycle knot_by_knot;
  // An infeasible guess, so that the backward pass reads the gaps.
  std::mt19937 rng(11);
  std::normal_distribution<double> noise(0.0, 0.3);
  std::vector<Eigen::VectorXd> xs(31), us(30);
  for (auto& x : xs) x = Eigen::VectorXd::NullaryExpr(3, [&] { return noise(rng); });
  for (auto& u : us) u = Eigen::VectorXd::NullaryExpr(2, [&] { return noise(rng); });
  Fddp reference(whole), overlapped(knot_by_knot);
  ASSERT_EQ(reference.solve(xs, us, false), FddpOutcome::kConverged);
  ASSERT_EQ(overlapped.solve(xs, us, false), FddpOutcome::kConverged);
  EXPECT_GT(knot_by_knot.announcements, 31);  // more than one differentiation
  ASSERT_EQ(overlapped.iterations().size(), reference.iterations().size());
  for (std::size_t i = 0; i < reference.iterations().size(); ++i) {
    EXPECT_EQ(overlapped.iterations()[i].cost, reference.iterations()[i].cost) << i;
    EXPECT_EQ(overlapped.iterations()[i].gaps, reference.iterations()[i].gaps) << i;
  }
  for (std::size_t t = 0; t < us.size(); ++t) EXPECT_EQ(overlapped.us()[t], reference.us()[t]);
}

// Box-FDDP on the regulator with bounds that hold the first controls: the solution satisfies the
// bounded problem's optimality conditions, ∂J/∂u_t,i = 0 where u_t,i is inside its bounds, ≥ 0 at
// its lower bound and ≤ 0 at its upper one (J the rollout's cost, differentiated centrally).
TEST(FddpTest, BoxFddpMeetsTheBoundedOptimalityConditions) {
  const Regulator regulator;
  EuclideanProblem problem = regulator.problem();
  problem.bounds = {Eigen::Vector2d(-0.6, -0.4), Eigen::Vector2d(0.5, 0.3)};
  Fddp solver(problem);
  const std::vector<Eigen::VectorXd> xs(Regulator::kKnots + 1, regulator.x0);
  const std::vector<Eigen::VectorXd> us(Regulator::kKnots, Eigen::VectorXd::Zero(2));
  ASSERT_EQ(solver.solve(xs, us, false), FddpOutcome::kConverged);
  const auto rollout_cost = [&](const std::vector<Eigen::VectorXd>& controls) {
    Eigen::VectorXd x = regulator.x0, next(4);
    double cost = 0.0;
    for (int t = 0; t < Regulator::kKnots; ++t) {
      cost += problem.evaluate(t, x, controls[t], next);
      x = next;
    }
    return cost + problem.evaluate(Regulator::kKnots, x, Eigen::VectorXd(), next);
  };
  int held = 0;
  for (int t = 0; t < Regulator::kKnots; ++t) {
    for (int i = 0; i < 2; ++i) {
      const double u = solver.us()[t][i];
      const double lower = problem.bounds.lower[i], upper = problem.bounds.upper[i];
      ASSERT_GE(u, lower);
      ASSERT_LE(u, upper);
      std::vector<Eigen::VectorXd> plus = solver.us(), minus = solver.us();
      plus[t][i] += 1e-6;
      minus[t][i] -= 1e-6;
      const double slope = (rollout_cost(plus) - rollout_cost(minus)) / 2e-6;
      if (u == lower) {
        EXPECT_GT(slope, -1e-5) << "knot " << t << " control " << i;
        ++held;
      } else if (u == upper) {
        EXPECT_LT(slope, 1e-5) << "knot " << t << " control " << i;
        ++held;
      } else {
        EXPECT_NEAR(slope, 0.0, 1e-5) << "knot " << t << " control " << i;
      }
    }
  }
  EXPECT_GT(held, 0);  // the bounds bind
  // The rollout of the solution is the solution: feasible, gaps closed.
  for (int t = 0; t <= Regulator::kKnots; ++t) {
    EXPECT_LT(solver.gaps()[t].lpNorm<Eigen::Infinity>(), 1e-12);
  }
}

// The gap FDDP reports for the iterate it rolled out is the iterate's own: its largest
// ‖f(x_t, u_t) ⊖ x_t+1‖∞ (and ‖x̂_0 ⊖ x_0‖∞), recomputed here, after 1 to 4 iterations from 10
// infeasible guesses, some of them ending on a partial step (those ending on no step report none).
TEST(FddpTest, TheRolledOutGapIsTheIteratesLargestGap) {
  EuclideanProblem problem = unicycle();
  Fddp solver(problem);
  int infeasible = 0;
  for (unsigned seed = 0; seed < 10; ++seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> noise(0.0, 10.0);
    std::vector<Eigen::VectorXd> xs(31), us(30);
    for (auto& x : xs) x = Eigen::VectorXd::NullaryExpr(3, [&] { return noise(rng); });
    for (auto& u : us) u = Eigen::VectorXd::NullaryExpr(2, [&] { return noise(rng); });
    for (int iterations = 1; iterations <= 4; ++iterations) {
      solver.solve(xs, us, false, {.max_iterations = iterations});
      if (!solver.rolled_out()) continue;  // the last iteration found no step
      double largest = (problem.initial_state() - solver.xs()[0]).lpNorm<Eigen::Infinity>();
      Eigen::VectorXd next;
      for (int t = 0; t < 30; ++t) {
        problem.evaluate(t, solver.xs()[t], solver.us()[t], next);
        largest = std::max(largest, (next - solver.xs()[t + 1]).lpNorm<Eigen::Infinity>());
      }
      EXPECT_NEAR(solver.rolled_out_gap(), largest, 1e-14 * std::max(1.0, largest))
          << "seed " << seed << ", " << iterations << " iterations";
      if (largest > 0.0) ++infeasible;
    }
  }
  EXPECT_GT(infeasible, 0);
}

TEST(FddpTest, AnInterruptionEndsTheSolveWithTheLastAcceptedIterate) {
  EuclideanProblem problem = unicycle();
  const std::vector<Eigen::VectorXd> xs(31, problem.initial_state());
  const std::vector<Eigen::VectorXd> us(30, Eigen::VectorXd::Zero(2));
  struct Budget {
    const EuclideanProblem* problem;
    int evaluations;
  } budget{&problem, 150};
  const Interruption interruption{[](const void* state) {
                                    const auto* b = static_cast<const Budget*>(state);
                                    return b->problem->evaluations >= b->evaluations;
                                  },
                                  &budget};
  Fddp solver(problem);
  ASSERT_EQ(solver.solve(xs, us, false, {}, interruption), FddpOutcome::kInterrupted);
  ASSERT_FALSE(solver.iterations().empty());
  EXPECT_EQ(solver.cost(), solver.iterations().back().cost);
  EXPECT_LT(problem.evaluations, 150 + 2 * 31);
}

TEST(FddpTest, AnIterationLimitKeepsTheBestIterate) {
  EuclideanProblem problem = unicycle();
  const std::vector<Eigen::VectorXd> xs(31, problem.initial_state());
  const std::vector<Eigen::VectorXd> us(30, Eigen::VectorXd::Zero(2));
  Fddp solver(problem);
  FddpSettings settings;
  settings.max_iterations = 2;
  EXPECT_EQ(solver.solve(xs, us, false, settings), FddpOutcome::kIterationLimit);
  EXPECT_EQ(solver.iterations().size(), 2u);
}

}  // namespace
}  // namespace torqued
