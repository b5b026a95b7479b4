// The engine calls behind HybridDynamics, FloatingBaseInverseDynamics, Derivatives,
// CoriolisMatrix, Centroidal and ConstrainedDynamics, on states [begin, end) of a validated batch,
// in the manner of compute.hpp: requests read in place, preallocated response arrays written,
// nothing allocated once the worker's workspace exists. SingularSystemError propagates.
#pragma once

#include <span>

#include "engine/algorithms/constraint_jacobian.hpp"
#include "engine/algorithms/hybrid_dynamics.hpp"
#include "server/workspace.hpp"
#include "torqued/v1/dynamics.pb.h"

namespace torqued::server {

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
};

void derivatives(const Model& model, ModelWorkspace& ws, const v1::DerivativesRequest& request,
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
// closures, `rows` in all; `inputs`: request.inputs() in engine form, empty for forward dynamics.
void constrained_dynamics(const Model& model, ModelWorkspace& ws,
                          const v1::ConstrainedDynamicsRequest& request,
                          std::span<const BilateralConstraint> constraints,
                          const BaumgarteGains& gains, std::span<const DofInput> inputs, int rows,
                          int begin, int end, const ConstrainedDynamicsOutput& out);

}  // namespace torqued::server
