#include "tests/engine/support/closed_chains.hpp"

#include <cmath>

namespace torqued::test_support {
namespace {

// A slender rod of length `length` along the link's x axis, its centre of mass at mid-length.
LinkSpec rod(const std::string& name, double mass, double length) {
  LinkSpec link;
  link.name = name;
  link.inertial.mass = mass;
  link.inertial.origin.translation = Vec3(length / 2.0, 0.0, 0.0);
  const double transverse = mass * length * length / 12.0;
  link.inertial.inertia = Vec3(1e-4, transverse, transverse).asDiagonal();
  return link;
}

// A compact block centred on the link origin.
LinkSpec block(const std::string& name, double mass) {
  LinkSpec link;
  link.name = name;
  link.inertial.mass = mass;
  link.inertial.inertia = Vec3(1e-3, 1e-3, 1.5e-3).asDiagonal();
  return link;
}

JointSpec joint(const std::string& name, const std::string& parent, const std::string& child,
                const Vec3& at, JointType type = JointType::kRevolute, Vec3 axis = Vec3::UnitZ()) {
  JointSpec j;
  j.name = name;
  j.type = type;
  j.parent_link = parent;
  j.child_link = child;
  j.origin.translation = at;
  j.axis = axis;
  return j;
}

Eigen::Vector2d unit(double angle) { return {std::cos(angle), std::sin(angle)}; }

constexpr double kCrankMass = 1.0, kCouplerMass = 2.0, kRockerMass = 1.5, kSliderMass = 3.0;

}  // namespace

ModelSpec four_bar_spec(FourBarClosure closure) {
  ModelSpec spec;
  spec.name = "four_bar";
  spec.gravity = Vec3(0.0, -kPlanarGravity, 0.0);
  spec.links = {block("ground", 0.0), rod("crank", kCrankMass, kFourBarCrank),
                rod("coupler", kCouplerMass, kFourBarCoupler),
                rod("rocker", kRockerMass, kFourBarRocker)};
  spec.joints = {joint("crank_joint", "ground", "crank", Vec3::Zero()),
                 joint("coupler_joint", "crank", "coupler", Vec3(kFourBarCrank, 0.0, 0.0)),
                 joint("rocker_joint", "coupler", "rocker", Vec3(kFourBarCoupler, 0.0, 0.0))};
  LoopClosureSpec loop;
  loop.name = "rocker_pivot";
  loop.link1 = "rocker";
  loop.origin1.translation = Vec3(kFourBarRocker, 0.0, 0.0);
  loop.link2 = "world";
  loop.origin2.translation = Vec3(kFourBarGround, 0.0, 0.0);
  if (closure == FourBarClosure::kWeld) {
    spec.links.push_back(block("anchor", 0.1));
    spec.joints.push_back(
        joint("anchor_joint", "rocker", "anchor", Vec3(kFourBarRocker, 0.0, 0.0)));
    loop.type = ConstraintType::kWeld;
    loop.link1 = "anchor";
    loop.origin1 = Transform::Identity();
  } else {
    loop.type =
        closure == FourBarClosure::kPoint ? ConstraintType::kPoint : ConstraintType::kRevolute;
  }
  spec.loop_closures.push_back(loop);
  return spec;
}

ModelSpec slider_crank_spec(SliderCrankClosure closure) {
  ModelSpec spec;
  spec.name = "slider_crank";
  spec.gravity = Vec3(0.0, -kPlanarGravity, 0.0);
  spec.links = {block("ground", 0.0), rod("crank", kCrankMass, kSliderCrankCrank),
                rod("coupler", kCouplerMass, kSliderCrankCoupler), block("slider", kSliderMass)};
  spec.joints = {
      joint("alpha1", "ground", "crank", Vec3::Zero()),
      joint("alpha2", "crank", "coupler", Vec3(kSliderCrankCrank, 0.0, 0.0)),
      joint("alpha3", "coupler", "slider", Vec3(kSliderCrankCoupler, 0.0, 0.0)),
  };
  LoopClosureSpec loop;
  loop.name = "slider_guide";
  loop.link2 = "world";
  if (closure == SliderCrankClosure::kWeld) {
    spec.links.push_back(block("carriage", 0.1));
    spec.joints.push_back(joint("displacement", "slider", "carriage", Vec3::Zero(),
                                JointType::kPrismatic, -Vec3::UnitX()));
    loop.type = ConstraintType::kWeld;
    loop.link1 = "carriage";
  } else {
    // The guide's free direction is frame 1's z axis: turn it onto the world's x axis.
    loop.type = ConstraintType::kPrismatic;
    loop.link1 = "slider";
    loop.origin1.rotation = Eigen::AngleAxisd(M_PI / 2.0, Vec3::UnitY()).toRotationMatrix();
    loop.origin2.rotation = loop.origin1.rotation;
  }
  spec.loop_closures.push_back(loop);
  return spec;
}

PlanarPose four_bar_pose(FourBarClosure closure, double crank_angle) {
  const double a = kFourBarCrank, b = kFourBarCoupler, c = kFourBarRocker, d = kFourBarGround;
  const Eigen::Vector2d crank_tip = a * unit(crank_angle);
  // The coupler's tip is where the circles about the crank tip (radius b) and the ground pivot
  // (radius c) meet, on the branch above the line between their centres.
  const Eigen::Vector2d to_pivot = Eigen::Vector2d(d, 0.0) - crank_tip;
  const double span = to_pivot.norm();
  const double coupler_angle = std::atan2(to_pivot.y(), to_pivot.x()) +
                               std::acos((b * b + span * span - c * c) / (2.0 * b * span));
  const Eigen::Vector2d coupler_tip = crank_tip + b * unit(coupler_angle);
  const Eigen::Vector2d rocker_direction = Eigen::Vector2d(d, 0.0) - coupler_tip;
  const double rocker_angle = std::atan2(rocker_direction.y(), rocker_direction.x());

  PlanarPose pose;
  const int nq = closure == FourBarClosure::kWeld ? 4 : 3;
  pose.q.resize(nq);
  pose.q << crank_angle, coupler_angle - crank_angle, rocker_angle - coupler_angle;
  if (closure == FourBarClosure::kWeld) pose.q[3] = -rocker_angle;
  pose.com = {0.5 * a * unit(crank_angle), crank_tip + 0.5 * b * unit(coupler_angle),
              coupler_tip + 0.5 * c * unit(rocker_angle)};
  pose.angle = {crank_angle, coupler_angle, rocker_angle};
  pose.mass = {kCrankMass, kCouplerMass, kRockerMass};
  pose.inertia = {kCrankMass * a * a / 12.0, kCouplerMass * b * b / 12.0,
                  kRockerMass * c * c / 12.0};
  return pose;
}

PlanarPose slider_crank_pose(SliderCrankClosure closure, double crank_angle) {
  const double l1 = kSliderCrankCrank, l2 = kSliderCrankCoupler;
  const double coupler_angle = -std::asin(l1 * std::sin(crank_angle) / l2);
  const Eigen::Vector2d crank_tip = l1 * unit(crank_angle);
  const double slider = crank_tip.x() + l2 * std::cos(coupler_angle);
  PlanarPose pose;
  const int nq = closure == SliderCrankClosure::kWeld ? 4 : 3;
  pose.q.resize(nq);
  pose.q << crank_angle, coupler_angle - crank_angle, -coupler_angle;
  if (closure == SliderCrankClosure::kWeld) pose.q[3] = slider;
  pose.com = {0.5 * crank_tip, crank_tip + 0.5 * l2 * unit(coupler_angle),
              Eigen::Vector2d(slider, 0.0)};
  pose.angle = {crank_angle, coupler_angle, 0.0};
  pose.mass = {kCrankMass, kCouplerMass, kSliderMass};
  pose.inertia = {kCrankMass * l1 * l1 / 12.0, kCouplerMass * l2 * l2 / 12.0, 1.5e-3};
  return pose;
}

}  // namespace torqued::test_support
