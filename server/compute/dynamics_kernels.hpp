// The engine calls behind each dynamics RPC, on states [begin, end) of a validated batch. Each
// kernel reads the request's flat arrays in place and writes the response's preallocated arrays;
// it allocates nothing once the worker's workspace exists (but for the chunk's copy of the
// constraints held in place, constraint_anchors.hpp). SingularSystemError propagates, and
// InconsistentConstraintsError (past the gains' tolerance) with the state named. The contact
// kernels are in contact_kernels.hpp.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "engine/algorithms/constraint_jacobian.hpp"
#include "engine/algorithms/forward_dynamics.hpp"
#include "engine/algorithms/hybrid_dynamics.hpp"
#include "server/compute/constraint_anchors.hpp"
#include "server/compute/workspace_pool.hpp"
#include "torqued/v1/dynamics.pb.h"

namespace torqued::server {

// solve(), with the state (or knot: `item`) it solves named in the InconsistentConstraintsError
// it may throw, since the engine cannot know which of a batch's states it was given.
template <typename Solve>
decltype(auto) naming_state(int state, Solve&& solve, const char* item = "state") {
  try {
    return solve();
  } catch (const InconsistentConstraintsError& e) {
    throw InconsistentConstraintsError(item + (' ' + std::to_string(state)) + ": " + e.what());
  }
}

// By request.algorithm(); external forces only with RNEA (the handler checks).
void inverse_dynamics(const Model& model, ModelWorkspace& ws,
                      const v1::InverseDynamicsRequest& request, int begin, int end, double* tau);

// By `algorithm`, request.algorithm() resolved (never kAuto); external forces only with kAba.
void forward_dynamics(const Model& model, ModelWorkspace& ws,
                      const v1::ForwardDynamicsRequest& request, ForwardDynamicsAlgorithm algorithm,
                      int begin, int end, double* a);

// M by request.algorithm(), M⁻¹ by minverse(). `inverse` is null unless requested. Throws
// SingularSystemError when a joint moves no inertia and the inverse is requested.
void mass_matrix(const Model& model, ModelWorkspace& ws, const v1::MassMatrixRequest& request,
                 int begin, int end, double* mass_matrix, double* inverse);

void nonlinear_effects(const Model& model, ModelWorkspace& ws,
                       const v1::NonlinearEffectsRequest& request, int begin, int end, double* tau);

void gravity(const Model& model, ModelWorkspace& ws, const v1::GravityRequest& request, int begin,
             int end, double* tau);

// Output pointers for Kinematics; velocities and jacobians null when not requested.
struct KinematicsOutput {
  double* positions;
  double* rotations;
  double* velocities;
  double* jacobians;
};

void kinematics(const Model& model, ModelWorkspace& ws, const v1::KinematicsRequest& request,
                const std::vector<int>& frames, int begin, int end, const KinematicsOutput& out);

// `inputs`: request.inputs() in engine form (nv entries).
void hybrid_dynamics(const Model& model, ModelWorkspace& ws,
                     const v1::HybridDynamicsRequest& request, std::span<const DofInput> inputs,
                     int begin, int end, double* a, double* tau);

// The model must have a free-flyer root carrying the whole tree (the handler checks).
void floating_base_inverse_dynamics(const Model& model, ModelWorkspace& ws,
                                    const v1::FloatingBaseInverseDynamicsRequest& request,
                                    int begin, int end, double* a, double* tau);

// Output pointers for Derivatives, each N × nv × nv.
struct DerivativesOutput {
  double* d_dq;
  double* d_dv;
  double* d_du;
  // DERIVATIVES_OF_CONSTRAINED_DYNAMICS only, null otherwise: λ (N × rows) and its derivatives
  // (N × rows × nv each).
  double* multipliers;
  double* dmultipliers_dq;
  double* dmultipliers_dv;
  double* dmultipliers_dtau;
};

// `constraints`, `gains` and `rows` as constrained_dynamics() below takes them (constrained
// dynamics only).
void derivatives(const Model& model, ModelWorkspace& ws, const v1::DerivativesRequest& request,
                 const CallConstraints& constraints, const BaumgarteGains& gains, int rows,
                 int begin, int end, const DerivativesOutput& out);

void coriolis_matrix(const Model& model, ModelWorkspace& ws,
                     const v1::CoriolisMatrixRequest& request, int begin, int end,
                     double* coriolis);

// Output pointers for Centroidal.
struct CentroidalOutput {
  double* com;              // N × 3
  double* com_velocity;     // N × 3
  double* com_jacobian;     // N × 3 × nv
  double* momentum;         // N × 6
  double* momentum_matrix;  // N × 6 × nv
};

void centroidal(const Model& model, ModelWorkspace& ws, const v1::CentroidalRequest& request,
                int begin, int end, const CentroidalOutput& out);

// Output pointers for ConstrainedDynamics.
struct ConstrainedDynamicsOutput {
  double* a;            // N × nv
  double* multipliers;  // N × rows
  double* tau;          // N × nv; null for forward dynamics
};

// `constraints`: the request's constraints in engine form, applied after the model's loop
// closures (those held in place anchored at each state), `rows` in all; `inputs`: request.inputs()
// in engine form, empty for forward dynamics.
void constrained_dynamics(const Model& model, ModelWorkspace& ws,
                          const v1::ConstrainedDynamicsRequest& request,
                          const CallConstraints& constraints, const BaumgarteGains& gains,
                          std::span<const DofInput> inputs, int rows, int begin, int end,
                          const ConstrainedDynamicsOutput& out);

}  // namespace torqued::server
