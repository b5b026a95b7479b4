// Residuals of optimal-control costs (see the header for the formulas).
#include "engine/optimal_control/residual.hpp"

#include <cassert>

#include "engine/algorithms/centroidal.hpp"
#include "engine/algorithms/generalized_gravity_derivatives.hpp"
#include "engine/algorithms/jacobian.hpp"
#include "engine/algorithms/rnea_derivatives.hpp"
#include "engine/model/configuration.hpp"
#include "engine/spatial/lie_group.hpp"

namespace torqued {
namespace {

// The first row of contact `index` in λ, and its row count.
std::pair<int, int> contact_rows(const Model& model, std::span<const BilateralConstraint> contacts,
                                 int index) {
  return {constraint_rows(model, contacts.first(static_cast<std::size_t>(index))),
          constraint_dimension(contacts[static_cast<std::size_t>(index)].type)};
}

// Calls f(k) for every DOF k that moves `body`.
template <class F>
void for_each_support_dof(const Model& model, int body, F&& f) {
  for (int b = body; b > 0; b = model.parent[b]) {
    const Joint& joint = model.joints[b];
    for (int k = 0; k < joint_nv(joint.type); ++k) f(joint.idx_v + k);
  }
}

}  // namespace

int residual_size(const Model& model, const Residual& residual, int nu,
                  std::span<const BilateralConstraint> contacts) {
  switch (residual.type) {
    case ResidualType::kState:
      return 2 * model.nv;
    case ResidualType::kControl:
      return nu;
    case ResidualType::kControlGravity:
      return model.nv;
    case ResidualType::kFrameTranslation:
    case ResidualType::kFrameRotation:
    case ResidualType::kCenterOfMass:
      return 3;
    case ResidualType::kFramePlacement:
    case ResidualType::kFrameVelocity:
      return 6;
    case ResidualType::kContactForce:
      return contact_rows(model, contacts, residual.contact).second;
    case ResidualType::kFrictionCone:
      return residual.cone.faces;
  }
  return 0;
}

bool residual_depends_on_velocity(const Residual& residual) {
  switch (residual.type) {
    case ResidualType::kState:
    case ResidualType::kFrameVelocity:
    case ResidualType::kContactForce:
    case ResidualType::kFrictionCone:
      return true;
    default:
      return false;
  }
}

bool residual_depends_on_control(const Residual& residual) {
  switch (residual.type) {
    case ResidualType::kControl:
    case ResidualType::kControlGravity:
    case ResidualType::kContactForce:
    case ResidualType::kFrictionCone:
      return true;
    default:
      return false;
  }
}

ResidualWorkspace::ResidualWorkspace(const Model& model, int max_faces)
    : jacobian(6, model.nv),
      rates(6, model.nv),
      zeros(Eigen::VectorXd::Zero(model.nv)),
      cone_gradient(1 + max_faces, 3),
      face_rotation(max_faces, 3),
      cone_values(1 + max_faces) {}

void evaluate_residual(const Model& model, Data& data, ResidualWorkspace& workspace,
                       const Residual& residual, const KnotPoint& knot, bool derivatives,
                       Eigen::Ref<Eigen::VectorXd> r, Eigen::Ref<Eigen::MatrixXd> rx,
                       Eigen::Ref<Eigen::MatrixXd> ru) {
  const int nv = model.nv;
  if (derivatives) {
    rx.setZero();
    ru.setZero();
  }
  auto rq = rx.leftCols(nv);
  auto rv = rx.rightCols(nv);
  switch (residual.type) {
    case ResidualType::kState: {
      const auto q_target = residual.target.head(model.nq);
      difference(model, q_target, knot.q, r.head(nv));
      r.tail(nv) = knot.v - residual.target.tail(nv);
      if (derivatives) {
        difference_jacobian(model, q_target, knot.q, rq.topRows(nv));
        rv.bottomRows(nv).setIdentity();
      }
      break;
    }
    case ResidualType::kControl:
      r = knot.u - residual.target;
      if (derivatives) ru.setIdentity();
      break;
    case ResidualType::kControlGravity: {
      // B u − g(q): the torques the controls add to gravity's.
      if (derivatives) {
        rq = -placed_generalized_gravity_derivatives(model, data).dtau_dq;
        r = -data.tau;
      } else {
        r = -placed_generalized_gravity(model, data);
      }
      for (std::size_t c = 0; c < knot.actuated_dofs.size(); ++c) {
        r[knot.actuated_dofs[c]] += knot.u[static_cast<Eigen::Index>(c)];
      }
      if (derivatives) {
        for (std::size_t c = 0; c < knot.actuated_dofs.size(); ++c) {
          ru(knot.actuated_dofs[c], static_cast<Eigen::Index>(c)) = 1.0;
        }
      }
      break;
    }
    case ResidualType::kFrameTranslation: {
      const Transform placement = frame_placement(model, data, residual.frame);
      r = placement.translation - residual.target;
      if (derivatives) {
        frame_jacobian(model, data, residual.frame, ReferenceFrame::kLocalWorldAligned,
                       workspace.jacobian);
        rq = workspace.jacobian.topRows<3>();
      }
      break;
    }
    case ResidualType::kFramePlacement: {
      const Vec6 log =
          se3_log(residual.placement.inverse() * frame_placement(model, data, residual.frame));
      r = log;
      if (derivatives) {
        frame_jacobian(model, data, residual.frame, ReferenceFrame::kLocal, workspace.jacobian);
        rq.noalias() = se3_right_jacobian_inverse(log) * workspace.jacobian;
      }
      break;
    }
    case ResidualType::kFrameRotation: {
      const Vec3 log = so3_log(Mat3(residual.placement.rotation.transpose() *
                                    frame_placement(model, data, residual.frame).rotation));
      r = log;
      if (derivatives) {
        frame_jacobian(model, data, residual.frame, ReferenceFrame::kLocal, workspace.jacobian);
        rq.noalias() = so3_right_jacobian_inverse(log) * workspace.jacobian.bottomRows<3>();
      }
      break;
    }
    case ResidualType::kFrameVelocity: {
      const int body = model.frames[residual.frame].body;
      forward_kinematics_derivatives(model, data, knot.q, knot.v, workspace.zeros, model.gravity);
      const Transform placement = frame_placement(model, data, residual.frame);
      const Motion local = placement.act_inverse(data.ov[body]);
      const bool aligned = residual.velocity_frame == ReferenceFrame::kLocalWorldAligned;
      const Mat3& rotation = placement.rotation;
      Vec6 velocity;
      if (aligned) {
        velocity << rotation * local.linear, rotation * local.angular;
      } else {
        velocity << local.linear, local.angular;
      }
      r = velocity - residual.target;
      if (derivatives) {
        const RneaDerivativesWorkspace& d = data.workspace<RneaDerivativesWorkspace>();
        frame_jacobian(model, data, residual.frame, ReferenceFrame::kLocal, workspace.jacobian);
        workspace.rates.setZero();
        for_each_support_dof(model, body, [&](int k) {
          const Motion rate =
              placement.act_inverse(Motion{d.dv_dq.col(k).head<3>(), d.dv_dq.col(k).tail<3>()});
          workspace.rates.col(k) << rate.linear, rate.angular;
        });
        if (aligned) {
          const auto turn = workspace.jacobian.bottomRows<3>();
          rq.topRows<3>().noalias() = rotation * workspace.rates.topRows<3>();
          rq.topRows<3>().noalias() -= rotation * skew(local.linear) * turn;
          rq.bottomRows<3>().noalias() = rotation * workspace.rates.bottomRows<3>();
          rq.bottomRows<3>().noalias() -= rotation * skew(local.angular) * turn;
          rv.topRows<3>().noalias() = rotation * workspace.jacobian.topRows<3>();
          rv.bottomRows<3>().noalias() = rotation * workspace.jacobian.bottomRows<3>();
        } else {
          rq = workspace.rates;
          rv = workspace.jacobian;
        }
      }
      break;
    }
    case ResidualType::kCenterOfMass: {
      const Eigen::Matrix<double, 3, Eigen::Dynamic>& jacobian =
          center_of_mass_jacobian(model, data, knot.q);
      r = data.workspace<CentroidalWorkspace>().com - residual.target;
      if (derivatives) rq = jacobian;
      break;
    }
    case ResidualType::kContactForce: {
      const auto [row, count] = contact_rows(model, knot.contacts, residual.contact);
      r = knot.lambda.segment(row, count) - residual.target;
      if (derivatives) {
        rx = knot.dlambda_dx.middleRows(row, count);
        ru = knot.dlambda_du.middleRows(row, count);
      }
      break;
    }
    case ResidualType::kFrictionCone: {
      // The force on frame 1 in world axes, f = ⁰R₁ λ_f (friction_cone.hpp).
      const int row = contact_rows(model, knot.contacts, residual.contact).first;
      const BilateralConstraint& contact =
          knot.contacts[static_cast<std::size_t>(residual.contact)];
      const Mat3 rotation = data.oMi[contact.body1].rotation * contact.placement1.rotation;
      const Vec3 force = rotation * knot.lambda.segment<3>(row);
      const int values = friction_cone_values(residual.cone);
      auto all = workspace.cone_values.head(values);
      auto gradient = workspace.cone_gradient.topRows(values);
      friction_cone_residuals(residual.cone, force, all, gradient);
      r = all.tail(residual.cone.faces);  // the faces; the cone's own row is not smooth
      if (derivatives) {
        // ∂r/∂f ⁰R₁ ∂λ_f/∂(x, u), and −∂r/∂f [f]× J_ω along q for the frame's turn.
        auto face_rotation = workspace.face_rotation.topRows(residual.cone.faces);
        face_rotation.noalias() = gradient.bottomRows(residual.cone.faces) * rotation;
        rx.noalias() = face_rotation * knot.dlambda_dx.middleRows<3>(row);
        ru.noalias() = face_rotation * knot.dlambda_du.middleRows<3>(row);
        frame_jacobian(model, data, residual.frame, ReferenceFrame::kLocalWorldAligned,
                       workspace.jacobian);
        face_rotation.noalias() = gradient.bottomRows(residual.cone.faces) * skew(force);
        rq.noalias() -= face_rotation * workspace.jacobian.bottomRows<3>();
      }
      break;
    }
  }
}

}  // namespace torqued
