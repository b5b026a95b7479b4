// Articulated-body forward dynamics (Featherstone 1987, ch. 6, eqs 6.37-6.47, with §7.2-7.4 for
// trees and multi-DOF joints; Kim 2012, §2.2, Table 3), in world coordinates: the three passes
// of the articulated-body core (articulated_body.hpp) with every joint's force given.
#include "engine/algorithms/aba.hpp"

#include <cassert>

#include "engine/algorithms/articulated_body.hpp"

namespace torqued {

const Eigen::VectorXd& aba(const Model& model, Data& data, const ConstVectorRef& q,
                           const ConstVectorRef& v, const ConstVectorRef& tau,
                           std::span<const Force> external_forces) {
  assert(fits(model, data, q, v, tau));
  articulated::articulated_body_passes(model, data, q.data(), v.data(), external_forces,
                                       articulated::EveryForceGiven{tau.data()});
  return data.ddq;
}

}  // namespace torqued
