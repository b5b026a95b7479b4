// Analytic derivatives of forward dynamics (Carpentier & Mansard 2018, §V). Differentiating
// M(q) q̈ + b(q, q̇) = τ at fixed τ gives
//   ∂q̈/∂q = −M⁻¹ ∂τ/∂q,   ∂q̈/∂q̇ = −M⁻¹ ∂τ/∂q̇,   ∂q̈/∂τ = M⁻¹,
// with the RNEA derivatives taken at (q, q̇, q̈). So: ABA for q̈, the RNEA derivatives there (which
// also give M), then M⁻¹ from the sparse factorization M = Lᵀ D L of ltdl.cpp (Featherstone,
// RBDA 2008, §6.5, Table 6.3), whose L keeps the tree's sparsity: L_ki ≠ 0 only for i an
// ancestor of k in the DOF tree (data.dof_parent). With G = L⁻¹ (same sparsity: column c lives on
// c's subtree, a contiguous range of DOFs),
//   M⁻¹ = G D⁻¹ Gᵀ = Σ_c g_c g_cᵀ / D_c,
// a sum of rank-one updates on the subtree blocks: O(Σ_c |subtree(c)|²) instead of O(n³).
// Column k of ∂τ/∂q (and ∂τ/∂q̇) is non-zero only on the DOFs related to k (its ancestors and its
// subtree), so the products by M⁻¹ only read those columns of M⁻¹.
#include "engine/algorithms/aba_derivatives.hpp"

#include <cassert>

#include "engine/algorithms/ltdl.hpp"
#include "engine/algorithms/rnea_derivatives.hpp"

