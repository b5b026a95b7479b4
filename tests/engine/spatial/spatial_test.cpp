// The spatial algebra (engine/spatial) against its 6x6 matrix forms, built here from scratch in
// [linear; angular] order: Featherstone's crm/crf cross-product matrices, the Plücker motion and
// force transforms, and the 6x6 rigid-body inertia.
//
// Tolerance: every quantity below is a handful of products of numbers of order 1 (random
// rotations, translations up to 1, masses up to 5), so two evaluations of the same expression in
// different orders agree to a few ulps of ~10; 1e-12 absolute leaves a margin of ~100x while
// still catching any sign or transposition error (those are of order 1).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "engine/spatial/inertia.hpp"
#include "engine/spatial/motion.hpp"
#include "engine/spatial/transform.hpp"
#include "tests/engine/support/random_tree.hpp"

namespace torqued {
namespace {

using test_support::random_rigid_inertia;
using test_support::random_symmetric6;
using test_support::random_transform;
using test_support::uniform;
using test_support::uniform_vector;

constexpr double kTol = 1e-12;
constexpr int kTrials = 50;

Mat3 skew_here(const Vec3& x) {  // written out again so the test does not trust skew()
  Mat3 s;
  s << 0, -x[2], x[1], x[2], 0, -x[0], -x[1], x[0], 0;
  return s;
}

// crm(m): m × x = crm(m) x for motions x = [v; w]; m = [v_m; w_m].
Mat6 crm(const Vec6& m) {
  Mat6 x = Mat6::Zero();
  x.topLeftCorner<3, 3>() = skew_here(m.tail<3>());
  x.topRightCorner<3, 3>() = skew_here(m.head<3>());
  x.bottomRightCorner<3, 3>() = skew_here(m.tail<3>());
  return x;
}

// crf(m) = −crm(m)ᵀ: m ×* f = crf(m) f.
Mat6 crf(const Vec6& m) { return -crm(m).transpose(); }

// Plücker transform of motions from b to a coordinates, for aMb = (R, p):
// [v_a; w_a] = [R, [p]×R; 0, R] [v_b; w_b].
Mat6 plucker_motion(const Transform& amb) {
  Mat6 x = Mat6::Zero();
  x.topLeftCorner<3, 3>() = amb.rotation;
  x.topRightCorner<3, 3>() = skew_here(amb.translation) * amb.rotation;
  x.bottomRightCorner<3, 3>() = amb.rotation;
  return x;
}

// The force transform is the inverse transpose (power is invariant).
Mat6 plucker_force(const Transform& amb) { return plucker_motion(amb).inverse().transpose(); }

// Featherstone's rigid-body inertia about the frame origin in [linear; angular] order:
// [m 1, −m[c]×; m[c]×, I_c − m[c]×[c]×].
Mat6 inertia_matrix(double mass, const Vec3& com, const Mat3& inertia_com) {
  Mat6 x;
  const Mat3 cx = skew_here(com);
  x.topLeftCorner<3, 3>() = mass * Mat3::Identity();
  x.topRightCorner<3, 3>() = -mass * cx;
  x.bottomLeftCorner<3, 3>() = mass * cx;
  x.bottomRightCorner<3, 3>() = inertia_com - mass * cx * cx;
  return x;
}

class SpatialTest : public ::testing::Test {
 protected:
  Vec6 random6() { return uniform_vector(rng_, 6, -1.0, 1.0); }
  Motion random_motion() { return Motion::FromVector(random6()); }
  Force random_force() { return Force::FromVector(random6()); }
  Vec3 random3() { return uniform_vector(rng_, 3, -1.0, 1.0); }

