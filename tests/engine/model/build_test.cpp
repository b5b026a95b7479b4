// build_model() on hand-written specs: every validation error names the link or joint at fault,
// the accepted-but-suspicious cases produce warnings, joints come in the promised order
// (depth-first, siblings by joint name or as listed, fixed joints walked in place), fixed joints
// are merged with their frames kept, links offset from their joint frames are placed there, and
// the index tables (idx_q, idx_v, subtree_end, ...) are consistent.
#include "engine/model/build.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "engine/algorithms/aba.hpp"
#include "engine/algorithms/crba.hpp"
#include "engine/algorithms/rnea.hpp"

namespace torqued {
namespace {

// Results exact up to the rounding of a handful of operations on numbers of order one: 16 ulps
// (3.6e-15), a bound that holds in any IEEE-754 build, whether the compiler contracts a multiply
// and an add into one FMA (which rounds once where they round twice) or not.
constexpr double kRounding = 16 * std::numeric_limits<double>::epsilon();

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

LinkSpec make_link(const std::string& name, double mass = 1.0, const Vec3& com = Vec3::Zero(),
                   const Mat3& inertia = Vec3(0.1, 0.1, 0.1).asDiagonal()) {
  LinkSpec link;
  link.name = name;
  link.inertial.mass = mass;
  link.inertial.origin.translation = com;
  link.inertial.inertia = inertia;
  return link;
}

LinkSpec massless_link(const std::string& name) {
  return make_link(name, 0.0, Vec3::Zero(), Mat3::Zero());
}

JointSpec make_joint(const std::string& name, const std::string& parent, const std::string& child,
                     JointType type = JointType::kRevolute,
                     const Transform& origin = Transform::Identity()) {
  JointSpec joint;
  joint.name = name;
  joint.type = type;
  joint.parent_link = parent;
  joint.child_link = child;
  joint.origin = origin;
  joint.axis = Vec3::UnitZ();
  return joint;
}

Transform translation(double x, double y, double z) { return {Mat3::Identity(), Vec3(x, y, z)}; }

Transform rotation_z(double angle, const Vec3& p = Vec3::Zero()) {
  return {axis_angle_rotation(Vec3::UnitZ(), angle), p};
}

// base -> j1 -> l1 -> j2 -> l2, both revolute about z.
ModelSpec two_link_chain() {
  ModelSpec spec;
  spec.name = "chain";
  spec.links = {make_link("base"), make_link("l1"), make_link("l2")};
  spec.joints = {make_joint("j1", "base", "l1"), make_joint("j2", "l1", "l2")};
  return spec;
}

std::string build_error(const ModelSpec& spec, const BuildOptions& options = {}) {
  try {
    build_model(spec, options);
  } catch (const ModelError& e) {
    return e.what();
  }
  ADD_FAILURE() << "build_model accepted the spec";
  return {};
}

bool has_warning_containing(const Model& model, const std::string& a, const std::string& b) {
  for (const std::string& w : model.warnings) {
    if (w.find(a) != std::string::npos && w.find(b) != std::string::npos) return true;
  }
  return false;
}

void expect_near(const Mat3& a, const Mat3& b, double tol) {
  EXPECT_LE((a - b).cwiseAbs().maxCoeff(), tol) << "\n" << a << "\nvs\n" << b;
}

void expect_near(const Vec3& a, const Vec3& b, double tol) {
  EXPECT_LE((a - b).cwiseAbs().maxCoeff(), tol) << a.transpose() << " vs " << b.transpose();
}

// ---------------------------------------------------------------------------------------------
// Topology errors

TEST(BuildModelErrors, SeveralRootsAreNamed) {
  ModelSpec spec = two_link_chain();
  spec.links.push_back(make_link("stray"));
  const std::string message = build_error(spec);
  EXPECT_THAT(message, HasSubstr("several root links"));
  EXPECT_THAT(message, HasSubstr("'base'"));
  EXPECT_THAT(message, HasSubstr("'stray'"));
}

TEST(BuildModelErrors, CycleWithoutRootNamesTheCycle) {
  ModelSpec spec;
  spec.links = {make_link("a"), make_link("b")};
  spec.joints = {make_joint("ab", "a", "b"), make_joint("ba", "b", "a")};
  const std::string message = build_error(spec);
  EXPECT_THAT(message, HasSubstr("cycle"));
  EXPECT_THAT(message, HasSubstr("'ab'"));
  EXPECT_THAT(message, HasSubstr("'ba'"));
}

TEST(BuildModelErrors, CycleBesideTheRootIsNotConnected) {
  ModelSpec spec = two_link_chain();
  spec.links.push_back(make_link("x"));
  spec.links.push_back(make_link("y"));
  spec.joints.push_back(make_joint("xy", "x", "y"));
  spec.joints.push_back(make_joint("yx", "y", "x"));
  const std::string message = build_error(spec);
  EXPECT_THAT(message, HasSubstr("not connected to the root link 'base'"));
  EXPECT_THAT(message, HasSubstr("cycle"));
  EXPECT_THAT(message, HasSubstr("'xy'"));
}

TEST(BuildModelErrors, JointToItself) {
  ModelSpec spec = two_link_chain();
  spec.joints.push_back(make_joint("loop", "l2", "l2"));
  EXPECT_THAT(build_error(spec), HasSubstr("joint 'loop' connects link 'l2' to itself"));
}

TEST(BuildModelErrors, UnknownParentLink) {
  ModelSpec spec = two_link_chain();
  spec.joints[1].parent_link = "nowhere";
  const std::string message = build_error(spec);
  EXPECT_THAT(message, HasSubstr("'j2'"));
  EXPECT_THAT(message, HasSubstr("unknown parent link 'nowhere'"));
}

TEST(BuildModelErrors, UnknownChildLink) {
  ModelSpec spec = two_link_chain();
  spec.joints[1].child_link = "ghost";
  const std::string message = build_error(spec);
  EXPECT_THAT(message, HasSubstr("'j2'"));
  EXPECT_THAT(message, HasSubstr("unknown child link 'ghost'"));
}

TEST(BuildModelErrors, LinkWithTwoParents) {
  ModelSpec spec = two_link_chain();
  spec.joints.push_back(make_joint("j3", "base", "l2"));
  const std::string message = build_error(spec);
  EXPECT_THAT(message, HasSubstr("link 'l2' is the child of two joints"));
  EXPECT_THAT(message, HasSubstr("'j2'"));
  EXPECT_THAT(message, HasSubstr("'j3'"));
}

TEST(BuildModelErrors, DuplicateLinkName) {
  ModelSpec spec = two_link_chain();
  spec.links.push_back(make_link("l1"));
  EXPECT_THAT(build_error(spec), HasSubstr("duplicate link name 'l1'"));
}

TEST(BuildModelErrors, DuplicateJointName) {
  ModelSpec spec = two_link_chain();
  spec.links.push_back(make_link("l3"));
  spec.joints.push_back(make_joint("j1", "l2", "l3"));
  EXPECT_THAT(build_error(spec), HasSubstr("duplicate joint name 'j1'"));
}

TEST(BuildModelErrors, RootJointNameIsReservedForTheFloatingBase) {
  ModelSpec spec = two_link_chain();
  spec.joints[0].name = "root_joint";
  EXPECT_NO_THROW(build_model(spec));
  spec.floating_base = true;
  EXPECT_THAT(build_error(spec), HasSubstr("'root_joint' is reserved"));
}

TEST(BuildModelErrors, NoLinks) {
  ModelSpec spec;
  spec.name = "empty";
  EXPECT_THAT(build_error(spec), HasSubstr("'empty' has no links"));
}

TEST(BuildModelErrors, EmptyLinkNameSaysWhereItIs) {
  ModelSpec spec = two_link_chain();
  spec.links[1].name = "";
  spec.joints[0].child_link = "";
  spec.joints[1].parent_link = "";
  EXPECT_THAT(build_error(spec),
              HasSubstr("a link has an empty name (links[1], the child of joint 'j1')"));
  spec = two_link_chain();
  spec.links.push_back(make_link(""));
  EXPECT_THAT(build_error(spec), HasSubstr("a link has an empty name (links[3])"));
}

TEST(BuildModelErrors, EmptyJointNameSaysWhereItIs) {
  ModelSpec spec = two_link_chain();
  spec.joints[1].name = "";
  EXPECT_THAT(build_error(spec),
              HasSubstr("a joint has an empty name (joints[1], from link 'l1' to link 'l2')"));
}

// Every name the model's frames, layout and errors carry is bounded, when the caller says so;
// the message quotes 64 bytes of it at most.
TEST(BuildModelErrors, NamesOverTheLimitAreNameTooLongErrors) {
  const std::string long_name(1000, 'n');
  const auto error = [](const ModelSpec& spec) -> std::string {
    try {
      build_model(spec, BuildOptions{.max_name_bytes = 999});
    } catch (const NameTooLongError& e) {
      return e.what();
    }
    ADD_FAILURE() << "accepted";
    return {};
  };
  const std::string quoted_name = "'" + long_name.substr(0, 64) + "...' (1000 bytes)";
  ModelSpec spec = two_link_chain();
  spec.name = long_name;
  EXPECT_EQ(error(spec), "model name " + quoted_name + ": 1000 bytes exceed the limit of 999");
  spec = two_link_chain();
  spec.links[2].name = spec.joints[1].child_link = long_name;
  EXPECT_EQ(error(spec), "link name " + quoted_name + ": 1000 bytes exceed the limit of 999");
  spec = two_link_chain();
  spec.joints[0].name = long_name;
  EXPECT_EQ(error(spec), "joint name " + quoted_name + ": 1000 bytes exceed the limit of 999");
  spec = two_link_chain();
  LoopClosureSpec loop;
  loop.name = long_name;
  loop.link1 = "l2";
  spec.loop_closures.push_back(loop);
  EXPECT_EQ(error(spec),
            "loop closure name " + quoted_name + ": 1000 bytes exceed the limit of 999");

  spec = two_link_chain();
  spec.name = spec.links[2].name = spec.joints[1].child_link = std::string(999, 'n');
  EXPECT_NO_THROW(build_model(spec, BuildOptions{.max_name_bytes = 999}));
  spec.links[2].name = spec.joints[1].child_link = long_name;
  EXPECT_NO_THROW(build_model(spec));  // no limit by default
}

// ---------------------------------------------------------------------------------------------
// Inertia errors

TEST(BuildModelErrors, NegativeMass) {
  ModelSpec spec = two_link_chain();
  spec.links[2].inertial.mass = -1.0;
  EXPECT_THAT(build_error(spec), HasSubstr("link 'l2': negative mass"));
}

TEST(BuildModelErrors, NonFiniteMass) {
  for (double mass : {kNaN, kInf}) {
    ModelSpec spec = two_link_chain();
    spec.links[1].inertial.mass = mass;
    EXPECT_THAT(build_error(spec), HasSubstr("link 'l1': non-finite mass"));
  }
}

TEST(BuildModelErrors, InertiaNotPositiveSemiDefinite) {
  ModelSpec spec = two_link_chain();
  spec.links[1].inertial.inertia = Vec3(0.1, 0.1, -0.01).asDiagonal();
  EXPECT_THAT(build_error(spec),
              HasSubstr("link 'l1': rotational inertia is not positive semi-definite"));
}

TEST(BuildModelErrors, InertiaIndefiniteOffDiagonal) {
  ModelSpec spec = two_link_chain();
  // Positive diagonal, eigenvalues 0.1 ± 0.2: indefinite.
  spec.links[2].inertial.inertia << 0.1, 0.2, 0.0, 0.2, 0.1, 0.0, 0.0, 0.0, 0.1;
  EXPECT_THAT(build_error(spec), HasSubstr("link 'l2'"));
}

TEST(BuildModelErrors, InertiaNotSymmetric) {
  ModelSpec spec = two_link_chain();
  spec.links[1].inertial.inertia(0, 1) = 0.01;
  EXPECT_THAT(build_error(spec), HasSubstr("link 'l1': rotational inertia is not symmetric"));
}

TEST(BuildModelErrors, InertiaNotFinite) {
  ModelSpec spec = two_link_chain();
  spec.links[1].inertial.inertia(2, 2) = kNaN;
  EXPECT_THAT(build_error(spec), HasSubstr("link 'l1': rotational inertia has non-finite"));
}

TEST(BuildModelErrors, InertialOriginNotFinite) {
  ModelSpec spec = two_link_chain();
  spec.links[2].inertial.origin.translation.x() = kInf;
  EXPECT_THAT(build_error(spec), HasSubstr("link 'l2' inertial: origin has non-finite"));
}

// A negative principal moment is judged against the inertia the link joins (build.cpp,
// kNegligibleInertiaDefect = 1e-6 of it): l2 leaves a composite of 0.1 kg m² about j2's axis
// when its tensor is diag(0.1, 0.1, 0) plus an indefinite perturbation.
ModelSpec chain_with_defect(double smallest_moment) {
  ModelSpec spec = two_link_chain();
  spec.links[2].inertial.inertia = Vec3(0.1, 0.1, smallest_moment).asDiagonal();
  return spec;
}

TEST(BuildModelErrors, InertiaDefectAboveAMillionthOfWhatItsJointMovesIsAnError) {
  EXPECT_THAT(build_error(chain_with_defect(-2e-7)),
              HasSubstr("link 'l2': rotational inertia is not positive semi-definite (principal "
                        "moment -2e-07 kg m², against the 0.1 kg m² that joint 'j2' moves)"));
}

TEST(BuildModelWarnings, InertiaDefectBelowAMillionthOfWhatItsJointMovesIsAWarning) {
  const ModelPtr model = build_model(chain_with_defect(-5e-8));
  ASSERT_EQ(model->warnings.size(), 1u) << ::testing::PrintToString(model->warnings);
  EXPECT_EQ(model->warnings[0],
            "link 'l2': rotational inertia is not positive semi-definite (principal moment -5e-08 "
            "kg m², negligible against the 0.1 kg m² that joint 'j2' moves): kept as written");
  EXPECT_EQ(model->inertias[2].rotational(2, 2), -5e-8);
}

TEST(BuildModelWarnings, InertiaDefectOfAWeldedLinkCountsWhatItsBodyMoves) {
  // A 1e-6 kg sensor whose tensor is indefinite by 2e-11 of its own 2.2e-10, welded to l2: its
  // body moves the 0.1 kg m² of l2 (about z) beside it.
  ModelSpec spec = two_link_chain();
  Mat3 rounded;
  rounded << 1e-10, 1.2e-10, 0.0, 1.2e-10, 1e-10, 0.0, 0.0, 0.0, 1e-10;
  spec.links.push_back(make_link("imu", 1e-6, Vec3::Zero(), rounded));
  spec.joints.push_back(make_joint("imu_weld", "l2", "imu", JointType::kFixed));
  const ModelPtr model = build_model(spec);
  ASSERT_EQ(model->warnings.size(), 1u) << ::testing::PrintToString(model->warnings);
  EXPECT_THAT(model->warnings[0], HasSubstr("link 'imu'"));
  EXPECT_THAT(model->warnings[0], HasSubstr("joint 'j2' moves"));
}

TEST(BuildModelWarnings, OffDiagonalNoiseOnAPointMassIsAWarning) {
  ModelSpec spec = two_link_chain();
  Mat3 noise = Mat3::Zero();
  noise(0, 1) = noise(1, 0) = 2.4e-35;
  spec.links[2] = make_link("l2", 1.0, Vec3(1.0, 0.0, 0.0), noise);
  const ModelPtr model = build_model(spec);
  ASSERT_EQ(model->warnings.size(), 1u) << ::testing::PrintToString(model->warnings);
  EXPECT_THAT(model->warnings[0], HasSubstr("link 'l2'"));
  EXPECT_THAT(model->warnings[0], HasSubstr("-2.4e-35"));
}

TEST(BuildModelErrors, StrictCheckingMakesEveryWarningAnError) {
  ModelSpec spec = two_link_chain();
  spec.warnings = {"from the reader"};
  spec.links[2].inertial.inertia = Vec3(0.1, 0.1, 0.3).asDiagonal();
  try {
    build_model(spec, BuildOptions{.warnings_are_errors = true});
    ADD_FAILURE() << "strict checking accepted a model with warnings";
  } catch (const ModelError& e) {
    EXPECT_STREQ(e.what(), "strict checking: from the reader (and 1 more warning)");
  }
  EXPECT_NO_THROW(build_model(two_link_chain(), BuildOptions{.warnings_are_errors = true}));
}

TEST(BuildModel, ZeroMassAndPointMassAreAccepted) {
  ModelSpec spec = two_link_chain();
  spec.links[1] = make_link("l1", 0.0, Vec3::Zero(), Vec3(0.1, 0.1, 0.1).asDiagonal());
  spec.links[2] = make_link("l2", 1.0, Vec3(1.0, 0.0, 0.0), Mat3::Zero());
  const ModelPtr model = build_model(spec);
  EXPECT_EQ(model->inertias[1].mass, 0.0);
  EXPECT_TRUE(model->warnings.empty()) << model->warnings.front();
}

// ---------------------------------------------------------------------------------------------
// Joint errors

TEST(BuildModelErrors, ZeroAxis) {
  for (JointType type :
       {JointType::kRevolute, JointType::kContinuous, JointType::kPrismatic, JointType::kHelical}) {
    ModelSpec spec = two_link_chain();
    spec.joints[1].type = type;
    spec.joints[1].axis = Vec3::Zero();
    EXPECT_THAT(build_error(spec), HasSubstr("joint 'j2': zero axis"));
  }
}

TEST(BuildModelErrors, NonFiniteAxis) {
  ModelSpec spec = two_link_chain();
  spec.joints[0].axis = Vec3(kNaN, 0.0, 1.0);
  EXPECT_THAT(build_error(spec), HasSubstr("joint 'j1': zero axis"));
}

TEST(BuildModel, AxisIsIgnoredForJointsWithoutOne) {
  ModelSpec spec = two_link_chain();
  spec.joints[1].type = JointType::kFixed;
  spec.joints[1].axis = Vec3::Zero();
  EXPECT_NO_THROW(build_model(spec));
}

TEST(BuildModelErrors, NonFiniteOrigin) {
  ModelSpec spec = two_link_chain();
  spec.joints[1].origin.rotation(0, 0) = kNaN;
  EXPECT_THAT(build_error(spec), HasSubstr("joint 'j2': origin has non-finite"));
}

TEST(BuildModelErrors, OriginRotationNotARotation) {
  ModelSpec spec = two_link_chain();
  spec.joints[1].origin.rotation = 2.0 * Mat3::Identity();
  EXPECT_THAT(build_error(spec), HasSubstr("joint 'j2': origin rotation is not"));
  spec.joints[1].origin.rotation = -Mat3::Identity();
  EXPECT_THAT(build_error(spec), HasSubstr("joint 'j2': origin rotation is not"));
}

TEST(BuildModelErrors, NonFinitePitch) {
  ModelSpec spec = two_link_chain();
  spec.joints[0].type = JointType::kHelical;
  spec.joints[0].pitch = kNaN;
  EXPECT_THAT(build_error(spec), HasSubstr("joint 'j1': non-finite pitch"));
}

TEST(BuildModelErrors, NaNLimits) {
  for (int field = 0; field < 4; ++field) {
    ModelSpec spec = two_link_chain();
    JointLimits& l = spec.joints[1].limits;
    double* values[] = {&l.lower, &l.upper, &l.velocity, &l.effort};
    *values[field] = kNaN;
    EXPECT_THAT(build_error(spec), HasSubstr("joint 'j2': limits contain NaN"));
  }
}

TEST(BuildModel, InfiniteLimitsAreKept) {
  ModelSpec spec = two_link_chain();
  spec.joints[1].limits = {-1.5, 2.5, kInf, 30.0};
  const ModelPtr model = build_model(spec);
  EXPECT_EQ(model->limits[2].lower, -1.5);
  EXPECT_EQ(model->limits[2].upper, 2.5);
  EXPECT_EQ(model->limits[2].velocity, kInf);
  EXPECT_EQ(model->limits[2].effort, 30.0);
  EXPECT_EQ(model->limits[1].lower, -kInf);
}

TEST(BuildModelErrors, NonFiniteGravity) {
  ModelSpec spec = two_link_chain();
  spec.gravity.z() = kNaN;
  EXPECT_THAT(build_error(spec), HasSubstr("'chain': non-finite gravity"));
}

TEST(BuildModelErrors, QuantitiesPastTheirBoundsAreNamed) {
  const auto expect = [](const std::function<void(ModelSpec&)>& change,
                         const std::string& message) {
    ModelSpec spec = two_link_chain();
    change(spec);
    EXPECT_THAT(build_error(spec), HasSubstr(message));
  };
  // A mass of 1e308 and an inertial origin of 1e300 registered and overflowed every dynamics call.
  expect([](ModelSpec& s) { s.links[1].inertial.mass = 1e308; },
         "link 'l1': mass 1e+308 kg is out of bounds (at most 1e+12 kg in absolute value)");
  expect([](ModelSpec& s) { s.links[2].inertial.origin.translation.y() = 1e300; },
         "link 'l2' inertial: origin y 1e+300 m is out of bounds");
  expect([](ModelSpec& s) { s.links[1].inertial.inertia(1, 1) = 2 * kMaxRotationalInertia; },
         "link 'l1': rotational inertia entry 2e+24 kg m^2 is out of bounds");
  expect([](ModelSpec& s) { s.joints[1].origin.translation.z() = -2 * kMaxLength; },
         "joint 'j2': origin z -2e+06 m is out of bounds");
  expect([](ModelSpec& s) { s.joints[0].child_link_placement.translation.x() = 1e9; },
         "joint 'j1': child link placement: origin x 1e+09 m is out of bounds");
  expect(
      [](ModelSpec& s) {
        s.joints[0].type = JointType::kHelical;
        s.joints[0].pitch = 1e7;
      },
      "joint 'j1': pitch 1e+07 m/rad is out of bounds");
  expect([](ModelSpec& s) { s.gravity.x() = 1e10; },
         "model 'chain': gravity x 1e+10 m/s^2 is out of bounds");
  expect(
      [](ModelSpec& s) {
        s.loop_closures.push_back({"tether", ConstraintType::kPoint, "l2", translation(0, 0, 1e7),
                                   "", Transform::Identity()});
      },
      "loop closure 'tether' frame 1: origin z 1e+07 m is out of bounds");
  // An axis whose squared length overflows would normalize to zero, one whose square underflows
  // to a denormal would lose its digits.
  for (const double length : {1e200, 1e-170}) {
    expect([length](ModelSpec& s) { s.joints[1].axis = Vec3(0.0, 0.0, length); },
           "joint 'j2': axis of length");
  }
}

TEST(BuildModel, AModelAtEveryBoundHasFiniteDynamics) {
  // Each quantity at its bound (build.hpp): the algorithms' products stay far from overflow.
  ModelSpec spec = two_link_chain();
  spec.gravity = Vec3(kMaxGravity, -kMaxGravity, kMaxGravity);
  for (LinkSpec& link : spec.links) {
    link.inertial.mass = kMaxMass;
    link.inertial.origin.translation = Vec3::Constant(kMaxLength);
    link.inertial.inertia = Vec3::Constant(kMaxRotationalInertia).asDiagonal();
  }
  for (JointSpec& joint : spec.joints) {
    joint.origin.translation = Vec3(kMaxLength, -kMaxLength, kMaxLength);
    joint.axis = Vec3(1e150, 1e150, 0.0);
  }
  spec.joints[1].type = JointType::kHelical;
  spec.joints[1].pitch = -kMaxLength;
  const ModelPtr model = build_model(spec);
  Data data(*model);
  const Eigen::VectorXd q = Eigen::VectorXd::Constant(model->nq, 1e3);
  const Eigen::VectorXd v = Eigen::VectorXd::Constant(model->nv, 1e3);
  const Eigen::VectorXd a = Eigen::VectorXd::Constant(model->nv, 1e3);
  const Eigen::VectorXd tau = rnea(*model, data, q, v, a);
  EXPECT_TRUE(tau.allFinite());
  EXPECT_TRUE(crba(*model, data, q).allFinite());
  aba(*model, data, q, v, tau);
  EXPECT_TRUE(data.ddq.allFinite());
}

// ---------------------------------------------------------------------------------------------
// Warnings

TEST(BuildModelWarnings, ReaderWarningsComeFirst) {
  ModelSpec spec = two_link_chain();
  spec.warnings = {"from the reader"};
  spec.links[2].inertial.inertia = Vec3(0.1, 0.1, 0.3).asDiagonal();
  const ModelPtr model = build_model(spec);
  ASSERT_EQ(model->warnings.size(), 2u);
  EXPECT_EQ(model->warnings[0], "from the reader");
}

TEST(BuildModelWarnings, TriangleInequality) {
  ModelSpec spec = two_link_chain();
  spec.links[2].inertial.inertia = Vec3(0.1, 0.1, 0.3).asDiagonal();
  const ModelPtr model = build_model(spec);
  ASSERT_EQ(model->warnings.size(), 1u);
  EXPECT_THAT(model->warnings[0], HasSubstr("link 'l2'"));
  EXPECT_THAT(model->warnings[0], HasSubstr("triangle inequality"));
}

TEST(BuildModelWarnings, TriangleInequalityEqualityIsFine) {
  ModelSpec spec = two_link_chain();
  // A thin rod or a flat plate reach A + B = C exactly (up to rounding).
  spec.links[2].inertial.inertia = Vec3(0.1, 0.2, 0.3).asDiagonal();
  spec.links[1].inertial.inertia = Vec3(1.0 / 3.0, 1.0 / 3.0, 2.0 / 3.0).asDiagonal();
  EXPECT_TRUE(build_model(spec)->warnings.empty());
}

TEST(BuildModelWarnings, MasslessBodyWithMassiveChild) {
  ModelSpec spec = two_link_chain();
  spec.links[1] = massless_link("l1");
  const ModelPtr model = build_model(spec);
  ASSERT_EQ(model->warnings.size(), 1u);
  EXPECT_THAT(model->warnings[0], HasSubstr("link 'l1'"));
  EXPECT_THAT(model->warnings[0], HasSubstr("no mass"));
}

TEST(BuildModelWarnings, MasslessSubtree) {
  ModelSpec spec = two_link_chain();
  spec.links[2] = massless_link("l2");
  const ModelPtr model = build_model(spec);
  ASSERT_EQ(model->warnings.size(), 1u);
  EXPECT_EQ(model->warnings[0],
            "joint 'j2' moves a subtree without inertia: forward dynamics will fail");
}

TEST(BuildModelWarnings, MasslessSubtreeOfSeveralBodies) {
  ModelSpec spec = two_link_chain();
  spec.links[1] = massless_link("l1");
  spec.links[2] = massless_link("l2");
  const ModelPtr model = build_model(spec);
  EXPECT_TRUE(has_warning_containing(*model, "joint 'j1' moves a subtree without inertia", ""));
  EXPECT_TRUE(has_warning_containing(*model, "joint 'j2' moves a subtree without inertia", ""));
}

TEST(BuildModelWarnings, MassFromAWeldedLinkCounts) {
  ModelSpec spec = two_link_chain();
  spec.links[2] = massless_link("l2");
  spec.links.push_back(make_link("tool"));
  spec.joints.push_back(make_joint("weld", "l2", "tool", JointType::kFixed, translation(0, 0, 1)));
  EXPECT_TRUE(build_model(spec)->warnings.empty());
}

TEST(BuildModelWarnings, MasslessFixedBaseIsFine) {
  ModelSpec spec = two_link_chain();
  spec.links[0] = massless_link("base");
  EXPECT_TRUE(build_model(spec)->warnings.empty());
}

// ---------------------------------------------------------------------------------------------
// Structure

// root has moving children "zeta" and "alpha" (file order) and a fixed child "m_weld" whose link
// carries the moving joint "b_move".
ModelSpec siblings() {
  ModelSpec spec;
  spec.links = {make_link("root"),    make_link("z_link"), make_link("a_link"),
                make_link("z_child"), make_link("welded"), make_link("b_link")};
  spec.joints = {make_joint("zeta", "root", "z_link"), make_joint("alpha", "root", "a_link"),
                 make_joint("beta", "z_link", "z_child"),
                 make_joint("m_weld", "root", "welded", JointType::kFixed),
                 make_joint("b_move", "welded", "b_link")};
  return spec;
}

TEST(BuildModel, SiblingsAreOrderedByJointName) {
  // The fixed joint is walked where its name sorts.
  const ModelPtr model = build_model(siblings());
  EXPECT_THAT(model->joint_names, ElementsAre("universe", "alpha", "b_move", "zeta", "beta"));
  EXPECT_THAT(model->body_names, ElementsAre("root", "a_link", "b_link", "z_link", "z_child"));
  EXPECT_THAT(model->parent, ElementsAre(-1, 0, 0, 0, 3));
  EXPECT_THAT(model->subtree_end, ElementsAre(5, 2, 3, 5, 5));
  EXPECT_THAT(model->depth, ElementsAre(0, 1, 1, 1, 2));
  for (int i = 1; i < model->nbodies(); ++i) EXPECT_LT(model->parent[i], i);
}

TEST(BuildModel, SiblingsAsListedKeepTheSpecsOrder) {
  // MJCF's document order; the fixed joint is walked where it is listed.
  ModelSpec spec = siblings();
  spec.children_in_given_order = true;
  const ModelPtr model = build_model(spec);
  EXPECT_THAT(model->joint_names, ElementsAre("universe", "zeta", "beta", "alpha", "b_move"));
  EXPECT_THAT(model->parent, ElementsAre(-1, 0, 1, 0, 0));
  EXPECT_THAT(model->subtree_end, ElementsAre(5, 3, 3, 4, 5));
}

TEST(BuildModel, NameOrderIsByteWise) {
  // std::string's operator< (urdfdom's std::map): upper case sorts before lower case and
  // "j10" before "j2".
  ModelSpec spec;
  spec.links = {make_link("root"), make_link("a"), make_link("b"), make_link("c")};
  spec.joints = {make_joint("j2", "root", "a"), make_joint("j10", "root", "b"),
                 make_joint("J3", "root", "c")};
  EXPECT_THAT(build_model(spec)->joint_names, ElementsAre("universe", "J3", "j10", "j2"));
}

TEST(BuildModel, IndicesOfMixedJoints) {
  ModelSpec spec;
  spec.links = {make_link("root"), make_link("ball"), make_link("slider"), make_link("plane"),
                make_link("free")};
  spec.joints = {make_joint("a_spherical", "root", "ball", JointType::kSpherical),
                 make_joint("b_prismatic", "ball", "slider", JointType::kPrismatic),
                 make_joint("c_planar", "root", "plane", JointType::kPlanar),
                 make_joint("d_free", "plane", "free", JointType::kFreeFlyer)};
  spec.floating_base = true;
  const ModelPtr model = build_model(spec);
  EXPECT_THAT(model->joint_names, ElementsAre("universe", "root_joint", "a_spherical",
                                              "b_prismatic", "c_planar", "d_free"));
  EXPECT_EQ(model->nq, 7 + 4 + 1 + 3 + 7);
  EXPECT_EQ(model->nv, 6 + 3 + 1 + 3 + 6);
  std::vector<int> idx_q, idx_v;
  for (int i = 1; i < model->nbodies(); ++i) {
    idx_q.push_back(model->joints[i].idx_q);
    idx_v.push_back(model->joints[i].idx_v);
  }
  EXPECT_THAT(idx_q, ElementsAre(0, 7, 11, 12, 15));
  EXPECT_THAT(idx_v, ElementsAre(0, 6, 9, 10, 13));
  ASSERT_EQ(static_cast<int>(model->body_of_v.size()), model->nv);
  EXPECT_THAT(model->body_of_v,
              ElementsAre(1, 1, 1, 1, 1, 1, 2, 2, 2, 3, 4, 4, 4, 5, 5, 5, 5, 5, 5));

  const Eigen::VectorXd q = model->neutral_configuration();
  Eigen::VectorXd expected = Eigen::VectorXd::Zero(model->nq);
  expected[6] = 1.0;   // root_joint's w
  expected[10] = 1.0;  // a_spherical's w
  expected[21] = 1.0;  // d_free's w
  EXPECT_EQ(q, expected);
}

TEST(BuildModel, FloatingBase) {
  ModelSpec spec = two_link_chain();
  spec.floating_base = true;
  const ModelPtr model = build_model(spec);
  EXPECT_TRUE(model->floating_base);
  EXPECT_THAT(model->body_names, ElementsAre("universe", "base", "l1", "l2"));
  EXPECT_THAT(model->joint_names, ElementsAre("universe", "root_joint", "j1", "j2"));
  EXPECT_EQ(model->joints[1].type, JointType::kFreeFlyer);
  EXPECT_EQ(model->nq, 9);
  EXPECT_EQ(model->nv, 8);
  EXPECT_EQ(model->inertias[0].mass, 0.0);
  EXPECT_EQ(model->inertias[1].mass, 1.0);
  EXPECT_EQ(model->frames[model->find_frame("base")].body, 1);
  EXPECT_EQ(model->frames[model->find_frame("root_joint")].kind, FrameKind::kJoint);
  EXPECT_EQ(model->find_frame("universe"), -1);
}

TEST(BuildModel, FixedBaseBodyZeroIsTheRootLink) {
  const ModelPtr model = build_model(two_link_chain());
  EXPECT_FALSE(model->floating_base);
  EXPECT_EQ(model->name, "chain");
  EXPECT_THAT(model->body_names, ElementsAre("base", "l1", "l2"));
  EXPECT_THAT(model->joint_names, ElementsAre("universe", "j1", "j2"));
  EXPECT_EQ(model->parent[0], -1);
  EXPECT_EQ(model->nq, 2);
  EXPECT_EQ(model->nv, 2);
  const int frame = model->find_frame("base");
  ASSERT_GE(frame, 0);
  EXPECT_EQ(model->frames[frame].kind, FrameKind::kBody);
  EXPECT_EQ(model->frames[frame].body, 0);
  EXPECT_EQ(model->find_body("l2"), 2);
  EXPECT_EQ(model->find_joint("j2"), 2);
  EXPECT_EQ(model->find_body("nope"), -1);
  EXPECT_EQ(model->find_joint("nope"), -1);
  EXPECT_EQ(model->find_frame("nope"), -1);
}

// A joint named after its child link, offset from it: the names a quadruped's URDF shares, and
// an MJCF body and its joint at a `pos`. Two frames of one name, 0.37 m apart.
TEST(BuildModel, ASharedNameMeansNeitherFrameAndEachKindPicksOne) {
  ModelSpec spec = two_link_chain();
  spec.joints[1].name = "l2";
  spec.joints[1].origin = translation(0.0, 0.0, 0.5);
  spec.joints[1].child_link_placement = translation(0.0, 0.0, -0.37);
  const ModelPtr model = build_model(spec);

  const std::vector<int> both = model->frames_meant_by("l2");
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(model->find_frame("l2"), -1);
  const int joint = model->find_frame("joint:l2");
  const int body = model->find_frame("body:l2");
  ASSERT_GE(joint, 0);
  ASSERT_GE(body, 0);
  EXPECT_THAT(both, ElementsAre(joint, body));
  EXPECT_EQ(model->frames[joint].kind, FrameKind::kJoint);
  EXPECT_EQ(model->frames[body].kind, FrameKind::kBody);
  EXPECT_EQ(model->frames[body].placement.translation, Vec3(0.0, 0.0, -0.37));
  EXPECT_EQ(model->find_frame("fixed_link:l2"), -1);
  EXPECT_EQ(model->frame_reference(joint), "joint:l2");
  EXPECT_EQ(model->frame_reference(body), "body:l2");

  // Unshared names keep their bare reference, and a qualified one picks them too.
  const int l1 = model->find_frame("l1");
  EXPECT_EQ(model->frame_reference(l1), "l1");
  EXPECT_EQ(model->find_frame("body:l1"), l1);
  EXPECT_EQ(model->find_frame("joint:l1"), -1);
  EXPECT_EQ(model->find_frame("link:l1"), -1);

  EXPECT_TRUE(has_warning_containing(*model, "frame name 'l2' is shared by 2 frames",
                                     "'joint:l2' and 'body:l2'"));
  EXPECT_THAT(build_error(spec, BuildOptions{.warnings_are_errors = true}),
              HasSubstr("frame name 'l2' is shared"));
}

// Every frame's reference means that frame alone, on a model with names shared by a fixed joint
// and its link and by a moving joint and its link.
TEST(BuildModel, EveryFrameReferenceMeansItsFrame) {
  ModelSpec spec = two_link_chain();
  spec.links.push_back(make_link("tool"));
  spec.joints.push_back(make_joint("tool", "l2", "tool", JointType::kFixed, translation(0, 0, 1)));
  spec.joints[0].name = "l1";
  const ModelPtr model = build_model(spec);
  int shared = 0;
  for (int f = 0; f < static_cast<int>(model->frames.size()); ++f) {
    EXPECT_EQ(model->find_frame(model->frame_reference(f)), f) << model->frame_reference(f);
    shared += model->frames[f].name_shared ? 1 : 0;
  }
  EXPECT_EQ(shared, 4);
  EXPECT_EQ(model->frames[model->find_frame("fixed_link:tool")].kind, FrameKind::kFixedLink);
  EXPECT_EQ(std::count_if(model->warnings.begin(), model->warnings.end(),
                          [](const std::string& w) { return w.find("is shared by") != w.npos; }),
            2);
}

TEST(BuildModel, GravityIsCopied) {
  ModelSpec spec = two_link_chain();
  spec.gravity = Vec3(0.0, -1.62, 0.0);
  EXPECT_EQ(build_model(spec)->gravity, Vec3(0.0, -1.62, 0.0));
}

TEST(BuildModel, AxisKindsAndSubspaces) {
  ModelSpec spec;
  spec.links = {make_link("root"), make_link("a"), make_link("b"),
                make_link("c"),    make_link("d"), make_link("e")};
  spec.joints = {make_joint("j1", "root", "a"), make_joint("j2", "a", "b", JointType::kPrismatic),
                 make_joint("j3", "b", "c", JointType::kHelical),
                 make_joint("j4", "c", "d", JointType::kContinuous), make_joint("j5", "d", "e")};
  spec.joints[0].axis = Vec3(0.0, 0.0, 2.0);
  spec.joints[1].axis = Vec3(0.0, 3.0, 0.0);
  spec.joints[2].axis = Vec3(0.5, 0.0, 0.0);
  spec.joints[2].pitch = 0.01;
  spec.joints[3].axis = Vec3(0.0, 0.0, -1.0);
  spec.joints[4].axis = Vec3(1.0, 1.0, 0.0);
  const ModelPtr model = build_model(spec);
  const auto& j = model->joints;
  EXPECT_EQ(j[1].axis_kind, AxisKind::kZ);
  EXPECT_EQ(j[1].axis, Vec3::UnitZ());
  EXPECT_EQ(j[2].axis_kind, AxisKind::kY);
  EXPECT_EQ(j[3].axis_kind, AxisKind::kX);
  EXPECT_EQ(j[4].axis_kind, AxisKind::kGeneral);
  EXPECT_EQ(j[5].axis_kind, AxisKind::kGeneral);
  expect_near(j[5].axis, Vec3(1.0, 1.0, 0.0) / std::sqrt(2.0), kRounding);

  EXPECT_EQ(j[1].subspace.linear, Vec3::Zero());
  EXPECT_EQ(j[1].subspace.angular, Vec3::UnitZ());
  EXPECT_EQ(j[2].subspace.linear, Vec3::UnitY());
  EXPECT_EQ(j[2].subspace.angular, Vec3::Zero());
  EXPECT_EQ(j[3].subspace.linear, 0.01 * Vec3::UnitX());
  EXPECT_EQ(j[3].subspace.angular, Vec3::UnitX());
  EXPECT_EQ(j[3].pitch, 0.01);
  EXPECT_EQ(j[4].subspace.angular, -Vec3::UnitZ());
  for (int i = 1; i < model->nbodies(); ++i) {
    EXPECT_EQ(j[i].nq, 1);
    EXPECT_EQ(j[i].nv, 1);
  }
}

// ---------------------------------------------------------------------------------------------
// Fixed-joint merging

// Rotational inertia about the origin of a point-ish body by the parallel-axis theorem, written
// independently of RigidInertia: I_O = I_c + m (|c|² I − c cᵀ).
Mat3 about_origin(double mass, const Vec3& com, const Mat3& inertia_com) {
  return inertia_com + mass * (com.dot(com) * Mat3::Identity() - com * com.transpose());
}

TEST(BuildModel, FixedJointsAreMergedWithFramesKept) {
  ModelSpec spec = two_link_chain();
  const Mat3 tool_inertia = Vec3(0.01, 0.02, 0.03).asDiagonal();
  spec.links[2] = make_link("l2", 2.0, Vec3(0.1, 0.0, 0.0), Vec3(0.1, 0.2, 0.25).asDiagonal());
  spec.links.push_back(make_link("flange", 0.5, Vec3(0.0, 0.0, 0.05), tool_inertia));
  spec.links.push_back(make_link("tool", 3.0, Vec3(0.2, 0.0, 0.0), tool_inertia));
  spec.links.push_back(massless_link("tcp"));
  const Transform weld1 = rotation_z(std::numbers::pi / 2, Vec3(0.0, 0.0, 0.5));
  const Transform weld2 = rotation_z(-0.3, Vec3(0.1, 0.2, 0.0));
  const Transform weld3 = translation(0.0, 0.0, 0.1);
  spec.joints.push_back(make_joint("weld1", "l2", "flange", JointType::kFixed, weld1));
  spec.joints.push_back(make_joint("weld2", "flange", "tool", JointType::kFixed, weld2));
  spec.joints.push_back(make_joint("weld3", "tool", "tcp", JointType::kFixed, weld3));
  const ModelPtr model = build_model(spec);

  ASSERT_EQ(model->nbodies(), 3);
  const RigidInertia& merged = model->inertias[2];
  EXPECT_DOUBLE_EQ(merged.mass, 5.5);

  const Transform at_tool = weld1 * weld2;
  const Vec3 c_l2(0.1, 0.0, 0.0);
  const Vec3 c_flange = weld1.act(Vec3(0.0, 0.0, 0.05));
  const Vec3 c_tool = at_tool.act(Vec3(0.2, 0.0, 0.0));
  expect_near(merged.com(), (2.0 * c_l2 + 0.5 * c_flange + 3.0 * c_tool) / 5.5, kRounding);
  const Mat3 expected =
      about_origin(2.0, c_l2, Vec3(0.1, 0.2, 0.25).asDiagonal()) +
      about_origin(0.5, c_flange, weld1.rotation * tool_inertia * weld1.rotation.transpose()) +
      about_origin(3.0, c_tool, at_tool.rotation * tool_inertia * at_tool.rotation.transpose());
  expect_near(merged.rotational, expected, 1e-14);

  struct Expected {
    const char* name;
    FrameKind kind;
    Transform placement;
  };
  for (const Expected& e : {Expected{"weld1", FrameKind::kJoint, weld1},
                            Expected{"flange", FrameKind::kFixedLink, weld1},
                            Expected{"weld2", FrameKind::kJoint, at_tool},
                            Expected{"tool", FrameKind::kFixedLink, at_tool},
                            Expected{"tcp", FrameKind::kFixedLink, at_tool * weld3},
                            Expected{"l2", FrameKind::kBody, Transform::Identity()},
                            Expected{"j2", FrameKind::kJoint, Transform::Identity()}}) {
    SCOPED_TRACE(e.name);
    const int f = model->find_frame(e.name);
    ASSERT_GE(f, 0);
    EXPECT_EQ(model->frames[f].kind, e.kind);
    EXPECT_EQ(model->frames[f].body, 2);
    expect_near(model->frames[f].placement.rotation, e.placement.rotation, kRounding);
    expect_near(model->frames[f].placement.translation, e.placement.translation, kRounding);
  }
  EXPECT_EQ(model->frames.size(), 1u + 4u + 6u);
}

TEST(BuildModel, MovingJointBelowFixedJointsIsPlacedInTheBody) {
  ModelSpec spec;
  spec.links = {make_link("root"), make_link("adapter"), make_link("arm"), make_link("hand")};
  const Transform weld = rotation_z(0.7, Vec3(1.0, 2.0, 3.0));
  const Transform mount = rotation_z(-0.2, Vec3(0.0, 0.5, 0.0));
  spec.joints = {make_joint("weld", "root", "adapter", JointType::kFixed, weld),
                 make_joint("shoulder", "adapter", "arm", JointType::kRevolute, mount),
                 make_joint("wrist", "arm", "hand", JointType::kRevolute, mount)};
  const ModelPtr model = build_model(spec);
  ASSERT_EQ(model->nbodies(), 3);
  EXPECT_EQ(model->inertias[0].mass, 2.0);
  const Transform expected = weld * mount;
  expect_near(model->joint_placements[1].rotation, expected.rotation, kRounding);
  expect_near(model->joint_placements[1].translation, expected.translation, kRounding);
  expect_near(model->joint_placements[2].translation, mount.translation, 0.0);
  EXPECT_EQ(model->frames[model->find_frame("adapter")].body, 0);
  EXPECT_EQ(model->frames[model->find_frame("adapter")].kind, FrameKind::kFixedLink);
}

// A link offset from its joint frame (an MJCF joint at a point of its body): the joint frame is
// the body frame, the link and everything on it sit at the child origin.
TEST(BuildModel, ChildLinkPlacementPlacesTheLinkInItsJointFrame) {
  ModelSpec spec;
  spec.links = {make_link("root"), make_link("arm", 2.0, Vec3(0.1, 0.0, 0.0)), make_link("tip"),
                make_link("hand")};
  const Transform pivot = translation(0.0, 0.0, 1.0);
  const Transform offset = rotation_z(0.3, Vec3(-0.5, 0.0, 0.0));
  JointSpec shoulder = make_joint("shoulder", "root", "arm", JointType::kRevolute, pivot);
  shoulder.child_link_placement = offset;
  JointSpec weld = make_joint("weld", "arm", "tip", JointType::kFixed, translation(1.0, 0, 0));
  weld.child_link_placement = rotation_z(0.1);
  spec.joints = {shoulder, weld,
                 make_joint("wrist", "tip", "hand", JointType::kRevolute, translation(0, 0, 2))};
  const ModelPtr model = build_model(spec);
  ASSERT_EQ(model->nbodies(), 3);
  expect_near(model->joint_placements[1].translation, pivot.translation, 0.0);
  const auto placement = [&](const char* name) {
    return model->frames[model->find_frame(name)].placement;
  };
  expect_near(placement("shoulder").translation, Vec3::Zero(), 0.0);
  expect_near(placement("arm").rotation, offset.rotation, 0.0);
  expect_near(placement("arm").translation, offset.translation, 0.0);
  const Transform at_weld = offset * translation(1.0, 0, 0);
  expect_near(placement("weld").translation, at_weld.translation, kRounding);
  const Transform at_tip = at_weld * rotation_z(0.1);
  expect_near(placement("tip").rotation, at_tip.rotation, kRounding);
  expect_near(model->joint_placements[2].translation, (at_tip * translation(0, 0, 2)).translation,
              kRounding);
  // arm (2 kg) and the welded tip (1 kg at its frame's origin).
  expect_near(model->inertias[1].com(),
              (2.0 * offset.act(Vec3(0.1, 0.0, 0.0)) + at_tip.translation) / 3.0, kRounding);
}

TEST(BuildModelErrors, NonFiniteChildLinkPlacement) {
  ModelSpec spec = two_link_chain();
  spec.joints[1].child_link_placement.translation.x() = kNaN;
  EXPECT_THAT(build_error(spec), HasSubstr("joint 'j2': child link placement: origin has "
                                           "non-finite numbers"));
}

TEST(BuildModel, InertialOriginRotationIsApplied) {
  ModelSpec spec = two_link_chain();
  const Mat3 inertia_com = Vec3(0.1, 0.2, 0.3).asDiagonal();
  spec.links[1].inertial.mass = 2.0;
  spec.links[1].inertial.origin = rotation_z(std::numbers::pi / 2, Vec3(0.0, 0.3, 0.0));
  spec.links[1].inertial.inertia = inertia_com;
  const ModelPtr model = build_model(spec);
  expect_near(model->inertias[1].com(), Vec3(0.0, 0.3, 0.0), kRounding);
  expect_near(model->inertias[1].inertia_about_com(), Vec3(0.2, 0.1, 0.3).asDiagonal(), kRounding);
}

// `"l" + std::to_string(i)` trips GCC 12's -Wrestrict false positive; appending does not.
std::string numbered(const char* prefix, int i) {
  std::string name(prefix);
  name += std::to_string(i);
  return name;
}

TEST(BuildModel, DeepChainDoesNotRecurse) {
  ModelSpec spec;
  constexpr int kLinks = 20000;
  for (int i = 0; i <= kLinks; ++i) spec.links.push_back(make_link(numbered("l", i)));
  for (int i = 0; i < kLinks; ++i) {
    spec.joints.push_back(make_joint(numbered("j", i), numbered("l", i), numbered("l", i + 1),
                                     JointType::kRevolute, translation(0.0, 0.0, 0.1)));
  }
  const ModelPtr model = build_model(spec);
  EXPECT_EQ(model->nv, kLinks);
  EXPECT_EQ(model->depth.back(), kLinks);
}

}  // namespace
}  // namespace torqued
