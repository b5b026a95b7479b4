// Trajectory simulation under given joint torques, optionally against a ground plane.
//
// Contact-free: the discrete step (discrete_step.hpp) by its semi-implicit Euler, explicit Euler or
// RK4, every DOF driven by its torque and the model's loop closures holding it:
//   semi-implicit Euler:  v ← v + h q̈(q, v),  q ← q ⊕ h v
//   classical RK4 on (q, v), the stage configurations taken as q ⊕ (c h) v_stage
//   (configuration.hpp), fourth order on vector-space joints; on quaternion joints, combining
//   body-frame stage velocities drops the dexp⁻¹ correction, which leaves a second-order error in
//   the rotation.
// With contact candidates: velocity-level time stepping (Stewart & Trinkle 1996; Anitescu & Potra
// 1997) on the plane z = ground_height with normal +z. Per step, with M, C at (q, v):
//   v_free = v + h M⁻¹(τ − C);  candidates within contact_margin of the plane become contacts;
//   impulses Λ with v⁺ = v_free + M⁻¹Jᵀ Λ, on the friction cone (projected Gauss-Seidel, warm-
//   started by the previous step's impulses of the same candidates; Lemke when μ = 0), and
//   v⁺_n ≥ target complementary to Λ_n, where, with φ the gap,
//     target = −φ / h                      if φ ≥ 0 (may close the gap, not cross it),
//            = −stabilization · φ / h      if φ < 0 (removes a fraction of a penetration),
//   raised to −e v⁻_n for a candidate approaching faster than restitution_velocity that would
//   cross the plane in this step (restitution, Newton's law at the velocity level);
//   q ← q ⊕ h v⁺.
// One CRBA + LᵀDL factorization per step serves v_free, M⁻¹Jᵀ and the Delassus matrix.
#pragma once

#include "engine/algorithms/aba.hpp"
#include "engine/algorithms/contact_dynamics.hpp"
#include "engine/algorithms/discrete_step.hpp"

namespace torqued {

// A point of a body that may touch the ground.
struct ContactCandidate {
  int body = 0;               // moving body index
  Vec3 point = Vec3::Zero();  // in the body frame
};

struct SimulationOptions {
  double time_step = 1e-3;
  // Contact-free runs only; with contact candidates the time stepping is semi-implicit Euler.
  Integrator integrator = Integrator::kSemiImplicitEuler;
  double ground_height = 0.0;
  double friction = 1.0;               // Coulomb μ of the ground
  double restitution = 0.0;            // e in [0, 1]
  double contact_margin = 0.01;        // m; at least the largest approach speed times the step
  double stabilization = 0.2;          // fraction of a penetration removed per step
  double restitution_velocity = 1e-2;  // m/s; slower impacts are inelastic (no resting jitter)
  ContactOptions solver = {.tolerance = 1e-10, .max_iterations = 200};
};

struct SimulationResult {
  int steps = 0;
  ComplementarityStatus status = ComplementarityStatus::kSolved;  // worst over the steps
  int max_iterations = 0;     // most solver iterations in one step
  double max_residual = 0.0;  // largest solver residual, m/s
  int max_contacts = 0;       // most simultaneous contacts
};

// Buffers for simulate() on one Model with up to max_candidates contact candidates.
struct SimulationWorkspace {
  SimulationWorkspace(const Model& model, int max_candidates);

  std::size_t heap_bytes() const;

  ContactWorkspace contact;
  std::vector<PointContact> contacts;  // this step's contacts
  std::vector<int> contact_candidate;  // their candidate indices
  std::vector<double> gap;             // their distances to the plane
  Eigen::MatrixXd impulses;            // 3 x max_candidates: last step's [Λ_n; Λ_t] per candidate
  Eigen::VectorXd q, v, tau_zero, scaled_v;
  Eigen::VectorXd q_next, v_next;  // a contact-free step's result, swapped into q and v
  std::vector<int> every_dof;      // 0 … nv − 1: a contact-free step's actuation
};

// What simulate() binds in Data (beside its SimulationWorkspace): the step's for the contact-free
// steps, and the contact solver's.
inline constexpr WorkspaceSet kSimulateWorkspaces = kStepWorkspaces | kContactWorkspaces;

// Integrates q_out.cols() steps from (q0, v0) and writes the state after step k into column k of
// q_out (nq x steps) and v_out (nv x steps). `torques` is nv x 0 (zero torque), nv x 1 (held) or
// nv x steps (one column per step); column-major, so it is the row-major steps x nv layout.
// Impulses of the last call are not reused: every call starts cold and is deterministic.
// options.solver.interruption is polled between steps and inside the contact solver (throws
// Interrupted; the columns of the steps not taken are left as they were).
SimulationResult simulate(const Model& model, Data& data, SimulationWorkspace& ws,
                          const ConstVectorRef& q0, const ConstVectorRef& v0,
                          const Eigen::Ref<const Eigen::MatrixXd>& torques,
                          std::span<const ContactCandidate> candidates,
                          const SimulationOptions& options, Eigen::Ref<Eigen::MatrixXd> q_out,
                          Eigen::Ref<Eigen::MatrixXd> v_out);

}  // namespace torqued
