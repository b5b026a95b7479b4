// Small mechanisms whose equations of motion can be written by hand, built with ModelSpec
// directly: a pendulum, a double pendulum, a cart-pole, a prismatic body under gravity, a helical
// (screw) joint, and a free-floating rigid body (Newton-Euler equations).
//
// Tolerance: every quantity is a few products of numbers of order 1-10, evaluated by the engine
// and by the closed form in different orders, so they agree to a few ulps of the largest term;
// 1e-12 relative to max(1, max|expected|) leaves a margin of ~100x.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "engine/algorithms/aba.hpp"
#include "engine/algorithms/crba.hpp"
#include "engine/algorithms/kinematics.hpp"
#include "engine/algorithms/rnea.hpp"
#include "engine/model/build.hpp"
#include "engine/model/data.hpp"

namespace torqued {
namespace {

constexpr double kTol = 1e-12;
constexpr double kG = 9.81;

double relative_error(const Eigen::MatrixXd& x, const Eigen::MatrixXd& y) {
  if (x.rows() != y.rows() || x.cols() != y.cols()) return std::numeric_limits<double>::infinity();
  return (x - y).cwiseAbs().maxCoeff() / std::max(1.0, y.cwiseAbs().maxCoeff());
}

Eigen::VectorXd vec(std::initializer_list<double> xs) {
  Eigen::VectorXd v(static_cast<Eigen::Index>(xs.size()));
  Eigen::Index i = 0;
  for (double x : xs) v[i++] = x;
  return v;
}

LinkSpec link(const std::string& name, double mass, const Vec3& com, const Mat3& inertia) {
  LinkSpec l;
  l.name = name;
  l.inertial.mass = mass;
  l.inertial.origin.translation = com;
  l.inertial.inertia = inertia;
  return l;
}

JointSpec joint(const std::string& name, JointType type, const std::string& parent,
                const std::string& child, const Transform& origin, const Vec3& axis) {
  JointSpec j;
  j.name = name;
  j.type = type;
  j.parent_link = parent;
  j.child_link = child;
  j.origin = origin;
  j.axis = axis;
  return j;
}

Transform translation(const Vec3& p) { return {Mat3::Identity(), p}; }

// A symmetric positive definite inertia with products of inertia in the xz plane (which a
// rotation about y must ignore) and principal-like moments satisfying the triangle inequality.
Mat3 inertia_xz(double ixx, double iyy, double izz, double ixz) {
  Mat3 i;
  i << ixx, 0.0, ixz, 0.0, iyy, 0.0, ixz, 0.0, izz;
  return i;
}

// Runs rnea, nonlinear_effects, generalized_gravity, crba and aba on one state and compares them
// to the closed forms (aba is checked with tau = the closed-form rnea, expecting a back).
void check_dynamics(const Model& model, const Eigen::VectorXd& q, const Eigen::VectorXd& v,
                    const Eigen::VectorXd& a, const Eigen::VectorXd& tau_expected,
                    const Eigen::VectorXd& nle_expected, const Eigen::VectorXd& g_expected,
                    const Eigen::MatrixXd& m_expected) {
  Data data(model);
  EXPECT_LE(relative_error(rnea(model, data, q, v, a), tau_expected), kTol) << "rnea";
  EXPECT_LE(relative_error(nonlinear_effects(model, data, q, v), nle_expected), kTol) << "nle";
  EXPECT_LE(relative_error(generalized_gravity(model, data, q), g_expected), kTol) << "gravity";
  EXPECT_LE(relative_error(crba(model, data, q), m_expected), kTol) << "crba";
  EXPECT_LE(relative_error(aba(model, data, q, v, tau_expected), a), kTol) << "aba";
  // And with an arbitrary torque: q̈ = M⁻¹ (τ − nle).
  const Eigen::VectorXd tau = Eigen::VectorXd::LinSpaced(model.nv, -3.0, 5.0);
  const Eigen::VectorXd ddq = m_expected.ldlt().solve(tau - nle_expected);
  EXPECT_LE(relative_error(aba(model, data, q, v, tau), ddq), kTol) << "aba, arbitrary tau";
}

// A link of mass m with its centre of mass at distance l below a pivot about y:
//   τ = (I_yy + m l²) θ̈ + m g l sin θ.
TEST(ClosedFormTest, SinglePendulum) {
  const double m = 1.7, l = 0.8, iyy = 0.05;
  ModelSpec spec;
  spec.name = "pendulum";
  spec.links = {link("base", 0.0, Vec3::Zero(), Mat3::Zero()),
                link("arm", m, Vec3(0.0, 0.0, -l), inertia_xz(0.04, iyy, 0.03, 0.005))};
  spec.joints = {joint("pivot", JointType::kRevolute, "base", "arm",
                       translation(Vec3(0.1, -0.2, 1.0)), Vec3::UnitY())};
  const ModelPtr model = build_model(spec);
  ASSERT_EQ(model->nq, 1);
  ASSERT_EQ(model->nv, 1);
  for (double theta : {0.0, 0.4, -1.3, 2.9}) {
    SCOPED_TRACE(theta);
    const double dtheta = 1.1, ddtheta = -0.7;
    const double inertia = iyy + m * l * l;
    const double g = m * kG * l * std::sin(theta);
    check_dynamics(*model, vec({theta}), vec({dtheta}), vec({ddtheta}),
                   vec({inertia * ddtheta + g}), vec({g}), vec({g}),
                   Eigen::MatrixXd::Constant(1, 1, inertia));
  }
}

// Two links swinging about parallel y axes, θ2 relative to link 1, centres of mass c1, c2 below
// their pivots, link 1 of length l1 (the textbook planar double pendulum, Lagrange's equations):
//   M11 = I1 + I2 + m1 c1² + m2 (l1² + c2² + 2 l1 c2 cos θ2)
//   M12 = I2 + m2 (c2² + l1 c2 cos θ2),   M22 = I2 + m2 c2²
//   C v = [−m2 l1 c2 sin θ2 (2 θ̇1 θ̇2 + θ̇2²);  m2 l1 c2 sin θ2 θ̇1²]
//   g   = [(m1 c1 + m2 l1) g sin θ1 + m2 c2 g sin(θ1 + θ2);  m2 c2 g sin(θ1 + θ2)]
// The centres of mass are also offset along y, which a rotation about y must not notice.
TEST(ClosedFormTest, DoublePendulum) {
  const double m1 = 1.3, m2 = 0.9, l1 = 1.1, c1 = 0.45, c2 = 0.6, i1 = 0.07, i2 = 0.04;
  ModelSpec spec;
  spec.name = "double_pendulum";
  spec.links = {link("base", 0.0, Vec3::Zero(), Mat3::Zero()),
                link("link1", m1, Vec3(0.0, 0.05, -c1), inertia_xz(0.08, i1, 0.02, -0.01)),
                link("link2", m2, Vec3(0.0, -0.1, -c2), inertia_xz(0.05, i2, 0.015, 0.008))};
  spec.joints = {joint("joint1", JointType::kRevolute, "base", "link1", translation(Vec3(0, 0, 2)),
                       Vec3::UnitY()),
                 joint("joint2", JointType::kRevolute, "link1", "link2",
                       translation(Vec3(0, 0.2, -l1)), Vec3::UnitY())};
  const ModelPtr model = build_model(spec);
  ASSERT_EQ(model->nv, 2);
  const std::vector<Eigen::Vector2d> angles = {{0.0, 0.0}, {0.3, -0.8}, {-2.1, 1.4}, {3.0, 2.5}};
  for (const Eigen::Vector2d& th : angles) {
    SCOPED_TRACE(th.transpose());
    const Eigen::Vector2d dth(0.9, -1.6), ddth(-0.4, 2.2);
    const double c = std::cos(th[1]), s = std::sin(th[1]);
    Eigen::Matrix2d mass;
    mass(0, 0) = i1 + i2 + m1 * c1 * c1 + m2 * (l1 * l1 + c2 * c2 + 2 * l1 * c2 * c);
    mass(0, 1) = mass(1, 0) = i2 + m2 * (c2 * c2 + l1 * c2 * c);
    mass(1, 1) = i2 + m2 * c2 * c2;
    const double h = m2 * l1 * c2 * s;
    const Eigen::Vector2d coriolis(-h * (2 * dth[0] * dth[1] + dth[1] * dth[1]),
                                   h * dth[0] * dth[0]);
    const Eigen::Vector2d g(
        (m1 * c1 + m2 * l1) * kG * std::sin(th[0]) + m2 * c2 * kG * std::sin(th[0] + th[1]),
        m2 * c2 * kG * std::sin(th[0] + th[1]));
    check_dynamics(*model, th, dth, ddth, mass * ddth + coriolis + g, coriolis + g, g, mass);
  }
}

// A cart on a rail along x carrying a pendulum about y (com at l below the pivot):
//   M = [mc + mp, −mp l cos θ; −mp l cos θ, I + mp l²]
//   C v = [mp l sin θ θ̇²; 0],  g = [0; mp g l sin θ].
TEST(ClosedFormTest, CartPole) {
  const double mc = 2.5, mp = 0.6, l = 0.7, ip = 0.02;
  ModelSpec spec;
  spec.name = "cart_pole";
  spec.links = {link("rail", 0.0, Vec3::Zero(), Mat3::Zero()),
                link("cart", mc, Vec3(0.1, 0.0, 0.05), Vec3(0.1, 0.2, 0.25).asDiagonal()),
                link("pole", mp, Vec3(0.0, 0.0, -l), inertia_xz(0.03, ip, 0.012, 0.0))};
  spec.joints = {joint("slider", JointType::kPrismatic, "rail", "cart",
                       translation(Vec3(0, 0, 0.5)), Vec3::UnitX()),
                 joint("hinge", JointType::kRevolute, "cart", "pole",
                       translation(Vec3(0.1, 0.0, 0.0)), Vec3::UnitY())};
  const ModelPtr model = build_model(spec);
  ASSERT_EQ(model->nv, 2);
  for (double theta : {0.0, 0.5, -2.0}) {
    SCOPED_TRACE(theta);
    const Eigen::Vector2d q(0.3, theta), v(-0.8, 1.9), a(0.6, -1.1);
    Eigen::Matrix2d mass;
    mass << mc + mp, -mp * l * std::cos(theta), -mp * l * std::cos(theta), ip + mp * l * l;
    const Eigen::Vector2d coriolis(mp * l * std::sin(theta) * v[1] * v[1], 0.0);
    const Eigen::Vector2d g(0.0, mp * kG * l * std::sin(theta));
    check_dynamics(*model, q, v, a, mass * a + coriolis + g, coriolis + g, g, mass);
  }
}

// A body sliding along a tilted axis u under gravity: m q̈ = τ + m g·u_world, so
//   τ = m q̈ − m (g · R0 u),  M = m,  nle = g(q) = −m (g · R0 u), whatever the body's rotational
// inertia and centre of mass.
TEST(ClosedFormTest, PrismaticBodyUnderGravity) {
  const double m = 3.2;
  const Vec3 axis = Vec3(1.0, -2.0, 0.5);  // not normalised: the engine normalises it
  const Vec3 u = axis.normalized();
  Transform origin;
  origin.rotation = Eigen::AngleAxisd(0.7, Vec3(1, 1, 0).normalized()).toRotationMatrix();
  origin.translation = Vec3(0.3, 0.1, -0.2);
  ModelSpec spec;
  spec.name = "slider";
  spec.links = {link("ground", 0.0, Vec3::Zero(), Mat3::Zero()),
                link("block", m, Vec3(0.2, -0.1, 0.3), Vec3(0.1, 0.15, 0.2).asDiagonal())};
  spec.joints = {joint("rail", JointType::kPrismatic, "ground", "block", origin, axis)};
  const ModelPtr model = build_model(spec);
  ASSERT_EQ(model->nv, 1);
  const double gu = Vec3(0, 0, -kG).dot(origin.rotation * u);
  for (double x : {0.0, 0.8, -1.5}) {
    SCOPED_TRACE(x);
    const double dx = -0.6, ddx = 1.4;
    check_dynamics(*model, vec({x}), vec({dx}), vec({ddx}), vec({m * ddx - m * gu}), vec({-m * gu}),
                   vec({-m * gu}), Eigen::MatrixXd::Constant(1, 1, m));
    // The body has moved by x along the axis and kept its orientation.
    Data data(*model);
    forward_kinematics(*model, data, vec({x}));
    EXPECT_LE(relative_error(data.oMi[1].translation, origin.translation + x * origin.rotation * u),
              kTol);
    EXPECT_LE(relative_error(data.oMi[1].rotation, origin.rotation), kTol);
  }
}

// A screw joint of pitch h about the unit axis u (joint frame = world): the child is rotated by θ
// about u and translated by h θ along it. With the centre of mass at r (body frame) and r⊥ its
// component orthogonal to u:
//   M = uᵀ I_c u + m (|r⊥|² + h²)   (constant, so no Coriolis term)
//   g(θ) = −m g·(u × R_u(θ) r + h u)
TEST(ClosedFormTest, HelicalJoint) {
  const double m = 2.1;
  const Vec3 com(0.3, -0.2, 0.1);
  Mat3 inertia_c;
  inertia_c << 0.06, 0.004, -0.002, 0.004, 0.05, 0.003, -0.002, 0.003, 0.04;
  for (const auto& [axis, pitch] :
       {std::pair<Vec3, double>{Vec3::UnitZ(), 0.05}, {Vec3(0.3, -0.5, 0.8), -0.12}}) {
    SCOPED_TRACE(axis.transpose());
    const Vec3 u = axis.normalized();
    ModelSpec spec;
    spec.name = "screw";
    spec.links = {link("nut", 0.0, Vec3::Zero(), Mat3::Zero()), link("bolt", m, com, inertia_c)};
    spec.joints = {joint("screw", JointType::kHelical, "nut", "bolt", Transform::Identity(), axis)};
    spec.joints[0].pitch = pitch;
    const ModelPtr model = build_model(spec);
    ASSERT_EQ(model->nv, 1);
    const Vec3 r_perp = com - com.dot(u) * u;
    const double mass = u.dot(inertia_c * u) + m * (r_perp.squaredNorm() + pitch * pitch);
    for (double theta : {0.0, 1.2, -2.5}) {
      SCOPED_TRACE(theta);
      const double dtheta = 0.8, ddtheta = -1.3;
      const Mat3 rot = Eigen::AngleAxisd(theta, u).toRotationMatrix();
      const double g = -m * Vec3(0, 0, -kG).dot(u.cross(rot * com) + pitch * u);
      check_dynamics(*model, vec({theta}), vec({dtheta}), vec({ddtheta}), vec({mass * ddtheta + g}),
                     vec({g}), vec({g}), Eigen::MatrixXd::Constant(1, 1, mass));
      Data data(*model);
      forward_kinematics(*model, data, vec({theta}));
      EXPECT_LE(relative_error(data.oMi[1].rotation, rot), kTol);
      EXPECT_LE(relative_error(data.oMi[1].translation, pitch * theta * u), kTol);
    }
  }
}

Mat3 skew3(const Vec3& x) {
  Mat3 s;
  s << 0, -x[2], x[1], x[2], 0, -x[0], -x[1], x[0], 0;
  return s;
}

// A single free-floating body, q = [p; quaternion (x, y, z, w)], v = [v; ω] in the body frame,
// τ = [force; torque] in the body frame about its origin.
class FreeBodyTest : public ::testing::Test {
 protected:
  ModelPtr make(double mass, const Vec3& com, const Mat3& inertia_c, const Vec3& gravity) {
    ModelSpec spec;
    spec.name = "free_body";
    spec.floating_base = true;
    spec.gravity = gravity;
    spec.links = {link("body", mass, com, inertia_c)};
    ModelPtr model = build_model(spec);
    EXPECT_EQ(model->nq, 7);
    EXPECT_EQ(model->nv, 6);
    return model;
  }

