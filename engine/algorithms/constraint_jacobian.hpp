// The constraint Jacobian K and bias k of bilateral constraints, K q̈ = k (Featherstone 2008,
// §8.1-8.3; 1987, §9.2: loop-closure constraints at the acceleration level; Kim 2012, §3, eqs
// 54-55), with Baumgarte's stabilization (Baumgarte 1972; Featherstone 2008, §8.3).
//
// A constraint holds frame 2 (on body2) to frame 1 (on body1), both as BilateralConstraint says
// (model.hpp). Everything is expressed in frame 1, the constraint frame:
//  - weld, revolute, prismatic: the relative spatial velocity ν = v₁ − ¹X₂ v₂ (v_i the twist of
//    frame i in its own axes), rows [linear; angular] (revolute drops the angular z row,
//    prismatic the linear z row). Its derivative is
//      ν̇ = a₁ − ¹X₂ a₂ + v₁ × ¹X₂ v₂   (a_i spatial accelerations; d/dt ¹X₂ = ¹X₂ v₂× − v₁× ¹X₂)
//    so K = J₁ − ¹X₂ J₂ (local frame Jacobians) and the drift γ = ν̇ at q̈ = 0. With frame 2 in the
//    world, K is frame 1's LOCAL Jacobian and γ its spatial acceleration (Pinocchio's 6D contact).
//  - point: the origins' velocities ν = ¹R₀ (ṗ₁ − ṗ₂), K = linear rows of J₁ − ¹R₂ (linear rows
//    of J₂). The constraint is on the world acceleration of the gap, ¹R₀ (p̈₁ − p̈₂) = K q̈ + γ,
//    γ built from the classical accelerations a_lin + ω × v_lin of the two origins (Pinocchio's
//    3D contact); it differs from d/dt ν by ω₁ × ν, zero on the constraint.
// The constraint is K q̈ + γ = 0 stabilized: K q̈ = k with k = −γ − K_d ν − K_p e, where e is the
// position error with ė = ν to first order (exactly, for points, in the world frame): e = ¹R₀ (p₁ −
// p₂) (= −¹p₂) for the translations, −log(¹R₂) for the rotations of a weld or prismatic joint, −(z
// × ¹R₂ z) for the two tilts a revolute forbids. λ, the multipliers of K (M q̈ = τ − C + Kᵀ λ), are
// the force and moment that constraint applies to body1 at frame 1's origin, in frame 1's axes
// (body2 gets the opposite).
#pragma once

#include <array>
#include <limits>
#include <span>

#include "engine/algorithms/aba.hpp"
#include "engine/algorithms/kinematics.hpp"

namespace torqued {

// How far accelerations q̈ miss the constraints K q̈ = k once solved for: the residual
// ‖K q̈ − k‖∞ (m/s² and rad/s², as the rows are), and the scale it is judged against,
// max(‖k‖∞, ‖K q̈₀‖∞): the constraint accelerations demanded and those the motion would have
// without the constraints' forces (q̈₀, the free or given accelerations). Consistent constraints,
// redundant ones included, leave the rounding of the solve; an inconsistent set (more independent
// demands than the DOFs can meet, e.g. three welds on one arm while it moves) leaves what the
// least-squares λ cannot meet, of the order of the scale itself.
struct ConstraintResidual {
  double residual = 0.0;
  double scale = 0.0;
};

// The largest ConstraintResidual a constrained solve accepts, as a fraction of its scale; past it
// the solve throws InconsistentConstraintsError naming `setting`. The default accepts any: the
// least-squares answer.
struct ConstraintTolerance {
  double max_relative_residual = std::numeric_limits<double>::infinity();
  const char* setting = "ConstraintTolerance::max_relative_residual";
};

// How the constraints are held at the acceleration level: Baumgarte's gains (0, 0 is the plain
// acceleration constraint ν̇ = 0), and how far the solve may miss them. Every algorithm that
// takes constraints takes this, down to the solves that judge their residual
// (constrained_dynamics(), constrained_dynamics_derivatives(), closed_chain_inverse_dynamics()).
struct BaumgarteGains {
  // A constructor, not an aggregate: {K_p, K_d} leaves the tolerance at its default without
  // -Wmissing-field-initializers.
  BaumgarteGains(double position_gain = 0.0, double velocity_gain = 0.0,
                 ConstraintTolerance residual_tolerance = {})
      : position(position_gain), velocity(velocity_gain), tolerance(residual_tolerance) {}

