// The MJCF reader on small inline documents, each feature against values worked out by hand:
// default classes and childclass, angle units, every orientation form, inertials in rotated
// frames, MuJoCo's inertia of each primitive geom, joint positions and ref, the base conventions,
// equality constraints as loop closures, what is refused (naming the element and its line) and
// what is warned about, and hostile documents refused before they are parsed. The shared
// menagerie models (../shared/models/mjcf) are read too, panda against its URDF; golden_test
// checks their dynamics.
//
// Tolerances: 1e-12 absolute on numbers of order one (a few roundings of the reader's and the
// test's own formulas), 1e-9 where a quantity goes through a tree's kinematics.
#include "engine/io/mjcf.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <numbers>
#include <random>
#include <string>

#include "engine/algorithms/crba.hpp"
#include "engine/algorithms/kinematics.hpp"
#include "engine/algorithms/rnea.hpp"
#include "engine/io/urdf.hpp"
#include "engine/io/xml_guard.hpp"
#include "engine/model/data.hpp"
#include "tests/engine/support/sanitized_build.hpp"

namespace torqued {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr double kTol = 1e-12;
constexpr double kPi = std::numbers::pi;
const std::string kRadian = "<compiler angle=\"radian\"/>";
// A unit inertial, for bodies whose inertia does not matter to a test.
const std::string kInertial = "<inertial pos=\"0 0 0\" mass=\"1\" diaginertia=\"1 1 1\"/>";

std::string mujoco(const std::string& worldbody, const std::string& before = kRadian,
                   const std::string& after = "") {
  return "<mujoco model=\"m\">" + before + "<worldbody>" + worldbody + "</worldbody>" + after +
         "</mujoco>";
}

// The message of the ModelError the reader throws, or "" when it reads the document.
std::string refusal(const std::string& xml, const MjcfOptions& options = {}) {
  try {
    read_mjcf_string(xml, options);
  } catch (const ModelError& e) {
    return e.what();
  }
  return "";
}

const LinkSpec& link(const ModelSpec& spec, const std::string& name) {
  for (const LinkSpec& l : spec.links) {
    if (l.name == name) return l;
  }
  throw std::runtime_error("no link " + name);
}

const JointSpec& joint(const ModelSpec& spec, const std::string& name) {
  for (const JointSpec& j : spec.joints) {
    if (j.name == name) return j;
  }
  throw std::runtime_error("no joint " + name);
}

Mat3 rotation(const Vec3& axis, double angle) {
  return Eigen::AngleAxisd(angle, axis.normalized()).toRotationMatrix();
}

template <typename A, typename B>
void expect_near(const A& actual, const B& expected, double tol = kTol) {
  EXPECT_LE((actual - expected).cwiseAbs().maxCoeff(), tol) << actual << "\nvs\n" << expected;
}

// The rotational inertia of a link about its centre of mass, in the link frame.
Mat3 inertia_in_link(const LinkSpec& l) {
  const Mat3& r = l.inertial.origin.rotation;
  return r * l.inertial.inertia * r.transpose();
}

// ---- the tree ----------------------------------------------------------------------------------

TEST(MjcfTest, ReadsTheTreeInDocumentOrder) {
  const ModelSpec spec = read_mjcf_string(
      mujoco("<body name='base'>" + kInertial +
             "  <body name='z' pos='1 0 0'><joint name='zj' axis='0 1 0'/>" + kInertial +
             "</body>" + "  <body name='a' pos='0 1 0'><joint name='aj' type='slide'/>" +
             kInertial + "    <body name='ball' pos='0 0 1'><joint name='bj' type='ball'/>" +
             kInertial + "</body></body></body>"));
  EXPECT_EQ(spec.name, "m");
  EXPECT_TRUE(spec.children_in_given_order);
  EXPECT_FALSE(spec.floating_base);
  EXPECT_EQ(joint(spec, "zj").type, JointType::kRevolute);
  expect_near(joint(spec, "zj").axis, Vec3(0, 1, 0));
  expect_near(joint(spec, "zj").origin.translation, Vec3(1, 0, 0));
  EXPECT_EQ(joint(spec, "aj").type, JointType::kPrismatic);
  expect_near(joint(spec, "aj").axis, Vec3(0, 0, 1));  // MuJoCo's default axis
  EXPECT_EQ(joint(spec, "bj").type, JointType::kSpherical);
  EXPECT_EQ(joint(spec, "bj").parent_link, "a");
  const ModelPtr model = build_model(spec);
  // Not the order of the names: the document's.
  EXPECT_THAT(model->joint_names, ElementsAre("universe", "zj", "aj", "bj"));
  EXPECT_EQ(model->nq, 6);
  EXPECT_EQ(model->nv, 5);
}

TEST(MjcfTest, UnnamedBodiesAndJointsTakeMujocosIds) {
  const ModelSpec spec = read_mjcf_string(
      mujoco("<body><body><joint/></body><body name='n'><joint/><body><joint name='x'/>"
             "</body></body></body>"));
  EXPECT_EQ(spec.links[0].name, "body1");
  EXPECT_EQ(joint(spec, "joint0").child_link, "body2");
  EXPECT_EQ(joint(spec, "joint1").child_link, "n");
  EXPECT_EQ(joint(spec, "x").child_link, "body4");
}

TEST(MjcfTest, BodiesWithoutJointsAreWelded) {
  const ModelSpec spec = read_mjcf_string(
      mujoco("<body name='arm'>" + kInertial + "<body name='flange' pos='0 0 0.1' quat='0 0 0 1'>" +
             "<body name='hand'><inertial pos='0.1 0 0' mass='2' diaginertia='1 1 1'/>" +
             "</body></body></body>"));
  const JointSpec& weld = joint(spec, "flange_fixed");
  EXPECT_EQ(weld.type, JointType::kFixed);
  EXPECT_EQ(weld.parent_link, "arm");
  expect_near(weld.origin.translation, Vec3(0, 0, 0.1));
  expect_near(weld.origin.rotation, rotation(Vec3::UnitZ(), kPi));
  // Neither <inertial> nor geoms: no mass (panda's link8).
  EXPECT_EQ(link(spec, "flange").inertial.mass, 0.0);
  const ModelPtr model = build_model(spec);
  EXPECT_EQ(model->nbodies(), 1);
  EXPECT_DOUBLE_EQ(model->inertias[0].mass, 3.0);
  expect_near(model->inertias[0].com(), Vec3(-0.2 / 3, 0, 0.2 / 3));
}

// ---- units and orientations --------------------------------------------------------------------

TEST(MjcfTest, AnglesAreDegreesUnlessTheCompilerSaysRadian) {
  const std::string body = "<body name='b'>" + kInertial + "<body name='c' euler='90 0 0'>" +
                           kInertial + "<joint name='h' range='-90 45'/><body name='d'>" +
                           kInertial +
                           "<joint name='s' type='slide' range='-0.5 2'/></body></body></body>";
  const ModelSpec degrees = read_mjcf_string(mujoco(body, ""));
  EXPECT_DOUBLE_EQ(joint(degrees, "h").limits.lower, -kPi / 2);
  EXPECT_DOUBLE_EQ(joint(degrees, "h").limits.upper, kPi / 4);
  expect_near(joint(degrees, "h").origin.rotation, rotation(Vec3::UnitX(), kPi / 2));
  EXPECT_EQ(joint(degrees, "s").limits.lower, -0.5);  // lengths are not angles
  const ModelSpec radians = read_mjcf_string(mujoco(body));
  EXPECT_EQ(joint(radians, "h").limits.lower, -90.0);
  expect_near(joint(radians, "h").origin.rotation, rotation(Vec3::UnitX(), 90.0));
}

TEST(MjcfTest, LimitsFollowRangeAndLimited) {
  const ModelSpec spec = read_mjcf_string(
      mujoco("<body name='b'>" + kInertial +
             "<body name='c1'><joint name='free_hinge'/></body>"
             "<body name='c2'><joint name='unlimited' range='-1 1' limited='false'/></body>"
             "<body name='c3'><joint name='limited' range='-1 1' limited='true'/></body></body>"));
  EXPECT_TRUE(std::isinf(joint(spec, "free_hinge").limits.lower));
  EXPECT_TRUE(std::isinf(joint(spec, "unlimited").limits.upper));
  EXPECT_EQ(joint(spec, "limited").limits.upper, 1.0);
  EXPECT_TRUE(std::isinf(joint(spec, "limited").limits.velocity));
  EXPECT_THAT(refusal(mujoco("<body name='b'><body name='c'><joint name='j' range='1 -1'/>"
                             "</body></body>")),
              HasSubstr("joint 'j': range must be increasing"));
}

TEST(MjcfTest, EachOrientationForm) {
  const Vec3 x = Vec3::UnitX(), y = Vec3::UnitY(), z = Vec3::UnitZ();
  const struct {
    const char* attributes;
    Mat3 expected;
  } cases[] = {
      {"quat='1 1 0 0'", rotation(x, kPi / 2)},  // normalized
      {"axisangle='0 0 2 1.5707963267948966'", rotation(z, kPi / 2)},
      {"xyaxes='0 1 0 -1 0 0'", rotation(z, kPi / 2)},
      {"xyaxes='0 2 0 -1 0.5 0'", rotation(z, kPi / 2)},  // y made orthogonal to x
      {"zaxis='1 0 0'", rotation(y, kPi / 2)},
      {"zaxis='0 0 -1'", rotation(x, kPi)},  // MuJoCo's choice for the antiparallel case
      {"euler='0.1 0.2 0.3'", rotation(x, 0.1) * rotation(y, 0.2) * rotation(z, 0.3)},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.attributes);
    const ModelSpec spec = read_mjcf_string(
        mujoco("<body name='b'><body name='c' " + std::string(c.attributes) + "/></body>"));
    expect_near(joint(spec, "c_fixed").origin.rotation, c.expected);
  }
  // Lowercase axes move with the frame (intrinsic), uppercase ones stay (extrinsic).
  const struct {
    const char* sequence;
    Mat3 expected;
  } sequences[] = {
      {"XYZ", rotation(z, 0.3) * rotation(y, 0.2) * rotation(x, 0.1)},
      {"zyx", rotation(z, 0.1) * rotation(y, 0.2) * rotation(x, 0.3)},
      {"zYx", rotation(y, 0.2) * rotation(z, 0.1) * rotation(x, 0.3)},
  };
  for (const auto& s : sequences) {
    SCOPED_TRACE(s.sequence);
    const ModelSpec spec = read_mjcf_string(
        mujoco("<body name='b'><body name='c' euler='0.1 0.2 0.3'/></body>",
               "<compiler angle='radian' eulerseq='" + std::string(s.sequence) + "'/>"));
    expect_near(joint(spec, "c_fixed").origin.rotation, s.expected);
  }
  EXPECT_THAT(refusal(mujoco("<body name='b'><body name='c' quat='1 0 0 0' euler='0 0 1'/>"
                             "</body>")),
              HasSubstr("body 'c': several orientations given"));
  EXPECT_THAT(refusal(mujoco("<body/>", "<compiler eulerseq='xyw'/>")), HasSubstr("eulerseq"));
}

