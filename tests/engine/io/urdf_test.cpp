// The URDF reader: parse errors and validation errors that name the element at fault, the joint
// type mapping, ignored-but-reported tags, planar joints with a normal other than +z, and every
// robot in ../shared/models against the layout (joint order, idx_q/idx_v, merged inertias, joint
// and link placements) of Pinocchio's reference files in ../shared/golden.
#include "engine/io/urdf.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "engine/algorithms/kinematics.hpp"
#include "engine/model/data.hpp"

namespace torqued {
namespace {

// Results exact up to the rounding of a handful of operations on numbers of order one: 16 ulps
// (3.6e-15), a bound that holds in any IEEE-754 build, whether the compiler contracts a multiply
// and an add into one FMA (which rounds once where they round twice) or not.
constexpr double kRounding = 16 * std::numeric_limits<double>::epsilon();

using nlohmann::json;
using ::testing::HasSubstr;

constexpr double kInf = std::numeric_limits<double>::infinity();

const std::filesystem::path kSharedDir = TORQUED_SHARED_DIR;

std::string robot(const std::string& body) {
  return "<?xml version=\"1.0\"?>\n<robot name=\"test_robot\">\n" + body + "</robot>\n";
}

std::string link(const std::string& name, double mass = 1.0) {
  return "<link name=\"" + name + "\"><inertial><origin xyz=\"0 0 0\"/><mass value=\"" +
         std::to_string(mass) +
         "\"/><inertia ixx=\"0.1\" ixy=\"0\" ixz=\"0\" iyy=\"0.1\" iyz=\"0\" izz=\"0.1\"/>"
         "</inertial></link>\n";
}

std::string joint(const std::string& name, const std::string& type, const std::string& parent,
                  const std::string& child, const std::string& extra = "") {
  return "<joint name=\"" + name + "\" type=\"" + type + "\"><parent link=\"" + parent +
         "\"/><child link=\"" + child + "\"/>" + extra + "</joint>\n";
}

const std::string kLimit = "<limit lower=\"-1\" upper=\"2\" effort=\"30\" velocity=\"4\"/>";

// read_urdf_string + build_model, expecting a ModelError; returns its message.
std::string load_error(const std::string& xml) {
  try {
    build_model(read_urdf_string(xml));
  } catch (const ModelError& e) {
    return e.what();
  }
  ADD_FAILURE() << "the URDF was accepted";
  return {};
}

std::vector<std::string> warnings_containing(const std::vector<std::string>& warnings,
                                             const std::string& text) {
  std::vector<std::string> out;
  for (const std::string& w : warnings) {
    if (w.find(text) != std::string::npos) out.push_back(w);
  }
  return out;
}

double max_abs_diff(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  return (a - b).cwiseAbs().maxCoeff();
}

// ---------------------------------------------------------------------------------------------
// Errors

TEST(UrdfErrors, MalformedXml) {
  const std::string message = load_error("<robot name=\"r\"><link name=\"a\">");
  EXPECT_THAT(message, HasSubstr("invalid URDF"));
}

TEST(UrdfErrors, NotARobot) {
  EXPECT_THAT(load_error("<model name=\"r\"/>"), HasSubstr("invalid URDF"));
}

TEST(UrdfErrors, MissingFile) {
  try {
    read_urdf_file("/nonexistent/dir/robot.urdf");
    FAIL() << "no error for a missing file";
  } catch (const ModelError& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot read URDF file '/nonexistent/dir/robot.urdf'"));
  }
}

TEST(UrdfErrors, UnknownJointTypeNamesTheJoint) {
  const std::string message =
      load_error(robot(link("a") + link("b") + joint("wobble", "wobbly", "a", "b")));
  EXPECT_THAT(message, HasSubstr("wobble"));
  EXPECT_THAT(message, HasSubstr("wobbly"));
}

TEST(UrdfErrors, UnknownLinkIsNamed) {
  const std::string message = load_error(robot(link("a") + joint("j", "fixed", "a", "nowhere")));
  EXPECT_THAT(message, HasSubstr("nowhere"));
}

TEST(UrdfErrors, TwoRootsAreNamed) {
  const std::string message = load_error(robot(link("left_root") + link("right_root")));
  EXPECT_THAT(message, HasSubstr("left_root"));
  EXPECT_THAT(message, HasSubstr("right_root"));
}

// urdfdom reads a link or a joint named ""; the reader refuses it, naming the line.
TEST(UrdfErrors, EmptyNamesAreRefusedWithTheirLine) {
  // robot() puts the <robot> tag on line 2, and each link and joint on a line of its own.
  EXPECT_THAT(load_error(robot(link("a") + link(""))),
              HasSubstr("invalid URDF: line 4: <link> with an empty name"));
  EXPECT_THAT(load_error(robot(link("a") + link("b") + joint("", "revolute", "a", "b"))),
              HasSubstr("invalid URDF: line 5: <joint> with an empty name"));
}

TEST(UrdfErrors, LinkWithTwoParents) {
  // urdfdom silently keeps one of the two parents; build_model sees both joints.
  const std::string message =
      load_error(robot(link("r") + link("a") + link("b") + link("c") +
                       joint("ra", "fixed", "r", "a") + joint("rb", "fixed", "r", "b") +
                       joint("j1", "fixed", "a", "c") + joint("j2", "fixed", "b", "c")));
  EXPECT_THAT(message, HasSubstr("link 'c' is the child of two joints"));
}

// Joints in a cycle are refused before urdfdom parses the document: urdfdom links the tree with
// shared pointers and leaked every such document (found by tests/fuzz/urdf_fuzzer; the leak
// itself is caught by LeakSanitizer in the ASan stage of tests/run.sh).
TEST(UrdfErrors, JointCyclesAreRefusedNamingTheJoint) {
  EXPECT_THAT(load_error(robot(link("base") + link("arm") + joint("j", "revolute", "base", "arm") +
                               joint("spin", "continuous", "arm", "arm"))),
              HasSubstr("joint 'spin' closes a cycle of joints through link 'arm'"));
  EXPECT_THAT(load_error(robot(link("r") + link("a") + link("b") + link("c") +
                               joint("ra", "fixed", "r", "a") + joint("ab", "fixed", "a", "b") +
                               joint("bc", "fixed", "b", "c") + joint("ca", "fixed", "c", "a"))),
              HasSubstr("closes a cycle of joints through link"));
  // A cycle away from the root, which urdfdom would have accepted.
  EXPECT_THAT(load_error(robot(link("r") + link("a") + link("b") + joint("ab", "fixed", "a", "b") +
                               joint("ba", "fixed", "b", "a"))),
              HasSubstr("closes a cycle of joints"));
  // TinyXML would decode an entity: the name this check reads would not be urdfdom's.
  EXPECT_THAT(load_error(robot(link("r") + link("a") + joint("j", "fixed", "r", "&#97;"))),
              HasSubstr("joint 'j': entity references in link names are not supported"));
}

TEST(UrdfErrors, NegativeMassNamesTheLink) {
  const std::string message = load_error(
      robot(link("base") + link("bad_link", -2.0) + joint("j", "continuous", "base", "bad_link")));
  EXPECT_THAT(message, HasSubstr("'bad_link'"));
  EXPECT_THAT(message, HasSubstr("negative mass"));
}

TEST(UrdfErrors, InertiaNotPositiveSemiDefinite) {
  const std::string xml =
      robot(link("base") +
            "<link name=\"bad_link\"><inertial><mass value=\"1\"/>"
            "<inertia ixx=\"0.1\" ixy=\"0.5\" ixz=\"0\" iyy=\"0.1\" iyz=\"0\" izz=\"0.1\"/>"
            "</inertial></link>" +
            joint("j", "continuous", "base", "bad_link"));
  EXPECT_THAT(load_error(xml), HasSubstr("link 'bad_link': rotational inertia is not positive"));
}

TEST(UrdfErrors, ZeroAxisNamesTheJoint) {
  const std::string message = load_error(
      robot(link("base") + link("arm") +
            joint("bad_joint", "revolute", "base", "arm", "<axis xyz=\"0 0 0\"/>" + kLimit)));
  EXPECT_THAT(message, HasSubstr("joint 'bad_joint': zero axis"));
}

TEST(UrdfErrors, ZeroPlanarNormalNamesTheJoint) {
  const std::string message =
      load_error(robot(link("base") + link("arm") +
                       joint("bad_joint", "planar", "base", "arm", "<axis xyz=\"0 0 0\"/>")));
  EXPECT_THAT(message, HasSubstr("joint 'bad_joint': zero axis"));
}

TEST(UrdfErrors, NonFiniteOriginNamesTheJoint) {
  const std::string message = load_error(
      robot(link("base") + link("arm") +
            joint("bad_joint", "continuous", "base", "arm", "<origin xyz=\"nan 0 0\"/>")));
  EXPECT_THAT(message, HasSubstr("bad_joint"));
}

// urdfdom cannot parse "inf" and logs an error but still returns the link, massless.
TEST(UrdfErrors, NonFiniteMassNamesTheLink) {
  const std::string xml =
      robot(link("base") +
            "<link name=\"bad_link\"><inertial><mass value=\"inf\"/>"
            "<inertia ixx=\"0.1\" ixy=\"0\" ixz=\"0\" iyy=\"0.1\" iyz=\"0\" izz=\"0.1\"/>"
            "</inertial></link>" +
            joint("j", "continuous", "base", "bad_link"));
  EXPECT_THAT(load_error(xml), HasSubstr("bad_link"));
}

TEST(UrdfErrors, MessagesStayOnTheirThread) {
  std::vector<std::string> messages(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &messages] {
      const std::string name = "missing_link_" + std::to_string(t);
      for (int k = 0; k < 50; ++k) {
        try {
          read_urdf_string(robot(link("a") + joint("j", "fixed", "a", name)));
        } catch (const ModelError& e) {
          if (std::string(e.what()).find(name) == std::string::npos) messages[t] = e.what();
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::string& m : messages) EXPECT_EQ(m, "");
}

// ---------------------------------------------------------------------------------------------
// Mapping

TEST(Urdf, JointTypesLimitsAndNames) {
  const std::string xml =
      robot(link("base") + link("r") + link("c") + link("p") + link("f") + link("w") +
            joint("a_revolute", "revolute", "base", "r", "<axis xyz=\"0 1 0\"/>" + kLimit) +
            joint("b_continuous", "continuous", "r", "c", kLimit) +
            joint("c_prismatic", "prismatic", "c", "p", "<axis xyz=\"0 0 2\"/>" + kLimit) +
            joint("d_floating", "floating", "p", "f") + joint("e_fixed", "fixed", "f", "w"));
  const ModelSpec spec = read_urdf_string(xml);
  EXPECT_EQ(spec.name, "test_robot");
  const ModelPtr model = build_model(spec);
  EXPECT_EQ(model->name, "test_robot");
  ASSERT_EQ(model->nbodies(), 5);
  EXPECT_EQ(model->joints[1].type, JointType::kRevolute);
  EXPECT_EQ(model->joints[1].axis_kind, AxisKind::kY);
  EXPECT_EQ(model->joints[2].type, JointType::kContinuous);
  EXPECT_EQ(model->joints[2].axis_kind, AxisKind::kX);  // URDF's default axis
  EXPECT_EQ(model->joints[3].type, JointType::kPrismatic);
  EXPECT_EQ(model->joints[3].axis_kind, AxisKind::kZ);
  EXPECT_EQ(model->joints[4].type, JointType::kFreeFlyer);
  EXPECT_EQ(model->nq, 3 + 7);
  EXPECT_EQ(model->nv, 3 + 6);

  EXPECT_EQ(model->limits[1].lower, -1.0);
  EXPECT_EQ(model->limits[1].upper, 2.0);
  EXPECT_EQ(model->limits[1].effort, 30.0);
  EXPECT_EQ(model->limits[1].velocity, 4.0);
  // A continuous joint has no position limits even if the file gives some.
  EXPECT_EQ(model->limits[2].lower, -kInf);
  EXPECT_EQ(model->limits[2].upper, kInf);
  EXPECT_EQ(model->limits[2].velocity, 4.0);
  EXPECT_EQ(model->limits[3].upper, 2.0);
  EXPECT_EQ(model->limits[4].lower, -kInf);

  EXPECT_EQ(model->frames[model->find_frame("w")].kind, FrameKind::kFixedLink);
  EXPECT_EQ(model->frames[model->find_frame("e_fixed")].kind, FrameKind::kJoint);
  EXPECT_EQ(model->inertias[4].mass, 2.0);
  EXPECT_TRUE(model->warnings.empty()) << ::testing::PrintToString(model->warnings);
}

// A quadruped's description names its joints after their child links (FL_hip, FL_knee, ...): two
// frames per name, which registration reports one name at a time and requests name by kind.
TEST(Urdf, AJointNamedAfterItsLinkGivesTwoFramesNamedByKind) {
  const std::string xml = robot(link("base") + link("FL_hip") + link("FL_knee") +
                                joint("FL_hip", "revolute", "base", "FL_hip", kLimit) +
                                joint("FL_knee", "revolute", "FL_hip", "FL_knee", kLimit));
  const ModelPtr model = build_model(read_urdf_string(xml));
  for (const std::string name : {"FL_hip", "FL_knee"}) {
    EXPECT_EQ(model->find_frame(name), -1) << name;
    const int joint = model->find_frame("joint:" + name);
    const int body = model->find_frame("body:" + name);
    ASSERT_GE(joint, 0) << name;
    ASSERT_GE(body, 0) << name;
    EXPECT_EQ(model->frames[joint].kind, FrameKind::kJoint);
    EXPECT_EQ(model->frames[body].kind, FrameKind::kBody);
    EXPECT_EQ(model->frames[joint].body, model->frames[body].body);
    EXPECT_EQ(warnings_containing(model->warnings, "frame name '" + name + "' is shared").size(),
              1u);
  }
  EXPECT_EQ(model->warnings.size(), 2u) << ::testing::PrintToString(model->warnings);
}

TEST(Urdf, OriginsAndInertialsAreRead) {
  const std::string xml = robot(
      "<link name=\"base\"/>"
      "<link name=\"arm\"><inertial><origin xyz=\"0.1 0.2 0.3\" rpy=\"0 0 1.5707963267948966\"/>"
      "<mass value=\"2\"/><inertia ixx=\"0.1\" ixy=\"0\" ixz=\"0\" iyy=\"0.2\" iyz=\"0\" "
      "izz=\"0.3\"/></inertial></link>" +
      joint("j", "continuous", "base", "arm",
            "<origin xyz=\"1 2 3\" rpy=\"1.5707963267948966 0 0\"/><axis xyz=\"0 0 1\"/>"));
  const ModelPtr model = build_model(read_urdf_string(xml));
  EXPECT_EQ(model->inertias[0].mass, 0.0);  // no <inertial>: zero inertia
  EXPECT_TRUE(model->inertias[0].rotational.isZero(0.0));
  const Transform& placement = model->joint_placements[1];
  EXPECT_LT(max_abs_diff(placement.translation, Vec3(1.0, 2.0, 3.0)), kRounding);
  Mat3 rx90;
  rx90 << 1, 0, 0, 0, 0, -1, 0, 1, 0;
  EXPECT_LT(max_abs_diff(placement.rotation, rx90), kRounding);
  EXPECT_LT(max_abs_diff(model->inertias[1].com(), Vec3(0.1, 0.2, 0.3)), kRounding);
  EXPECT_LT(
      max_abs_diff(model->inertias[1].inertia_about_com(), Mat3(Vec3(0.2, 0.1, 0.3).asDiagonal())),
      kRounding);
}

TEST(Urdf, OptionsSetBaseAndGravity) {
  const std::string xml =
      robot(link("base") + link("arm") + joint("j", "continuous", "base", "arm"));
  UrdfOptions options;
  options.floating_base = true;
  options.gravity = Vec3(0.0, 0.0, -1.62);
  const ModelPtr model = build_model(read_urdf_string(xml, options));
  EXPECT_TRUE(model->floating_base);
  EXPECT_EQ(model->joint_names[1], "root_joint");
  EXPECT_EQ(model->nq, 8);
  EXPECT_EQ(model->gravity, Vec3(0.0, 0.0, -1.62));
}

TEST(Urdf, GeometryAndPluginsAreIgnored) {
  const std::string xml = robot(
      "<link name=\"base\"><visual><geometry><mesh filename=\"package://nowhere/base.dae\"/>"
      "</geometry></visual><collision><geometry><mesh filename=\"package://nowhere/base.stl\"/>"
      "</geometry></collision></link>" +
      link("arm") + joint("j", "continuous", "base", "arm") +
      "<transmission name=\"t\"><type>transmission_interface/SimpleTransmission</type>"
      "<joint name=\"j\"/><actuator name=\"m\"><mechanicalReduction>100</mechanicalReduction>"
      "</actuator></transmission><gazebo reference=\"arm\"><mu1>0.2</mu1></gazebo>");
  const ModelPtr model = build_model(read_urdf_string(xml));
  EXPECT_EQ(model->nv, 1);
  EXPECT_TRUE(model->warnings.empty()) << ::testing::PrintToString(model->warnings);
}

TEST(Urdf, MimicAndDampingAreReported) {
  const std::string xml = robot(
      link("base") + link("a") + link("b") + link("c") + link("d") + link("e") +
      joint("leader", "continuous", "base", "a") +
      joint("follower", "continuous", "base", "b", "<mimic joint=\"leader\" multiplier=\"2\"/>") +
      joint("damped", "continuous", "base", "c", "<dynamics damping=\"0.5\"/>") +
      joint("welded", "fixed", "base", "d",
            "<mimic joint=\"leader\"/><dynamics damping=\"2\" friction=\"1\"/>") +
      joint("frictionless", "continuous", "base", "e", "<dynamics damping=\"0\" friction=\"0\"/>"));
  const ModelSpec spec = read_urdf_string(xml);
  ASSERT_EQ(spec.warnings.size(), 2u) << ::testing::PrintToString(spec.warnings);
  EXPECT_THAT(spec.warnings, ::testing::Contains(
                                 HasSubstr("joint 'follower': <mimic> of joint 'leader' ignored")));
  EXPECT_THAT(spec.warnings,
              ::testing::Contains(HasSubstr("joint 'damped': <dynamics damping=\"0.5\"")));
  const ModelPtr model = build_model(spec);
  EXPECT_EQ(model->warnings, spec.warnings);
  EXPECT_EQ(model->nv, 4);  // the mimic joint stays a degree of freedom
}

TEST(Urdf, PlanarJointAboutZ) {
  const std::string xml = robot(
      link("base") + link("puck") +
      joint("slide", "planar", "base", "puck", "<origin xyz=\"0 0 1\"/><axis xyz=\"0 0 1\"/>"));
  const ModelSpec spec = read_urdf_string(xml);
  EXPECT_TRUE(spec.warnings.empty()) << ::testing::PrintToString(spec.warnings);
  const ModelPtr model = build_model(spec);
  EXPECT_EQ(model->joints[1].type, JointType::kPlanar);
  EXPECT_EQ(model->nq, 3);
  EXPECT_EQ(model->joint_placements[1].rotation, Mat3::Identity());
}

TEST(Urdf, PlanarJointWithOtherNormalKeepsTheRestOfTheTree) {
  // Plane normal +x: the puck slides in the world's yz plane; its child "tip" sits 0.5 along the
  // puck's URDF x axis, i.e. along the normal, and its inertia is 0.2 along URDF z.
  const std::string xml = robot(
      link("base") +
      "<link name=\"puck\"><inertial><origin xyz=\"0 0 0.2\"/><mass value=\"1\"/>"
      "<inertia ixx=\"0.1\" ixy=\"0\" ixz=\"0\" iyy=\"0.2\" iyz=\"0\" izz=\"0.3\"/></inertial>"
      "</link>" +
      link("tip") +
      joint("slide", "planar", "base", "puck", "<origin xyz=\"0 0 1\"/><axis xyz=\"2 0 0\"/>") +
      joint("tip_joint", "fixed", "puck", "tip", "<origin xyz=\"0.5 0 0\"/>"));
  const ModelSpec spec = read_urdf_string(xml);
  ASSERT_EQ(spec.warnings.size(), 1u);
  EXPECT_THAT(spec.warnings[0], HasSubstr("joint 'slide'"));
  EXPECT_THAT(spec.warnings[0], HasSubstr("link 'puck'"));
  const ModelPtr model = build_model(spec);

  Data data(*model);
  Eigen::VectorXd q = Eigen::VectorXd::Zero(3);
  forward_kinematics(*model, data, q);
  update_frame_placements(*model, data);
  const Transform tip = data.oMf[model->find_frame("tip")];
  EXPECT_LT(max_abs_diff(tip.translation, Vec3(0.5, 0.0, 1.0)), kRounding);
  EXPECT_LT(max_abs_diff(tip.rotation, Mat3::Identity()), kRounding);
  // The joint frame's z is the normal.
  EXPECT_LT(max_abs_diff(data.oMi[1].rotation.col(2), Vec3::UnitX()), kRounding);
  // The merged inertia is where the URDF puts it: com at URDF (0, 0, 0.2) from the puck, plus the
  // tip's unit mass at (0.5, 0, 0); principal moments keep their URDF axes.
  const Vec3 world_com = data.oMi[1].act(model->inertias[1].com());
  EXPECT_LT(max_abs_diff(world_com, Vec3(0.25, 0.0, 1.1)), kRounding);

  // Sliding and turning stay in the plane normal to +x.
  q << 0.3, -0.4, 0.9;
  forward_kinematics(*model, data, q);
  update_frame_placements(*model, data);
  const Vec3 puck = data.oMi[1].translation;
  EXPECT_NEAR(puck.x(), 0.0, kRounding);
  EXPECT_NEAR((puck - Vec3(0.0, 0.0, 1.0)).norm(), 0.5, kRounding);
  EXPECT_LT(max_abs_diff(data.oMf[model->find_frame("tip")].translation, puck + Vec3(0.5, 0, 0)),
            kRounding);
}

// ---------------------------------------------------------------------------------------------
// The robots in ../shared/models

struct RobotCase {
  const char* name;
  int nq_fixed;
  int nv_fixed;
  int nq_floating;  // -1: no floating-base variant in the table
  int nv_floating;
};

// ../shared/models/README.md's table.
constexpr RobotCase kRobots[] = {
    {"ur5", 6, 6, -1, -1},
    {"panda", 9, 9, -1, -1},
    {"double_pendulum", 2, 2, -1, -1},
    {"solo12", 12, 12, 19, 18},
    {"talos_reduced", 32, 32, 39, 38},
    {"hyq", 12, 12, 19, 18},
};

std::filesystem::path model_path(const std::string& name) {
  return kSharedDir / "models" / (name + ".urdf");
}

#define SKIP_WITHOUT_SHARED_MODELS()                                                   \
  if (!std::filesystem::exists(kSharedDir / "models")) {                               \
    GTEST_SKIP() << "shared reference directory " << kSharedDir                        \
                 << " not found: the robot models are not available in this checkout"; \
  }

ModelPtr load_robot(const std::string& name, bool floating_base) {
  UrdfOptions options;
  options.floating_base = floating_base;
  return build_model(read_urdf_file(model_path(name).string(), options));
}

class SharedRobots : public ::testing::TestWithParam<RobotCase> {};

TEST_P(SharedRobots, LoadWithTheDocumentedSizes) {
  SKIP_WITHOUT_SHARED_MODELS();
  const RobotCase& robot_case = GetParam();
  const ModelPtr fixed = load_robot(robot_case.name, false);
  EXPECT_EQ(fixed->nq, robot_case.nq_fixed);
  EXPECT_EQ(fixed->nv, robot_case.nv_fixed);
  const ModelPtr floating = load_robot(robot_case.name, true);
  EXPECT_EQ(floating->nq, robot_case.nq_fixed + 7);
  EXPECT_EQ(floating->nv, robot_case.nv_fixed + 6);
  if (robot_case.nq_floating >= 0) {
    EXPECT_EQ(floating->nq, robot_case.nq_floating);
    EXPECT_EQ(floating->nv, robot_case.nv_floating);
  }
  for (const std::string& w : fixed->warnings) {
    EXPECT_THAT(w, ::testing::Not(HasSubstr("without inertia"))) << robot_case.name;
  }
}

Eigen::MatrixXd to_matrix(const json& j) {
  Eigen::MatrixXd x(j.size(), j[0].size());
  for (std::size_t r = 0; r < j.size(); ++r) {
    for (std::size_t c = 0; c < j[r].size(); ++c) x(r, c) = j[r][c].get<double>();
  }
  return x;
}

Eigen::VectorXd to_vector(const json& j) {
  Eigen::VectorXd x(j.size());
  for (std::size_t i = 0; i < j.size(); ++i) x[i] = j[i].get<double>();
  return x;
}

// Compares the model's layout with a golden file's "model" object.
void check_against_golden(const Model& model, const json& golden) {
  const json& joints = golden.at("joints");
  EXPECT_EQ(model.nq, golden.at("nq").get<int>());
  EXPECT_EQ(model.nv, golden.at("nv").get<int>());
  ASSERT_EQ(static_cast<std::size_t>(model.nbodies() - 1), joints.size());
  for (std::size_t k = 0; k < joints.size(); ++k) {
    const json& g = joints[k];
    const int i = static_cast<int>(k) + 1;
    const std::string name = g.at("name").get<std::string>();
    SCOPED_TRACE(name);
    ASSERT_EQ(model.joint_names[i], name) << "joint order differs at position " << k;
    EXPECT_EQ(model.body_names[i], g.at("child_link").get<std::string>());
    EXPECT_EQ(model.joints[i].idx_q, g.at("idx_q").get<int>());
    EXPECT_EQ(model.joints[i].idx_v, g.at("idx_v").get<int>());
    EXPECT_EQ(model.joints[i].nq, g.at("nq").get<int>());
    EXPECT_EQ(model.joints[i].nv, g.at("nv").get<int>());
    const json& parent = g.at("parent_joint");
    EXPECT_EQ(model.joint_names[model.parent[i]],
              parent.is_null() ? "universe" : parent.get<std::string>());
    const json& placement = g.at("placement_in_parent");
    EXPECT_LT(max_abs_diff(model.joint_placements[i].rotation, to_matrix(placement.at("R"))),
              1e-12);
    EXPECT_LT(max_abs_diff(model.joint_placements[i].translation, to_vector(placement.at("p"))),
              1e-12);
    if (g.contains("merged_inertia")) {
      const json& merged = g.at("merged_inertia");
      const RigidInertia& y = model.inertias[i];
      const double mass = merged.at("mass").get<double>();
      EXPECT_NEAR(y.mass, mass, 1e-12 * std::max(1.0, mass));
      EXPECT_LT(max_abs_diff(y.com(), to_vector(merged.at("com"))), 1e-12);
      const Eigen::MatrixXd inertia = to_matrix(merged.at("I_com"));
      EXPECT_LT(max_abs_diff(y.inertia_about_com(), inertia),
                1e-12 * std::max(1.0, inertia.cwiseAbs().maxCoeff()));
    }
  }
  for (const json& g : golden.at("links")) {
    const std::string name = g.at("name").get<std::string>();
    SCOPED_TRACE(name);
    const int f = model.find_frame(name);
    ASSERT_GE(f, 0) << "no frame for link " << name;
    const Frame& frame = model.frames[f];
    EXPECT_NE(frame.kind, FrameKind::kJoint);
    const json& parent = g.at("parent_joint");
    EXPECT_EQ(model.joint_names[frame.body],
              parent.is_null() ? "universe" : parent.get<std::string>());
    const json& placement = g.at("placement_in_parent_joint");
    EXPECT_LT(max_abs_diff(frame.placement.rotation, to_matrix(placement.at("R"))), 1e-12);
    EXPECT_LT(max_abs_diff(frame.placement.translation, to_vector(placement.at("p"))), 1e-12);
  }
}

TEST_P(SharedRobots, LayoutMatchesGolden) {
  SKIP_WITHOUT_SHARED_MODELS();
  const RobotCase& robot_case = GetParam();
  int checked = 0;
  for (const bool floating : {false, true}) {
    const std::filesystem::path golden_path =
        kSharedDir / "golden" /
        (std::string(robot_case.name) + (floating ? "_floating.json" : "_fixed.json"));
    if (!std::filesystem::exists(golden_path)) continue;
    SCOPED_TRACE(golden_path.filename().string());
    std::ifstream file(golden_path);
    const json doc = json::parse(file);
    const ModelPtr model = load_robot(robot_case.name, floating);
    check_against_golden(*model, doc.at("model"));
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no golden file for " << robot_case.name;
}

INSTANTIATE_TEST_SUITE_P(Models, SharedRobots, ::testing::ValuesIn(kRobots),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(SharedRobotWarnings, HyqTriangleInequality) {
  SKIP_WITHOUT_SHARED_MODELS();
  const ModelPtr model = load_robot("hyq", false);
  const auto triangle = warnings_containing(model->warnings, "triangle inequality");
  ASSERT_EQ(triangle.size(), 5u) << ::testing::PrintToString(model->warnings);
  for (const char* name : {"'base_link'", "'lf_foot'", "'rf_foot'", "'lh_foot'", "'rh_foot'"}) {
    EXPECT_THAT(triangle, ::testing::Contains(HasSubstr(name)));
  }
  // hyq's <dynamics damping="0.1"> on each moving joint.
  EXPECT_EQ(warnings_containing(model->warnings, "<dynamics").size(), 12u);
}

TEST(SharedRobotWarnings, TalosGripperMotors) {
  SKIP_WITHOUT_SHARED_MODELS();
  const ModelPtr model = load_robot("talos_reduced", true);
  const auto triangle = warnings_containing(model->warnings, "triangle inequality");
  ASSERT_EQ(triangle.size(), 2u) << ::testing::PrintToString(model->warnings);
  EXPECT_THAT(triangle, ::testing::Contains(HasSubstr("'gripper_left_motor_single_link'")));
  EXPECT_THAT(triangle, ::testing::Contains(HasSubstr("'gripper_right_motor_single_link'")));
  // Its 12 mimic tags sit on fixed joints: nothing to report.
  EXPECT_TRUE(warnings_containing(model->warnings, "mimic").empty())
      << ::testing::PrintToString(warnings_containing(model->warnings, "mimic"));
}

TEST(SharedRobotWarnings, PandaMimic) {
  SKIP_WITHOUT_SHARED_MODELS();
  const ModelPtr model = load_robot("panda", false);
  const auto mimic = warnings_containing(model->warnings, "mimic");
  ASSERT_EQ(mimic.size(), 1u);
  EXPECT_THAT(mimic[0], HasSubstr("joint 'panda_finger_joint2'"));
  EXPECT_THAT(mimic[0], HasSubstr("'panda_finger_joint1'"));
  EXPECT_GE(model->find_joint("panda_finger_joint2"), 0);
}

}  // namespace
}  // namespace torqued