namespace torqued {

namespace {

// g = L⁻¹ for the unit lower L of ltdl_factorize (L_ak held at (k, a), above the diagonal),
// column c on rows c .. end[c] − 1, by forward substitution in L g_c = e_c column by column of L:
// once g_kc is final it is subtracted from the rows a of k's subtree, k + 1 .. end[k] − 1, the
// only rows where L_ak is not zero. The loads of L are independent (no walk up the ancestors,
// whose chain of dependent loads cost more than the arithmetic).
void invert_unit_lower(const std::vector<int>& end, int nv, const double* l, double* g,
                       InterruptionPoll& poll) {
  for (int c = 0; c < nv; ++c) {
    double* gc = g + static_cast<std::ptrdiff_t>(c) * nv;
    gc[c] = 1.0;
    for (int a = c + 1; a < end[c]; ++a) gc[a] = 0.0;
    int updates = 0;
    for (int k = c; k < end[c]; ++k) {
      const double gk = gc[k];
      for (int a = k + 1; a < end[k]; ++a) gc[a] -= l[k + static_cast<std::ptrdiff_t>(a) * nv] * gk;
      updates += end[k] - k - 1;
    }
    poll.add(2.0 * updates);
  }
}

// A native build (TORQUED_NATIVE) has no clones: its baseline is the machine's own ISA. Under
// ThreadSanitizer (TORQUED_SANITIZE=thread) the clones' resolver, an ifunc that the dynamic
// loader runs before the sanitizer's runtime exists, would be instrumented and crash the program
// at start-up: there too each function has its baseline version only.
#ifdef TORQUED_NO_FUNCTION_CLONES
#define TORQUED_AVX2_CLONES
#else
#define TORQUED_AVX2_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#endif

// Four doubles as one value (GCC vector extension): lowered to two SSE2 registers in the
// baseline build and to one AVX register where the AVX2 clone below runs.
using Lanes = double __attribute__((vector_size(32)));

// Rows r0 .. r0 + 4 kLanes − 1 of column k of −M⁻¹ ∂τ/∂q and −M⁻¹ ∂τ/∂q̇ at once, summing
// over the DOFs j related to k (ancestors, then the subtree k .. end − 1): the partial sums stay
// in registers while the columns of M⁻¹ stream by.
template <int kLanes>
[[gnu::always_inline]] inline void accumulate_row_block(const std::vector<int>& parent, int end,
                                                        int k, int nv, int r0, const double* minv,
                                                        const double* wq_col, const double* wv_col,
                                                        double* out_q, double* out_v) {
  Lanes sum_q[kLanes] = {}, sum_v[kLanes] = {};
  const auto add = [&](int j) __attribute__((always_inline)) {
    const double* m = minv + static_cast<std::ptrdiff_t>(j) * nv + r0;
    const double wq = wq_col[j], wv = wv_col[j];
    for (int l = 0; l < kLanes; ++l) {
      Lanes column;
      __builtin_memcpy(&column, m + 4 * l, sizeof column);
      sum_q[l] += wq * column;
      sum_v[l] += wv * column;
    }
  };
  for (int j = parent[k]; j >= 0; j = parent[j]) add(j);
  for (int j = k; j < end; ++j) add(j);
  for (int l = 0; l < kLanes; ++l) {
    const Lanes results[2] = {-sum_q[l], -sum_v[l]};
    __builtin_memcpy(out_q + r0 + 4 * l, &results[0], sizeof(Lanes));
    __builtin_memcpy(out_v + r0 + 4 * l, &results[1], sizeof(Lanes));
  }
}

// All rows of the same when there are fewer than four.
[[gnu::always_inline]] inline void accumulate_last_rows(const std::vector<int>& parent, int end,
                                                        int k, int nv, int r0, const double* minv,
                                                        const double* wq_col, const double* wv_col,
                                                        double* out_q, double* out_v) {
  const int rows = nv - r0;
  double sum_q[4] = {}, sum_v[4] = {};
  const auto add = [&](int j) {
    const double* m = minv + static_cast<std::ptrdiff_t>(j) * nv + r0;
    const double wq = wq_col[j], wv = wv_col[j];
    for (int i = 0; i < rows; ++i) {
      sum_q[i] += wq * m[i];
      sum_v[i] += wv * m[i];
    }
  };
  for (int j = parent[k]; j >= 0; j = parent[j]) add(j);
  for (int j = k; j < end; ++j) add(j);
  for (int i = 0; i < rows; ++i) {
    out_q[r0 + i] = -sum_q[i];
    out_v[r0 + i] = -sum_v[i];
  }
}

// M⁻¹ = Σ_c g_c g_cᵀ / D_c into the zeroed minv by rank-one updates on subtree blocks. The
// blocks are updated whole rather than one triangle then mirrored: twice the products, but
// contiguous and vectorized, where the mirror's strided copies cost more. Cloned like the
// product below.
TORQUED_AVX2_CLONES void accumulate_minverse(const std::vector<int>& end, int nv, const double* h,
                                             const double* g, double* minv,
                                             InterruptionPoll& poll) {
  for (int c = 0; c < nv; ++c) {
    const double size = end[c] - c;
    poll.add(2.0 * size * size);
    const double* gc = g + static_cast<std::ptrdiff_t>(c) * nv;
    const double inv_d = 1.0 / h[c + static_cast<std::ptrdiff_t>(c) * nv];
    for (int b = c; b < end[c]; ++b) {
      const double scale = gc[b] * inv_d;
      double* minv_b = minv + static_cast<std::ptrdiff_t>(b) * nv;
      for (int a = c; a < end[c]; ++a) minv_b[a] += gc[a] * scale;
    }
  }
}

// out_q = −M⁻¹ ∂τ/∂q and out_v = −M⁻¹ ∂τ/∂q̇, column by column: half of the call's time, and
// dense enough for SIMD. Compiled for AVX2 as well as for the baseline, the version chosen when
// the program starts (GCC function multiversioning), so a portable build still uses the wider
// registers on machines that have them. A portable build compiles this file without FMA
// contraction, so both versions do the same operations in the same order and return bitwise the
// same results.
TORQUED_AVX2_CLONES void multiply_by_minus_minverse(const std::vector<int>& parent,
                                                    const std::vector<int>& end, int nv,
                                                    const double* minv, const double* dtau_dq,
                                                    const double* dtau_dv, double* out_q,
                                                    double* out_v, InterruptionPoll& poll) {
  for (int k = 0; k < nv; ++k) {
    // Two products per row of each column of M⁻¹ read: k's ancestors' and its subtree's.
    int related = end[k] - k;
    for (int j = parent[k]; j >= 0; j = parent[j]) ++related;
    poll.add(4.0 * nv * related);
    const std::ptrdiff_t col = static_cast<std::ptrdiff_t>(k) * nv;
    const double* wq = dtau_dq + col;
    const double* wv = dtau_dv + col;
    int r = 0;
    for (; r + 16 <= nv; r += 16) {
      accumulate_row_block<4>(parent, end[k], k, nv, r, minv, wq, wv, out_q + col, out_v + col);
    }
    if (r + 8 <= nv) {
      accumulate_row_block<2>(parent, end[k], k, nv, r, minv, wq, wv, out_q + col, out_v + col);
      r += 8;
    }
    if (r + 4 <= nv) {
      accumulate_row_block<1>(parent, end[k], k, nv, r, minv, wq, wv, out_q + col, out_v + col);
      r += 4;
    }
    if (r == nv) continue;
    if (nv >= 4) {
      // The last rows through a block ending at the last row: the rows it shares with the
      // previous block are computed again by the same operations, so they do not change.
      accumulate_row_block<1>(parent, end[k], k, nv, nv - 4, minv, wq, wv, out_q + col,
                              out_v + col);
    } else {
      accumulate_last_rows(parent, end[k], k, nv, r, minv, wq, wv, out_q + col, out_v + col);
    }
  }
}

}  // namespace

const AbaDerivativesWorkspace& aba_derivatives(const Model& model, Data& data,
                                               const ConstVectorRef& q, const ConstVectorRef& v,
                                               const ConstVectorRef& tau,
                                               std::span<const Force> external_forces) {
  assert(fits(model, data, q, v, tau));
  data.bind(model, kAbaDerivativesWorkspaces);
  AbaDerivativesWorkspace& w = data.workspace<AbaDerivativesWorkspace>();
  aba(model, data, q, v, tau, external_forces);
  const RneaDerivativesWorkspace& dtau =
      rnea_derivatives(model, data, q, v, data.ddq, external_forces);

  const int nv = model.nv;
  const std::vector<int>& parent = data.dof_parent;
  const std::vector<int>& end = data.dof_subtree_end;
  ltdl_factorize(model, data, data.workspace<MassMatrixWorkspace>().M);
  const double* h = data.workspace<MassFactorWorkspace>().ltdl.data();
  double* g = w.factor_inverse.data();
  InterruptionPoll poll(data.interruption);
  invert_unit_lower(end, nv, h, g, poll);

  double* minv = w.ddq_dtau.data();
  w.ddq_dtau.setZero();
  accumulate_minverse(end, nv, h, g, minv, poll);

  // −M⁻¹ ∂τ/∂(q, q̇), column k reading only the rows of ∂τ related to k.
  multiply_by_minus_minverse(parent, end, nv, minv, dtau.dtau_dq.data(), dtau.dtau_dv.data(),
                             w.ddq_dq.data(), w.ddq_dv.data(), poll);
  return w;
}

}  // namespace torqued
