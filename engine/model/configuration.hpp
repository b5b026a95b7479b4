// Operations on configurations: quaternion joints make q live on a manifold (nq ≠ nv), so
// integration and differences go through the joint's Lie group (Kim 2012, §1).
#pragma once

#include <random>

#include "engine/model/model.hpp"

namespace torqued {

// q ⊕ v: the configuration reached from q by moving with constant velocity v for unit time, each
// joint on its own group (free-flyer: p ← p + R δp-integrated on SE(3), R ← R exp(δθ)).
Eigen::VectorXd integrate(const Model& model, const Eigen::VectorXd& q, const Eigen::VectorXd& v);
// The same into a preallocated `out` (which may be q itself), without allocating.
void integrate(const Model& model, const Eigen::Ref<const Eigen::VectorXd>& q,
               const Eigen::Ref<const Eigen::VectorXd>& v, Eigen::Ref<Eigen::VectorXd> out);

// The Jacobians of q ⊕ v in the tangent spaces (perturbations composed on the right, as
// integrate() composes velocities): d(q ⊕ v)/dq into `dq` and d(q ⊕ v)/dv into `dv`, both
// nv x nv. They are block diagonal, one block per joint, the identity for 1-DOF joints, and do
// not depend on q: the adjoint of Exp(v)⁻¹ and the right Jacobian of Exp at v on SO(3), SE(2) and
// SE(3) (Solà, Deray & Atchuthan 2018, "A micro Lie theory for state estimation in robotics",
// §IV and App. A-B; Barfoot 2017, "State Estimation for Robotics", §7.1.5 for SE(3)). Only the
// joints' diagonal blocks are written: the caller zeroes the rest once. Allocates nothing.
void integrate_jacobians(const Model& model, const Eigen::Ref<const Eigen::VectorXd>& v,
                         Eigen::Ref<Eigen::MatrixXd> dq, Eigen::Ref<Eigen::MatrixXd> dv);

// q1 ⊖ q0: the velocity v with q0 ⊕ v = q1.
Eigen::VectorXd difference(const Model& model, const Eigen::VectorXd& q0,
                           const Eigen::VectorXd& q1);
// The same into a preallocated `out` (nv), without allocating.
void difference(const Model& model, const Eigen::Ref<const Eigen::VectorXd>& q0,
                const Eigen::Ref<const Eigen::VectorXd>& q1, Eigen::Ref<Eigen::VectorXd> out);

// ∂(q1 ⊖ q0)/∂q1 in the tangent space, q1 perturbed on the right as integrate() composes: per
// joint the inverse of the right Jacobian of Exp at q1 ⊖ q0 (Pinocchio's dDifference, ARG1), the
// identity for 1-DOF joints. Block diagonal; only the joints' blocks are written, as
// integrate_jacobians() writes them. Allocates nothing.
void difference_jacobian(const Model& model, const Eigen::Ref<const Eigen::VectorXd>& q0,
                         const Eigen::Ref<const Eigen::VectorXd>& q1,
                         Eigen::Ref<Eigen::MatrixXd> out);

// Normalises the quaternions of spherical and free-flyer joints in place.
void normalize_configuration(const Model& model, Eigen::VectorXd& q);

// Largest |‖quaternion‖ − 1| over the model's quaternion joints (0 when there are none).
double quaternion_norm_error(const Model& model, const double* q);

// A random configuration: 1-DOF joints within finite limits (else in [−π, π] or [−1, 1] for
// displacements), uniformly random unit quaternions, positions in [−1, 1].
Eigen::VectorXd random_configuration(const Model& model, std::mt19937_64& rng);

}  // namespace torqued