// ---- default classes ---------------------------------------------------------------------------

TEST(MjcfTest, DefaultClassesChildclassAndClass) {
  const std::string defaults =
      "<compiler angle='radian'/><default><joint damping='1' axis='1 0 0'/>"
      "<default class='arm'><joint axis='0 1 0' range='-1 1'/>"
      "<default class='elbow'><joint range='0 2'/></default></default>"
      "<default class='slider'><joint type='slide'/></default></default>";
  const ModelSpec spec = read_mjcf_string(mujoco(
      "<body name='base'>" + kInertial + "<body name='b1' childclass='elbow'><joint name='j1'/>" +
          kInertial + "  <body name='b2'><joint name='j2' class='slider'/>" + kInertial +
          "    <body name='b3'><joint name='j3' axis='0 0 1'/>" + kInertial +
          "</body></body></body><body name='b4'><joint name='j4'/>" + kInertial + "</body></body>",
      defaults));
  // elbow inherits arm's axis and overrides its range.
  EXPECT_EQ(joint(spec, "j1").type, JointType::kRevolute);
  expect_near(joint(spec, "j1").axis, Vec3(0, 1, 0));
  EXPECT_EQ(joint(spec, "j1").limits.upper, 2.0);
  // A joint's own class wins over the childclass around it.
  EXPECT_EQ(joint(spec, "j2").type, JointType::kPrismatic);
  expect_near(joint(spec, "j2").axis, Vec3(1, 0, 0));
  EXPECT_TRUE(std::isinf(joint(spec, "j2").limits.upper));
  // The childclass reaches nested bodies; the element's own attributes win.
  expect_near(joint(spec, "j3").axis, Vec3(0, 0, 1));
  EXPECT_EQ(joint(spec, "j3").limits.lower, 0.0);
  // Outside any childclass: the main class.
  expect_near(joint(spec, "j4").axis, Vec3(1, 0, 0));
  EXPECT_THAT(spec.warnings,
              Contains("joint 'j4': damping=\"1\" ignored: only rigid-body terms are modelled"));

  EXPECT_THAT(refusal(mujoco("<body><body><joint class='nope'/></body></body>", defaults)),
              HasSubstr("unknown class 'nope'"));
  EXPECT_THAT(refusal(mujoco("<body childclass='nope'/>", defaults)),
              HasSubstr("unknown class 'nope'"));
  EXPECT_THAT(refusal(mujoco("<body/>", "<default><default><joint/></default></default>")),
              HasSubstr("a nested <default> without a class"));
  EXPECT_THAT(refusal(mujoco("<body/>",
                             "<default><default class='a'/><default class='a'/>"
                             "</default>")),
              HasSubstr("default class 'a' is defined twice"));
}

