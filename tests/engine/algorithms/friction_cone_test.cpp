// Tests the friction-cone residuals of a contact force (engine/algorithms/friction_cone.hpp): their
// values for a force worked by hand, the cone's boundary, and their gradients against central
// differences. Their derivatives along a step's state and controls are tested with the step's
// (discrete_step_derivatives_test.cpp).
#include "engine/algorithms/friction_cone.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "tests/engine/support/central_differences.hpp"

namespace torqued {
namespace {

using Gradient = Eigen::Matrix<double, Eigen::Dynamic, 3>;

// f = (3, 4, 20) on a horizontal surface, μ = 0.5: ‖f_t‖ = 5 and μ f_n = 10, so r₀ = 5. The
// tangent basis of n = z is t₁ = z × x = y, t₂ = z × t₁ = −x; the faces, at θ = 0, π/2, π, 3π/2,
// push outwards along y, −x, −y and x, with μ cos(π/4) f_n = 5 √2.
TEST(FrictionConeTest, ResidualsOfAForceWorkedByHand) {
  const FrictionCone cone{.friction = 0.5, .faces = 4, .normal = Vec3::UnitZ()};
  Eigen::VectorXd r(friction_cone_values(cone));
  friction_cone_residuals(cone, Vec3(3.0, 4.0, 20.0), r);
  const double face = 5.0 * std::numbers::sqrt2;
  EXPECT_NEAR(r[0], 5.0, 1e-14);
  EXPECT_NEAR(r[1], face - 4.0, 1e-14);
  EXPECT_NEAR(r[2], face + 3.0, 1e-14);
  EXPECT_NEAR(r[3], face + 4.0, 1e-14);
  EXPECT_NEAR(r[4], face - 3.0, 1e-14);
}

// On the cone's boundary r₀ = 0; the inscribed pyramid touches it along its edges (between faces),
// where the two faces' residuals vanish, and lies inside it elsewhere.
TEST(FrictionConeTest, TheInscribedPyramidTouchesTheConeAlongItsEdges) {
  const Vec3 normal = Vec3(0.3, 0.2, 1.0).normalized();
  const FrictionCone cone{.friction = 0.8, .faces = 6, .normal = normal};
  const Vec3 t1 = normal.cross(Vec3::UnitX()).normalized();
  const Vec3 t2 = normal.cross(t1);
  Eigen::VectorXd r(friction_cone_values(cone));
  // The edge between the faces at θ = 0 and θ = π/3, at θ = π/6.
  const double edge = std::numbers::pi / 6.0;
  const Vec3 on_edge = 2.0 * (normal + 0.8 * (std::cos(edge) * t1 + std::sin(edge) * t2));
  friction_cone_residuals(cone, on_edge, r);
  EXPECT_NEAR(r[0], 0.0, 1e-14);
  EXPECT_NEAR(r[1], 0.0, 1e-14);
  EXPECT_NEAR(r[2], 0.0, 1e-14);
  for (int i = 3; i < r.size(); ++i) EXPECT_GT(r[i], 0.1) << "face " << i;
}

// ∂r/∂f against fourth-order central differences (h = 1e-4: error ~1e-12), inside the cone and
// outside it.
TEST(FrictionConeTest, GradientsMatchCentralDifferences) {
  const FrictionCone cone{.friction = 0.6, .faces = 5, .normal = Vec3(-0.1, 0.4, 1.0).normalized()};
  for (const Vec3& force : {Vec3(1.0, -2.0, 30.0), Vec3(8.0, 5.0, 2.0)}) {
    Eigen::VectorXd r(friction_cone_values(cone));
    Gradient gradient(r.size(), 3);
    friction_cone_residuals(cone, force, r, gradient);
    const Eigen::MatrixXd expected =
        test_support::central_differences(3, 1e-4, [&](int k, double h) {
          Eigen::VectorXd moved(r.size());
          friction_cone_residuals(cone, force + h * Vec3::Unit(k), moved);
          return moved;
        });
    EXPECT_LT((gradient - expected).cwiseAbs().maxCoeff(), 1e-9) << force.transpose();
  }
}

}  // namespace
}  // namespace torqued
