// Dispatch between the forward-dynamics algorithms, and the rule behind kAuto.
#include "engine/algorithms/forward_dynamics.hpp"

#include "engine/algorithms/aba.hpp"
#include "engine/algorithms/forward_dynamics_crba.hpp"
#include "engine/algorithms/forward_dynamics_factorization.hpp"

namespace torqued {

ForwardDynamicsAlgorithm auto_forward_dynamics_algorithm(const Model& model) {
  // CRBA + LᵀDL costs about Σ_k depth(k) for M plus Σ_k depth(k)² for the factors (depth(k): the
  // number of DOFs from DOF k to the root, k included); ABA costs a constant per DOF. Measured
  // on random revolute chains and trees of 2-60 DOF and the shared robots (bench/, --random-chain,
  // --random-tree, --urdf), CRBA + LᵀDL wins while the mean DOF depth is at most about 7 (chains
  // cross over at 12-16 DOF, mean depth 6.5-8.5; talos_reduced fixed, mean depth 4.3, favours
  // CRBA by ~7%, floating, mean depth 9.2, favours ABA by ~10%), and the factorization, which
  // is ABA plus an RNEA pass, never wins.
  constexpr double kMaxMeanDepthForCrba = 7.0;
  if (model.nv == 0) return ForwardDynamicsAlgorithm::kAba;
  long depth_sum = 0;
  for (int i = 1; i < model.nbodies(); ++i) {
    long ancestors = 0;  // DOFs strictly above body i
    for (int j = model.parent[i]; j > 0; j = model.parent[j]) ancestors += model.joints[j].nv;
    const long k = model.joints[i].nv;
    depth_sum += k * ancestors + k * (k + 1) / 2;
  }
  return static_cast<double>(depth_sum) <= kMaxMeanDepthForCrba * model.nv
             ? ForwardDynamicsAlgorithm::kCrba
             : ForwardDynamicsAlgorithm::kAba;
}

WorkspaceSet forward_dynamics_workspaces(const Model& model, ForwardDynamicsAlgorithm algorithm) {
  if (algorithm == ForwardDynamicsAlgorithm::kAuto) {
    algorithm = auto_forward_dynamics_algorithm(model);
  }
  return algorithm == ForwardDynamicsAlgorithm::kCrba ? kForwardDynamicsCrbaWorkspaces
                                                      : kAbaWorkspaces;
}

const Eigen::VectorXd& forward_dynamics(const Model& model, Data& data, const ConstVectorRef& q,
                                        const ConstVectorRef& v, const ConstVectorRef& tau,
                                        ForwardDynamicsAlgorithm algorithm) {
  if (algorithm == ForwardDynamicsAlgorithm::kAuto) {
    algorithm = auto_forward_dynamics_algorithm(model);
  }
  switch (algorithm) {
    case ForwardDynamicsAlgorithm::kCrba:
      return forward_dynamics_crba(model, data, q, v, tau);
    case ForwardDynamicsAlgorithm::kFactorization:
      return forward_dynamics_factorization(model, data, q, v, tau);
    default:
      return aba(model, data, q, v, tau);
  }
}

}  // namespace torqued