TEST(MjcfTest, AnElementsOrientationReplacesItsClasss) {
  const ModelSpec spec = read_mjcf_string(
      mujoco("<body name='b'><geom type='box' size='0.1 0.2 0.3' mass='1'/><geom class='turned' "
             "type='box' size='0.1 0.2 0.3' pos='0 0 1' zaxis='0 1 0' mass='1'/></body>",
             "<compiler angle='radian'/><default><default class='turned'><geom quat='0 1 0 0'/>"
             "</default></default>"));
  // The box's moments (0.13/3, 0.1/3, 0.05/3) turned by the zaxis only (z to y: about -x), not
  // by the class's quat too, plus the two boxes' offsets from their common centre.
  const Mat3 box = (Vec3(0.13, 0.10, 0.05) / 3.0).asDiagonal();
  const Mat3 r = rotation(Vec3::UnitX(), -kPi / 2);
  const Mat3 offsets = Vec3(0.5, 0.5, 0.0).asDiagonal();
  expect_near(inertia_in_link(spec.links[0]), box + r * box * r.transpose() + offsets);
}

// ---- inertia -----------------------------------------------------------------------------------

TEST(MjcfTest, DiagonalAndFullInertiaInRotatedFrames) {
  const Mat3 full = (Mat3() << 1, 0.1, 0.2, 0.1, 2, 0.3, 0.2, 0.3, 3).finished();
  const ModelSpec spec = read_mjcf_string(
      mujoco("<body name='d'><inertial pos='0.1 0.2 0.3' quat='0.7071067811865476 0 0 "
             "0.7071067811865476' mass='2' diaginertia='1 2 3'/></body>"));
  expect_near(link(spec, "d").inertial.origin.translation, Vec3(0.1, 0.2, 0.3));
  expect_near(inertia_in_link(link(spec, "d")), Mat3(Vec3(2, 1, 3).asDiagonal()));
  // fullinertia is in the body's axes, or in those of a <frame> around the inertial.
  const ModelSpec in_frame = read_mjcf_string(
      mujoco("<body name='f'><frame euler='0 0 0.5'><inertial pos='1 0 0' mass='2' "
             "fullinertia='1 2 3 0.1 0.2 0.3'/></frame></body>"));
  const Mat3 r = rotation(Vec3::UnitZ(), 0.5);
  expect_near(inertia_in_link(link(in_frame, "f")), r * full * r.transpose());
  expect_near(link(in_frame, "f").inertial.origin.translation, r * Vec3(1, 0, 0));
  EXPECT_EQ(link(in_frame, "f").inertial.mass, 2.0);

  const std::pair<const char*, const char*> refused[] = {
      {"mass='1' quat='1 0 0 0' fullinertia='1 1 1 0 0 0'",
       "fullinertia and quat both orient the inertia"},
      {"diaginertia='1 1 1'", "mass is required"},
      {"mass='1'", "one of diaginertia and fullinertia is required"},
  };
  for (const auto& [attributes, message] : refused) {
    EXPECT_THAT(
        refusal(mujoco("<body><inertial pos='0 0 0' " + std::string(attributes) + "/></body>")),
        HasSubstr(message));
  }
}

