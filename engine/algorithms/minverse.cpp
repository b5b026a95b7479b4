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
#include "engine/algorithms/minverse.hpp"

#include <Eigen/Cholesky>

#include "engine/algorithms/articulated_body.hpp"
#include "engine/algorithms/world_frame.hpp"
#include "engine/model/joint_world.hpp"

namespace torqued {

namespace {

using articulated::is_degenerate;
using articulated::throw_singular;

inline double dot6(const double* x, const double* y) {
  return x[0] * y[0] + x[1] * y[1] + x[2] * y[2] + x[3] * y[3] + x[4] * y[4] + x[5] * y[5];
}

// One past the last DOF of body i's subtree: subtrees are contiguous in the DOF order.
int subtree_dof_end(const Model& model, int i) {
  const int end = model.subtree_end[i];
  return end < model.nbodies() ? model.joints[end].idx_v : model.nv;
}

// The steps of a multi-DOF joint (K = 6 for free-flyers, whose fixed sizes the compiler unrolls;
// Eigen::Dynamic up to 6 for the others), with the same meaning as the 1-DOF steps inline below.
template <int K>
void backward_multi_dof(const Model& model, Data& data, int i, int e) {
  using Columns = Eigen::Matrix<double, 6, K, 0, 6, 6>;
  using Square = Eigen::Matrix<double, K, K, 0, 6, 6>;
  const Joint& joint = model.joints[i];
  const int parent = model.parent[i];
  const Mat6& ia = data.Ia[i];
  const int k = joint.nv;
  const int c = joint.idx_v;
  const int nv = model.nv;
  const Columns s = data.oS.middleCols(c, k);
  Columns u(6, k);
  u.noalias() = ia * s;
  data.U.middleCols(c, k) = u;
  Square d(k, k);
  d.noalias() = s.transpose() * u;
  const Eigen::LLT<Square> llt(d);
  if (llt.info() != Eigen::Success) throw_singular(model, i);
  const double smallest = llt.matrixLLT().diagonal().minCoeff();
  if (is_degenerate(smallest * smallest, ia)) throw_singular(model, i);
  Square d_inv = Square::Identity(k, k);
  llt.solveInPlace(d_inv);
  data.Dinv[i].topLeftCorner(k, k) = d_inv;
  auto rows = data.Minv.middleRows(c, k);
  rows.middleCols(c, k) = d_inv;
  Columns s_dinv(6, k);
  s_dinv.noalias() = s * d_inv;
  for (int j = c + k; j < e; ++j) {
    rows.col(j).noalias() = -(s_dinv.transpose() * data.minv_bias.col(j));
  }
  rows.rightCols(nv - e).setZero();
  if (parent > 0) {
    data.minv_bias.middleCols(c, k).noalias() = u * d_inv;
    for (int j = c + k; j < e; ++j) {
      const Eigen::Matrix<double, K, 1, 0, 6, 1> x = rows.col(j);
      data.minv_bias.col(j).noalias() += u * x;
    }
    Columns u_dinv(6, k);
    u_dinv.noalias() = u * d_inv;
    data.Ia[parent] += ia;
    data.Ia[parent].noalias() -= u_dinv * u.transpose();
  }
}

// `acc` is null when the body has no children to read it.
template <int K>
void forward_multi_dof(Data& data, const Joint& joint, int body, const double* parent_acc,
                       double* acc) {
  using Columns = Eigen::Matrix<double, 6, K, 0, 6, 6>;
  const int k = joint.nv;
  const int c = joint.idx_v;
  const int nv = static_cast<int>(data.Minv.cols());
  const Columns s = data.oS.middleCols(c, k);
  Columns u_dinv(6, k);
  u_dinv.noalias() = data.U.middleCols(c, k) * data.Dinv[body].topLeftCorner(k, k);
  auto rows = data.Minv.middleRows(c, k);
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
  const double* qp = q.data();
  const int n = model.nbodies();
  const int nv = model.nv;
  double* os = data.oS.data();
  double* minv = data.Minv.data();
  double* bias = data.minv_bias.data();
  double* ucols = data.U.data();

  for (int i = 1; i < n; ++i) {
    data.Ia[i] = model.inertias[i].transformed_by(place_in_world(model, data, i, qp)).matrix();
  }

  for (int i = n - 1; i > 0; --i) {
    const Joint& joint = model.joints[i];
    const int parent = model.parent[i];
    const Mat6& ia = data.Ia[i];
    const int k = joint.nv;
    const int c = joint.idx_v;
    const int e = subtree_dof_end(model, i);
    double* row = minv + static_cast<std::ptrdiff_t>(c) * nv;
    if (k == 1) {
      const double* s = os + 6 * c;
      Eigen::Map<Vec6> u(ucols + 6 * c);
      u.noalias() = ia * Eigen::Map<const Vec6>(s);
      const double d = dot6(s, u.data());
      if (is_degenerate(d, ia)) throw_singular(model, i);
      const double inv_d = 1.0 / d;
      data.Dinv[i](0, 0) = inv_d;
      row[c] = inv_d;
      for (int j = e; j < nv; ++j) row[j] = 0.0;
      if (parent > 0) {
        for (int r = 0; r < 6; ++r) bias[6 * c + r] = u[r] * inv_d;
        for (int j = c + 1; j < e; ++j) {
          double* b = bias + 6 * j;
          const double x = -inv_d * dot6(s, b);
          row[j] = x;
          for (int r = 0; r < 6; ++r) b[r] += u[r] * x;
        }
        const Vec6 u_vec = u;
        data.Ia[parent] += ia;
        data.Ia[parent].noalias() -= (inv_d * u_vec) * u_vec.transpose();
      } else {
        for (int j = c + 1; j < e; ++j) row[j] = -inv_d * dot6(s, bias + 6 * j);
      }
    } else if (k == 6) {
      backward_multi_dof<6>(model, data, i, e);
    } else {
      backward_multi_dof<Eigen::Dynamic>(model, data, i, e);
    }
  }

  for (int i = 1; i < n; ++i) {
    const Joint& joint = model.joints[i];
    const int parent = model.parent[i];
    const int k = joint.nv;
    const int c = joint.idx_v;
    // A_i is only read by i's children.
    const bool has_children = model.subtree_end[i] > i + 1;
    const double* parent_acc = parent > 0 ? data.minv_acc[model.depth[parent]].data() : nullptr;
    double* acc = data.minv_acc[model.depth[i]].data();
    if (k == 1) {
      double* row = minv + static_cast<std::ptrdiff_t>(c) * nv;
      const double* s = os + 6 * c;
      if (parent_acc != nullptr) {
        const double inv_d = data.Dinv[i](0, 0);
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
      forward_multi_dof<6>(data, joint, i, parent_acc, has_children ? acc : nullptr);
    } else {
      forward_multi_dof<Eigen::Dynamic>(data, joint, i, parent_acc, has_children ? acc : nullptr);
    }
  }

  for (int r = 0; r < nv; ++r) {
    for (int col = r + 1; col < nv; ++col) {
      minv[static_cast<std::ptrdiff_t>(col) * nv + r] =
          minv[static_cast<std::ptrdiff_t>(r) * nv + col];
    }
  }
  return data.Minv;
}

}  // namespace torqued
