// M⁻¹ in O(n²) by the operator factorization of Rodriguez & Kreutz (1988, Part I §4, Theorem
// 4.1; digest-001-004 §1.4):
//   M = (I + HΦL) D (I + HΦL)ᵀ,   M⁻¹ = (I − HΨL)ᵀ D⁻¹ (I − HΨL),
// where P(k) is the articulated inertia I^A, D = Sᵀ I^A S, L = I^A S D⁻¹ (the Kalman gain) and
// ψ = φ (I − L Sᵀ) propagates across an articulated joint. Column j of M⁻¹ is ABA's response to a
// unit τ_j at rest without gravity, so the two factors become ABA's two last passes run on all nv
// right-hand sides at once (Carpentier's computeMinverse), in world coordinates as in aba.cpp:
//   pass 1, i = 1..N: ⁰S_i,  I^A_i = ⁰I_i
//   pass 2, i = N..1 (the whitening filter ε = (I − HΨL) e_j, then D⁻¹):
//             U_i = I^A_i ⁰S_i,  D_i = ⁰S_iᵀ U_i,
//             M⁻¹[i, j] = D_i⁻¹ (δ_ij − ⁰S_iᵀ B_i[:, j])   for j in subtree(i), 0 beyond it
//             B_λ[:, j] += U_i M⁻¹[i, j],   I^A_λ += I^A_i − U_i D_i⁻¹ U_iᵀ
//   pass 3, i = 1..N (the smoother (I − HΨL)ᵀ), for every column j ≥ the row, upper triangle:
//             M⁻¹[i, j] −= D_i⁻¹ U_iᵀ A_λ[:, j],   A_i[:, j] = A_λ[:, j] + ⁰S_i M⁻¹[i, j]
// B[:, j] is the articulated bias force and A[:, j] the body acceleration a unit τ_j produces.
// Columns of B for different subtrees never overlap, so one 6 x nv matrix serves every body.
// Passes 1 and the Riccati half of 2 are the articulated-body core's (articulated_body.hpp), run
// by factorize_mass_matrix() or by aba(), which leaves the same factors; what is M⁻¹'s own is
// sweeping all nv right-hand sides through its bias and acceleration halves, written once for the
// K rows of a joint as the core's passes are (K = 1 for most joints).
#include "engine/algorithms/minverse.hpp"

#include <cassert>

#include "engine/algorithms/articulated_body.hpp"
#include "engine/algorithms/forward_dynamics_factorization.hpp"