  double position;  // K_p, 1/s²
  double velocity;  // K_d, 1/s
  ConstraintTolerance tolerance;
};

// The rows of the 6D relative motion [linear; angular] a constraint type keeps: rows[0 .. count).
struct ConstraintRows {
  std::array<int, 6> rows;
  int count;
};
ConstraintRows constraint_row_selection(ConstraintType type);

// A constrained solve's residual is past its gains' tolerance: the constraints are
// inconsistent (K M⁻¹ Kᵀ λ = k − K q̈₀ has no solution), so that the least-squares q̈ breaks them.
class InconsistentConstraintsError : public SingularSystemError {
 public:
  using SingularSystemError::SingularSystemError;
};

// Throws InconsistentConstraintsError, naming the residual, its scale and the tolerance's setting,
// when `residual` is past `tolerance`.
void check_constraint_residual(const ConstraintResidual& residual,
                               const ConstraintTolerance& tolerance);

// The scale of a ConstraintResidual from k and the right-hand side b = k − K q̈₀ the multipliers
// are solved for (K q̈₀ = k − b, exact to rounding).
double constraint_scale(const Eigen::Ref<const Eigen::VectorXd>& bias,
                        const Eigen::Ref<const Eigen::VectorXd>& rhs);

// ‖K q̈ − k‖∞, with `scratch` (K's rows) overwritten: one product with K.
double constraint_residual(const Eigen::Ref<const Eigen::MatrixXd>& jacobian,
                           const Eigen::Ref<const Eigen::VectorXd>& bias,
                           const Eigen::Ref<const Eigen::VectorXd>& ddq,
                           Eigen::Ref<Eigen::VectorXd> scratch);

// Rows of K for the model's loop closures followed by `constraints`.
int constraint_rows(const Model& model, std::span<const BilateralConstraint> constraints);

// Placements, velocities and the accelerations at q̈ = 0 (gravity excluded) of every body
// (data.oMi, data.v, data.a), by the outward pass of RNEA: leaves the nonlinear effects C q̇ + g in
// data.tau.
void constraint_kinematics(const Model& model, Data& data, const ConstVectorRef& q,
                           const ConstVectorRef& v);

// Placements of every body (data.oMi) with every body at rest (data.v, data.a zero): what K at q
// needs, without RNEA, for an impact, which has no acceleration level (its k is that of rest).
void constraint_kinematics_at_rest(const Model& model, Data& data, const ConstVectorRef& q);

// K (rows x nv) and k (rows) for the model's loop closures followed by `constraints`, from the
// kinematics left in data by constraint_kinematics() or constraint_kinematics_at_rest().
void constraint_jacobian(const Model& model, const Data& data,
                         std::span<const BilateralConstraint> constraints,
                         const BaumgarteGains& gains, Eigen::Ref<Eigen::MatrixXd> jacobian,
                         Eigen::Ref<Eigen::VectorXd> bias);

// The same at (q, v): constraint_kinematics(), then K and k.
void constraint_jacobian(const Model& model, Data& data, const ConstVectorRef& q,
                         const ConstVectorRef& v, std::span<const BilateralConstraint> constraints,
                         const BaumgarteGains& gains, Eigen::Ref<Eigen::MatrixXd> jacobian,
                         Eigen::Ref<Eigen::VectorXd> bias);

}  // namespace torqued
