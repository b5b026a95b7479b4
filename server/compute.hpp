// The engine calls behind each dynamics RPC, on states [begin, end) of a validated batch. Each
// kernel reads the request's flat arrays in place and writes the response's preallocated arrays;
// it allocates nothing once the worker's workspace exists. SingularSystemError propagates.
#pragma once

#include <vector>

#include "engine/algorithms/forward_dynamics.hpp"
#include "server/workspace.hpp"
#include "torqued/v1/dynamics.pb.h"

namespace torqued::server {

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

}  // namespace torqued::server
