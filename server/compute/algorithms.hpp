// The engine's algorithms as the server runs them, in one table: each names its series of
// torqued_engine_compute_seconds{algorithm} and the engine workspaces it binds (engine/model/
// data.hpp), which the server checks against --max-workspace-bytes before a call runs.
#pragma once

#include <string>
#include <vector>

#include "engine/model/data.hpp"

namespace torqued::server {

enum class Algorithm : int {
  kRnea,
  kLagrangeHomogeneous,
  kAba,
  kForwardDynamicsCrba,
  kForwardDynamicsFactorization,
  kCrba,
  kMassMatrixInverse,  // CRBA and minverse
  kLagrangeHomogeneousMassMatrix,
  kLagrangeHomogeneousMassMatrixInverse,  // Legnani's M and minverse
  kNonlinearEffects,
  kGravity,
  kKinematics,
  kHybridDynamics,
  kFloatingBaseInverseDynamics,
  kRneaDerivatives,
  kAbaDerivatives,
  kCoriolisMatrix,
  kCentroidal,
  kConstrainedDynamics,
  kClosedChainInverseDynamics,
  kContactDynamics,
  kImpact,
  kSimulate,
  kCount,
};

// "rnea", "aba", ...: the algorithm label.
const char* algorithm_name(Algorithm algorithm);

// The engine workspaces a call of `algorithm` binds in a ModelWorkspace's Data.
WorkspaceSet engine_workspaces(Algorithm algorithm);

// Every algorithm's label, in the enum's order (the metrics' series).
std::vector<std::string> algorithm_names();

}  // namespace torqued::server