// MuJoCo's primitives at density 1000 (its default), against closed forms written out here.
TEST(MjcfTest, InertiaOfEachPrimitiveGeom) {
  const double rho = 1000.0;
  const auto body_of = [](const std::string& geom) {
    return read_mjcf_string(mujoco("<body name='b'>" + geom + "</body>")).links[0];
  };
  {
    const LinkSpec b = body_of("<geom size='0.1'/>");  // a sphere, MuJoCo's default type
    const double m = rho * 4.0 / 3.0 * kPi * 1e-3;
    EXPECT_NEAR(b.inertial.mass, m, kTol);
    expect_near(inertia_in_link(b), Mat3(Mat3::Identity() * 0.4 * m * 0.01));
  }
  {
    const LinkSpec b = body_of("<geom type='box' size='0.1 0.2 0.3'/>");  // half sides
    const double m = rho * 0.2 * 0.4 * 0.6;
    EXPECT_NEAR(b.inertial.mass, m, kTol);
    expect_near(inertia_in_link(b),
                Mat3((m / 12.0 * Vec3(0.16 + 0.36, 0.04 + 0.36, 0.04 + 0.16)).asDiagonal()));
  }
  {
    const LinkSpec b = body_of("<geom type='cylinder' size='0.1 0.2'/>");  // radius, half length
    const double m = rho * kPi * 0.01 * 0.4;
    EXPECT_NEAR(b.inertial.mass, m, kTol);
    const double across = m * (3 * 0.01 + 0.16) / 12.0;
    expect_near(inertia_in_link(b), Mat3(Vec3(across, across, m * 0.01 / 2).asDiagonal()));
  }
  {
    const LinkSpec b = body_of("<geom type='ellipsoid' size='0.1 0.2 0.3'/>");
    const double m = rho * 4.0 / 3.0 * kPi * 0.006;
    EXPECT_NEAR(b.inertial.mass, m, kTol);
    expect_near(inertia_in_link(b),
                Mat3((m / 5.0 * Vec3(0.04 + 0.09, 0.01 + 0.09, 0.01 + 0.04)).asDiagonal()));
  }
  {
    // A cylinder of radius r and half length h, and two hemispheres whose centres of mass are
    // 3r/8 beyond its ends; a hemisphere's moment about a diameter of its base is (2/5) m r².
    const double r = 0.1, h = 0.2;
    const LinkSpec b = body_of("<geom type='capsule' size='0.1 0.2'/>");
    const double m_cylinder = rho * kPi * r * r * 2 * h;
    const double m_hemisphere = rho * 2.0 / 3.0 * kPi * r * r * r;
    EXPECT_NEAR(b.inertial.mass, m_cylinder + 2 * m_hemisphere, kTol);
    const double c = 3 * r / 8;
    const double hemisphere_across =
        0.4 * m_hemisphere * r * r - m_hemisphere * c * c + m_hemisphere * (h + c) * (h + c);
    const double across = m_cylinder * (3 * r * r + 4 * h * h) / 12 + 2 * hemisphere_across;
    const double axial = m_cylinder * r * r / 2 + 2 * 0.4 * m_hemisphere * r * r;
    expect_near(inertia_in_link(b), Mat3(Vec3(across, across, axial).asDiagonal()));
  }
  {
    // fromto: a capsule along x from 0 to 0.4, radius 0.05; mass given instead of density.
    const LinkSpec b = body_of(
        "<geom type='capsule' fromto='0 0 0 0.4 0 0' size='0.05' "
        "mass='3'/>");
    const LinkSpec along_z = body_of("<geom type='capsule' size='0.05 0.2' mass='3'/>");
    EXPECT_NEAR(b.inertial.mass, 3.0, kTol);
    expect_near(b.inertial.origin.translation, Vec3(0.2, 0, 0));
    const Mat3 r = rotation(Vec3::UnitY(), kPi / 2);
    expect_near(inertia_in_link(b), r * inertia_in_link(along_z) * r.transpose());
  }
}

TEST(MjcfTest, GeomsCombineLikeRigidBodies) {
  // Two 1 kg spheres of radius 0.1 at x = ±0.1: the centre between them, and the parallel axis.
  const ModelSpec spec = read_mjcf_string(
      mujoco("<body name='b'><geom size='0.1' pos='0.1 0 0' mass='1'/><geom size='0.1' "
             "pos='-0.1 0 0' mass='1'/><geom size='0.1' pos='5 0 0' group='3'/></body>",
             "<compiler angle='radian' inertiagrouprange='0 2'/>"));
  const LinkSpec& b = link(spec, "b");
  EXPECT_NEAR(b.inertial.mass, 2.0, kTol);  // the group 3 geom is outside the range
  expect_near(b.inertial.origin.translation, Vec3::Zero());
  expect_near(inertia_in_link(b), Mat3(Vec3(0.008, 0.028, 0.028).asDiagonal()));
}

TEST(MjcfTest, InertiaFromGeomCompilerSetting) {
  const std::string body =
      "<body name='b'><inertial pos='0 0 0' mass='7' diaginertia='1 1 1'/><geom size='0.1' "
      "mass='2'/></body><body name='c'><geom size='0.1' mass='3'/></body>";
  // auto (MuJoCo's default): the geoms of bodies without <inertial> only.
  const ModelSpec automatic = read_mjcf_string(mujoco("<body name='r'>" + body + "</body>"));
  EXPECT_EQ(link(automatic, "b").inertial.mass, 7.0);
  EXPECT_EQ(link(automatic, "c").inertial.mass, 3.0);
  const ModelSpec always = read_mjcf_string(
      mujoco("<body name='r'>" + body + "</body>", "<compiler inertiafromgeom='true'/>"));
  EXPECT_EQ(link(always, "b").inertial.mass, 2.0);
  const ModelSpec never = read_mjcf_string(
      mujoco("<body name='r'>" + body + "</body>", "<compiler inertiafromgeom='false'/>"));
  EXPECT_EQ(link(never, "c").inertial.mass, 0.0);
}

