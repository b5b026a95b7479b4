// DH tables: both conventions against 4x4 products written out here (standard:
// Rz(θ) Tz(d) Tx(a) Rx(α); modified: Rx(α_{i-1}) Tx(a_{i-1}) Rz(θ_i) Tz(d_i)), with the joint
// variable added to θ or d; the PUMA 560 against published forward kinematics (Corke's standard
// table, Craig's modified table and closed form, eq. 3.14 of "Introduction to Robotics", 3rd
// ed.); the Stanford arm against the numbers derived in ../shared/seeds/digest-001-004.md §7.1.
#include "engine/io/dh.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <vector>

#include "engine/algorithms/crba.hpp"
#include "engine/algorithms/kinematics.hpp"
#include "engine/algorithms/rnea.hpp"
#include "engine/model/data.hpp"
#include "tests/engine/support/stanford_arm.hpp"

namespace torqued {
namespace {

// Results exact up to the rounding of a handful of operations on numbers of order one: 16 ulps
// (3.6e-15), a bound that holds in any IEEE-754 build, whether the compiler contracts a multiply
// and an add into one FMA (which rounds once where they round twice) or not.
constexpr double kRounding = 16 * std::numeric_limits<double>::epsilon();

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Mat4 = Eigen::Matrix4d;

constexpr double kPi = std::numbers::pi;

Mat4 standard_dh(double theta, double d, double a, double alpha) {
  const double ct = std::cos(theta), st = std::sin(theta);
  const double ca = std::cos(alpha), sa = std::sin(alpha);
  Mat4 t;
  t << ct, -st * ca, st * sa, a * ct,  //
      st, ct * ca, -ct * sa, a * st,   //
      0, sa, ca, d,                    //
      0, 0, 0, 1;
  return t;
}

Mat4 modified_dh(double alpha, double a, double theta, double d) {
  const double ct = std::cos(theta), st = std::sin(theta);
  const double ca = std::cos(alpha), sa = std::sin(alpha);
  Mat4 t;
  t << ct, -st, 0, a,                  //
      st * ca, ct * ca, -sa, -sa * d,  //
      st * sa, ct * sa, ca, ca * d,    //
      0, 0, 0, 1;
  return t;
}

Mat4 to_mat4(const Transform& x) {
  Mat4 t = Mat4::Identity();
  t.topLeftCorner<3, 3>() = x.rotation;
  t.topRightCorner<3, 1>() = x.translation;
  return t;
}

// DH frame i after forward kinematics: the "_dh" frame of link i in the standard convention,
// link i's body frame in the modified one.
Transform dh_frame(const Model& model, const Data& data, const DhTable& table, int i) {
  const std::string link =
      table.links[i - 1].name.empty() ? "link" + std::to_string(i) : table.links[i - 1].name;
  const bool standard = table.convention == DhConvention::kStandard;
  const int frame = model.find_frame(standard ? link + "_dh" : link);
  EXPECT_GE(frame, 0) << link;
  return frame_placement(model, data, frame);
}

// ^0T_i by the 4x4 products, for every i, with q added to θ (revolute) or d (prismatic).
std::vector<Mat4> hand_dh_chain(const DhTable& table, const Eigen::VectorXd& q) {
  std::vector<Mat4> out;
  Mat4 t = Mat4::Identity();
  for (std::size_t k = 0; k < table.links.size(); ++k) {
    const DhLink& l = table.links[k];
    const bool revolute = l.type == JointType::kRevolute;
    const double theta = l.theta + (revolute ? q[k] : 0.0);
    const double d = l.d + (revolute ? 0.0 : q[k]);
    t = t * (table.convention == DhConvention::kStandard ? standard_dh(theta, d, l.a, l.alpha)
                                                         : modified_dh(l.alpha, l.a, theta, d));
    out.push_back(t);
  }
  return out;
}

DhLink row(JointType type, double a, double alpha, double d, double theta) {
  DhLink l;
  l.type = type;
  l.a = a;
  l.alpha = alpha;
  l.d = d;
  l.theta = theta;
  l.mass = 1.0;
  l.inertia = Vec3(0.01, 0.02, 0.025).asDiagonal();
  return l;
}

// A table exercising every parameter, with offsets on both joint kinds.
DhTable general_table(DhConvention convention) {
  DhTable table;
  table.name = "general";
  table.convention = convention;
  table.links = {row(JointType::kRevolute, 0.3, 0.4, 0.2, 0.3),
                 row(JointType::kPrismatic, -0.2, -1.1, 0.25, 0.7),
                 row(JointType::kRevolute, 0.15, kPi / 2, -0.1, -0.5),
                 row(JointType::kRevolute, 0.0, -kPi / 2, 0.35, 1.2)};
  table.links[0].com = Vec3(0.1, -0.05, 0.02);
  table.links[1].com = Vec3(0.0, 0.2, -0.1);
  table.links[2].com = Vec3(-0.07, 0.0, 0.3);
  table.links[3].inertia << 0.03, 0.001, -0.002, 0.001, 0.02, 0.0005, -0.002, 0.0005, 0.025;
  return table;
}

double max_abs_diff(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  return (a - b).cwiseAbs().maxCoeff();
}

class DhConventions : public ::testing::TestWithParam<DhConvention> {};

TEST_P(DhConventions, FramesMatchTheDhProduct) {
  const DhTable table = general_table(GetParam());
  const ModelPtr model = build_model(dh_to_spec(table));
  ASSERT_EQ(model->nq, 4);
  Data data(*model);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> uniform(-kPi, kPi);
  for (int trial = 0; trial < 5; ++trial) {
    Eigen::VectorXd q(4);
    for (int k = 0; k < 4; ++k) q[k] = trial == 0 ? 0.0 : uniform(rng);
    forward_kinematics(*model, data, q);
    const std::vector<Mat4> expected = hand_dh_chain(table, q);
    for (int i = 1; i <= 4; ++i) {
      SCOPED_TRACE(i);
      EXPECT_LT(max_abs_diff(to_mat4(dh_frame(*model, data, table, i)), expected[i - 1]), 1e-14);
    }
  }
}

TEST_P(DhConventions, InertiaIsGivenInTheDhFrame) {
  const DhTable table = general_table(GetParam());
  const ModelPtr model = build_model(dh_to_spec(table));
  EXPECT_TRUE(model->warnings.empty()) << ::testing::PrintToString(model->warnings);
  Data data(*model);
  Eigen::VectorXd q(4);
  q << 0.4, 0.1, -1.3, 2.2;
  forward_kinematics(*model, data, q);
  const std::vector<Mat4> expected = hand_dh_chain(table, q);
  for (int i = 1; i <= 4; ++i) {
    SCOPED_TRACE(i);
    const int body = model->find_body("link" + std::to_string(i));
    ASSERT_GE(body, 0);
    const RigidInertia& y = model->inertias[body];
    const DhLink& l = table.links[i - 1];
    EXPECT_DOUBLE_EQ(y.mass, l.mass);
    const Transform& o_m_i = data.oMi[body];
    const Vec3 com_world = o_m_i.act(y.com());
    const Vec3 expected_com = (expected[i - 1] * l.com.homogeneous()).head<3>();
    EXPECT_LT(max_abs_diff(com_world, expected_com), 1e-14);
    const Mat3 r = o_m_i.rotation;
    const Mat3 r_dh = expected[i - 1].topLeftCorner<3, 3>();
    EXPECT_LT(max_abs_diff(r * y.inertia_about_com() * r.transpose(),
                           r_dh * l.inertia * r_dh.transpose()),
              kRounding);
  }
}

INSTANTIATE_TEST_SUITE_P(Both, DhConventions,
                         ::testing::Values(DhConvention::kStandard, DhConvention::kModified),
                         [](const auto& info) {
                           return info.param == DhConvention::kStandard ? "Standard" : "Modified";
                         });

TEST(Dh, NamesBaseAndStructure) {
  DhTable table = general_table(DhConvention::kStandard);
  table.links[1].name = "upper_arm";
  table.links[1].joint_name = "shoulder";
  table.base_link = "pedestal";
  const ModelPtr model = build_model(dh_to_spec(table));
  EXPECT_EQ(model->name, "general");
  EXPECT_THAT(model->body_names, ElementsAre("pedestal", "link1", "upper_arm", "link3", "link4"));
  EXPECT_THAT(model->joint_names,
              ElementsAre("universe", "joint1", "shoulder", "joint3", "joint4"));
  EXPECT_EQ(model->joints[2].type, JointType::kPrismatic);
  for (int i = 1; i <= 4; ++i) EXPECT_EQ(model->joints[i].axis_kind, AxisKind::kZ);
  EXPECT_GE(model->find_frame("upper_arm_dh"), 0);
  EXPECT_GE(model->find_frame("shoulder_dh"), 0);

  table.convention = DhConvention::kModified;
  table.floating_base = true;
  table.gravity = Vec3(0.0, 0.0, -3.7);
  const ModelPtr floating = build_model(dh_to_spec(table));
  EXPECT_EQ(floating->nq, 4 + 7);
  EXPECT_EQ(floating->body_names[1], "pedestal");
  EXPECT_EQ(floating->gravity, Vec3(0.0, 0.0, -3.7));
  EXPECT_EQ(floating->find_frame("link1_dh"), -1);
}

TEST(Dh, LimitsAreKept) {
  DhTable table = general_table(DhConvention::kModified);
  table.links[2].limits = {-2.0, 1.5, 3.0, 40.0};
  const ModelPtr model = build_model(dh_to_spec(table));
  EXPECT_EQ(model->limits[3].lower, -2.0);
  EXPECT_EQ(model->limits[3].effort, 40.0);
}

TEST(DhErrors, OnlyRevoluteAndPrismatic) {
  for (JointType type :
       {JointType::kHelical, JointType::kContinuous, JointType::kFixed, JointType::kSpherical}) {
    DhTable table = general_table(DhConvention::kStandard);
    table.links[1].type = type;
    try {
      dh_to_spec(table);
      FAIL() << "accepted joint type " << joint_type_name(type);
    } catch (const ModelError& e) {
      EXPECT_THAT(e.what(), HasSubstr("joint 'joint2'"));
      EXPECT_THAT(e.what(), HasSubstr(std::string(joint_type_name(type))));
    }
  }
}

TEST(DhErrors, NonFiniteParameter) {
  DhTable table = general_table(DhConvention::kModified);
  table.links[2].joint_name = "elbow";
  table.links[2].alpha = std::numeric_limits<double>::quiet_NaN();
  try {
    dh_to_spec(table);
    FAIL() << "accepted a NaN alpha";
  } catch (const ModelError& e) {
    EXPECT_THAT(e.what(), HasSubstr("joint 'elbow': non-finite DH parameter alpha (nan)"));
  }
}

TEST(DhErrors, BadInertiaIsReportedByBuild) {
  DhTable table = general_table(DhConvention::kStandard);
  table.links[3].mass = -1.0;
  try {
    build_model(dh_to_spec(table));
    FAIL() << "accepted a negative mass";
  } catch (const ModelError& e) {
    EXPECT_THAT(e.what(), HasSubstr("link 'link4': negative mass"));
  }
}

// ---------------------------------------------------------------------------------------------
// PUMA 560

// Corke's Robotics Toolbox mdl_puma560 (standard DH; "Robotics, Vision and Control", §7.2):
// (θ, d, a, α) = (q1, 0, 0, π/2), (q2, 0, 0.4318, 0), (q3, 0.15005, 0.0203, −π/2),
// (q4, 0.4318, 0, π/2), (q5, 0, 0, −π/2), (q6, 0, 0, 0).
DhTable puma_standard() {
  DhTable table;
  table.name = "puma560";
  table.convention = DhConvention::kStandard;
  table.links = {row(JointType::kRevolute, 0.0, kPi / 2, 0.0, 0.0),
                 row(JointType::kRevolute, 0.4318, 0.0, 0.0, 0.0),
                 row(JointType::kRevolute, 0.0203, -kPi / 2, 0.15005, 0.0),
                 row(JointType::kRevolute, 0.0, kPi / 2, 0.4318, 0.0),
                 row(JointType::kRevolute, 0.0, -kPi / 2, 0.0, 0.0),
                 row(JointType::kRevolute, 0.0, 0.0, 0.0, 0.0)};
  return table;
}

TEST(DhPuma560, StandardMatchesCorkeAtTheNamedPoses) {
  const DhTable table = puma_standard();
  const ModelPtr model = build_model(dh_to_spec(table));
  Data data(*model);
  // Published: fkine(qz) = [I, (0.4521, −0.15005, 0.4318)], fkine(qr) = [I, (0.0203, −0.15005,
  // 0.8636)] with qz = 0 and qr = (0, π/2, −π/2, 0, 0, 0).
  Eigen::VectorXd qz = Eigen::VectorXd::Zero(6);
  Eigen::VectorXd qr = qz;
  qr[1] = kPi / 2;
  qr[2] = -kPi / 2;
  for (const auto& [q, p] : {std::pair{qz, Vec3(0.4521, -0.15005, 0.4318)},
                             std::pair{qr, Vec3(0.0203, -0.15005, 0.8636)}}) {
    forward_kinematics(*model, data, q);
    const Transform tool = dh_frame(*model, data, table, 6);
    EXPECT_LT(max_abs_diff(tool.rotation, Mat3::Identity()), kRounding);
    EXPECT_LT(max_abs_diff(tool.translation, p), kRounding);
  }
}

TEST(DhPuma560, StandardMatchesTheProductEverywhere) {
  const DhTable table = puma_standard();
  const ModelPtr model = build_model(dh_to_spec(table));
  Data data(*model);
  std::mt19937_64 rng(560);
  std::uniform_real_distribution<double> uniform(-kPi, kPi);
  for (int trial = 0; trial < 10; ++trial) {
    Eigen::VectorXd q(6);
    for (int k = 0; k < 6; ++k) q[k] = uniform(rng);
    forward_kinematics(*model, data, q);
    const std::vector<Mat4> expected = hand_dh_chain(table, q);
    for (int i = 1; i <= 6; ++i) {
      EXPECT_LT(max_abs_diff(to_mat4(dh_frame(*model, data, table, i)), expected[i - 1]), 1e-14);
    }
  }
}

// Craig's table (Fig. 3.21), rows (α_{i−1}, a_{i−1}, θ_i, d_i), with Corke's lengths.
constexpr double kA2 = 0.4318, kA3 = 0.0203, kD3 = 0.15005, kD4 = 0.4318;

DhTable puma_modified() {
  DhTable table;
  table.name = "puma560_craig";
  table.convention = DhConvention::kModified;
  table.links = {row(JointType::kRevolute, 0.0, 0.0, 0.0, 0.0),
                 row(JointType::kRevolute, 0.0, -kPi / 2, 0.0, 0.0),
                 row(JointType::kRevolute, kA2, 0.0, kD3, 0.0),
                 row(JointType::kRevolute, kA3, -kPi / 2, kD4, 0.0),
                 row(JointType::kRevolute, 0.0, kPi / 2, 0.0, 0.0),
                 row(JointType::kRevolute, 0.0, -kPi / 2, 0.0, 0.0)};
  return table;
}

// Craig, eq. 3.14: ^0T_6 of the PUMA 560 in closed form.
Mat4 craig_puma_closed_form(const Eigen::VectorXd& q) {
  const double c1 = std::cos(q[0]), s1 = std::sin(q[0]);
  const double c2 = std::cos(q[1]), s2 = std::sin(q[1]);
  const double c23 = std::cos(q[1] + q[2]), s23 = std::sin(q[1] + q[2]);
  const double c4 = std::cos(q[3]), s4 = std::sin(q[3]);
  const double c5 = std::cos(q[4]), s5 = std::sin(q[4]);
  const double c6 = std::cos(q[5]), s6 = std::sin(q[5]);
  Mat4 t = Mat4::Identity();
  t(0, 0) = c1 * (c23 * (c4 * c5 * c6 - s4 * s6) - s23 * s5 * c6) + s1 * (s4 * c5 * c6 + c4 * s6);
  t(1, 0) = s1 * (c23 * (c4 * c5 * c6 - s4 * s6) - s23 * s5 * c6) - c1 * (s4 * c5 * c6 + c4 * s6);
  t(2, 0) = -s23 * (c4 * c5 * c6 - s4 * s6) - c23 * s5 * c6;
  t(0, 1) = c1 * (c23 * (-c4 * c5 * s6 - s4 * c6) + s23 * s5 * s6) + s1 * (c4 * c6 - s4 * c5 * s6);
  t(1, 1) = s1 * (c23 * (-c4 * c5 * s6 - s4 * c6) + s23 * s5 * s6) - c1 * (c4 * c6 - s4 * c5 * s6);
  t(2, 1) = -s23 * (-c4 * c5 * s6 - s4 * c6) + c23 * s5 * s6;
  t(0, 2) = -c1 * (c23 * c4 * s5 + s23 * c5) - s1 * s4 * s5;
  t(1, 2) = -s1 * (c23 * c4 * s5 + s23 * c5) + c1 * s4 * s5;
  t(2, 2) = s23 * c4 * s5 - c23 * c5;
  t(0, 3) = c1 * (kA2 * c2 + kA3 * c23 - kD4 * s23) - kD3 * s1;
  t(1, 3) = s1 * (kA2 * c2 + kA3 * c23 - kD4 * s23) + kD3 * c1;
  t(2, 3) = -kA3 * s23 - kA2 * s2 - kD4 * c23;
  return t;
}

TEST(DhPuma560, ModifiedMatchesCraigsClosedForm) {
  const DhTable table = puma_modified();
  const ModelPtr model = build_model(dh_to_spec(table));
  Data data(*model);
  std::mt19937_64 rng(1986);
  std::uniform_real_distribution<double> uniform(-kPi, kPi);
  for (int trial = 0; trial < 10; ++trial) {
    Eigen::VectorXd q(6);
    for (int k = 0; k < 6; ++k) q[k] = trial == 0 ? 0.0 : uniform(rng);
    forward_kinematics(*model, data, q);
    const Mat4 tool = to_mat4(dh_frame(*model, data, table, 6));
    EXPECT_LT(max_abs_diff(tool, craig_puma_closed_form(q)), 1e-14) << q.transpose();
    EXPECT_LT(max_abs_diff(tool, hand_dh_chain(table, q).back()), 1e-14);
  }
}

// ---------------------------------------------------------------------------------------------
// Stanford arm, digest-001-004.md §3.6 (geometry, standard DH, d2 = 0.2, d4 = 0.1) and §7.1
// (masses, inertias, state and the derived results, computed there by three formulations).
using test_support::stanford_arm;

// The digest prints 11 significant digits.
void expect_close(const Eigen::MatrixXd& actual, const Eigen::MatrixXd& expected) {
  EXPECT_LT(max_abs_diff(actual, expected), 2e-10 * std::max(1.0, expected.cwiseAbs().maxCoeff()))
      << "\nactual:\n"
      << actual << "\nexpected:\n"
      << expected;
}

class StanfordArm : public ::testing::Test {
 protected:
  StanfordArm() : model_(build_model(dh_to_spec(stanford_arm()))), data_(*model_) {
    q_.resize(6);
    v_.resize(6);
    a_.resize(6);
    q_ << 0.3, -0.6, 0.5, 0.8, -0.4, 0.2;
    v_ << 0.5, -0.3, 0.2, 0.7, -0.6, 0.4;
    a_ << 0.2, 0.1, -0.3, 0.5, 0.4, -0.2;
  }
  ModelPtr model_;
  Data data_;
  Eigen::VectorXd q_, v_, a_;
};

TEST_F(StanfordArm, Kinematics) {
  forward_kinematics(*model_, data_, q_);
  Mat4 t06;
  t06 << -0.0546305378, -0.7761243865, -0.6282089151, -0.3827581762,  //
      0.8058186476, 0.3372549813, -0.4867395451, 0.0909493416,        //
      0.5896370168, -0.5328133015, 0.6069910824, 0.4952013689,        //
      0, 0, 0, 1;
  EXPECT_LT(max_abs_diff(to_mat4(dh_frame(*model_, data_, stanford_arm(), 6)), t06), 1e-10);
}

TEST_F(StanfordArm, MassMatrix) {
  Eigen::MatrixXd m(6, 6);
  m << 0.89967220892, -0.26942392154, 0.56915276991, 0.0065595876673, -0.014229329727,
      0.00030349554122,  //
      -0.26942392154, 1.1684600045, 0.011666345989, 0.0080537883970, 0.019893326993,
      -0.00013967580988,                                                          //
      0.56915276991, 0.011666345989, 5.1, 0, 0.016744988719, 0,                   //
      0.0065595876673, 0.0080537883970, 0, 0.0049989174631, 0, 0.00046053049700,  //
      -0.014229329727, 0.019893326993, 0.016744988719, 0, 0.00479, 0,             //
      0.00030349554122, -0.00013967580988, 0, 0.00046053049700, 0, 0.0005;
  expect_close(crba(*model_, data_, q_), m);
}

TEST_F(StanfordArm, InverseDynamics) {
  Eigen::VectorXd tau(6), gravity(6);
  tau << 0.33465973068, 9.4151400848, 39.530340085, 0.075500824308, 0.27348638154, 5.2415510786e-05;
  gravity << 0, 9.3980322284, 41.292366150, 0.066536844437, 0.28842086108, 0;
  expect_close(rnea(*model_, data_, q_, v_, a_), tau);
  expect_close(generalized_gravity(*model_, data_, q_), gravity);
}

TEST_F(StanfordArm, InverseDynamicsWithAForceOnTheEndEffector) {
  // The action on the end effector, in DH frame 6 at its origin; DH frame 6 is body 6's frame
  // here because row 6's fixed transform is the identity.
  const int tool = model_->find_frame("link6_dh");
  ASSERT_GE(tool, 0);
  ASSERT_EQ(model_->frames[tool].body, 6);
  EXPECT_EQ(to_mat4(model_->frames[tool].placement), Mat4::Identity());
  std::vector<Force> forces(model_->nbodies(), Force::Zero());
  forces[6] = {Vec3(1.0, -2.0, 3.0), Vec3(0.1, 0.2, -0.3)};
  Eigen::VectorXd tau(6);
  tau << 0.020506695802, 8.3422911491, 36.230770238, 0.32912662859, 0.057606132897, 0.30005241551;
  expect_close(rnea(*model_, data_, q_, v_, a_, forces), tau);
}

}  // namespace
}  // namespace torqued