  std::mt19937_64 rng_{20240611};
};

TEST_F(SpatialTest, SkewMatchesCrossProduct) {
  for (int k = 0; k < kTrials; ++k) {
    const Vec3 x = random3();
    const Vec3 y = random3();
    EXPECT_LE((skew(x) * y - x.cross(y)).cwiseAbs().maxCoeff(), kTol);
    EXPECT_LE((skew(x) - skew_here(x)).cwiseAbs().maxCoeff(), 0.0);
  }
}

TEST_F(SpatialTest, VectorRoundTripAndArithmetic) {
  const Vec6 x = random6();
  const Vec6 y = random6();
  EXPECT_EQ(Motion::FromVector(x).to_vector(), x);
  EXPECT_EQ(Force::FromVector(x).to_vector(), x);
  EXPECT_EQ(Motion::FromVector(x).linear, Vec3(x.head<3>()));
  EXPECT_EQ(Motion::FromVector(x).angular, Vec3(x.tail<3>()));
  EXPECT_EQ((Motion::FromVector(x) + Motion::FromVector(y)).to_vector(), Vec6(x + y));
  EXPECT_EQ((Motion::FromVector(x) - Motion::FromVector(y)).to_vector(), Vec6(x - y));
  EXPECT_EQ((-Motion::FromVector(x)).to_vector(), Vec6(-x));
  EXPECT_EQ((Motion::FromVector(x) * 2.5).to_vector(), Vec6(2.5 * x));
  EXPECT_EQ((Force::FromVector(x) + Force::FromVector(y)).to_vector(), Vec6(x + y));
  EXPECT_EQ((Force::FromVector(x) - Force::FromVector(y)).to_vector(), Vec6(x - y));
  EXPECT_EQ((-Force::FromVector(x)).to_vector(), Vec6(-x));
  EXPECT_EQ((Force::FromVector(x) * 2.5).to_vector(), Vec6(2.5 * x));
  Motion m = Motion::FromVector(x);
  m += Motion::FromVector(y);
  EXPECT_EQ(m.to_vector(), Vec6(x + y));
  m -= Motion::FromVector(y);
  EXPECT_LE((m.to_vector() - x).cwiseAbs().maxCoeff(), kTol);
  Force f = Force::FromVector(x);
  f += Force::FromVector(y);
  EXPECT_EQ(f.to_vector(), Vec6(x + y));
  f -= Force::FromVector(y);
  EXPECT_LE((f.to_vector() - x).cwiseAbs().maxCoeff(), kTol);
  EXPECT_EQ(Motion::Zero().to_vector(), Vec6::Zero());
  EXPECT_EQ(Force::Zero().to_vector(), Vec6::Zero());
}

TEST_F(SpatialTest, MotionCrossMotionIsCrm) {
  for (int k = 0; k < kTrials; ++k) {
    const Vec6 m = random6();
    const Vec6 x = random6();
    const Vec6 got = Motion::FromVector(m).cross(Motion::FromVector(x)).to_vector();
    EXPECT_LE((got - crm(m) * x).cwiseAbs().maxCoeff(), kTol);
    // m × m = 0.
    EXPECT_LE(Motion::FromVector(m).cross(Motion::FromVector(m)).to_vector().cwiseAbs().maxCoeff(),
              kTol);
  }
}

TEST_F(SpatialTest, MotionCrossForceIsCrf) {
  for (int k = 0; k < kTrials; ++k) {
    const Vec6 m = random6();
    const Vec6 f = random6();
    const Vec6 got = Motion::FromVector(m).cross(Force::FromVector(f)).to_vector();
    EXPECT_LE((got - crf(m) * f).cwiseAbs().maxCoeff(), kTol);
  }
}

TEST_F(SpatialTest, CrossProductsAreDual) {
  // (m × x) · f = −x · (m ×* f): crf = −crmᵀ.
  for (int k = 0; k < kTrials; ++k) {
    const Motion m = random_motion();
    const Motion x = random_motion();
    const Force f = random_force();
    EXPECT_NEAR(m.cross(x).dot(f), -x.dot(m.cross(f)), kTol);
  }
}

TEST_F(SpatialTest, DotProductIsPower) {
  for (int k = 0; k < kTrials; ++k) {
    const Vec6 m = random6();
    const Vec6 f = random6();
    EXPECT_NEAR(Motion::FromVector(m).dot(Force::FromVector(f)), m.dot(f), kTol);
    EXPECT_NEAR(Force::FromVector(f).dot(Motion::FromVector(m)), m.dot(f), kTol);
  }
}

TEST_F(SpatialTest, MatrixFormsOfTransformMatchPlucker) {
  for (int k = 0; k < kTrials; ++k) {
    const Transform t = random_transform(rng_);
    EXPECT_LE((t.motion_matrix() - plucker_motion(t)).cwiseAbs().maxCoeff(), kTol);
    EXPECT_LE((t.force_matrix() - plucker_force(t)).cwiseAbs().maxCoeff(), kTol);
  }
}

TEST_F(SpatialTest, ActOnMotionsForcesAndPoints) {
  for (int k = 0; k < kTrials; ++k) {
    const Transform t = random_transform(rng_);
    const Vec6 m = random6();
    const Vec6 f = random6();
    const Vec3 x = random3();
    const Mat6 xm = plucker_motion(t);
    const Mat6 xf = plucker_force(t);
    EXPECT_LE((t.act(Motion::FromVector(m)).to_vector() - xm * m).cwiseAbs().maxCoeff(), kTol);
    EXPECT_LE(
        (t.act_inverse(Motion::FromVector(m)).to_vector() - xm.inverse() * m).cwiseAbs().maxCoeff(),
        kTol);
    EXPECT_LE((t.act(Force::FromVector(f)).to_vector() - xf * f).cwiseAbs().maxCoeff(), kTol);
    EXPECT_LE(
        (t.act_inverse(Force::FromVector(f)).to_vector() - xf.inverse() * f).cwiseAbs().maxCoeff(),
        kTol);
    // A point in b mapped to a, and back.
    const Vec3 xa = t.rotation * x + t.translation;
    EXPECT_LE((t.act(x) - xa).cwiseAbs().maxCoeff(), kTol);
    EXPECT_LE((t.act_inverse(xa) - x).cwiseAbs().maxCoeff(), kTol);
  }
}

TEST_F(SpatialTest, ActMatchesVelocityOfAPoint) {
  // A motion's linear part is the velocity of the point at the frame origin: moving to frame a
  // the linear part becomes the velocity of a's origin, v_b + w × (o_a − o_b) in a's axes.
  const Transform t = random_transform(rng_);
  const Motion m = random_motion();
  const Motion ma = t.act(m);
  const Vec3 w_a = t.rotation * m.angular;
  const Vec3 v_ob_a = t.rotation * m.linear;  // velocity of b's origin, a's axes
  const Vec3 expected = v_ob_a + w_a.cross(Vec3::Zero() - t.translation);
  EXPECT_LE((ma.linear - expected).cwiseAbs().maxCoeff(), kTol);
  EXPECT_LE((ma.angular - w_a).cwiseAbs().maxCoeff(), kTol);
}

TEST_F(SpatialTest, CompositionAndInverse) {
  for (int k = 0; k < kTrials; ++k) {
    const Transform amb = random_transform(rng_);
    const Transform bmc = random_transform(rng_);
    const Transform amc = amb * bmc;
    EXPECT_LE(
        (plucker_motion(amc) - plucker_motion(amb) * plucker_motion(bmc)).cwiseAbs().maxCoeff(),
        kTol);
    EXPECT_LE((plucker_motion(amb.inverse()) - plucker_motion(amb).inverse()).cwiseAbs().maxCoeff(),
              kTol);
    const Transform id = amb * amb.inverse();
    EXPECT_LE((id.rotation - Mat3::Identity()).cwiseAbs().maxCoeff(), kTol);
    EXPECT_LE(id.translation.cwiseAbs().maxCoeff(), kTol);
    const Transform id2 = amb.inverse() * amb;
    EXPECT_LE((id2.rotation - Mat3::Identity()).cwiseAbs().maxCoeff(), kTol);
    EXPECT_LE(id2.translation.cwiseAbs().maxCoeff(), kTol);
    const Motion m = random_motion();
    EXPECT_LE((amc.act(m).to_vector() - amb.act(bmc.act(m)).to_vector()).cwiseAbs().maxCoeff(),
              kTol);
    const Force f = random_force();
    EXPECT_LE((amc.act_inverse(f).to_vector() - bmc.act_inverse(amb.act_inverse(f)).to_vector())
                  .cwiseAbs()
                  .maxCoeff(),
              kTol);
    const Vec3 x = random3();
    EXPECT_LE((amc.act(x) - amb.act(bmc.act(x))).cwiseAbs().maxCoeff(), kTol);
  }
  const Transform id = Transform::Identity();
  EXPECT_EQ(id.rotation, Mat3::Identity());
  EXPECT_EQ(id.translation, Vec3::Zero());
}

TEST_F(SpatialTest, TransformsCommuteWithCrossProducts) {
  // X (m × x) = (X m) × (X x) and X* (m ×* f) = (X m) ×* (X* f).
  for (int k = 0; k < kTrials; ++k) {
    const Transform t = random_transform(rng_);
    const Motion m = random_motion();
    const Motion x = random_motion();
    const Force f = random_force();
    EXPECT_LE((t.act(m.cross(x)).to_vector() - t.act(m).cross(t.act(x)).to_vector())
                  .cwiseAbs()
                  .maxCoeff(),
              kTol);
    EXPECT_LE((t.act(m.cross(f)).to_vector() - t.act(m).cross(t.act(f)).to_vector())
                  .cwiseAbs()
                  .maxCoeff(),
              kTol);
  }
}

TEST_F(SpatialTest, PowerIsInvariantUnderTransforms) {
  for (int k = 0; k < kTrials; ++k) {
    const Transform t = random_transform(rng_);
    const Motion m = random_motion();
    const Force f = random_force();
    EXPECT_NEAR(t.act(m).dot(t.act(f)), m.dot(f), kTol);
    EXPECT_NEAR(t.act_inverse(m).dot(t.act_inverse(f)), m.dot(f), kTol);
  }
}

TEST_F(SpatialTest, AxisAngleRotationIsRodrigues) {
  for (int k = 0; k < kTrials; ++k) {
    const Vec3 u = random3().normalized();
    const double angle = uniform(rng_, -4.0, 4.0);
    const Mat3 ux = skew_here(u);
    const Mat3 expected =
        Mat3::Identity() + std::sin(angle) * ux + (1.0 - std::cos(angle)) * ux * ux;
    EXPECT_LE((axis_angle_rotation(u, angle) - expected).cwiseAbs().maxCoeff(), kTol);
  }
}

TEST_F(SpatialTest, RigidInertiaTimesMotion) {
  for (int k = 0; k < kTrials; ++k) {
    const double mass = uniform(rng_, 0.1, 5.0);
    const Vec3 com = random3();
    const Mat6 s = random_symmetric6(rng_);
    const Mat3 inertia_com = s.topLeftCorner<3, 3>() * s.topLeftCorner<3, 3>().transpose();
    const RigidInertia y = RigidInertia::FromMassComInertia(mass, com, inertia_com);
    const Mat6 expected = inertia_matrix(mass, com, inertia_com);
    const Vec6 m = random6();
    EXPECT_LE(((y * Motion::FromVector(m)).to_vector() - expected * m).cwiseAbs().maxCoeff(),
              kTol * 10.0);  // entries up to ~5 (mass), so 10x the base tolerance
    EXPECT_LE((y.matrix() - expected).cwiseAbs().maxCoeff(), kTol * 10.0);
    // The Mat6 overload of * used by ABA.
    EXPECT_LE(((expected * Motion::FromVector(m)).to_vector() - expected * m).cwiseAbs().maxCoeff(),
              kTol * 10.0);
  }
}

TEST_F(SpatialTest, MassComInertiaRoundTrip) {
  for (int k = 0; k < kTrials; ++k) {
    const double mass = uniform(rng_, 0.1, 5.0);
    const Vec3 com = random3();
    const Mat6 s = random_symmetric6(rng_);
    const Mat3 inertia_com = s.topLeftCorner<3, 3>() * s.topLeftCorner<3, 3>().transpose();
    const RigidInertia y = RigidInertia::FromMassComInertia(mass, com, inertia_com);
    EXPECT_EQ(y.mass, mass);
    EXPECT_LE((y.first_moment - mass * com).cwiseAbs().maxCoeff(), kTol * 10.0);
    EXPECT_LE((y.com() - com).cwiseAbs().maxCoeff(), kTol);
    EXPECT_LE((y.inertia_about_com() - inertia_com).cwiseAbs().maxCoeff(), kTol * 10.0);
  }
  // Massless: com() is zero and the rotational part is returned as is.
  const RigidInertia zero = RigidInertia::Zero();
  EXPECT_EQ(zero.com(), Vec3::Zero());
  EXPECT_EQ(zero.inertia_about_com(), Mat3::Zero());
}

TEST_F(SpatialTest, InertiaSumIsSumOfMatrices) {
  const RigidInertia a = random_rigid_inertia(rng_);
  const RigidInertia b = random_rigid_inertia(rng_);
  EXPECT_LE(((a + b).matrix() - (a.matrix() + b.matrix())).cwiseAbs().maxCoeff(), kTol * 10.0);
  RigidInertia c = a;
  c += b;
  EXPECT_LE((c.matrix() - (a.matrix() + b.matrix())).cwiseAbs().maxCoeff(), kTol * 10.0);
}

TEST_F(SpatialTest, TransformedInertiaIsCongruence) {
  // I_a = aX*_b I_b bX_a, with bX_a = (aX_b)⁻¹ on motions.
  for (int k = 0; k < kTrials; ++k) {
    const Transform amb = random_transform(rng_);
    const RigidInertia y = random_rigid_inertia(rng_);
    const Mat6 expected = plucker_force(amb) * y.matrix() * plucker_motion(amb).inverse();
    EXPECT_LE((y.transformed_by(amb).matrix() - expected).cwiseAbs().maxCoeff(), kTol * 10.0);
    // Momentum is frame independent: I_a (X m) = X* (I_b m).
    const Motion m = random_motion();
    EXPECT_LE(((y.transformed_by(amb) * amb.act(m)).to_vector() - amb.act(y * m).to_vector())
                  .cwiseAbs()
                  .maxCoeff(),
              kTol * 10.0);
    // Mass and centre of mass move as a point.
    EXPECT_EQ(y.transformed_by(amb).mass, y.mass);
    EXPECT_LE((y.transformed_by(amb).com() - amb.act(y.com())).cwiseAbs().maxCoeff(), kTol);
    // The rotational inertia about the centre of mass only rotates.
    EXPECT_LE((y.transformed_by(amb).inertia_about_com() -
               amb.rotation * y.inertia_about_com() * amb.rotation.transpose())
                  .cwiseAbs()
                  .maxCoeff(),
              kTol * 10.0);
  }
}

TEST_F(SpatialTest, ArticulatedInertiaTransformIsCongruence) {
  for (int k = 0; k < kTrials; ++k) {
    const Transform amb = random_transform(rng_);
    const Mat6 inertia = random_symmetric6(rng_);
    const Mat6 start = random_symmetric6(rng_);
    Mat6 out = start;
    add_transformed_articulated_inertia(amb, inertia, out);
    const Mat6 expected = start + plucker_force(amb) * inertia * plucker_motion(amb).inverse();
    EXPECT_LE((out - expected).cwiseAbs().maxCoeff(), kTol * 10.0);
    EXPECT_LE((out - out.transpose()).cwiseAbs().maxCoeff(), kTol * 10.0);
    // For a rigid inertia it agrees with transformed_by().
    const RigidInertia y = random_rigid_inertia(rng_);
    Mat6 rigid = Mat6::Zero();
    add_transformed_articulated_inertia(amb, y.matrix(), rigid);
    EXPECT_LE((rigid - y.transformed_by(amb).matrix()).cwiseAbs().maxCoeff(), kTol * 10.0);
  }
}

TEST_F(SpatialTest, ActAboutAxisEqualsActForRotationsAboutThatAxis) {
  // The fast path skips products with exact zeros and ones: without contraction the results are
  // identical. With FMA (native builds) the full product contracts other pairs of terms than the
  // fast path does, so each entry may differ in its last bits: 16 ulps of the entries' scale
  // (|x| < 4 here), a bound for any IEEE build, a sign or axis error being of order 1.
  constexpr double kBound = 16 * 4 * std::numeric_limits<double>::epsilon();
  for (int k = 0; k < kTrials; ++k) {
    const double angle = uniform(rng_, -4.0, 4.0);
    const Vec3 translation = uniform_vector(rng_, 3, -1.0, 1.0);
    const Force f = random_force();
    for (int axis = 0; axis < 3; ++axis) {
      // Written as joint transforms write it (joint.hpp): exact ones and zeros off the plane.
      Mat3 rotation = Mat3::Identity();
      const int b = (axis + 1) % 3, c = (axis + 2) % 3;
      rotation(b, b) = std::cos(angle);
      rotation(b, c) = -std::sin(angle);
      rotation(c, b) = std::sin(angle);
      rotation(c, c) = std::cos(angle);
      const Transform x{rotation, translation};
      const Force expected = x.act(f);
      const Force actual = axis == 0   ? x.act_about_axis<0>(f)
                           : axis == 1 ? x.act_about_axis<1>(f)
                                       : x.act_about_axis<2>(f);
      EXPECT_LE((actual.to_vector() - expected.to_vector()).lpNorm<Eigen::Infinity>(), kBound)
          << "axis " << axis;
    }
  }
}

TEST_F(SpatialTest, TimesUnitRotationEqualsProductWithUnitAngularMotion) {
  for (int k = 0; k < kTrials; ++k) {
    const RigidInertia y = random_rigid_inertia(rng_);
    for (int axis = 0; axis < 3; ++axis) {
      const Force expected = y * Motion{Vec3::Zero(), Vec3::Unit(axis)};
      const Force actual = axis == 0   ? y.times_unit_rotation<0>()
                           : axis == 1 ? y.times_unit_rotation<1>()
                                       : y.times_unit_rotation<2>();
      // The same numbers: the product only adds exact zeros to them (the sign of a zero aside).
      EXPECT_EQ(actual.to_vector(), expected.to_vector()) << "axis " << axis;
    }
  }
}

}  // namespace
}  // namespace torqued
