// Coulomb's friction cone of the contact forces, as a trajectory optimizer constrains or penalizes
// them (Crocoddyl's FrictionCone and ResidualModelContactFrictionCone; Mastalli et al. 2020,
// "Crocoddyl: An Efficient and Versatile Framework for Multi-Contact Optimal Control", ICRA,
// §IV-C; Trinkle et al. 1997 for the linearized cone). A force f on a contact, with normal
// component f_n = nᵀ f and tangential components f_t = (t₁ᵀ f, t₂ᵀ f) in the surface, sticks when
// ‖f_t‖ ≤ μ f_n. Its residuals, each ≥ 0 inside:
//   r₀ = μ f_n − ‖f_t‖                                     the cone
//   r_i = μ cos(π/m) f_n − (cos θ_i t₁ + sin θ_i t₂)ᵀ f,    θ_i = 2π (i − 1)/m,  i = 1 … m
// the second the m faces of the pyramid inscribed in the cone (inner approximation, Crocoddyl's
// default), and their gradients
//   ∂r₀/∂f = μ nᵀ − f_tᵀ [t₁ t₂]ᵀ / ‖f_t‖   (at f_t = 0 the subgradient μ nᵀ)
//   ∂r_i/∂f = μ cos(π/m) nᵀ − (cos θ_i t₁ + sin θ_i t₂)ᵀ.
// A contact's force is the first three rows of its λ (a point contact's, a weld's force rows: the
// force on frame 1 in frame 1's axes, constraint_jacobian.hpp), f = ⁰R₁ λ_f in the world. It turns
// with frame 1, so that along the configuration (δ⁰R₁ = [J_ω δq]× ⁰R₁, J_ω the angular rows of
// body1's Jacobian in world axes)
//   ∂f/∂q = ⁰R₁ ∂λ_f/∂q − [f]× J_ω,    ∂f/∂q̇ = ⁰R₁ ∂λ_f/∂q̇,    ∂f/∂τ = ⁰R₁ ∂λ_f/∂τ,
// and ∂r/∂(q, q̇, u) = ∂r/∂f ∂f/∂(q, q̇, τ B).
#pragma once

#include <span>

#include "engine/algorithms/constraint_jacobian.hpp"

namespace torqued {

// The cone of every contact of a step: its friction coefficient μ, the faces m of its linearized
// pyramid and the surface normal n in world axes (a unit vector).
struct FrictionCone {
  double friction = 0.0;
  int faces = 4;
  Vec3 normal = Vec3::UnitZ();
};

// Residuals per contact: the cone and its faces, 1 + m.
inline int friction_cone_values(const FrictionCone& cone) { return 1 + cone.faces; }

// The residuals of the force f (world axes) into `residuals` (1 + m), and their gradients ∂r/∂f
// into `gradient` ((1 + m) x 3).
void friction_cone_residuals(const FrictionCone& cone, const Vec3& force,
                             Eigen::Ref<Eigen::VectorXd> residuals);
void friction_cone_residuals(const FrictionCone& cone, const Vec3& force,
                             Eigen::Ref<Eigen::VectorXd> residuals,
                             Eigen::Ref<Eigen::Matrix<double, Eigen::Dynamic, 3>> gradient);

// The rates of a knot's λ along its state and controls: ∂λ/∂q, ∂λ/∂q̇ and ∂λ/∂τ (rows x nv, those
// of the dynamics at (q, v)), and, when the knot began with an impact that took q̇ to v, ∂v/∂q and
// ∂v/∂q̇ (nv x nv) to chain them through.
struct MultiplierRates {
  Eigen::Ref<const Eigen::MatrixXd> dlambda_dq;
  Eigen::Ref<const Eigen::MatrixXd> dlambda_dv;
  Eigen::Ref<const Eigen::MatrixXd> dlambda_dtau;
  const Eigen::MatrixXd* dvelocity_dq = nullptr;
  const Eigen::MatrixXd* dvelocity_dv = nullptr;
};

// The cone residuals of each of `contacts` (points or welds; their rows follow the model's loop
// closures' in λ) at the configuration q, contact after contact, into `residuals` (contacts x
// (1 + m)). With `rates`, their derivatives along the knot's state x = (q, q̇) (tangent
// coordinates) and controls u (control c driving the DOF actuated_dofs[c]): dresiduals_dx
// (contacts (1 + m) x 2 nv) and dresiduals_du (contacts (1 + m) x nu), row-major. Leaves the
// placements of q in data (forward_kinematics()); allocates nothing.
void contact_friction_cones(const Model& model, Data& data, const ConstVectorRef& q,
                            std::span<const BilateralConstraint> contacts, const FrictionCone& cone,
                            const ConstVectorRef& lambda, const MultiplierRates* rates,
                            std::span<const int> actuated_dofs, std::span<double> residuals,
                            std::span<double> dresiduals_dx, std::span<double> dresiduals_du);

}  // namespace torqued