TEST(MjcfTest, InertiaFromAMeshIsRefusedNamingTheBody) {
  const std::string xml =
      mujoco("<body name='arm'>" + kInertial +
                 "<geom type='mesh' mesh='arm_mesh'/>\n<body name='hand'>\n<geom class='visual' "
                 "mesh='hand_mesh'/></body></body>",
             "<default><default class='visual'><geom type='mesh'/></default></default>");
  const std::string message = refusal(xml);
  EXPECT_THAT(message, HasSubstr("line 3"));
  EXPECT_THAT(message, HasSubstr("body 'hand' takes its inertia from this geom"));
  EXPECT_THAT(message, HasSubstr("mesh 'hand_mesh'"));
  EXPECT_EQ(refusal(mujoco("<body name='arm'>" + kInertial +
                           "<geom type='mesh' mesh='arm_mesh'/></body>")),
            "");
}

// ---- joints and the base -----------------------------------------------------------------------

// MuJoCo turns a body about its joint's pos: the joint frame is there, the body frame (its link
// frame here) where the file puts it.
TEST(MjcfTest, AJointsPosPlacesTheJointFrameNotTheBody) {
  const ModelPtr model = build_model(read_mjcf_string(
      mujoco("<body name='base'>" + kInertial + "<body name='arm' pos='1 0 0'>" + kInertial +
             "<joint name='elbow' pos='0 0 0.5' axis='0 1 0'/></body></body>")));
  Data data(*model);
  const double angle = 0.7;
  forward_kinematics(*model, data, Eigen::VectorXd::Constant(1, angle));
  const Transform body = frame_placement(*model, data, model->find_frame("arm"));
  const Transform joint_frame = frame_placement(*model, data, model->find_frame("elbow"));
  const Transform pivot{Mat3::Identity(), Vec3(1, 0, 0.5)};
  const Transform turn{rotation(Vec3::UnitY(), angle), Vec3::Zero()};
  const Transform expected = pivot * turn * Transform{Mat3::Identity(), Vec3(0, 0, -0.5)};
  expect_near(body.rotation, expected.rotation);
  expect_near(body.translation, expected.translation);
  expect_near(joint_frame.translation, Vec3(1, 0, 0.5));
}

// MJCF names bodies and joints apart, so a body and its joint may share a name: two frames 0.37 m
// apart, which the bare name must not pick between. Each kind names its own, and building warns.
TEST(MjcfTest, ABodyAndItsJointOfOneNameAreTwoFramesNamedByKind) {
  const ModelPtr model = build_model(read_mjcf_string(
      mujoco("<body name='base'>" + kInertial + "<body name='arm' pos='1 0 0'>" + kInertial +
             "<joint name='arm' pos='0 0 0.37' axis='0 1 0'/></body></body>")));
  EXPECT_EQ(model->frames_meant_by("arm").size(), 2u);
  EXPECT_EQ(model->find_frame("arm"), -1);
  Data data(*model);
  forward_kinematics(*model, data, Eigen::VectorXd::Zero(1));
  const int body = model->find_frame("body:arm");
  const int joint = model->find_frame("joint:arm");
  ASSERT_GE(body, 0);
  ASSERT_GE(joint, 0);
  expect_near(frame_placement(*model, data, body).translation, Vec3(1, 0, 0));
  expect_near(frame_placement(*model, data, joint).translation, Vec3(1, 0, 0.37));
  EXPECT_THAT(model->warnings, Contains(HasSubstr("frame name 'arm' is shared by 2 frames")));
}

// q is MuJoCo's qpos: at q = ref the bodies are where the file puts them.
TEST(MjcfTest, RefIsTheJointValueOfTheFilesConfiguration) {
  const ModelPtr model = build_model(read_mjcf_string(
      mujoco("<body name='base'>" + kInertial + "<body name='arm' pos='1 0 0' euler='0 0 10'>" +
                 kInertial + "<joint name='h' pos='0 0 0.5' axis='0 1 0' ref='30'/>" +
                 "<body name='slider' pos='0 2 0'>" + kInertial +
                 "<joint name='s' type='slide' axis='1 1 0' ref='0.3'/></body></body></body>",
             "")));
  Data data(*model);
  Eigen::VectorXd q(2);
  q << kPi / 6, 0.3;
  forward_kinematics(*model, data, q);
  const Transform arm = frame_placement(*model, data, model->find_frame("arm"));
  expect_near(arm.translation, Vec3(1, 0, 0));
  expect_near(arm.rotation, rotation(Vec3::UnitZ(), 10 * kPi / 180));
  const Transform slider = frame_placement(*model, data, model->find_frame("slider"));
  expect_near(slider.translation, arm.act(Vec3(0, 2, 0)));
}

TEST(MjcfTest, TheRootsFreeJointIsTheFloatingBase) {
  const std::string xml =
      mujoco("<body name='base' pos='0 0 0.445'><freejoint name='fly'/>" + kInertial +
             "<body name='leg'><joint name='hip'/>" + kInertial + "</body></body>");
  const ModelSpec as_in_file = read_mjcf_string(xml);
  EXPECT_TRUE(as_in_file.floating_base);
  EXPECT_EQ(as_in_file.joints.size(), 1u);  // the file's free joint is root_joint's place
  EXPECT_EQ(as_in_file.links[0].name, "base");
  const ModelPtr floating = build_model(as_in_file);
  EXPECT_THAT(floating->joint_names, ElementsAre("universe", "root_joint", "hip"));
  const ModelSpec fixed = read_mjcf_string(xml, {.floating_base = false});
  EXPECT_FALSE(fixed.floating_base);
  EXPECT_EQ(build_model(fixed)->nv, 1);
  // A root body without joints floats only when asked to.
  const std::string welded = mujoco("<body name='base'>" + kInertial + "</body>");
  EXPECT_FALSE(read_mjcf_string(welded).floating_base);
  EXPECT_TRUE(read_mjcf_string(welded, {.floating_base = true}).floating_base);
}

