// The friction cones of a knot's contacts (see the header): per contact, f = ⁰R₁ λ_f and the
// gradients g_i = ∂r_i/∂f; then, row by row of the residuals,
//   ∂r_i/∂q = g_i ⁰R₁ ∂λ_f/∂q + g_i (ω_k × f) on body1's supporting DOFs k,
//   ∂r_i/∂q̇ = g_i ⁰R₁ ∂λ_f/∂q̇,   ∂r_i/∂u_c = g_i ⁰R₁ ∂λ_f/∂τ_{actuated_dofs[c]},
// the q̇ rates chained through an impact's ∂v/∂(q, q̇) column by column (3-vectors, so that nothing
// is allocated).
#include "engine/algorithms/friction_cone.hpp"

#include <cassert>
#include <cmath>
#include <numbers>

#include "engine/algorithms/kinematics.hpp"

namespace torqued {
namespace {

using RowMap = Eigen::Map<Eigen::RowVectorXd>;

// An orthonormal basis (t₁, t₂) of the plane normal to the unit vector n.
std::pair<Vec3, Vec3> tangent_basis(const Vec3& n) {
  const Vec3 away = std::abs(n.x()) < 0.9 ? Vec3::UnitX() : Vec3::UnitY();
  const Vec3 t1 = n.cross(away).normalized();
  return {t1, n.cross(t1)};
}

// The residuals, and their gradients when `gradient` is not null.
template <class Gradient>
void cone_residuals(const FrictionCone& cone, const Vec3& force,
                    Eigen::Ref<Eigen::VectorXd> residuals, Gradient* gradient) {
  assert(cone.faces >= 3 && residuals.size() == friction_cone_values(cone));
  assert(gradient == nullptr || gradient->rows() == residuals.size());
  const Vec3& n = cone.normal;
  const auto [t1, t2] = tangent_basis(n);
  const double normal_force = n.dot(force);
  const Eigen::Vector2d tangential(t1.dot(force), t2.dot(force));
  const double slip = tangential.norm();
  residuals[0] = cone.friction * normal_force - slip;
  if (gradient != nullptr) {
    gradient->row(0) = cone.friction * n.transpose();
    if (slip > 0.0) {
      gradient->row(0) -=
          (tangential.x() / slip) * t1.transpose() + (tangential.y() / slip) * t2.transpose();
    }
  }
  const double face_friction = cone.friction * std::cos(std::numbers::pi / cone.faces);
  for (int i = 0; i < cone.faces; ++i) {
    const double theta = 2.0 * std::numbers::pi * i / cone.faces;
    const Vec3 outward = std::cos(theta) * t1 + std::sin(theta) * t2;
    residuals[1 + i] = face_friction * normal_force - outward.dot(force);
    if (gradient != nullptr) gradient->row(1 + i) = (face_friction * n - outward).transpose();
  }
}

}  // namespace

void friction_cone_residuals(const FrictionCone& cone, const Vec3& force,
                             Eigen::Ref<Eigen::VectorXd> residuals) {
  cone_residuals<Eigen::Matrix3d>(cone, force, residuals, nullptr);
}

void friction_cone_residuals(const FrictionCone& cone, const Vec3& force,
                             Eigen::Ref<Eigen::VectorXd> residuals,
                             Eigen::Ref<Eigen::Matrix<double, Eigen::Dynamic, 3>> gradient) {
  cone_residuals(cone, force, residuals, &gradient);
}

void contact_friction_cones(const Model& model, Data& data, const ConstVectorRef& q,
                            std::span<const BilateralConstraint> contacts, const FrictionCone& cone,
                            const ConstVectorRef& lambda, const MultiplierRates* rates,
                            std::span<const int> actuated_dofs, std::span<double> residuals,
                            std::span<double> dresiduals_dx, std::span<double> dresiduals_du) {
  const int nv = model.nv;
  const int values = friction_cone_values(cone);
  const int nu = static_cast<int>(actuated_dofs.size());
  [[maybe_unused]] const auto count = static_cast<std::size_t>(values) * contacts.size();
  assert(lambda.size() == constraint_rows(model, contacts) && residuals.size() == count);
  assert(rates == nullptr || (dresiduals_dx.size() == count * 2 * nv &&
                              dresiduals_du.size() == count * static_cast<std::size_t>(nu)));
  assert(rates == nullptr || (rates->dvelocity_dq == nullptr) == (rates->dvelocity_dv == nullptr));
  forward_kinematics(model, data, q);
  // Enough for any cone a caller asks for: Crocoddyl's pyramids have 4 to 16 faces.
  constexpr int kMaxValues = 65;
  assert(values <= kMaxValues);
  using Gradient = Eigen::Matrix<double, Eigen::Dynamic, 3, 0, kMaxValues, 3>;
  Gradient gradient(values, 3), local_gradient(values, 3);
  int row = constraint_rows(model, {});
  for (std::size_t c = 0; c < contacts.size(); ++c) {
    const BilateralConstraint& contact = contacts[c];
    assert(contact.type == ConstraintType::kPoint || contact.type == ConstraintType::kWeld);
    const Mat3 rotation = data.oMi[contact.body1].rotation * contact.placement1.rotation;
    const Vec3 force = rotation * lambda.segment<3>(row);
    const auto first = static_cast<Eigen::Index>(c * values);
    Eigen::Map<Eigen::VectorXd> r(residuals.data() + first, values);
    if (rates == nullptr) {
      friction_cone_residuals(cone, force, r);
      row += constraint_dimension(contact.type);
      continue;
    }
    cone_residuals(cone, force, r, &gradient);
    local_gradient.noalias() = gradient * rotation;  // ∂r/∂λ_f
    const auto dforce_dq = rates->dlambda_dq.middleRows<3>(row);
    const auto dforce_dv = rates->dlambda_dv.middleRows<3>(row);
    const auto dforce_dtau = rates->dlambda_dtau.middleRows<3>(row);
    for (int i = 0; i < values; ++i) {
      RowMap dq(dresiduals_dx.data() + (first + i) * 2 * nv, nv);
      RowMap dv(dresiduals_dx.data() + (first + i) * 2 * nv + nv, nv);
      const Eigen::RowVector3d g = local_gradient.row(i);
      dq.noalias() = g * dforce_dq;
      if (rates->dvelocity_dq == nullptr) dv.noalias() = g * dforce_dv;
      double* du = dresiduals_du.data() + (first + i) * nu;
      for (int k = 0; k < nu; ++k) du[k] = g.dot(dforce_dtau.col(actuated_dofs[k]));
    }
    if (rates->dvelocity_dq != nullptr) {
      // ∂λ_f/∂v after the impact, chained: ∂λ_f/∂v ∂v/∂q and ∂λ_f/∂v ∂v/∂q̇, column by column.
      for (int j = 0; j < nv; ++j) {
        const Vec3 along_q = dforce_dv * rates->dvelocity_dq->col(j);
        const Vec3 along_v = dforce_dv * rates->dvelocity_dv->col(j);
        for (int i = 0; i < values; ++i) {
          double* dx = dresiduals_dx.data() + (first + i) * 2 * nv;
          dx[j] += local_gradient.row(i).dot(along_q);
          dx[nv + j] = local_gradient.row(i).dot(along_v);
        }
      }
    }
    // The force turning with frame 1: ∂f/∂q_k += ω_k × f on the DOFs that move body1.
    double unit[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    for (int b = contact.body1; b > 0; b = model.parent[b]) {
      const Joint& joint = model.joints[b];
      for (int k = 0; k < joint.nv; ++k) {
        unit[k] = 1.0;
        const Vec3 turn = data.oMi[b].rotation * joint_motion(joint, unit).angular;
        unit[k] = 0.0;
        const Vec3 dforce = turn.cross(force);
        for (int i = 0; i < values; ++i) {
          dresiduals_dx[(first + i) * 2 * nv + joint.idx_v + k] += gradient.row(i).dot(dforce);
        }
      }
    }
    row += constraint_dimension(contact.type);
  }
}

}  // namespace torqued
