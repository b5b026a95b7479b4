// The tree-sparse products' kernel (see tree_sparse_product.hpp), defined in this one translation
// unit (avx2_clones.hpp).
#include "engine/algorithms/tree_sparse_product.hpp"

#include <cstddef>

#include "engine/algorithms/avx2_clones.hpp"

namespace torqued::tree_sparse {
namespace {

// Four doubles as one value (GCC vector extension).
using Lanes = double __attribute__((vector_size(32)));

// The j related to column k of W in the DOF tree: k's ancestors, then its subtree k .. end − 1.
struct TreeColumns {
  const std::vector<int>& parent;
  const std::vector<int>& end;

  int count(int k) const {
    int related = end[k] - k;
    for (int j = parent[k]; j >= 0; j = parent[j]) ++related;
    return related;
  }
  template <class F>
  [[gnu::always_inline]] void for_each(int k, F&& f) const {
    for (int j = parent[k]; j >= 0; j = parent[j]) f(j);
    for (int j = k; j < end[k]; ++j) f(j);
  }
};

// Every j of a dense W with `inner` rows.
struct DenseColumns {
  int inner;

  int count(int) const { return inner; }
  template <class F>
  [[gnu::always_inline]] void for_each(int, F&& f) const {
    for (int j = 0; j < inner; ++j) f(j);
  }
};

// Rows r0 .. r0 + 4 kLanes − 1 of column k of −A W_a (and of −A W_b with kProducts = 2) at once,
// summing over the j related to k: the partial sums stay in registers while the columns of A
// (`rows` long) stream by.
template <int kLanes, int kProducts, class Columns>
[[gnu::always_inline]] inline void accumulate_row_block(const Columns& columns, int k, int lda,
                                                        int r0, const double* a,
                                                        const double* const* w_cols,
                                                        double* const* out_cols) {
  Lanes sums[kProducts][kLanes] = {};
  columns.for_each(
      k, [&](int j) __attribute__((always_inline)) {
        const double* column = a + static_cast<std::ptrdiff_t>(j) * lda + r0;
        for (int l = 0; l < kLanes; ++l) {
          Lanes lanes;
          __builtin_memcpy(&lanes, column + 4 * l, sizeof lanes);
          for (int p = 0; p < kProducts; ++p) sums[p][l] += w_cols[p][j] * lanes;
        }
      });
  for (int p = 0; p < kProducts; ++p) {
    for (int l = 0; l < kLanes; ++l) {
      const Lanes result = -sums[p][l];
      __builtin_memcpy(out_cols[p] + r0 + 4 * l, &result, sizeof(Lanes));
    }
  }
}

// All rows of the same when there are fewer than four.
template <int kProducts, class Columns>
[[gnu::always_inline]] inline void accumulate_last_rows(const Columns& columns, int k, int rows,
                                                        int lda, int r0, const double* a,
                                                        const double* const* w_cols,
                                                        double* const* out_cols) {
  const int count = rows - r0;
  double sums[kProducts][4] = {};
  columns.for_each(k, [&](int j) {
    const double* column = a + static_cast<std::ptrdiff_t>(j) * lda + r0;
    for (int i = 0; i < count; ++i) {
      for (int p = 0; p < kProducts; ++p) sums[p][i] += w_cols[p][j] * column[i];
    }
  });
  for (int p = 0; p < kProducts; ++p) {
    for (int i = 0; i < count; ++i) out_cols[p][r0 + i] = -sums[p][i];
  }
}

// The columns of a matrix, `stride` apart (its leading dimension).
struct Strided {
  const double* data;
  int stride;
};

// out_p = −A W_p, column by column, for A of rows x inner and W_p of inner x n, each matrix's
// columns `ld` apart.
template <int kProducts, class Columns>
[[gnu::always_inline]] inline bool products(const Columns& columns, int rows, int n, Strided a,
                                            const double* const (&w)[kProducts], int ldw,
                                            double* const (&out)[kProducts], int ld_out,
                                            InterruptionPoll& poll) {
  for (int k = 0; k < n; ++k) {
    // kProducts products per row of each column of A read.
    if (poll.stop_requested(2.0 * kProducts * rows * columns.count(k))) return false;
    const double* w_cols[kProducts];
    double* out_cols[kProducts];
    for (int p = 0; p < kProducts; ++p) {
      w_cols[p] = w[p] + static_cast<std::ptrdiff_t>(k) * ldw;
      out_cols[p] = out[p] + static_cast<std::ptrdiff_t>(k) * ld_out;
    }
    const auto block = [&]<int kLanes>(int r) __attribute__((always_inline)) {
      accumulate_row_block<kLanes, kProducts>(columns, k, a.stride, r, a.data, w_cols, out_cols);
    };
    int r = 0;
    for (; r + 16 <= rows; r += 16) block.template operator()<4>(r);
    if (r + 8 <= rows) {
      block.template operator()<2>(r);
      r += 8;
    }
    if (r + 4 <= rows) {
      block.template operator()<1>(r);
      r += 4;
    }
    if (r == rows) continue;
    if (rows >= 4) {
      // The last rows through a block ending at the last row: the rows it shares with the
      // previous block are computed again by the same operations, so they do not change.
      block.template operator()<1>(rows - 4);
    } else {
      accumulate_last_rows<kProducts>(columns, k, rows, a.stride, r, a.data, w_cols, out_cols);
    }
  }
  return true;
}

}  // namespace

TORQUED_AVX2_CLONES bool negated_products(const std::vector<int>& parent,
                                          const std::vector<int>& end, int rows, int n,
                                          const double* a, const double* wa, const double* wb,
                                          double* out_a, double* out_b, InterruptionPoll& poll) {
  return products<2>(TreeColumns{parent, end}, rows, n, {a, rows}, {wa, wb}, n, {out_a, out_b},
                     rows, poll);
}

TORQUED_AVX2_CLONES bool negated_products(const std::vector<int>& parent,
                                          const std::vector<int>& end, int rows, int n,
                                          const double* a, int lda, const double* wa,
                                          const double* wb, double* out_a, double* out_b,
                                          int ld_out, InterruptionPoll& poll) {
  return products<2>(TreeColumns{parent, end}, rows, n, {a, lda}, {wa, wb}, n, {out_a, out_b},
                     ld_out, poll);
}

TORQUED_AVX2_CLONES bool negated_product(const std::vector<int>& parent,
                                         const std::vector<int>& end, int rows, int n,
                                         const double* a, const double* w, double* out,
                                         InterruptionPoll& poll) {
  return products<1>(TreeColumns{parent, end}, rows, n, {a, rows}, {w}, n, {out}, rows, poll);
}

TORQUED_AVX2_CLONES bool negated_product(const std::vector<int>& parent,
                                         const std::vector<int>& end, int rows, int n,
                                         const double* a, int lda, const double* w, double* out,
                                         int ld_out, InterruptionPoll& poll) {
  return products<1>(TreeColumns{parent, end}, rows, n, {a, lda}, {w}, n, {out}, ld_out, poll);
}

TORQUED_AVX2_CLONES bool dense_negated_products(int rows, int n, const double* a, const double* wa,
                                                const double* wb, double* out_a, double* out_b,
                                                InterruptionPoll& poll) {
  return products<2>(DenseColumns{n}, rows, n, {a, rows}, {wa, wb}, n, {out_a, out_b}, rows, poll);
}

TORQUED_AVX2_CLONES bool dense_negated_product(int rows, int inner, int n, const double* a,
                                               const double* w, int ldw, double* out,
                                               InterruptionPoll& poll) {
  return products<1>(DenseColumns{inner}, rows, n, {a, rows}, {w}, ldw, {out}, rows, poll);
}

}  // namespace torqued::tree_sparse
