// The engine's enums for the proto's, where a request's enum picks an engine behaviour. Each
// takes a value the plan has already checked (check_enum()); unknown values fall to the proto's
// default.
#pragma once

#include "engine/algorithms/discrete_step.hpp"
#include "engine/algorithms/kinematics.hpp"
#include "torqued/v1/dynamics.pb.h"

namespace torqued::server {

inline ReferenceFrame to_reference(v1::ReferenceFrame reference) {
  switch (reference) {
    case v1::REFERENCE_FRAME_LOCAL_WORLD_ALIGNED:
      return ReferenceFrame::kLocalWorldAligned;
    case v1::REFERENCE_FRAME_WORLD:
      return ReferenceFrame::kWorld;
    default:
      return ReferenceFrame::kLocal;
  }
}

// Simulate, Linearize and Rollout.
inline Integrator to_integrator(v1::Integrator integrator) {
  switch (integrator) {
    case v1::INTEGRATOR_EXPLICIT_EULER:
      return Integrator::kExplicitEuler;
    case v1::INTEGRATOR_RK4:
      return Integrator::kRungeKutta4;
    default:
      return Integrator::kSemiImplicitEuler;
  }
}

}  // namespace torqued::server
