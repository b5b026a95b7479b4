// Planar closed chains with a known one-DOF solution, as engine ModelSpecs (with their loop
// closures) and closed-form position solutions for an independent Lagrangian model. Both move in
// the world's x-y plane, joints about z, gravity (0, −9.81, 0).
//
// Four-bar (Featherstone 2008, §8.4's example): ground pivots at the origin and at (d, 0); crank a,
// coupler b, rocker c; the tree is crank → coupler → rocker and the loop pins the rocker's tip
// to (d, 0). Slider-crank (Legnani et al. Part 2, §5; digest-001-004.md §3.7, §7.2): crank l1 about
// the origin, coupler l2, a slider block on the x axis.
#pragma once

#include <vector>

#include "engine/model/spec.hpp"

namespace torqued::test_support {

// How the loop is closed.
enum class FourBarClosure {
  kRevolute,  // tree of 3 revolutes, a kRevolute loop at the rocker's tip (5 rows, rank 2)
  kPoint,     // the same with a kPoint loop (3 rows, rank 2)
  kWeld,      // tree of 4 revolutes (the fourth moves an "anchor" link), anchor welded to the
              // world (6 rows, rank 3)
};
enum class SliderCrankClosure {
  kPrismatic,  // tree of 3 revolutes (α1, α2, α3), the slider held on the x axis by a kPrismatic
               // loop (5 rows, rank 2)
  kWeld,       // tree of α1, α2, α3 and the prismatic a of Legnani's M_{3,4} = Tx(−a), its
               // "carriage" welded to the world (6 rows, rank 3), coordinates as in the digest
};

inline constexpr double kFourBarCrank = 0.2, kFourBarCoupler = 0.6, kFourBarRocker = 0.4,
                        kFourBarGround = 0.5;
inline constexpr double kSliderCrankCrank = 0.3, kSliderCrankCoupler = 0.8;
inline constexpr double kPlanarGravity = 9.81;

ModelSpec four_bar_spec(FourBarClosure closure);
ModelSpec slider_crank_spec(SliderCrankClosure closure);

// A closed configuration as a function of the crank angle φ: the tree coordinates q and, for each
// moving link with mass, its centre of mass in the plane, absolute angle, mass and moment of
// inertia about its centre of mass (links that do not move are left out).
struct PlanarPose {
  Eigen::VectorXd q;
  std::vector<Eigen::Vector2d> com;
  std::vector<double> angle;
  std::vector<double> mass;
  std::vector<double> inertia;
};
PlanarPose four_bar_pose(FourBarClosure closure, double crank_angle);
PlanarPose slider_crank_pose(SliderCrankClosure closure, double crank_angle);

}  // namespace torqued::test_support
