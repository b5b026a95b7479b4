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
// Passes 1 and the Riccati half of 2 are the articulated-body core's (articulated_body.hpp);
// what is M⁻¹'s own is sweeping all nv right-hand sides through its bias and acceleration halves.
#include "engine/algorithms/minverse.hpp"

#include <cassert>

#include "engine/algorithms/articulated_body.hpp"

namespace torqued {

namespace {

inline double dot6(const double* x, const double* y) {
  return x[0] * y[0] + x[1] * y[1] + x[2] * y[2] + x[3] * y[3] + x[4] * y[4] + x[5] * y[5];
}

// One past the last DOF of body i's subtree: subtrees are contiguous in the DOF order.
int subtree_dof_end(const Model& model, int i) {
  const int end = model.subtree_end[i];
  return end < model.nbodies() ? model.joints[end].idx_v : model.nv;
}

// Rows of body i's joint for the columns of its subtree, and B, once eliminate() has left U and
// D⁻¹. K = 6 for free-flyers, whose fixed sizes the compiler unrolls; Eigen::Dynamic up to 6
// for the other multi-DOF joints; the 1-DOF case is written out in minverse() below.
template <int K>
void backward_rows(const Model& model, Data& data, int i, int e) {
  const ArticulatedBodyWorkspace& ab = data.workspace<ArticulatedBodyWorkspace>();
  MassInverseWorkspace& mi = data.workspace<MassInverseWorkspace>();
  using Columns = Eigen::Matrix<double, 6, K, 0, 6, 6>;
  const Joint& joint = model.joints[i];
  const int k = joint.nv;
  const int c = joint.idx_v;
  const Columns s = data.oS.middleCols(c, k);
  const Columns u = ab.U.middleCols(c, k);
  const Eigen::Matrix<double, K, K, 0, 6, 6> d_inv = ab.Dinv[i].topLeftCorner(k, k);
  auto rows = mi.Minv.middleRows(c, k);
  rows.middleCols(c, k) = d_inv;
  Columns s_dinv(6, k);
  s_dinv.noalias() = s * d_inv;
  for (int j = c + k; j < e; ++j) {
    rows.col(j).noalias() = -(s_dinv.transpose() * mi.bias.col(j));
  }
  rows.rightCols(model.nv - e).setZero();
  if (model.parent[i] > 0) {
    mi.bias.middleCols(c, k).noalias() = u * d_inv;
    for (int j = c + k; j < e; ++j) {
      const Eigen::Matrix<double, K, 1, 0, 6, 1> x = rows.col(j);
      mi.bias.col(j).noalias() += u * x;
    }
  }
}

// `acc` is null when the body has no children to read it.
template <int K>
void forward_rows(Data& data, const Joint& joint, int body, const double* parent_acc, double* acc) {
  const ArticulatedBodyWorkspace& ab = data.workspace<ArticulatedBodyWorkspace>();
  MassInverseWorkspace& mi = data.workspace<MassInverseWorkspace>();
  using Columns = Eigen::Matrix<double, 6, K, 0, 6, 6>;
  const int k = joint.nv;
  const int c = joint.idx_v;
  const int nv = static_cast<int>(mi.Minv.cols());
  const Columns s = data.oS.middleCols(c, k);
  Columns u_dinv(6, k);
  u_dinv.noalias() = ab.U.middleCols(c, k) * ab.Dinv[body].topLeftCorner(k, k);
  auto rows = mi.Minv.middleRows(c, k);
  for (int j = c; j < nv; ++j) {
    Eigen::Matrix<double, K, 1, 0, 6, 1> x = rows.col(j);
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
  data.bind(model, kMinverseWorkspaces);
  const ArticulatedBodyWorkspace& ab = data.workspace<ArticulatedBodyWorkspace>();
  MassInverseWorkspace& mi = data.workspace<MassInverseWorkspace>();
  const int n = model.nbodies();
  const int nv = model.nv;
  const double* os = data.oS.data();
  double* minv = mi.Minv.data();
  double* bias = mi.bias.data();
  const double* ucols = ab.U.data();
  const articulated::EveryForceGiven riccati_only{nullptr};

  InterruptionPoll poll(data.interruption);
  for (int i = 1; i < n; ++i) articulated::load_inertia(model, data, i, q.data());

  for (int i = n - 1; i > 0; --i) {
    articulated::eliminate(model, data, i, riccati_only);
    const Joint& joint = model.joints[i];
    const int k = joint.nv;
    const int c = joint.idx_v;
    const int e = subtree_dof_end(model, i);
    poll.add(24.0 * k * (e - c));
    if (k == 6) {
      backward_rows<6>(model, data, i, e);
      continue;
    }
    if (k != 1) {
      backward_rows<Eigen::Dynamic>(model, data, i, e);
      continue;
    }
    double* row = minv + static_cast<std::ptrdiff_t>(c) * nv;
    const double* s = os + 6 * c;
    const double* u = ucols + 6 * c;
    const double inv_d = ab.Dinv[i](0, 0);
    row[c] = inv_d;
    for (int j = e; j < nv; ++j) row[j] = 0.0;
    if (model.parent[i] > 0) {
      for (int r = 0; r < 6; ++r) bias[6 * c + r] = u[r] * inv_d;
      for (int j = c + 1; j < e; ++j) {
        double* b = bias + 6 * j;
        const double x = -inv_d * dot6(s, b);
        row[j] = x;
        for (int r = 0; r < 6; ++r) b[r] += u[r] * x;
      }
    } else {
      for (int j = c + 1; j < e; ++j) row[j] = -inv_d * dot6(s, bias + 6 * j);
    }
  }

  for (int i = 1; i < n; ++i) {
    const Joint& joint = model.joints[i];
    const int parent = model.parent[i];
    const int k = joint.nv;
    const int c = joint.idx_v;
    poll.add(24.0 * k * (nv - c));
    // A_i is only read by i's children.
    const bool has_children = model.subtree_end[i] > i + 1;
    const double* parent_acc = parent > 0 ? mi.acceleration[model.depth[parent]].data() : nullptr;
    double* acc = mi.acceleration[model.depth[i]].data();
    if (k == 1) {
      double* row = minv + static_cast<std::ptrdiff_t>(c) * nv;
      const double* s = os + 6 * c;
      if (parent_acc != nullptr) {
        const double inv_d = ab.Dinv[i](0, 0);
        const double* u = ucols + 6 * c;
        const double ud[6] = {u[0] * inv_d, u[1] * inv_d, u[2] * inv_d,
                              u[3] * inv_d, u[4] * inv_d, u[5] * inv_d};
        if (has_children) {
          for (int j = c; j < nv; ++j) {
            const double* pa = parent_acc + 6 * j;
            const double x = row[j] - dot6(ud, pa);
            row[j] = x;
            for (int r = 0; r < 6; ++r) acc[6 * j + r] = pa[r] + s[r] * x;
          }
        } else {
          for (int j = c; j < nv; ++j) row[j] -= dot6(ud, parent_acc + 6 * j);
        }
      } else if (has_children) {
        for (int j = c; j < nv; ++j) {
          const double x = row[j];
          for (int r = 0; r < 6; ++r) acc[6 * j + r] = s[r] * x;
        }
      }
    } else if (k == 6) {
      forward_rows<6>(data, joint, i, parent_acc, has_children ? acc : nullptr);
    } else {
      forward_rows<Eigen::Dynamic>(data, joint, i, parent_acc, has_children ? acc : nullptr);
    }
  }

  for (int r = 0; r < nv; ++r) {
    for (int col = r + 1; col < nv; ++col) {
      minv[static_cast<std::ptrdiff_t>(col) * nv + r] =
          minv[static_cast<std::ptrdiff_t>(r) * nv + col];
    }
  }
  return mi.Minv;
}

}  // namespace torqued
