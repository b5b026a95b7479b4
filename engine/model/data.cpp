// Sizing of the per-thread workspace: the one place where algorithm memory is allocated.
#include "engine/model/data.hpp"

#include <algorithm>

#include "engine/model/heap_bytes.hpp"

namespace torqued {

namespace {

// λ of Featherstone's LᵀDL factorization (RBDA §6.5): the DOFs of a multi-DOF joint form a chain
// (its block of M is dense), whose first DOF hangs from the last DOF of the parent joint.
std::vector<int> dof_parents(const Model& model) {
  std::vector<int> parents(model.nv, -1);
  for (int i = 1; i < model.nbodies(); ++i) {
    const Joint& joint = model.joints[i];
    if (joint.nv == 0) continue;
    int ancestor = model.parent[i];
    while (ancestor > 0 && model.joints[ancestor].nv == 0) ancestor = model.parent[ancestor];
    parents[joint.idx_v] =
        ancestor > 0 ? model.joints[ancestor].idx_v + model.joints[ancestor].nv - 1 : -1;
    for (int k = 1; k < joint.nv; ++k) parents[joint.idx_v + k] = joint.idx_v + k - 1;
  }
  return parents;
}

}  // namespace

Data::Data(const Model& model)
    : liMi(model.nbodies(), Transform::Identity()),
      oMi(model.nbodies(), Transform::Identity()),
      v(model.nbodies(), Motion::Zero()),
      a(model.nbodies(), Motion::Zero()),
      oMf(model.frames.size(), Transform::Identity()),
      a_gf(model.nbodies(), Motion::Zero()),
      f(model.nbodies(), Force::Zero()),
      tau(Eigen::VectorXd::Zero(model.nv)),
      Ycrb(model.nbodies()),
      oS(Eigen::Matrix<double, 6, Eigen::Dynamic>::Zero(6, model.nv)),
      M(Eigen::MatrixXd::Zero(model.nv, model.nv)),
      ov(model.nbodies(), Motion::Zero()),
      oa_gf(model.nbodies(), Motion::Zero()),
      Ia(model.nbodies(), Mat6::Zero()),
      pa(model.nbodies(), Force::Zero()),
      c(model.nbodies(), Motion::Zero()),
      U(Eigen::Matrix<double, 6, Eigen::Dynamic>::Zero(6, model.nv)),
      Dinv(model.nbodies(), Mat6::Zero()),
      u(Eigen::VectorXd::Zero(model.nv)),
      ddq(Eigen::VectorXd::Zero(model.nv)),
      J(Eigen::Matrix<double, 6, Eigen::Dynamic>::Zero(6, model.nv)),
      Minv(Eigen::MatrixXd::Zero(model.nv, model.nv)),
      minv_bias(Eigen::Matrix<double, 6, Eigen::Dynamic>::Zero(6, model.nv)),
      minv_acc(*std::max_element(model.depth.begin(), model.depth.end()) + 1,
               Eigen::Matrix<double, 6, Eigen::Dynamic>::Zero(6, model.nv)),
      ltdl(Eigen::MatrixXd::Zero(model.nv, model.nv)),
      dof_parent(dof_parents(model)),
      lag_oMi(model.nbodies(), Eigen::Matrix4d::Identity()),
      lag_W(model.nbodies(), Eigen::Matrix4d::Zero()),
      lag_H(model.nbodies(), Eigen::Matrix4d::Zero()),
      lag_J(model.nbodies(), Eigen::Matrix4d::Zero()),
      lag_P(model.nbodies(), Eigen::Matrix4d::Zero()),
      lag_L(model.nv, Eigen::Matrix4d::Zero()),
      lag_tau(Eigen::VectorXd::Zero(model.nv)),
      lag_M(Eigen::MatrixXd::Zero(model.nv, model.nv)),
      oYcrb(model.nbodies()),
      oBcrb(model.nbodies(), Mat6::Zero()),
      odS(Eigen::Matrix<double, 6, Eigen::Dynamic>::Zero(6, model.nv)),
      C(Eigen::MatrixXd::Zero(model.nv, model.nv)),
      Jcom(Eigen::Matrix<double, 3, Eigen::Dynamic>::Zero(3, model.nv)),
      Ag(Eigen::Matrix<double, 6, Eigen::Dynamic>::Zero(6, model.nv)),
      dof_subtree_end(model.nv, model.nv),
      dv_dq(Eigen::Matrix<double, 6, Eigen::Dynamic>::Zero(6, model.nv)),
      da_dq(Eigen::Matrix<double, 6, Eigen::Dynamic>::Zero(6, model.nv)),
      da_dv(Eigen::Matrix<double, 6, Eigen::Dynamic>::Zero(6, model.nv)),
      ocrb_momentum(model.nbodies(), Vec3::Zero()),
      ocrb_coupling(model.nbodies(), Mat3::Zero()),
      of(model.nbodies(), Force::Zero()),
      dtau_dq(Eigen::MatrixXd::Zero(model.nv, model.nv)),
      dtau_dv(Eigen::MatrixXd::Zero(model.nv, model.nv)),
      ddq_dq(Eigen::MatrixXd::Zero(model.nv, model.nv)),
      ddq_dv(Eigen::MatrixXd::Zero(model.nv, model.nv)),
      ddq_dtau(Eigen::MatrixXd::Zero(model.nv, model.nv)),
      mass_factor_inverse(Eigen::MatrixXd::Zero(model.nv, model.nv)),
      dof_work(Eigen::VectorXd::Zero(model.nv)),
      dof_scale(Eigen::VectorXd::Zero(model.nv)),
      passive_gram(Eigen::MatrixXd::Zero(model.nv, model.nv)),
      passive_reduced(Eigen::MatrixXd::Zero(model.nv, model.nv)),
      passive_permutation(Eigen::VectorXi::Zero(model.nv)),
      dof_work2(Eigen::VectorXd::Zero(2 * model.nv)),
      dof_order(Eigen::VectorXi::Zero(model.nv)) {
  int loop_rows = 0;
  for (const BilateralConstraint& loop : model.loop_closures) {
    loop_rows += constraint_dimension(loop.type);
  }
  reserve_constraint_rows(loop_rows);
  // A body's subtree is bodies i .. subtree_end[i] - 1, so its DOFs run up to the first DOF of
  // the body after it; the later DOFs of a multi-DOF joint are below its earlier ones.
  for (int i = 1; i < model.nbodies(); ++i) {
    const Joint& joint = model.joints[i];
    const int end = model.subtree_end[i] < model.nbodies()
                        ? model.joints[model.subtree_end[i]].idx_v
                        : model.nv;
    for (int k = 0; k < joint.nv; ++k) dof_subtree_end[joint.idx_v + k] = end;
  }
}

void Data::reserve_constraint_rows(int rows) {
  if (rows <= constraint_capacity) return;
  const auto nv = M.rows();
  constraint_capacity = std::max(rows, constraint_capacity);
  const int c = constraint_capacity;
  constraint_jacobian.setZero(c, nv);
  constraint_bias.setZero(c);
  constraint_gain.setZero(nv, c);
  constraint_system.setZero(c, c);
  constraint_scratch.setZero(c, c);
  constraint_permutation.setZero(c);
  constraint_rhs.setZero(c);
  constraint_work.setZero(2 * c);
  passive_columns.setZero(c, nv);
  actuated_columns.setZero(c, nv);
}

std::size_t Data::heap_bytes() const {
  std::size_t bytes = total_heap_bytes(
      liMi, oMi, v, a, oMf, a_gf, f, tau, Ycrb, oS, M, ov, oa_gf, Ia, pa, c, U, Dinv, u, ddq, J,
      Minv, minv_bias, ltdl, dof_parent, lag_oMi, lag_W, lag_H, lag_J, lag_P, lag_L, lag_tau, lag_M,
      oYcrb, oBcrb, odS, C, Jcom, Ag, dof_subtree_end, dv_dq, da_dq, da_dv, ocrb_momentum,
      ocrb_coupling, of, dtau_dq, dtau_dv, ddq_dq, ddq_dv, ddq_dtau, mass_factor_inverse,
      constraint_jacobian, constraint_bias, constraint_gain, constraint_system, constraint_scratch,
      constraint_permutation, constraint_rhs, constraint_work, dof_work, dof_scale, passive_gram,
      passive_reduced, passive_permutation, passive_columns, actuated_columns, dof_work2, dof_order,
      minv_acc);
  for (const auto& per_depth : minv_acc) bytes += torqued::heap_bytes(per_depth);
  return bytes;
}

}  // namespace torqued
