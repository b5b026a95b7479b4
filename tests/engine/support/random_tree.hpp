// Seeded random kinematic trees and states for property tests.
//
// random_tree_spec() produces a ModelSpec with 1 to 60 links (configurable), branching, every
// joint kind (revolute about unit and general axes, continuous, prismatic, helical with pitch,
// spherical, planar, free-flyers at the root or inside the tree, fixed joints that build_model()
// merges), random placements and physically valid inertias: positive mass and principal moments
// of a solid box (so the rotational inertia is positive definite and satisfies the triangle
// inequality), expressed in a randomly rotated inertial frame at a random centre of mass.
// Everything is a deterministic function of the seed.
#pragma once

#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "engine/model/model.hpp"
#include "engine/model/spec.hpp"

namespace torqued::test_support {

struct RandomTreeOptions {
  int min_links = 1;
  int max_links = 60;
  // Adds the "root_joint" free-flyer (ModelSpec::floating_base).
  bool floating_base = false;
  // Joint kinds that may be drawn besides the 1-DOF ones.
  bool allow_spherical = true;
  bool allow_planar = true;
  bool allow_free_flyer = true;  // free-flyers inside the tree
  bool allow_fixed = true;
  // When the tree has enough links, the first joints cover every allowed kind once (in a
  // random order), so that each kind appears at least once.
  bool cover_every_kind = true;
  Vec3 gravity = Vec3(0.0, 0.0, -9.81);
};

ModelSpec random_tree_spec(std::uint64_t seed, const RandomTreeOptions& options = {});

// A uniform draw in [lo, hi).
double uniform(std::mt19937_64& rng, double lo, double hi);
Eigen::VectorXd uniform_vector(std::mt19937_64& rng, int size, double lo, double hi);
// A uniformly random rotation.
Mat3 random_rotation(std::mt19937_64& rng);
// A random rotation with a translation in [−max_translation, max_translation]³.
Transform random_transform(std::mt19937_64& rng, double max_translation = 1.0);
// Mass in [0.1, 5] kg, centre of mass in [−0.3, 0.3]³, principal moments of a solid box with
// sides in [0.05, 0.8] m, principal axes randomly rotated.
InertialSpec random_inertial(std::mt19937_64& rng);
RigidInertia random_rigid_inertia(std::mt19937_64& rng);
// A random symmetric 6x6 matrix with entries in [−1, 1].
Mat6 random_symmetric6(std::mt19937_64& rng);

struct RandomState {
  Eigen::VectorXd q;         // random_configuration(): within limits, unit quaternions
  Eigen::VectorXd v;         // [−1, 1]^nv
  Eigen::VectorXd a;         // [−1, 1]^nv
  Eigen::VectorXd tau;       // [−10, 10]^nv
  std::vector<Force> f_ext;  // one per body, [−10, 10]^6; index 0 (the world) is zero
};

RandomState random_state(const Model& model, std::mt19937_64& rng);

// `count` bilateral constraints between random bodies (or the world), the types in turn (weld,
// point, revolute, prismatic, ...), frames at random placements within 0.3 of the bodies.
std::vector<BilateralConstraint> random_constraints(const Model& model, std::mt19937_64& rng,
                                                    int count);

// The constraints of `candidates` kept one by one while K keeps full row rank at q, well
// conditioned (singular values within 1e2 of each other) so that finite differences stay accurate:
// λ and the derivatives of constrained dynamics are then unique (dependent rows whose dependence
// varies with q, as random frames on a short chain give, have no smooth minimum-norm λ).
std::vector<BilateralConstraint> independent_constraints(
    const Model& model, const Eigen::VectorXd& q,
    const std::vector<BilateralConstraint>& candidates);

// The feet of a floating robot, contacts with the world at random placements: a weld on its last
// body and a point contact on the one before, those of them that are independent at q
// (independent_constraints()).
std::vector<BilateralConstraint> random_feet(const Model& model, std::mt19937_64& rng,
                                             const Eigen::VectorXd& q);

// One random tree of a value-parameterized test, and its name in the test list
// ("seed7_floating_10to60links").
struct TreeCase {
  std::uint64_t seed;
  bool floating_base;
  int min_links;
  int max_links;
};
std::string tree_case_name(const TreeCase& tree);
// GoogleTest prints test parameters through this (found by argument-dependent lookup).
void PrintTo(const TreeCase& tree, std::ostream* os);

}  // namespace torqued::test_support
