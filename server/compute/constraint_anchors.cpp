// Anchors of the constraints held where they stand: forward kinematics once per anchoring state.
#include "server/compute/constraint_anchors.hpp"

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

}  // namespace torqued::server
