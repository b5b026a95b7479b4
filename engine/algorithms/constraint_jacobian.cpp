// Constraint Jacobians and biases (see the header for the equations). Column k of K is the
// world motion subspace ⁰S_k of joint j(k) carried to frame 1: +¹X₀ ⁰S_k when j(k) supports
// body1 only, −¹X₀ ⁰S_k when it supports body2 only, and zero for the common ancestors, which
// move both frames alike (Featherstone 2008, §8.2's loop Jacobian). Point constraints compare
// the two origins' velocities, so a common ancestor contributes its rotation's effect on the
// vector between them: ¹R₀ (ω × (p₁ − p₂)).
#include "engine/algorithms/constraint_jacobian.hpp"

#include <algorithm>
#include <cassert>
#include <sstream>
#include <string>

#include "engine/algorithms/kinematics.hpp"
#include "engine/algorithms/rnea.hpp"

namespace torqued {
namespace {

bool supports(const Model& model, int joint_body, int body) {
  return joint_body <= body && body < model.subtree_end[joint_body];
}

// World column of each DOF of the joint of `body`, handed to `use(dof, column)`.
template <typename Use>
void for_each_world_column(const Model& model, const Data& data, int body, Use use) {
  const Joint& joint = model.joints[body];
  double unit[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
  for (int k = 0; k < joint.nv; ++k) {
    unit[k] = 1.0;
    use(joint.idx_v + k, data.oMi[body].act(joint_motion(joint, unit)));
    unit[k] = 0.0;
  }
}

void add_constraint(const Model& model, const Data& data, const BilateralConstraint& c,
                    const BaumgarteGains& gains, int row, Eigen::Ref<Eigen::MatrixXd> jacobian,
                    Eigen::Ref<Eigen::VectorXd> bias) {
  const Transform oM1 = data.oMi[c.body1] * c.placement1;
  const Transform oM2 = data.oMi[c.body2] * c.placement2;
  const Transform m12 = oM1.inverse() * oM2;
  const Motion v1 = c.placement1.act_inverse(data.v[c.body1]);
  const Motion a1 = c.placement1.act_inverse(data.a[c.body1]);
  const Motion v2 = c.placement2.act_inverse(data.v[c.body2]);
  const Motion a2 = c.placement2.act_inverse(data.a[c.body2]);
  const ConstraintRows selection = constraint_row_selection(c.type);
  jacobian.middleRows(row, selection.count).setZero();

  Vec6 velocity, drift, error;
  if (c.type == ConstraintType::kPoint) {
    velocity.head<3>() = v1.linear - m12.rotation * v2.linear;
    drift.head<3>() = a1.linear + v1.angular.cross(v1.linear) -
                      m12.rotation * (a2.linear + v2.angular.cross(v2.linear));
    error.head<3>() = -m12.translation;
    const Vec3 lever = oM1.translation - oM2.translation;
    for (int j = c.body1; j > 0; j = model.parent[j]) {
      const bool common = supports(model, j, c.body2);
      for_each_world_column(model, data, j, [&](int dof, const Motion& s) {
        const Vec3 point_velocity = common ? Vec3(s.angular.cross(lever))
                                           : Vec3(s.linear + s.angular.cross(oM1.translation));
        jacobian.block<3, 1>(row, dof) = oM1.rotation.transpose() * point_velocity;
      });
    }
    for (int j = c.body2; j > 0 && !supports(model, j, c.body1); j = model.parent[j]) {
      for_each_world_column(model, data, j, [&](int dof, const Motion& s) {
        jacobian.block<3, 1>(row, dof) =
            -(oM1.rotation.transpose() * (s.linear + s.angular.cross(oM2.translation)));
      });
    }
  } else {
    const Motion v2_in_1 = m12.act(v2);
    velocity << (v1 - v2_in_1).to_vector();
    drift << (a1 - m12.act(a2) + v1.cross(v2_in_1)).to_vector();
    error.head<3>() = -m12.translation;
    if (c.type == ConstraintType::kRevolute) {
      error.tail<3>() = -Vec3::UnitZ().cross(m12.rotation.col(2));
    } else {
      const Eigen::AngleAxisd rotation(m12.rotation);
      error.tail<3>() = -rotation.angle() * rotation.axis();
    }
    const auto set_column = [&](int dof, const Motion& column) {
      const Vec6 local = column.to_vector();
      for (int r = 0; r < selection.count; ++r) jacobian(row + r, dof) = local[selection.rows[r]];
    };
    for (int j = c.body1; j > 0 && !supports(model, j, c.body2); j = model.parent[j]) {
      for_each_world_column(model, data, j,
                            [&](int dof, const Motion& s) { set_column(dof, oM1.act_inverse(s)); });
    }
    for (int j = c.body2; j > 0 && !supports(model, j, c.body1); j = model.parent[j]) {
      for_each_world_column(
          model, data, j, [&](int dof, const Motion& s) { set_column(dof, -oM1.act_inverse(s)); });
    }
  }
  for (int r = 0; r < selection.count; ++r) {
    const int i = selection.rows[r];
    bias[row + r] = -drift[i] - gains.velocity * velocity[i] - gains.position * error[i];
  }
}

}  // namespace

ConstraintRows constraint_row_selection(ConstraintType type) {
  switch (type) {
    case ConstraintType::kRevolute:
      return {{0, 1, 2, 3, 4, 0}, 5};
    case ConstraintType::kPrismatic:
      return {{0, 1, 3, 4, 5, 0}, 5};
    case ConstraintType::kPoint:
      return {{0, 1, 2, 0, 0, 0}, 3};
    case ConstraintType::kWeld:
      break;
  }
  return {{0, 1, 2, 3, 4, 5}, 6};
}

int constraint_rows(const Model& model, std::span<const BilateralConstraint> constraints) {
  int rows = 0;
  for (const BilateralConstraint& c : model.loop_closures) rows += constraint_dimension(c.type);
  for (const BilateralConstraint& c : constraints) rows += constraint_dimension(c.type);
  return rows;
}

void constraint_kinematics(const Model& model, Data& data, const ConstVectorRef& q,
                           const ConstVectorRef& v) {
  assert(fits(model, data, q, v));
  nonlinear_effects(model, data, q, v);
  // RNEA's accelerations include the fictitious base acceleration −g: ᶦX₀ (−g, 0) = (−ᶦR₀ g, 0).
  data.a[0] = Motion::Zero();
  for (int i = 1; i < model.nbodies(); ++i) {
    const Transform& oMi = data.oMi[i] = data.oMi[model.parent[i]] * data.liMi[i];
    data.a[i] = data.a_gf[i];
    data.a[i].linear += oMi.rotation.transpose() * model.gravity;
  }
}

void constraint_kinematics_at_rest(const Model& model, Data& data, const ConstVectorRef& q) {
  forward_kinematics(model, data, q);
  std::fill(data.v.begin(), data.v.end(), Motion::Zero());
  std::fill(data.a.begin(), data.a.end(), Motion::Zero());
}

void constraint_jacobian(const Model& model, const Data& data,
                         std::span<const BilateralConstraint> constraints,
                         const BaumgarteGains& gains, Eigen::Ref<Eigen::MatrixXd> jacobian,
                         Eigen::Ref<Eigen::VectorXd> bias) {
  assert(jacobian.rows() == constraint_rows(model, constraints) && jacobian.cols() == model.nv);
  assert(bias.size() == jacobian.rows());
  int row = 0;
  for (const std::span<const BilateralConstraint> set :
       {std::span<const BilateralConstraint>(model.loop_closures), constraints}) {
    for (const BilateralConstraint& c : set) {
      add_constraint(model, data, c, gains, row, jacobian, bias);
      row += constraint_dimension(c.type);
    }
  }
}

void check_constraint_residual(const ConstraintResidual& residual,
                               const ConstraintTolerance& tolerance) {
  // Written so that the default, an infinite tolerance, accepts a zero scale (inf × 0 is NaN).
  if (!(residual.residual > tolerance.max_relative_residual * residual.scale)) return;
  const auto number = [](double x) {
    std::ostringstream out;
    out.precision(3);
    out << x;
    return out.str();
  };
  throw InconsistentConstraintsError(
      "the constraints are inconsistent: the accelerations that best meet them miss them by " +
      number(residual.residual) + " (m/s^2, rad/s^2), " +
      number(residual.residual / residual.scale) + " of their scale " + number(residual.scale) +
      ", past the tolerance " + number(tolerance.max_relative_residual) + " (" + tolerance.setting +
      "); remove the redundant constraints or make them agree");
}

double constraint_scale(const Eigen::Ref<const Eigen::VectorXd>& bias,
                        const Eigen::Ref<const Eigen::VectorXd>& rhs) {
  if (bias.size() == 0) return 0.0;
  return std::max(bias.cwiseAbs().maxCoeff(), (bias - rhs).cwiseAbs().maxCoeff());
}

double constraint_residual(const Eigen::Ref<const Eigen::MatrixXd>& jacobian,
                           const Eigen::Ref<const Eigen::VectorXd>& bias,
                           const Eigen::Ref<const Eigen::VectorXd>& ddq,
                           Eigen::Ref<Eigen::VectorXd> scratch) {
  if (bias.size() == 0) return 0.0;
  scratch.noalias() = jacobian * ddq;
  scratch -= bias;
  return scratch.cwiseAbs().maxCoeff();
}

void constraint_jacobian(const Model& model, Data& data, const ConstVectorRef& q,
                         const ConstVectorRef& v, std::span<const BilateralConstraint> constraints,
                         const BaumgarteGains& gains, Eigen::Ref<Eigen::MatrixXd> jacobian,
                         Eigen::Ref<Eigen::VectorXd> bias) {
  constraint_kinematics(model, data, q, v);
  constraint_jacobian(model, data, constraints, gains, jacobian, bias);
}

}  // namespace torqued
