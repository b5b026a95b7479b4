// Hybrid dynamics (Featherstone 1987, §7.5.2, eqs 7.35-7.38; Kim 2012, §2.3, eqs 51-53, Table 4):
// ABA with a mask. A DOF whose acceleration is given is not eliminated: its known motion joins
// the velocity-product term and its joint hands the articulated inertia on unchanged,
// "effectively rigidly connecting" the two bodies, and its force is read off the last pass. The
// passes are the articulated-body core's (articulated_body.hpp), as spatial_v2's HD.m is FDab.m
// with the mask.
#include "engine/algorithms/hybrid_dynamics.hpp"

#include <cassert>
#include <stdexcept>
#include <string>

#include "engine/algorithms/articulated_body.hpp"

namespace torqued {

void hybrid_dynamics(const Model& model, Data& data, const ConstVectorRef& q,
                     const ConstVectorRef& v, const ConstVectorRef& ddq, const ConstVectorRef& tau,
                     std::span<const DofInput> input, std::span<const Force> external_forces) {
  assert(fits(model, data, q, v, ddq, tau));
  if (static_cast<int>(input.size()) != model.nv) {
    throw std::invalid_argument("hybrid_dynamics: the input mask has " +
                                std::to_string(input.size()) + " entries for " +
                                std::to_string(model.nv) + " degrees of freedom");
  }
  articulated::articulated_body_passes(
      model, data, q.data(), v.data(), external_forces,
      articulated::GivenInputs{input.data(), tau.data(), ddq.data()});
}

}  // namespace torqued
