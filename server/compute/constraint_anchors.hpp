// A call's constraints with the world anchors they take from the state. A constraint that holds a
// frame to the world without an anchor (ConstraintFrame.placement unset in frame2) holds frame 1
// where it is at the state that anchors it: frame 2 is placed in the world where frame 1 is there,
// so that its position error is zero at that state. Linearize anchors at its first knot, Rollout
// at each rollout's x₀, and the per-state calls (ConstrainedDynamics, Derivatives) at each state.
#pragma once

#include <span>
#include <vector>

#include "engine/algorithms/kinematics.hpp"

namespace torqued::server {

struct CallConstraints {
  // The request's constraints in engine form; the placement2 of those held in place is set at
  // each anchoring state.
  std::vector<BilateralConstraint> constraints;
  // Indices in `constraints` of those held where frame 1 is at the anchoring state.
  std::vector<int> held_in_place;
};

// The constraints at one anchoring state after another: the call's own when none is held in
// place, else a copy (made on the first state) whose held constraints are placed by forward
// kinematics at each state given. One per chunk of work: its copy is the chunk's.
class AnchoredConstraints;

// One phase of a call's contact schedule, as planned: from knot first_knot on, the robot held by
// the loop closures and `contacts`; a touchdown, with `restitution`, when it adds a contact to
// the phase before.
struct CallPhase {
  int first_knot = 0;
  CallConstraints contacts;
  double restitution = 0.0;
  bool touchdown = false;
  int rows = 0;  // the loop closures' and its contacts'
};

// The contacts of every phase, anchored as Linearize holds them: a contact held in place where
// frame 1 is at its phase's first knot (configurations K × nq in `q`), or, when the phase before
// held the same contact, where that phase held it (data's kinematics are overwritten).
std::vector<std::vector<BilateralConstraint>> anchored_schedule(const Model& model, Data& data,
                                                                std::span<const CallPhase> phases,
                                                                const double* q);

class AnchoredConstraints {
 public:
  explicit AnchoredConstraints(const CallConstraints& call) : call_(call) {}

  // The constraints anchored at configuration q (data's kinematics are overwritten).
  std::span<const BilateralConstraint> at(const Model& model, Data& data, const ConstVectorRef& q);

 private:
  const CallConstraints& call_;
  std::vector<BilateralConstraint> anchored_;
};

}  // namespace torqued::server
