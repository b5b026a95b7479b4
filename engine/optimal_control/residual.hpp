// Residuals of optimal-control costs: vectors r(x, u) of a knot's state x = (q, q̇) and controls u
// whose activation a cost term weighs (multibody_problem.hpp), with their derivatives R_x (tangent
// space, 2 nv columns: δq then δq̇) and R_u. They are Crocoddyl's residual models (Mastalli et
// al., "Crocoddyl: An Efficient and Versatile Framework for Multi-Contact Optimal Control", ICRA
// 2020, §III-B), over the engine's kinematics and dynamics:
//   state            r = x ⊖ x*               R_q = ∂(q ⊖ q*)/∂q (per-joint J_r⁻¹), R_q̇ = 1
//   control          r = u − u*               R_u = 1
//   control gravity  r = B u − g(q)           R_q = −∂g/∂q, R_u = B
//   frame transl.    r = p_F(q) − p* (world)  R_q = ⁰R_F J_F,lin (J_F the LOCAL Jacobian)
//   frame placement  r = Log(M*⁻¹ M_F(q))     R_q = J_r(r)⁻¹ J_F (6, linear first)
//   frame rotation   r = Log(R*ᵀ R_F(q))      R_q = J_r(r)⁻¹ J_F,ang (3)
//   frame velocity   r = v_F(q, q̇) − v* (6, LOCAL or LOCAL_WORLD_ALIGNED)
//                    LOCAL: R_q = ᶠX₀ Ψ, R_q̇ = J_F, with Ψ the rates ψ_k = v_λ(k) × ⁰S_k over the
//                    frame's supporting DOFs (the world twist's rate ψ_k − ⁰v × ⁰S_k and the
//                    frame's own turn cancel in part: Pinocchio's getFrameVelocityDerivatives);
//                    LOCAL_WORLD_ALIGNED turns those by ⁰R_F and adds −⁰R_F [v_F]× J_F,ang per
//                    part for the axes' turn
//   centre of mass   r = c(q) − c*            R_q = J_c
//   contact force    r = λ_c − f*  (the contact's rows, frame 1's axes, as λ)
//                    R_x, R_u = the rows of ∂λ/∂x, ∂λ/∂τ B (through a touchdown's impact)
//   friction cone    r = the faces of the linearized cone of λ_c (friction_cone.hpp), ≥ 0 inside;
//                    ∂r/∂f (⁰R₁ ∂λ_f/∂x − [f]× J_ω [1 0]) and ∂r/∂f ⁰R₁ ∂λ_f/∂u
// J_r⁻¹ are the right Jacobians' inverses of spatial/lie_group.hpp: the target is fixed and the
// frame perturbed on the right by its LOCAL twist J_F δq.
#pragma once

#include <span>

#include "engine/algorithms/friction_cone.hpp"
#include "engine/algorithms/kinematics.hpp"

namespace torqued {

enum class ResidualType {
  kState,
  kControl,
  kControlGravity,
  kFrameTranslation,
  kFramePlacement,
  kFrameRotation,
  kFrameVelocity,
  kCenterOfMass,
  kContactForce,
  kFrictionCone,
};

struct Residual {
  ResidualType type = ResidualType::kState;
  // The frame of the frame residuals (model.frames); the contact's frame for the friction cone.
  int frame = -1;
  // The contact residuals' contact: an index into the knot's contacts.
  int contact = -1;
  // The target: x* (nq + nv), u* (nu), p* or c* (3), v* (6, [linear; angular]) or f* (the
  // contact's rows). Frame placements and rotations take `placement` (M*, or R* alone).
  Eigen::VectorXd target = {};
  Transform placement = Transform::Identity();
  ReferenceFrame velocity_frame = ReferenceFrame::kLocal;  // kLocal or kLocalWorldAligned
  FrictionCone cone = {};                                  // the friction cone's μ, faces, normal
};

// The number of values of `residual` for a model with nu controls and the knot's contacts.
int residual_size(const Model& model, const Residual& residual, int nu,
                  std::span<const BilateralConstraint> contacts);

// Whether r depends on q̇ or on u (their blocks of R are zero otherwise).
bool residual_depends_on_velocity(const Residual& residual);
bool residual_depends_on_control(const Residual& residual);

// What residuals read at a knot: its state, controls (empty at the terminal knot), actuation and
// contacts, and the contacts' multipliers with their rates along x and u (rows
// constraint_rows(model, contacts), the model's loop closures first, as the step leaves them;
// the rates already chained through a touchdown's impact).
struct KnotPoint {
  Eigen::Ref<const Eigen::VectorXd> q, v, u;
  std::span<const int> actuated_dofs;
  std::span<const BilateralConstraint> contacts;
  Eigen::Ref<const Eigen::VectorXd> lambda;
  Eigen::Ref<const Eigen::MatrixXd> dlambda_dx;  // rows x 2 nv
  Eigen::Ref<const Eigen::MatrixXd> dlambda_du;  // rows x nu
};

// Scratch of the residuals, bound once for a model and its largest residual.
struct ResidualWorkspace {
  Eigen::MatrixXd jacobian;                                // 6 x nv: a frame's LOCAL Jacobian
  Eigen::MatrixXd rates;                                   // 6 x nv
  Eigen::VectorXd zeros;                                   // nv
  Eigen::Matrix<double, Eigen::Dynamic, 3> cone_gradient;  // (1 + faces) x 3
  Eigen::Matrix<double, Eigen::Dynamic, 3> face_rotation;  // faces x 3
  Eigen::VectorXd cone_values;                             // 1 + faces

  explicit ResidualWorkspace(const Model& model, int max_faces = 16);
};

// r into `r`; with `derivatives`, R_x (size x 2 nv) into `rx` and R_u (size x nu) into `ru`, both
// overwritten whole (zeros where r does not depend). Reads and overwrites data's kinematics: the
// residuals need the bodies placed at q on entry (data.oMi and data.oS, as place_in_world() leaves
// them for every body), and every residual leaves them so.
void evaluate_residual(const Model& model, Data& data, ResidualWorkspace& workspace,
                       const Residual& residual, const KnotPoint& knot, bool derivatives,
                       Eigen::Ref<Eigen::VectorXd> r, Eigen::Ref<Eigen::MatrixXd> rx,
                       Eigen::Ref<Eigen::MatrixXd> ru);

}  // namespace torqued