TEST(MjcfTest, ARootBodyWithAnotherJointMovesInTheWorld) {
  const std::string xml = mujoco(
      "<body name='cart' pos='0 0 1'><joint name='slider' "
      "type='slide' axis='1 0 0'/>" +
      kInertial + "</body>");
  const ModelSpec spec = read_mjcf_string(xml);
  EXPECT_EQ(spec.links[0].name, "world");
  EXPECT_EQ(spec.links[0].inertial.mass, 0.0);
  expect_near(joint(spec, "slider").origin.translation, Vec3(0, 0, 1));
  EXPECT_EQ(build_model(spec)->nv, 1);
  EXPECT_THAT(refusal(xml, {.floating_base = true}),
              HasSubstr("root body 'cart' has joint 'slider': a floating base is a free joint"));
}

TEST(MjcfTest, RefusesWhatItDoesNotModel) {
  const std::pair<std::string, const char*> refused[] = {
      {mujoco("<body name='b'><body name='two'><joint name='x'/><joint name='y'/></body></body>"),
       "body 'two' has several joints ('x', 'y')"},
      {mujoco("<body name='b'><body name='c'><freejoint/></body></body>"),
       "a free joint on body 'c', which is not the root body"},
      {mujoco("<body name='a'/><body name='b'/>"), "body 'b' is a second top-level body"},
      {mujoco(""), "<worldbody> holds no <body>"},
      {mujoco("<body><composite type='rope'/></body>"),
       "<composite> in body 'body1' is not supported"},
      {mujoco("<body>\n<gizmo/></body>"), "line 2: unknown element <gizmo> in body 'body1'"},
      {mujoco("<body/>", "<compiler boundmass='0.1'/>"), "boundmass is not supported"},
      {mujoco("<body/>", "<compiler coordinate='global'/>"),
       "coordinate=\"global\" is not supported"},
      {"<robot name='r'/>", "the root element is <robot>"},
  };
  for (const auto& [xml, message] : refused) EXPECT_THAT(refusal(xml), HasSubstr(message)) << xml;
}

TEST(MjcfTest, IncludeIsRefusedNamingTheFile) {
  EXPECT_THAT(refusal("<mujoco model='m'>\n<include file='robot/arm.xml'/><worldbody/></mujoco>"),
              HasSubstr("MJCF line 2: <include> of 'robot/arm.xml': included files are not read"));
}

TEST(MjcfTest, MalformedNumbersAreRefusedNamingTheAttribute) {
  EXPECT_THAT(refusal(mujoco("<body pos='0 0 x'/>")),
              HasSubstr("pos='0 0 x' is not a list of finite numbers"));
  EXPECT_THAT(refusal(mujoco("<body pos='0 0 nan'/>")), HasSubstr("not a list of finite"));
  EXPECT_THAT(refusal(mujoco("<body pos='0 0'/>")), HasSubstr("has 2 numbers, 3 expected"));
  EXPECT_THAT(refusal(mujoco("<body><joint type='twist'/></body>")),
              HasSubstr("type='twist' is not one of free, ball, slide, hinge"));
}

// ---- gravity, warnings -------------------------------------------------------------------------

TEST(MjcfTest, GravityComesFromOptionUnlessGiven) {
  const std::string body = "<body>" + kInertial + "</body>";
  expect_near(read_mjcf_string(mujoco(body)).gravity, Vec3(0, 0, -9.81));
  expect_near(read_mjcf_string(mujoco(body, "<option gravity='0 0 -1.62'/>")).gravity,
              Vec3(0, 0, -1.62));
  expect_near(read_mjcf_string(mujoco(body, "<option><flag gravity='disable'/></option>")).gravity,
              Vec3::Zero());
  expect_near(read_mjcf_string(mujoco(body, "<option gravity='0 0 -1.62'/>"),
                               {.gravity = Vec3(0, -9.81, 0)})
                  .gravity,
              Vec3(0, -9.81, 0));
}

TEST(MjcfTest, WarnsOncePerIgnoredKind) {
  const ModelSpec spec = read_mjcf_string(
      mujoco("<light/><geom type='plane' size='1 1 1'/><body name='b' gravcomp='1'>" + kInertial +
                 "<geom size='0.1'/><geom size='0.2'/><site/><site/><body name='c'><joint name='j' "
                 "armature='0.1' frictionloss='0' stiffness='5'/>" +
                 kInertial + "</body></body>",
             kRadian + "<asset><mesh file='a.stl'/></asset><option density='1.2'/>",
             "<actuator><motor joint='j'/></actuator><actuator/><sensor/><keyframe/>"));
  EXPECT_THAT(spec.warnings,
              ElementsAre("<asset> ignored: meshes, textures and materials are not read (no "
                          "file is opened)",
                          "<light> ignored: no bearing on the dynamics",
                          "<geom> ignored: contacts are not modelled (geoms only give the "
                          "mass and inertia of bodies without <inertial>)",
                          "<site> ignored: sites are not read as frames of the model",
                          "<actuator> ignored: actuators are not modelled (joint torques "
                          "are the caller's)",
                          "<sensor> ignored: sensors are not modelled",
                          "<keyframe> ignored: keyframes are not read",
                          "<option> density and viscosity ignored: fluid forces are not "
                          "modelled",
                          "body 'b': gravcomp=\"1\" ignored: gravity acts on the whole body",
                          "joint 'j': armature=\"0.1\" stiffness=\"5\" ignored: only "
                          "rigid-body terms are modelled"));
}

// ---- equality constraints ----------------------------------------------------------------------