  Eigen::VectorXd configuration() const {
    Eigen::VectorXd q(7);
    const Eigen::Quaterniond quat = Eigen::Quaterniond(0.6, -0.3, 0.5, 0.2).normalized();
    q << 0.4, -1.2, 2.0, quat.x(), quat.y(), quat.z(), quat.w();
    return q;
  }
  Mat3 rotation() const {
    const Eigen::VectorXd q = configuration();
    return Eigen::Quaterniond(q[6], q[3], q[4], q[5]).toRotationMatrix();
  }

  Mat3 inertia_c_ = (Mat3() << 0.5, 0.02, -0.03, 0.02, 0.3, 0.01, -0.03, 0.01, 0.4).finished();
  Eigen::VectorXd v_ = vec({0.3, -0.7, 0.5, 1.2, -0.4, 2.1});
};

// Centre of mass at the origin, no gravity: Euler's equations and Newton's law in the body frame.
//   ω̇ = I⁻¹ (n − ω × I ω),   v̇ = f / m − ω × v   (v̇ = d/dt of the body-frame components).
TEST_F(FreeBodyTest, AbaIsEulerEquations) {
  const double m = 4.0;
  const ModelPtr model = make(m, Vec3::Zero(), inertia_c_, Vec3::Zero());
  Data data(*model);
  const Eigen::VectorXd tau = vec({1.5, -2.0, 0.7, 0.3, -0.9, 0.4});
  const Vec3 v = v_.head<3>(), w = v_.tail<3>(), f = tau.head<3>(), n = tau.tail<3>();
  Eigen::VectorXd expected(6);
  expected << f / m - w.cross(v), inertia_c_.inverse() * (n - w.cross(inertia_c_ * w));
  EXPECT_LE(relative_error(aba(*model, data, configuration(), v_, tau), expected), kTol);
  // RNEA is the inverse: f = m (v̇ + ω × v), n = I ω̇ + ω × I ω.
  EXPECT_LE(relative_error(rnea(*model, data, configuration(), v_, expected), tau), kTol);
  // The mass matrix is the spatial inertia: diag(m 1, I).
  Eigen::MatrixXd mass = Eigen::MatrixXd::Zero(6, 6);
  mass.topLeftCorner(3, 3) = m * Mat3::Identity();
  mass.bottomRightCorner(3, 3) = inertia_c_;
  EXPECT_LE(relative_error(crba(*model, data, configuration()), mass), kTol);
}

// Centre of mass off the origin, with gravity: the spatial Newton-Euler equation
//   τ = I (a − a_g) + v ×* I v,   a_g = [Rᵀ g; 0],   I = [m 1, −m[c]×; m[c]×, I_c − m[c]×²],
// with ×* written out as the 6x6 matrix [[ω]×, 0; [v]×, [ω]×].
TEST_F(FreeBodyTest, SpatialNewtonEulerWithGravityAndOffsetCom) {
  const double m = 2.5;
  const Vec3 c(0.1, -0.25, 0.3);
  const Vec3 gravity(0.0, 0.0, -kG);
  const ModelPtr model = make(m, c, inertia_c_, gravity);
  Data data(*model);
  Eigen::Matrix<double, 6, 6> inertia;
  inertia << m * Mat3::Identity(), -m * skew3(c), m * skew3(c),
      inertia_c_ - m * skew3(c) * skew3(c);
  Eigen::Matrix<double, 6, 6> crf = Eigen::Matrix<double, 6, 6>::Zero();
  crf.topLeftCorner<3, 3>() = skew3(v_.tail<3>());
  crf.bottomLeftCorner<3, 3>() = skew3(v_.head<3>());
  crf.bottomRightCorner<3, 3>() = skew3(v_.tail<3>());
  Eigen::VectorXd a_g = Eigen::VectorXd::Zero(6);
  a_g.head<3>() = rotation().transpose() * gravity;
  const Eigen::VectorXd a = vec({-0.5, 0.2, 1.1, 0.8, -1.4, 0.6});
  const Eigen::VectorXd tau = inertia * (a - a_g) + crf * inertia * v_;
  const Eigen::VectorXd bias = crf * inertia * v_ - inertia * a_g;
  check_dynamics(*model, configuration(), v_, a, tau, bias, -inertia * a_g, inertia);
}

}  // namespace
}  // namespace torqued
