// Floating-base inverse dynamics (Featherstone 1987, §7.5.1, eqs 7.25-7.31): hybrid dynamics with
// the free-flyer root's force given (zero: the base is unactuated) and every other joint's
// acceleration given. No joint below the root is articulated, so the articulated inertias the
// core's passes (articulated_body.hpp) carry inward are the composite inertias I^C of 7.28 and
// the bias forces the p of 7.29; the root's pivot solves I^C_root a_0 = −p_root (7.30), and the
// last pass reads each joint's force off S_iᵀ (I^C_i a_i + p_i) (7.31).
#include "engine/algorithms/floating_base_inverse_dynamics.hpp"

#include <cassert>
#include <stdexcept>

#include "engine/algorithms/articulated_body.hpp"

namespace torqued {

namespace {

bool has_free_flyer_root(const Model& model) {
  return model.nbodies() > 1 && model.joints[1].type == JointType::kFreeFlyer &&
         model.parent[1] == 0 && model.subtree_end[1] == model.nbodies();
}

}  // namespace

void floating_base_inverse_dynamics(const Model& model, Data& data, const ConstVectorRef& q,
                                    const ConstVectorRef& v, const ConstVectorRef& ddq,
                                    std::span<const Force> external_forces) {
  assert(fits(model, data, q, v, ddq));
  if (!has_free_flyer_root(model)) {
    throw std::invalid_argument("floating_base_inverse_dynamics: model '" + model.name +
                                "' has no free-flyer root joint carrying the whole tree");
  }
  articulated::articulated_body_passes(model, data, q.data(), v.data(), external_forces,
                                       articulated::UnactuatedRoot{ddq.data()});
}

}  // namespace torqued