// Two arms hinged on a base; the constraints between them hold at the reference configuration
// (q = 0): each closure's two frames coincide there, as MuJoCo computes its anchors.
TEST(MjcfTest, ConnectAndWeldBecomeLoopClosures) {
  const std::string arms =
      "<body name='base' pos='5 5 5' euler='0.3 0 0'>" + kInertial +
      "<body name='a' pos='1 0 0' euler='0 0 0.4'><joint name='ja' axis='0 1 0'/>" + kInertial +
      "</body><body name='b' pos='-1 0 0' euler='0.2 0 0'><joint name='jb' axis='0 1 0'/>" +
      kInertial + "</body></body>";
  const std::string equalities =
      "<equality><connect body1='a' body2='b' anchor='0.5 0 0'/>"
      "<weld name='held' body1='a' body2='b' anchor='0 0.1 0'/>"
      "<connect body1='b' anchor='0 0 1'/>"
      "<weld body1='a' body2='b' relpose='0.1 0.2 0.3 1 0 0 0'/>"
      "<weld body1='a' torquescale='0'/>"
      "<joint joint1='ja' joint2='jb'/><connect body1='a' body2='b' anchor='0 0 0' "
      "active='false'/></equality>";
  const ModelSpec spec = read_mjcf_string(mujoco(arms, kRadian, equalities));
  ASSERT_EQ(spec.loop_closures.size(), 5u);
  const LoopClosureSpec& connect = spec.loop_closures[0];
  EXPECT_EQ(connect.name, "equality0");
  EXPECT_EQ(connect.type, ConstraintType::kPoint);
  EXPECT_EQ(connect.link1, "a");
  expect_near(connect.origin1.translation, Vec3(0.5, 0, 0));
  EXPECT_EQ(spec.loop_closures[1].name, "held");
  EXPECT_EQ(spec.loop_closures[1].type, ConstraintType::kWeld);
  expect_near(spec.loop_closures[1].origin2.translation, Vec3(0, 0.1, 0));
  EXPECT_EQ(spec.loop_closures[2].link2, "");  // the world
  expect_near(spec.loop_closures[3].origin1.translation, Vec3(0.1, 0.2, 0.3));
  EXPECT_EQ(spec.loop_closures[4].type, ConstraintType::kPoint);
  EXPECT_THAT(spec.warnings,
              Contains("equality 'equality5': <joint> joint1='ja' joint2='jb' ignored: the "
                       "coordinates it couples stay independent"));
  EXPECT_THAT(spec.warnings,
              Contains("equality 'equality6': inactive at the start (active=\"false\"), ignored"));

  const ModelPtr model = build_model(spec);
  Data data(*model);
  forward_kinematics(*model, data, Eigen::VectorXd::Zero(model->nq));
  for (std::size_t i : {0, 1, 2, 4}) {
    SCOPED_TRACE(spec.loop_closures[i].name);
    const BilateralConstraint& c = model->loop_closures[i];
    const Transform one = data.oMi[c.body1] * c.placement1;
    const Transform two = data.oMi[c.body2] * c.placement2;
    expect_near(one.translation, two.translation);
    if (c.type == ConstraintType::kWeld) expect_near(one.rotation, two.rotation);
  }

  EXPECT_THAT(refusal(mujoco(arms, kRadian, "<equality><connect site1='s' site2='t'/></equality>")),
              HasSubstr("site-based constraints (site1, site2) are not supported"));
  EXPECT_THAT(refusal(mujoco(arms, kRadian, "<equality><weld body1='a' body2='nope'/></equality>")),
              HasSubstr("unknown body 'nope'"));
}

// ---- hostile documents -------------------------------------------------------------------------

std::string chain(int bodies) {
  std::string xml = "<mujoco model='chain'><worldbody>";
  for (int i = 0; i < bodies; ++i) {
    xml += "<body name='b";
    xml += std::to_string(i);
    xml += "' pos='0 0 0.1'><joint/><geom size='0.05'/>";
  }
  for (int i = 0; i < bodies; ++i) xml += "</body>";
  return xml + "</worldbody></mujoco>";
}

TEST(MjcfTest, HostileDocumentsAreRefusedBeforeTheyAreParsed) {
  const auto start = std::chrono::steady_clock::now();
  // Nesting: deeper than kMaxMjcfDepth, 40,000 levels (TinyXML's recursion overflows its stack).
  std::string deep = "<mujoco model='m'><worldbody>";
  for (int i = 0; i < 40000; ++i) deep += "<body>";
  EXPECT_THAT(refusal(deep), HasSubstr("invalid MJCF: line 1: elements nested deeper than 1100"));
  // Attributes: on one element, and 200,000 of them (TinyXML's quadratic duplicate check).
  std::string attributes = "<mujoco model='m'><worldbody><body";
  for (int i = 0; i < 200000; ++i) attributes += " a" + std::to_string(i) + "='1'";
  EXPECT_THAT(refusal(attributes + "/></worldbody></mujoco>"),
              HasSubstr("element <body> has more than 64 attributes"));
  // Bodies: more than the caller takes.
  try {
    read_mjcf_string(chain(5), {.max_bodies = 4});
    FAIL() << "accepted";
  } catch (const TooManyElementsError& e) {
    EXPECT_THAT(e.what(), HasSubstr("more than 4 <body> elements"));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, test_support::kSanitizedBuild ? 10.0 : 1.0);
}

// At the caps, the documents that make the reader work hardest (every node a geom whose inertia
// it computes, or a default class it copies; a class with every attribute an element may hold,
// given to every geom) read in milliseconds: what a class keeps does not grow with what its
// elements hold. The bound is loose, for a loaded machine: 2 s, 10 s under a sanitizer.
TEST(MjcfTest, DocumentsAtTheCapsReadInMilliseconds) {
  const std::size_t count = kMaxMjcfNodes - 100;
  std::string geoms;
  for (std::size_t i = 0; i < count; ++i) geoms += "<geom size='0.1'/>";
  std::string classes;
  for (std::size_t i = 0; i < count / 2; ++i) {
    classes += "<default class='c" + std::to_string(i) + "'><geom size='0.1'/></default>";
  }
  std::string attributes = "<default><geom";
  for (std::size_t i = 0; i + 1 < kMaxMjcfElementAttributes; ++i) {
    attributes += " a" + std::to_string(i) + "='1'";
  }
  attributes += " size='0.1'/></default>";
  const struct {
    const char* what;
    std::string xml;
  } documents[] = {
      {"geoms at the node cap", mujoco("<body>" + geoms + "</body>")},
      {"classes at the node cap",
       mujoco("<body><geom class='c0'/></body>", "<default>" + classes + "</default>")},
      {"a full default class for every geom",
       mujoco("<body>" + geoms.substr(0, geoms.size() / 2) + "</body>", attributes)},
  };
  const double bound_ms = test_support::kSanitizedBuild ? 10000.0 : 2000.0;
  for (const auto& document : documents) {
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(refusal(document.xml), "") << document.what;
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::cout << document.what << ": " << document.xml.size() << " bytes read in " << ms << " ms\n";
    EXPECT_LT(ms, bound_ms) << document.what;
  }
}

