// The algorithms' table (see algorithms.hpp).
#include "server/compute/algorithms.hpp"

#include <iterator>

#include "engine/algorithms/aba.hpp"
#include "engine/algorithms/aba_derivatives.hpp"
#include "engine/algorithms/centroidal.hpp"
#include "engine/algorithms/closed_chain_inverse_dynamics.hpp"
#include "engine/algorithms/constrained_dynamics.hpp"
#include "engine/algorithms/contact_dynamics.hpp"
#include "engine/algorithms/coriolis_matrix.hpp"
#include "engine/algorithms/crba.hpp"
#include "engine/algorithms/forward_dynamics_crba.hpp"
#include "engine/algorithms/lagrange_homogeneous.hpp"
#include "engine/algorithms/minverse.hpp"
#include "engine/algorithms/rnea_derivatives.hpp"
#include "engine/algorithms/simulate.hpp"

namespace torqued::server {
namespace {

struct Row {
  const char* name;
  WorkspaceSet workspaces;
};

// In the enum's order.
const Row kAlgorithms[] = {
    {"rnea", {}},
    {"lagrange_homogeneous", kHomogeneousWorkspaces},
    {"aba", kAbaWorkspaces},
    {"forward_dynamics_crba", kForwardDynamicsCrbaWorkspaces},
    {"forward_dynamics_factorization", kAbaWorkspaces},
    {"crba", kCrbaWorkspaces},
    {"mass_matrix_inverse", kCrbaWorkspaces | kMinverseWorkspaces},
    {"lagrange_homogeneous_mass_matrix", kHomogeneousWorkspaces},
    {"lagrange_homogeneous_mass_matrix_inverse", kHomogeneousWorkspaces | kMinverseWorkspaces},
    {"nonlinear_effects", {}},
    {"gravity", {}},
    {"kinematics", {}},
    {"hybrid_dynamics", kAbaWorkspaces},
    {"floating_base_inverse_dynamics", kAbaWorkspaces},
    {"rnea_derivatives", kRneaDerivativesWorkspaces},
    {"aba_derivatives", kAbaDerivativesWorkspaces},
    {"coriolis_matrix", kCoriolisWorkspaces},
    {"centroidal", kCentroidalWorkspaces},
    {"constrained_dynamics", kConstrainedDynamicsWorkspaces},
    {"closed_chain_inverse_dynamics", kClosedChainInverseDynamicsWorkspaces},
    {"contact_dynamics", kContactWorkspaces},
    {"impact", kContactWorkspaces},
    {"simulate", kSimulateWorkspaces},
};
static_assert(std::size(kAlgorithms) == static_cast<std::size_t>(Algorithm::kCount),
              "one row per algorithm");

const Row& row(Algorithm algorithm) { return kAlgorithms[static_cast<int>(algorithm)]; }

}  // namespace

const char* algorithm_name(Algorithm algorithm) { return row(algorithm).name; }

WorkspaceSet engine_workspaces(Algorithm algorithm) { return row(algorithm).workspaces; }

std::vector<std::string> algorithm_names() {
  std::vector<std::string> names;
  for (const Row& r : kAlgorithms) names.emplace_back(r.name);
  return names;
}

}  // namespace torqued::server
