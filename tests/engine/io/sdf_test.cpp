// The SDF reader on small documents written here: frames (relative_to, a joint frame apart from
// its child link's, nested models, SDF 1.4's and 1.7's conventions, expressed_in), fixed joints
// merged, the document's joint order, the base and the world joints, loop closures, limits,
// screws, warnings, the errors that name the element at fault, <include> refused without opening
// anything, and hostile documents refused before libsdformat parses them, with the worst ones
// the caps allow timed. Pinocchio's results on real SDF files: golden_test.cpp and
// derivatives_test.cpp, over every golden file.
#include "engine/io/sdf.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/algorithms/kinematics.hpp"
#include "engine/algorithms/rnea.hpp"
#include "engine/io/xml_guard.hpp"
#include "engine/model/data.hpp"
#include "tests/engine/support/cpu_time.hpp"
#include "tests/engine/support/sanitized_build.hpp"

namespace torqued {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Placements composed from a few poses of order one: 16 ulps (3.6e-15), in any IEEE-754 build.
constexpr double kRounding = 16 * std::numeric_limits<double>::epsilon();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kQuarterTurn = 1.5707963267948966;

std::string sdf(const std::string& body, const std::string& version = "1.9") {
  return "<?xml version=\"1.0\"?>\n<sdf version=\"" + version + "\">\n<model name=\"m\">\n" + body +
         "</model>\n</sdf>\n";
}

// A link with a unit mass at its origin, or as `inside` says.
std::string link(const std::string& name, const std::string& inside = "") {
  return "<link name=\"" + name + "\">" + inside +
         (inside.find("<inertial>") == std::string::npos
              ? "<inertial><mass>1</mass><inertia><ixx>0.1</ixx><iyy>0.1</iyy><izz>0.1</izz>"
                "</inertia></inertial>"
              : "") +
         "</link>\n";
}

std::string joint(const std::string& name, const std::string& type, const std::string& parent,
                  const std::string& child, const std::string& inside = "") {
  return "<joint name=\"" + name + "\" type=\"" + type + "\"><parent>" + parent +
         "</parent><child>" + child + "</child>" + inside + "</joint>\n";
}

std::string axis(const std::string& xyz, const std::string& extra = "") {
  return "<axis><xyz>" + xyz + "</xyz>" + extra + "</axis>";
}

std::string load_error(const std::string& xml, const SdfOptions& options = {}) {
  try {
    build_model(read_sdf_string(xml, options));
  } catch (const ModelError& e) {
    return e.what();
  }
  ADD_FAILURE() << "the SDF was accepted";
  return {};
}

// prefix followed by the number i ("l12"). (GCC 12 warns, wrongly, of overlapping copies in
// "l" + std::to_string(i) once inlined.)
std::string numbered(std::string prefix, std::size_t i) { return prefix.append(std::to_string(i)); }

Mat3 rotation_z(double angle) { return Eigen::AngleAxisd(angle, Vec3::UnitZ()).toRotationMatrix(); }

double distance(const Transform& a, const Transform& b) {
  return std::max((a.rotation - b.rotation).cwiseAbs().maxCoeff(),
                  (a.translation - b.translation).cwiseAbs().maxCoeff());
}

// The world placement of a joint's frame (want_joint) or a link's frame at configuration q.
Transform placement(const Model& model, const Eigen::VectorXd& q, const std::string& name,
                    bool want_joint) {
  Data data(model);
  forward_kinematics(model, data, q);
  update_frame_placements(model, data);
  for (int f = 0; f < static_cast<int>(model.frames.size()); ++f) {
    if (model.frames[f].name == name && (model.frames[f].kind == FrameKind::kJoint) == want_joint) {
      return data.oMf[f];
    }
  }
  ADD_FAILURE() << "no frame " << name;
  return Transform::Identity();
}

// ---------------------------------------------------------------------------------------------
// Frames

TEST(Sdf, JointFrameApartFromItsChildLinkFrame) {
  // The joint 1 m above the base, turned a quarter about z; the arm's frame 0.5 m along the
  // joint's x, its centre of mass 0.1 m further.
  const std::string xml =
      sdf(link("base") +
          joint("j", "revolute", "base", "arm",
                "<pose relative_to=\"base\">0 0 1 0 0 1.5707963267948966</pose>" + axis("0 1 0")) +
          link("arm",
               "<pose relative_to=\"j\">0.5 0 0 0 0 0</pose><inertial><pose>0.1 0 0 0 0 0</pose>"
               "<mass>2</mass><inertia><ixx>0.01</ixx><iyy>0.02</iyy><izz>0.03</izz></inertia>"
               "</inertial>"));
  const ModelSpec spec = read_sdf_string(xml);
  ASSERT_EQ(spec.joints.size(), 1u);
  const JointSpec& j = spec.joints[0];
  EXPECT_LE(distance(j.origin, {rotation_z(kQuarterTurn), Vec3(0, 0, 1)}), kRounding);
  // Written relative to the joint: read exactly as written.
  EXPECT_EQ(j.child_link_placement.rotation, Mat3::Identity());
  EXPECT_EQ(j.child_link_placement.translation, Vec3(0.5, 0, 0));
  EXPECT_EQ(j.axis, Vec3(0, 1, 0));

  const ModelPtr model = build_model(spec);
  for (const double angle : {0.0, 0.7}) {
    SCOPED_TRACE(angle);
    const Eigen::VectorXd q = Eigen::VectorXd::Constant(1, angle);
    const Transform joint_frame = {
        rotation_z(kQuarterTurn) * Eigen::AngleAxisd(angle, Vec3::UnitY()).toRotationMatrix(),
        Vec3(0, 0, 1)};
    const Transform link_frame = joint_frame * Transform{Mat3::Identity(), Vec3(0.5, 0, 0)};
    EXPECT_LE(distance(placement(*model, q, "j", true), joint_frame), kRounding);
    EXPECT_LE(distance(placement(*model, q, "arm", false), link_frame), kRounding);
    // The arm's 2 kg at 0.6 m along the joint's x, turning about the joint's y (the world's -x):
    // gravity's torque about the joint origin, r x F, projected on the axis, held by -τ.
    const Vec3 r = joint_frame.rotation * Vec3(0.6, 0, 0);
    const Vec3 u = joint_frame.rotation * Vec3::UnitY();
    const double expected = -r.cross(Vec3(0, 0, -2 * 9.81)).dot(u);
    Data data(*model);
    EXPECT_NEAR(generalized_gravity(*model, data, q)[0], expected, 1e-13);
  }
}

TEST(Sdf, NestedModelsAreFlattenedWithScopedNames) {
  const std::string xml = sdf(
      link("base") + "<model name=\"arm\"><pose>1 0 0 0 0 0</pose>\n" +
      link("upper", "<pose>0 0 0.5 0 0 0</pose>") + link("lower", "<pose relative_to=\"elbow\"/>") +
      joint("elbow", "revolute", "upper", "lower",
            "<pose relative_to=\"upper\">0 0 0.3 0 0 0</pose>" + axis("0 1 0")) +
      "</model>\n" + joint("shoulder", "revolute", "base", "arm::upper", axis("0 0 1")));
  const ModelPtr model = build_model(read_sdf_string(xml));
  ASSERT_EQ(model->nv, 2);
  EXPECT_EQ(model->joint_names[1], "shoulder");
  EXPECT_EQ(model->joint_names[2], "arm::elbow");
  EXPECT_EQ(model->body_names[1], "arm::upper");
  EXPECT_EQ(model->body_names[2], "arm::lower");
  const Eigen::VectorXd q = Eigen::VectorXd::Zero(2);
  // The shoulder sits in its child link's frame (SDF's default): the nested model's pose and the
  // link's pose in it, composed by libsdformat.
  EXPECT_LE(distance(placement(*model, q, "shoulder", true), {Mat3::Identity(), Vec3(1, 0, 0.5)}),
            kRounding);
  EXPECT_LE(
      distance(placement(*model, q, "arm::lower", false), {Mat3::Identity(), Vec3(1, 0, 0.8)}),
      kRounding);
}

// SDF <= 1.6 and 1.7 read poses without relative_to alike (links in the model frame, joints in
// their child link's frame), but SDF 1.4 expresses an axis in the model frame.
TEST(Sdf, Sdf14And17PoseAndAxisConventions) {
  const std::string body =
      link("base", "<pose>0 0 1 0 0 1.5707963267948966</pose>") +
      link("l1", "<pose>1 0 1 0 0 1.5707963267948966</pose>") +
      joint("j1", "revolute", "base", "l1", "<pose>0 0 0.5 0 0 0</pose>" + axis("1 0 0"));
  for (const std::string version : {"1.4", "1.7"}) {
    SCOPED_TRACE(version);
    const ModelSpec spec = read_sdf_string(sdf(body, version));
    ASSERT_EQ(spec.joints.size(), 1u);
    const JointSpec& j = spec.joints[0];
    // l1 is 1 m along the model's x, which is the base's -y.
    EXPECT_LE(distance(j.origin, {Mat3::Identity(), Vec3(0, -1, 0.5)}), kRounding);
    EXPECT_LE(distance(j.child_link_placement, {Mat3::Identity(), Vec3(0, 0, -0.5)}), kRounding);
    const Vec3 expected_axis = version == "1.4" ? Vec3(0, -1, 0) : Vec3(1, 0, 0);
    EXPECT_LE((j.axis - expected_axis).cwiseAbs().maxCoeff(), kRounding) << j.axis.transpose();
  }
}

TEST(Sdf, AxisExpressedInAnotherFrame) {
  const std::string turned = "<pose relative_to=\"base\">0 0 0 0 0 1.5707963267948966</pose>";
  const std::string xml =
      sdf(link("base") + link("a") + link("b") +
          joint("in_joint", "revolute", "base", "a", turned + axis("1 0 0")) +
          joint("in_model", "revolute", "base", "b",
                turned + "<axis><xyz expressed_in=\"__model__\">1 0 0</xyz></axis>"));
  const ModelSpec spec = read_sdf_string(xml);
  ASSERT_EQ(spec.joints.size(), 2u);
  EXPECT_EQ(spec.joints[0].axis, Vec3(1, 0, 0));
  EXPECT_LE((spec.joints[1].axis - Vec3(0, -1, 0)).cwiseAbs().maxCoeff(), kRounding);
}

// ---------------------------------------------------------------------------------------------
// Joints

TEST(Sdf, FixedJointsAreMergedWithTheirFrames) {
  const std::string xml = sdf(
      link("base") +
      joint("weld", "fixed", "base", "tool", "<pose relative_to=\"base\">0 0 0.2 0 0 0</pose>") +
      link("tool",
           "<pose relative_to=\"weld\">0.1 0 0 0 0 0</pose><inertial><mass>0.5</mass></inertial>") +
      joint("spin", "revolute", "tool", "wheel",
            "<pose relative_to=\"tool\">0 0 0.1 0 0 0</pose>" + axis("0 0 1")) +
      link("wheel", "<pose relative_to=\"spin\"/>"));
  const ModelPtr model = build_model(read_sdf_string(xml));
  ASSERT_EQ(model->nbodies(), 2);
  EXPECT_EQ(model->frames[model->find_frame("tool")].kind, FrameKind::kFixedLink);
  // The fixed base carries the base's 1 kg and the tool's 0.5 kg.
  EXPECT_DOUBLE_EQ(model->inertias[0].mass, 1.5);
  const Eigen::VectorXd q = Eigen::VectorXd::Zero(1);
  EXPECT_LE(distance(placement(*model, q, "weld", true), {Mat3::Identity(), Vec3(0, 0, 0.2)}),
            kRounding);
  EXPECT_LE(distance(placement(*model, q, "tool", false), {Mat3::Identity(), Vec3(0.1, 0, 0.2)}),
            kRounding);
  EXPECT_LE(distance(placement(*model, q, "spin", true), {Mat3::Identity(), Vec3(0.1, 0, 0.3)}),
            kRounding);
}

TEST(Sdf, ChildJointsInDocumentOrder) {
  // URDF would order them by name (alpha first); SDF keeps the document's order.
  const std::string xml = sdf(link("base") + link("z") + link("a") +
                              joint("zeta", "revolute", "base", "z", axis("0 0 1")) +
                              joint("alpha", "prismatic", "base", "a", axis("1 0 0")));
  const ModelSpec spec = read_sdf_string(xml);
  EXPECT_TRUE(spec.children_in_given_order);
  const ModelPtr model = build_model(spec);
  ASSERT_EQ(model->nv, 2);
  EXPECT_EQ(model->joint_names[1], "zeta");
  EXPECT_EQ(model->joint_names[2], "alpha");
}

TEST(Sdf, JointTypesAndLimits) {
  const std::string limit =
      "<limit><lower>-1</lower><upper>2</upper><effort>30</effort>"
      "<velocity>4</velocity></limit>";
  const std::string xml =
      sdf(link("base") + link("r") + link("c") + link("p") + link("b") + link("s") +
          joint("revolute", "revolute", "base", "r", axis("0 0 1", limit)) +
          joint("continuous", "continuous", "base", "c", axis("0 1 0", limit)) +
          joint("prismatic", "prismatic", "base", "p", axis("1 0 0")) +
          joint("ball", "ball", "base", "b") +
          joint("screw", "screw", "base", "s", axis("0 0 1") + "<thread_pitch>100</thread_pitch>"));
  const ModelSpec spec = read_sdf_string(xml);
  ASSERT_EQ(spec.joints.size(), 5u);
  EXPECT_EQ(spec.joints[0].type, JointType::kRevolute);
  EXPECT_EQ(spec.joints[0].limits.lower, -1.0);
  EXPECT_EQ(spec.joints[0].limits.upper, 2.0);
  EXPECT_EQ(spec.joints[0].limits.effort, 30.0);
  EXPECT_EQ(spec.joints[0].limits.velocity, 4.0);
  EXPECT_EQ(spec.joints[1].type, JointType::kContinuous);
  EXPECT_EQ(spec.joints[1].limits.lower, -kInf);
  EXPECT_EQ(spec.joints[1].limits.upper, kInf);
  // No <limit>: SDF's defaults, ±1e16 and -1, are no limit.
  EXPECT_EQ(spec.joints[2].type, JointType::kPrismatic);
  EXPECT_EQ(spec.joints[2].limits.lower, -kInf);
  EXPECT_EQ(spec.joints[2].limits.upper, kInf);
  EXPECT_EQ(spec.joints[2].limits.effort, kInf);
  EXPECT_EQ(spec.joints[2].limits.velocity, kInf);
  EXPECT_EQ(spec.joints[3].type, JointType::kSpherical);
  // 100 radians per metre, left-handed: -0.01 m per radian.
  EXPECT_EQ(spec.joints[4].type, JointType::kHelical);
  EXPECT_DOUBLE_EQ(spec.joints[4].pitch, -0.01);
  const ModelPtr model = build_model(spec);
  EXPECT_EQ(model->nq, 8);
  EXPECT_EQ(model->nv, 7);
}

TEST(Sdf, DynamicsAreReportedNamingTheJoint) {
  const std::string xml = sdf(link("base") + link("a") + link("b") +
                              joint("damped", "revolute", "base", "a",
                                    axis("0 0 1",
                                         "<dynamics><damping>0.5</damping><friction>0.1</friction>"
                                         "</dynamics>")) +
                              joint("plain", "revolute", "base", "b",
                                    axis("0 0 1", "<dynamics><damping>0</damping></dynamics>")));
  const ModelSpec spec = read_sdf_string(xml);
  ASSERT_EQ(spec.warnings.size(), 1u);
  EXPECT_THAT(spec.warnings[0], HasSubstr("joint 'damped': <dynamics> with damping 0.5, friction "
                                          "0.1 and spring_stiffness 0 ignored"));
}

TEST(Sdf, GeometrySensorsAndPluginsAreIgnored) {
  const std::string xml =
      sdf(link("base",
               "<visual name=\"v\"><geometry><mesh><uri>package://nowhere/x.obj</uri></mesh>"
               "</geometry></visual><collision name=\"c\"><geometry><box><size>1 1 1</size>"
               "</box></geometry></collision><sensor name=\"s\" type=\"imu\"/>") +
          "<plugin name=\"p\" filename=\"libnothing.so\"><anything>1</anything></plugin>");
  const ModelSpec spec = read_sdf_string(xml);
  EXPECT_EQ(spec.links.size(), 1u);
  EXPECT_TRUE(spec.warnings.empty());
}

// ---------------------------------------------------------------------------------------------
// The base

TEST(Sdf, WorldJointsAreRemovedAndTheOptionsSetTheBase) {
  const std::string xml = sdf(
      link("base", "<pose>0 0 5 0 0 0</pose>") + joint("anchor", "fixed", "world", "base") +
      link("a", "<pose>0 0 6 0 0 0</pose>") + joint("j", "revolute", "base", "a", axis("0 0 1")));
  const ModelPtr fixed = build_model(read_sdf_string(xml));
  EXPECT_EQ(fixed->nv, 1);
  EXPECT_EQ(fixed->find_joint("anchor"), -1);
  // The root link is the fixed base, its frame the world's: its pose in the model is ignored.
  EXPECT_LE(distance(placement(*fixed, Eigen::VectorXd::Zero(1), "a", false),
                     {Mat3::Identity(), Vec3(0, 0, 1)}),
            kRounding);
  SdfOptions options;
  options.floating_base = true;
  options.gravity = Vec3(0, 0, -1.62);
  const ModelPtr floating = build_model(read_sdf_string(xml, options));
  EXPECT_EQ(floating->nq, 8);
  EXPECT_EQ(floating->joint_names[1], "root_joint");
  EXPECT_EQ(floating->gravity, Vec3(0, 0, -1.62));
}

// With the base unset the document decides, as a simulator reads it: a model floats unless it is
// <static> or a joint (fixed or moving, then removed) attaches its root link to the world.
TEST(Sdf, WithoutABaseOptionTheDocumentDecides) {
  SdfOptions document;
  document.floating_base = std::nullopt;
  const std::string arm =
      link("base") + link("a") + joint("j", "revolute", "base", "a", axis("0 0 1"));
  EXPECT_TRUE(read_sdf_string(sdf(arm), document).floating_base);
  EXPECT_FALSE(read_sdf_string(sdf("<static>true</static>" + arm), document).floating_base);
  EXPECT_FALSE(read_sdf_string(sdf(arm + joint("anchor", "fixed", "world", "base")), document)
                   .floating_base);
  EXPECT_FALSE(read_sdf_string(
                   sdf(arm + joint("slide", "prismatic", "world", "base", axis("1 0 0"))), document)
                   .floating_base);
  EXPECT_FALSE(read_sdf_string(sdf(arm)).floating_base);  // the default: Pinocchio's fixed root
}

TEST(Sdf, MovingWorldJointIsRemovedWithAWarning) {
  const ModelSpec spec = read_sdf_string(
      sdf(link("base") + joint("slide", "prismatic", "world", "base", axis("1 0 0"))));
  EXPECT_TRUE(spec.joints.empty());
  ASSERT_EQ(spec.warnings.size(), 1u);
  EXPECT_THAT(spec.warnings[0], HasSubstr("joint 'slide' between the world and link 'base'"));
}

TEST(SdfErrors, WorldJointToALinkOtherThanTheRoot) {
  EXPECT_THAT(
      load_error(sdf(link("base") + link("a") + joint("j", "revolute", "base", "a", axis("0 0 1")) +
                     joint("hold", "fixed", "world", "a"))),
      HasSubstr("joint 'hold' attaches link 'a' to the world"));
}

// ---------------------------------------------------------------------------------------------
// Loop closures

// A parallelogram: cranks a and b turn about y on the base, 1 m apart; the coupler c hangs from
// a's tip by joint ac, and joint bc, from b's tip, closes the loop. With q_ja = q_jb = θ and
// q_ac = -θ the coupler stays level and the loop stays closed.
std::string parallelogram(const std::string& closing_type, const std::string& closing_axis) {
  return sdf(link("base") + link("a") + link("b", "<pose>1 0 0 0 0 0</pose>") +
             link("c", "<pose>0 0 1 0 0 0</pose>") +
             joint("ja", "revolute", "base", "a", axis("0 1 0")) +
             joint("jb", "revolute", "base", "b", axis("0 1 0")) +
             joint("ac", "revolute", "a", "c", axis("0 1 0")) +
             joint("bc", closing_type, "b", "c",
                   "<pose relative_to=\"c\">1 0 0 0 0 0</pose>" + closing_axis));
}

TEST(Sdf, ASecondParentJointClosesALoopAsTheJointDoes) {
  const ModelSpec spec = read_sdf_string(parallelogram("revolute", axis("0 1 0")));
  ASSERT_EQ(spec.loop_closures.size(), 1u);
  const LoopClosureSpec& loop = spec.loop_closures[0];
  EXPECT_EQ(loop.name, "bc");
  EXPECT_EQ(loop.type, ConstraintType::kRevolute);
  EXPECT_EQ(loop.link1, "b");
  EXPECT_EQ(loop.link2, "c");
  const ModelPtr model = build_model(spec);
  ASSERT_EQ(model->nv, 3);  // ja, jb, ac: bc is no coordinate
  ASSERT_EQ(model->loop_closures.size(), 1u);
  const BilateralConstraint& c = model->loop_closures[0];
  for (const double angle : {0.0, 0.4}) {
    SCOPED_TRACE(angle);
    Eigen::VectorXd q(3);
    q[model->joints[model->find_joint("ja")].idx_q] = angle;
    q[model->joints[model->find_joint("jb")].idx_q] = angle;
    q[model->joints[model->find_joint("ac")].idx_q] = -angle;
    Data data(*model);
    forward_kinematics(*model, data, q);
    const Transform frame1 = data.oMi[c.body1] * c.placement1;
    const Transform frame2 = data.oMi[c.body2] * c.placement2;
    // Same origin, and the z axes (the revolute constraint's free axis) both along y.
    EXPECT_LE((frame1.translation - frame2.translation).cwiseAbs().maxCoeff(), 1e-15);
    EXPECT_LE((frame1.rotation.col(2) - Vec3::UnitY()).cwiseAbs().maxCoeff(), 1e-15);
    EXPECT_LE((frame2.rotation.col(2) - Vec3::UnitY()).cwiseAbs().maxCoeff(), 1e-15);
  }
}

TEST(Sdf, LoopJointTypesMapToConstraintTypes) {
  EXPECT_EQ(read_sdf_string(parallelogram("ball", "")).loop_closures.at(0).type,
            ConstraintType::kPoint);
  EXPECT_EQ(read_sdf_string(parallelogram("fixed", "")).loop_closures.at(0).type,
            ConstraintType::kWeld);
  EXPECT_EQ(read_sdf_string(parallelogram("prismatic", axis("1 0 0"))).loop_closures.at(0).type,
            ConstraintType::kPrismatic);
  EXPECT_THAT(
      load_error(parallelogram("screw", axis("0 1 0"))),
      HasSubstr("joint 'bc' closes a loop (link 'c' has an earlier parent joint), and a screw"));
}

// ---------------------------------------------------------------------------------------------
// Errors

TEST(SdfErrors, RefusedJointTypesNameTheJoint) {
  for (const std::string type : {"universal", "revolute2", "gearbox"}) {
    SCOPED_TRACE(type);
    EXPECT_THAT(
        load_error(sdf(link("base") + link("c") + joint("odd", type, "base", "c", axis("0 0 1")))),
        HasSubstr("joint 'odd': type " + type));
  }
  EXPECT_THAT(load_error(sdf(link("base") + link("c") +
                             joint("s", "screw", "base", "c",
                                   axis("0 0 1") + "<thread_pitch>0</thread_pitch>"))),
              HasSubstr("joint 's': screw joint with a zero <thread_pitch>"));
  EXPECT_THAT(load_error(sdf(link("base") + link("c") + joint("bare", "revolute", "base", "c"))),
              HasSubstr("joint 'bare': no <axis>"));
}

TEST(SdfErrors, LibsdformatErrorsCarryTheLineAndTheElement) {
  const std::string message =
      load_error(sdf(link("base", "<inertial><mass>heavy</mass></inertial>")));
  EXPECT_THAT(message, HasSubstr("Unable to set value [heavy ] for key[mass]"));
  EXPECT_THAT(message, HasSubstr("line 4: Error reading element <mass> (/sdf/model[@name=\"m\"]/"
                                 "link[@name=\"base\"]/inertial/mass)"));
  // Neither the document echoed back nor libsdformat's attempt to read it as a URDF.
  EXPECT_THAT(message, Not(HasSubstr("<?xml")));
  EXPECT_THAT(message, Not(HasSubstr("URDF")));
  EXPECT_THAT(
      load_error(sdf(link("base") + joint("j", "revolute", "base", "nowhere", axis("0 0 1")))),
      HasSubstr("nowhere"));
}

TEST(SdfErrors, DocumentsThatAreNotOneModel) {
  EXPECT_THAT(load_error("<robot name=\"r\"><link name=\"a\"/></robot>"),
              HasSubstr("line 1: the root element is <robot>: an SDF document's is <sdf>"));
  EXPECT_THAT(load_error("<sdf version=\"1.9\">\n<world name=\"w\"/></sdf>"),
              HasSubstr("line 2: <world> under <sdf>: the SDF reader reads one <model>"));
  EXPECT_THAT(load_error("<sdf version=\"1.9\"><model name=\"a\"><link name=\"l\"/></model>\n"
                         "<model name=\"b\"><link name=\"l\"/></model></sdf>"),
              HasSubstr("line 2: <model> under <sdf>"));
  EXPECT_THAT(load_error("<sdf version=\"1.9\"><model name=\"a\"><link name=\"l\">"),
              HasSubstr("invalid SDF: line 1: element <link> is not closed"));
}

// Found by sdf_fuzzer: libsdformat parses the version with std::stoi, whose std::invalid_argument
// and std::out_of_range it lets out. The scan refuses such a version before libsdformat reads it.
TEST(SdfErrors, VersionsThatAreNotNumbersAreRefusedBeforeParsing) {
  for (const std::string version : {"1.@7", "1.x", "1..9", ".9", "abc", "1.99999999999"}) {
    EXPECT_THAT(load_error(sdf(link("base"), version)),
                HasSubstr("line 2: <sdf> version '" + version +
                          "': a version is MAJOR.MINOR in digits, such as 1.9"));
  }
  // libsdformat's own error for a version it reads and does not know.
  EXPECT_THAT(load_error(sdf(link("base"), "7.0")), HasSubstr("invalid SDF: libsdformat"));
}

TEST(SdfErrors, LibsdformatsOwnStandardErrorIsNotWhereTheDocumentGoes) {
  // libsdformat writes this error to std::cerr with the element's XML, and returns it too.
  std::ostringstream written;
  std::streambuf* const standard_error = std::cerr.rdbuf(written.rdbuf());
  const std::string message = load_error(sdf(link("a::b")));
  std::cerr.rdbuf(standard_error);
  EXPECT_THAT(message, HasSubstr("Delimiter '::' found"));
  EXPECT_EQ(written.str(), "");
}

TEST(SdfErrors, MissingFile) {
  try {
    read_sdf_file("/nonexistent/robot.sdf");
    FAIL() << "no error";
  } catch (const ModelError& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot read SDF file '/nonexistent/robot.sdf'"));
  }
}

TEST(SdfErrors, IncludeIsRefusedNamingTheUriWithoutOpeningIt) {
  // A valid model libsdformat would include from this path: refused all the same.
  const std::filesystem::path included =
      std::filesystem::temp_directory_path() / "torqued_sdf_test_included.sdf";
  std::ofstream(included) << sdf(link("extra"));
  const std::string message =
      load_error(sdf(link("base") + "<include>\n<uri>" + included.string() + "</uri></include>\n"));
  std::filesystem::remove(included);
  EXPECT_THAT(message, HasSubstr("line 5: <include> of '" + included.string() +
                                 "' refused: the SDF reader opens no file"));
  EXPECT_THAT(load_error(sdf(link("base") + "<include><name>x</name></include>")),
              HasSubstr("<include> refused"));
}

TEST(SdfErrors, TooManyLinksAreRefusedBeforeParsing) {
  SdfOptions options;
  options.max_links = 2;
  const std::string xml =
      sdf(link("a") + link("b") + "<model name=\"n\">" + link("c") + "</model>");
  EXPECT_THROW(read_sdf_string(xml, options), TooManyElementsError);
  options.max_links = 3;
  EXPECT_EQ(read_sdf_string(xml, options).links.size(), 3u);
}

// Documents that would keep libsdformat busy (or overflow its recursion) are refused by the scan,
// in milliseconds of this thread's CPU time.
TEST(SdfErrors, HostileDocumentsAreRefusedQuickly) {
  struct Hostile {
    std::string what;
    std::string xml;
    std::string message;
  };
  std::vector<Hostile> documents;
  std::string deep;
  for (int i = 0; i < 100'000; ++i) deep += "<a>";
  documents.push_back({"deep", sdf(deep), "nested deeper than 64 levels"});
  std::string attributes = "<a";
  for (int i = 0; i < 200'000; ++i) attributes += numbered(" x", i) + "=\"1\"";
  documents.push_back({"attributes", sdf(attributes + "/>"), "has more than 64 attributes"});
  std::string links;
  for (int i = 0; i < 40'000; ++i) links += "<link name=\"" + numbered("l", i) + "\"/>";
  documents.push_back({"links", sdf(links), "more than libsdformat's work bound"});
  std::string frames;
  for (int i = 0; i < 20'000; ++i) frames += "<frame name=\"" + numbered("f", i) + "\"/>";
  documents.push_back({"frames", sdf(link("base") + frames), "more than 1000 <frame> elements"});
  std::string models;
  for (int i = 0; i < 2'000; ++i) models += "<model name=\"" + numbered("m", i) + "\"/>";
  documents.push_back({"models", sdf(link("base") + models), "work bound"});
  for (const Hostile& document : documents) {
    const double start = test_support::thread_cpu_seconds();
    EXPECT_THAT(load_error(document.xml), HasSubstr(document.message)) << document.what;
    EXPECT_LT(test_support::thread_cpu_seconds() - start, 0.5) << document.what;
  }
}

// The documents within the caps that keep libsdformat busiest, of each kind of work, are read in
// about 2 s at most. The bound checked is on this thread's CPU time (other processes on the CPUs do
// not count) and loose: 10 s, 30 s under a sanitizer (libsdformat itself is not instrumented).
// The times are printed.
TEST(Sdf, DocumentsAtTheCapsLoadInBoundedTime) {
  const double bound_s = test_support::kSanitizedBuild ? 30.0 : 10.0;
  struct Document {
    std::string what;
    std::string xml;
  };
  std::vector<Document> documents;
  std::string models;
  for (int i = 0; i < 100; ++i) {
    models += "<model name=\"" + numbered("m", i) + "\">" + link("l") + "</model>";
  }
  documents.push_back({"100 nested models", sdf(link("base") + models)});
  std::string chain = link("l0");
  for (int i = 1; i < 200; ++i) {
    const std::string n = std::to_string(i);
    chain +=
        link("l" + n) + joint("j" + n, "revolute", numbered("l", i - 1), "l" + n, axis("0 0 1"));
  }
  documents.push_back({"200 links and joints", sdf(chain)});
  std::string leaves;
  for (std::size_t i = 0; i + 20 < kMaxSdfNodes; ++i) leaves += "<pose>0 0 0 0 0 0</pose>";
  documents.push_back({"nodes at the cap", sdf(link("base", leaves))});
  std::string frames;
  for (std::size_t i = 0; i < kMaxSdfFrames; ++i) {
    frames += "<frame name=\"" + numbered("f", i) + "\"/>";
  }
  documents.push_back({"frames at the cap", sdf(link("base") + frames)});
  std::string attributes;
  for (std::size_t i = 0; i + 1 < kMaxSdfAttributes / kMaxSdfElementAttributes; ++i) {
    attributes += "<a";
    for (std::size_t k = 0; k < kMaxSdfElementAttributes; ++k) {
      attributes += numbered(" x", k) + "=\"1\"";
    }
    attributes += "/>";
  }
  documents.push_back({"attributes at the caps", sdf(link("base") + attributes)});
  for (const Document& document : documents) {
    const double start = test_support::thread_cpu_seconds();
    const ModelSpec spec = read_sdf_string(document.xml);
    const double seconds = test_support::thread_cpu_seconds() - start;
    std::cout << document.what << ": " << document.xml.size() << " bytes, " << spec.links.size()
              << " links, read in " << seconds << " s of CPU\n";
    EXPECT_LT(seconds, bound_s) << document.what;
  }
}

TEST(SdfErrors, MessagesStayOnTheirThread) {
  const std::string good =
      sdf(link("base") + link("a") + joint("j", "revolute", "base", "a", axis("0 0 1")));
  const std::string bad = sdf(link("base", "<inertial><mass>heavy</mass></inertial>"));
  std::vector<std::string> errors(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&errors, &good, &bad, t] {
      for (int run = 0; run < 3; ++run) {
        try {
          read_sdf_string(t % 2 == 0 ? good : bad);
        } catch (const ModelError& e) {
          errors[t] = e.what();
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < 4; ++t) {
    if (t % 2 == 0) {
      EXPECT_EQ(errors[t], "") << t;
    } else {
      EXPECT_THAT(errors[t], HasSubstr("Unable to set value [heavy ]")) << t;
    }
  }
}

}  // namespace
}  // namespace torqued