// The deepest model the server takes by default (1,024 bodies, --max-bodies), as one chain.
TEST(MjcfTest, AChainOf1024BodiesLoads) {
  const ModelPtr model = build_model(read_mjcf_string(chain(1024), {.max_bodies = 1024}));
  EXPECT_EQ(model->nv, 1024);
}

// ---- the shared menagerie models ---------------------------------------------------------------

const std::filesystem::path kMjcfDir = std::filesystem::path(TORQUED_SHARED_DIR) / "models/mjcf";

TEST(MjcfTest, ReadsTheSharedModels) {
  if (!std::filesystem::exists(kMjcfDir)) GTEST_SKIP() << kMjcfDir << " is absent";
  const ModelSpec go2 = read_mjcf_file((kMjcfDir / "go2.xml").string());
  EXPECT_TRUE(go2.floating_base);  // its <freejoint/>
  const ModelPtr go2_model = build_model(go2);
  EXPECT_EQ(go2_model->nq, 19);
  EXPECT_EQ(go2_model->joint_names[2], "FL_hip_joint");  // FL, FR, RL, RR: the file's order
  EXPECT_EQ(go2_model->joint_names[5], "FR_hip_joint");
  EXPECT_THAT(go2.warnings, Contains("joint 'RR_calf_joint': damping=\"2\" armature=\"0.01\" "
                                     "frictionloss=\"0.2\" ignored: only rigid-body terms are "
                                     "modelled"));

  const ModelSpec panda = read_mjcf_file((kMjcfDir / "panda.xml").string());
  EXPECT_FALSE(panda.floating_base);
  EXPECT_EQ(joint(panda, "finger_joint2").type, JointType::kPrismatic);  // from class finger
  EXPECT_EQ(link(panda, "link8").inertial.mass, 0.0);
  EXPECT_EQ(build_model(panda)->nv, 9);
  EXPECT_THAT(panda.warnings, Contains(HasSubstr("joint1='finger_joint1' joint2='finger_joint2' "
                                                 "ignored")));
  EXPECT_THROW(read_mjcf_file((kMjcfDir / "absent.xml").string()), ModelError);
}

// Menagerie's panda.xml and the panda.urdf it was made from describe one robot with numbers of 7
// to 8 significant digits (the hand's quaternion 0.9238795, for one): at random states, M agrees
// to 1.1e-10 and RNEA to 1.1e-9 of their largest entries, the arm's joint origins to 1e-15 m and
// the fingers' to 7e-10 m, and the links' masses exactly. The model ids differ: the joints and
// links are named apart (joint1, panda_joint1).
TEST(MjcfTest, PandaAgreesWithItsUrdfToThePrecisionOfTheFiles) {
  const std::filesystem::path urdf = kMjcfDir.parent_path() / "panda.urdf";
  if (!std::filesystem::exists(kMjcfDir) || !std::filesystem::exists(urdf)) {
    GTEST_SKIP() << kMjcfDir << " or " << urdf << " is absent";
  }
  const ModelPtr from_urdf = build_model(read_urdf_file(urdf.string()));
  const ModelPtr from_mjcf = build_model(read_mjcf_file((kMjcfDir / "panda.xml").string()));
  ASSERT_EQ(from_mjcf->nv, from_urdf->nv);
  for (int i = 1; i < from_urdf->nbodies(); ++i) {
    EXPECT_EQ(from_mjcf->inertias[i].mass, from_urdf->inertias[i].mass) << i;
  }
  Data urdf_data(*from_urdf), mjcf_data(*from_mjcf);
  std::mt19937 random(3);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (int state = 0; state < 20; ++state) {
    Eigen::VectorXd q(from_urdf->nq), v(from_urdf->nv), a(from_urdf->nv);
    for (int i = 0; i < from_urdf->nv; ++i) {
      q[i] = uniform(random);
      v[i] = uniform(random);
      a[i] = uniform(random);
    }
    q.tail(2).setConstant(0.02);  // the fingers, within their range
    const Eigen::MatrixXd mass = crba(*from_urdf, urdf_data, q);
    EXPECT_LE((crba(*from_mjcf, mjcf_data, q) - mass).cwiseAbs().maxCoeff(),
              2e-10 * mass.cwiseAbs().maxCoeff());
    const Eigen::VectorXd tau = rnea(*from_urdf, urdf_data, q, v, a);
    EXPECT_LE((rnea(*from_mjcf, mjcf_data, q, v, a) - tau).cwiseAbs().maxCoeff(),
              2e-9 * tau.cwiseAbs().maxCoeff());
    forward_kinematics(*from_urdf, urdf_data, q);
    forward_kinematics(*from_mjcf, mjcf_data, q);
    for (int i = 1; i < from_urdf->nbodies(); ++i) {
      // The arm's joints within 1e-15 m; the fingers' 7.0e-10 m apart, below the hand's rotation
      // of 45° given to 7 digits.
      EXPECT_LE((mjcf_data.oMi[i].translation - urdf_data.oMi[i].translation).norm(),
                i <= 7 ? 1e-14 : 1e-9)
          << from_urdf->joint_names[i];
    }
  }
}

}  // namespace
}  // namespace torqued
