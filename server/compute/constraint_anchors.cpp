// Anchors of the constraints held where they stand: forward kinematics once per anchoring state.
#include "server/compute/constraint_anchors.hpp"

#include "engine/algorithms/rollout.hpp"

namespace torqued::server {

std::span<const BilateralConstraint> AnchoredConstraints::at(const Model& model, Data& data,
                                                             const ConstVectorRef& q) {
  if (call_.held_in_place.empty()) return call_.constraints;
  if (anchored_.empty()) anchored_ = call_.constraints;
  forward_kinematics(model, data, q);
  for (const int i : call_.held_in_place) {
    BilateralConstraint& c = anchored_[i];
    c.placement2 = data.oMi[c.body1] * c.placement1;
  }
  return anchored_;
}

std::vector<std::vector<BilateralConstraint>> anchored_schedule(const Model& model, Data& data,
                                                                std::span<const CallPhase> phases,
                                                                const double* q) {
  std::vector<std::vector<BilateralConstraint>> out;
  out.reserve(phases.size());
  for (const CallPhase& phase : phases) {
    std::vector<BilateralConstraint>& contacts = out.emplace_back(phase.contacts.constraints);
    bool placed = false;
    for (const int i : phase.contacts.held_in_place) {
      BilateralConstraint& c = contacts[i];
      const BilateralConstraint* held =
          out.size() > 1 ? held_contact(out[out.size() - 2], c) : nullptr;
      if (held != nullptr) {
        c.placement2 = held->placement2;
        continue;
      }
      if (!placed) {
        forward_kinematics(model, data,
                           Eigen::Map<const Eigen::VectorXd>(
                               q + std::ptrdiff_t{phase.first_knot} * model.nq, model.nq));
        placed = true;
      }
      c.placement2 = data.oMi[c.body1] * c.placement1;
    }
  }
  return out;
}

}  // namespace torqued::server