namespace torqued {

namespace {

// One past the last DOF of body i's subtree: subtrees are contiguous in the DOF order.
int subtree_dof_end(const Model& model, int i) {
  const int end = model.subtree_end[i];
  return end < model.nbodies() ? model.joints[end].idx_v : model.nv;
}

// Pass 2 for body i's K = nv_i rows, once eliminate() has left U_i and D_i⁻¹: its rows for the
// columns of its subtree (DOFs c .. e − 1), zero beyond, and B_λ.
template <int K>
void backward_rows(const Model& model, Data& data, int i, int e) {
  const ArticulatedBodyWorkspace& ab = data.workspace<ArticulatedBodyWorkspace>();
  MassInverseWorkspace& mi = data.workspace<MassInverseWorkspace>();
  const Joint& joint = model.joints[i];
  const int k = joint.nv;
  const int c = joint.idx_v;
  const bool has_parent = model.parent[i] > 0;
  const articulated::Columns<K> s = data.oS.middleCols<K>(c, k);
  const articulated::Columns<K> u = ab.U.middleCols<K>(c, k);
  const articulated::Square<K> d_inv = ab.Dinv[i].template topLeftCorner<K, K>(k, k);
  articulated::Columns<K> s_dinv(6, k);
  s_dinv.noalias() = s * d_inv;
  auto rows = mi.Minv.middleRows<K>(c, k);
  rows.template middleCols<K>(c, k) = d_inv;
  if (has_parent) mi.bias.middleCols<K>(c, k).noalias() = u * d_inv;
  for (int j = c + k; j < e; ++j) {
    auto b = mi.bias.col(j);
    articulated::Entries<K> x(k);
    x.noalias() = -(s_dinv.transpose() * b);
    rows.col(j) = x;
    if (has_parent) b.noalias() += u * x;
  }
  rows.rightCols(model.nv - e).setZero();
}

// Pass 3 for body i's K = nv_i rows, from A_λ (null at the root) into A_i (null when the body has
// no children to read it).
template <int K>
void forward_rows(Data& data, const Joint& joint, int body, const double* parent_acc, double* acc) {
  const ArticulatedBodyWorkspace& ab = data.workspace<ArticulatedBodyWorkspace>();
  MassInverseWorkspace& mi = data.workspace<MassInverseWorkspace>();
  const int k = joint.nv;
  const int c = joint.idx_v;
  const int nv = static_cast<int>(mi.Minv.cols());
  const articulated::Columns<K> s = data.oS.middleCols<K>(c, k);
  articulated::Columns<K> u_dinv(6, k);
  u_dinv.noalias() = ab.U.middleCols<K>(c, k) * ab.Dinv[body].template topLeftCorner<K, K>(k, k);
  auto rows = mi.Minv.middleRows<K>(c, k);
  for (int j = c; j < nv; ++j) {
    articulated::Entries<K> x = rows.col(j);
    if (parent_acc != nullptr) {
      x.noalias() -= u_dinv.transpose() * Eigen::Map<const Vec6>(parent_acc + 6 * j);
      rows.col(j) = x;
    }
    if (acc != nullptr) {
      Eigen::Map<Vec6> a(acc + 6 * j);
      a.noalias() = s * x;
      if (parent_acc != nullptr) a += Eigen::Map<const Vec6>(parent_acc + 6 * j);
    }
  }
}

}  // namespace

const RowMatrixXd& minverse(const Model& model, Data& data, const ConstVectorRef& q) {
  assert(fits(model, data, q));
  factorize_mass_matrix(model, data, q);
  return minverse_from_factors(model, data);
}

const RowMatrixXd& minverse_from_factors(const Model& model, Data& data) {
  assert(fits(model, data));
  data.bind(model, kMinverseWorkspaces);
  MassInverseWorkspace& mi = data.workspace<MassInverseWorkspace>();
  const int n = model.nbodies();
  const int nv = model.nv;

  InterruptionPoll poll(data.interruption);
  for (int i = n - 1; i > 0; --i) {
    const Joint& joint = model.joints[i];
    const int e = subtree_dof_end(model, i);
    poll.add(24.0 * joint.nv * (e - joint.idx_v));
    articulated::with_column_count(joint.nv,
                                   [&](auto k) { backward_rows<k()>(model, data, i, e); });
  }

  for (int i = 1; i < n; ++i) {
    const Joint& joint = model.joints[i];
    const int parent = model.parent[i];
    poll.add(24.0 * joint.nv * (nv - joint.idx_v));
    // A_i is only read by i's children.
    const bool has_children = model.subtree_end[i] > i + 1;
    const double* parent_acc = parent > 0 ? mi.acceleration[model.depth[parent]].data() : nullptr;
    double* acc = has_children ? mi.acceleration[model.depth[i]].data() : nullptr;
    articulated::with_column_count(
        joint.nv, [&](auto k) { forward_rows<k()>(data, joint, i, parent_acc, acc); });
  }

  double* minv = mi.Minv.data();
  for (int r = 0; r < nv; ++r) {
    for (int col = r + 1; col < nv; ++col) {
      minv[static_cast<std::ptrdiff_t>(col) * nv + r] =
          minv[static_cast<std::ptrdiff_t>(r) * nv + col];
    }
  }
  return mi.Minv;
}

}  // namespace torqued
