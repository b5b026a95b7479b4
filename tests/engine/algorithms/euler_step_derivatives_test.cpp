// Tests engine/algorithms/euler_step_derivatives.hpp, both steps: the step against its definition
// (ABA, then integrate()), and Fx, Fu against fourth-order central differences of the engine's own
// step taken in the tangent space, on random trees with every joint kind, fully actuated and with
// an unactuated free-flyer root.
#include "engine/algorithms/euler_step_derivatives.hpp"

#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <vector>

#include "engine/model/build.hpp"
#include "engine/model/configuration.hpp"
#include "tests/engine/support/random_tree.hpp"

namespace torqued {
namespace {

// Step h = 1e-4: truncation ~h⁴ |f⁽⁵⁾|, rounding ~ε |f| / h ≈ 1e-12 relative; q̈'s amplification by
// κ(M), up to ~1e4 on these trees, and dt = 0.01 keep the error of Fx and Fu below 1e-8. The bar
// 1e-6 (relative to the largest entry of the block) separates a correct Jacobian from one with a
// dropped term.
constexpr double kStep = 1e-4;
constexpr double kTolerance = 1e-6;
constexpr double kDt = 0.01;

struct Step {
  Eigen::VectorXd q_next, v_next;
  RowMajorMatrix fx, fu;
};

struct Case {
  std::uint64_t seed;
  bool unactuated_root;
  EulerStep kind;
};

Step step(const Model& model, Data& data, const Case& c, const Eigen::VectorXd& q,
          const Eigen::VectorXd& v, const Eigen::VectorXd& u, const std::vector<int>& actuated) {
  Step s{Eigen::VectorXd(model.nq), Eigen::VectorXd(model.nv),
         RowMajorMatrix(2 * model.nv, 2 * model.nv), RowMajorMatrix(2 * model.nv, u.size())};
  euler_step_derivatives(model, data, q, v, u, kDt, c.kind, actuated,
                         {s.q_next, s.v_next, s.fx, s.fu});
  return s;
}

// (q⁺, v⁺) of a perturbed step relative to the unperturbed one, in the tangent space.
Eigen::VectorXd tangent(const Model& model, const Step& at, const Step& moved) {
  Eigen::VectorXd out(2 * model.nv);
  out << difference(model, at.q_next, moved.q_next), moved.v_next - at.v_next;
  return out;
}

template <typename Moved>
Eigen::MatrixXd finite_difference(const Model& model, const Step& at, int columns, Moved&& moved) {
  Eigen::MatrixXd out(2 * model.nv, columns);
  for (int k = 0; k < columns; ++k) {
    auto f = [&](double h) { return tangent(model, at, moved(k, h)); };
    out.col(k) = (8.0 * (f(kStep) - f(-kStep)) - (f(2 * kStep) - f(-2 * kStep))) / (12.0 * kStep);
  }
  return out;
}

double relative_error(const Eigen::MatrixXd& got, const Eigen::MatrixXd& expected) {
  return (got - expected).cwiseAbs().maxCoeff() / std::max(1.0, expected.cwiseAbs().maxCoeff());
}

class EulerStepDerivativesTest : public ::testing::TestWithParam<Case> {};

TEST_P(EulerStepDerivativesTest, StepAndJacobiansMatchItsDefinitionAndFiniteDifferences) {
  const Case c = GetParam();
  test_support::RandomTreeOptions options;
  options.min_links = 6;
  options.max_links = 12;
  options.floating_base = true;
  const ModelPtr model_ptr = build_model(test_support::random_tree_spec(c.seed, options));
  const Model& model = *model_ptr;
  std::mt19937_64 rng(c.seed);
  const test_support::RandomState state = test_support::random_state(model, rng);
  std::vector<int> actuated(model.nv - (c.unactuated_root ? 6 : 0));
  std::iota(actuated.begin(), actuated.end(), c.unactuated_root ? 6 : 0);
  const Eigen::VectorXd u =
      test_support::uniform_vector(rng, static_cast<int>(actuated.size()), -10.0, 10.0);
  Data data(model);
  const Step at = step(model, data, c, state.q, state.v, u, actuated);

  Eigen::VectorXd tau = Eigen::VectorXd::Zero(model.nv);
  for (std::size_t k = 0; k < actuated.size(); ++k) tau[actuated[k]] = u[k];
  Data reference(model);
  const Eigen::VectorXd v_next = state.v + kDt * aba(model, reference, state.q, state.v, tau);
  EXPECT_LT((at.v_next - v_next).cwiseAbs().maxCoeff(), 1e-12);
  const Eigen::VectorXd& moved_with = c.kind == EulerStep::kSemiImplicit ? v_next : state.v;
  EXPECT_LT((at.q_next - integrate(model, state.q, kDt * moved_with)).cwiseAbs().maxCoeff(), 1e-12);

  Data scratch(model);
  const int nv = model.nv;
  const Eigen::MatrixXd fx_q = finite_difference(model, at, nv, [&](int k, double h) {
    return step(model, scratch, c, integrate(model, state.q, Eigen::VectorXd::Unit(nv, k) * h),
                state.v, u, actuated);
  });
  const Eigen::MatrixXd fx_v = finite_difference(model, at, nv, [&](int k, double h) {
    return step(model, scratch, c, state.q, state.v + Eigen::VectorXd::Unit(nv, k) * h, u,
                actuated);
  });
  const Eigen::MatrixXd fu = finite_difference(model, at, u.size(), [&](int k, double h) {
    return step(model, scratch, c, state.q, state.v, u + Eigen::VectorXd::Unit(u.size(), k) * h,
                actuated);
  });
  EXPECT_LT(relative_error(at.fx.leftCols(nv), fx_q), kTolerance) << "Fx, q columns";
  EXPECT_LT(relative_error(at.fx.rightCols(nv), fx_v), kTolerance) << "Fx, v columns";
  EXPECT_LT(relative_error(at.fu, fu), kTolerance) << "Fu";
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    out.push_back(
        {seed, seed % 2 == 0, seed <= 6 ? EulerStep::kSemiImplicit : EulerStep::kExplicit});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(RandomTrees, EulerStepDerivativesTest, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return "seed" + std::to_string(info.param.seed) +
                                  (info.param.unactuated_root ? "_unactuated_root" : "_actuated") +
                                  (info.param.kind == EulerStep::kSemiImplicit ? "_semi_implicit"
                                                                               : "_explicit");
                         });

}  // namespace
}  // namespace torqued
