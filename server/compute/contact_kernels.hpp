// The engine calls behind ContactDynamics, Impact and Simulate, on states [begin, end) of a
// validated batch, in the manner of dynamics_kernels.hpp: requests read in place, preallocated
// response arrays written. The contacts arrive in engine form (resolved from frame names by the
// handler); the worker's contact and simulation workspaces are made, or rebuilt larger, only when a
// call has more contacts than they hold, so nothing is allocated once a worker has seen the largest
// contact count. SingularSystemError propagates.
#pragma once

#include <cstdint>
#include <span>

#include "engine/algorithms/impact.hpp"
#include "engine/algorithms/simulate.hpp"
#include "server/compute/workspace_pool.hpp"
#include "torqued/v1/dynamics.pb.h"

namespace torqued::server {

// Heap bytes of the contact workspace for `contacts` contacts on a model of `nv` DOFs (its
// dominant buffers, with friction: J and M⁻¹Jᵀ, the Delassus matrix, Lemke's tableau), to check
// a call against --max-workspace-bytes before the workspace is made.
std::size_t contact_workspace_bytes(int nv, int contacts);

// Output pointers of ContactDynamics and Impact, for C contacts.
struct ContactOutput {
  double* velocities = nullptr;         // N × nv: a (ContactDynamics) or v⁺ (Impact)
  double* forces = nullptr;             // N × C × 3: forces or impulses, world frame
  int* modes = nullptr;                 // N × C, v1::ContactMode
  int* status = nullptr;                // N, v1::ContactSolverStatus
  std::uint32_t* iterations = nullptr;  // N
  double* residual = nullptr;           // N
};

void contact_dynamics(const Model& model, ModelWorkspace& ws,
                      const v1::ContactDynamicsRequest& request,
                      std::span<const PointContact> contacts, const ContactOptions& options,
                      int begin, int end, const ContactOutput& out);

void impact(const Model& model, ModelWorkspace& ws, const v1::ImpactRequest& request,
            std::span<const PointContact> contacts, const ContactOptions& options, int begin,
            int end, const ContactOutput& out);

// Output pointers of Simulate, for S steps.
struct SimulationOutput {
  double* q;                      // N × S × nq
  double* v;                      // N × S × nv
  int* status;                    // N, v1::ContactSolverStatus
  std::uint32_t* max_iterations;  // N
  double* max_residual;           // N
  std::uint32_t* max_contacts;    // N
};

// `steps` trajectories steps; `torque_columns` is 0 (no torque), 1 (held) or `steps` (one per
// step): the layout of request.tau().
void simulate(const Model& model, ModelWorkspace& ws, const v1::SimulateRequest& request,
              std::span<const ContactCandidate> candidates, const SimulationOptions& options,
              int steps, int torque_columns, int begin, int end, const SimulationOutput& out);

}  // namespace torqued::server
