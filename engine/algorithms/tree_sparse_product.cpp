// The tree-sparse products' kernel (see tree_sparse_product.hpp), defined in this one translation
// unit: clang emits a target_clones function's resolver in every unit that defines it, and an
// inline definition in the header, compiled into two units, did not link.
#include "engine/algorithms/tree_sparse_product.hpp"

#include <cstddef>

// No clones where the baseline has AVX2 already (a build for the local CPU: its wider baseline
// could not be inlined into the AVX2 clone), nor under ThreadSanitizer: the clones' resolver, an
// ifunc that the dynamic loader runs before the sanitizer's runtime exists, would be instrumented
// and crash the program at start-up.
#if defined(__AVX2__) || defined(__SANITIZE_THREAD__)
#define TORQUED_AVX2_CLONES
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TORQUED_AVX2_CLONES
#endif
#endif
#ifndef TORQUED_AVX2_CLONES
#define TORQUED_AVX2_CLONES __attribute__((target_clones("avx2", "default")))
#endif

namespace torqued::tree_sparse {
namespace {

// Four doubles as one value (GCC vector extension).
using Lanes = double __attribute__((vector_size(32)));

// Rows r0 .. r0 + 4 kLanes − 1 of column k of −A W_a and −A W_b at once, summing over the DOFs j
// related to k (ancestors, then the subtree k .. end − 1): the partial sums stay in registers
// while the columns of A stream by.
template <int kLanes>
[[gnu::always_inline]] inline void accumulate_row_block(const std::vector<int>& parent, int end,
                                                        int k, int n, int r0, const double* a,
                                                        const double* wa_col, const double* wb_col,
                                                        double* out_a, double* out_b) {
  Lanes sum_a[kLanes] = {}, sum_b[kLanes] = {};
  const auto add = [&](int j) __attribute__((always_inline)) {
    const double* column = a + static_cast<std::ptrdiff_t>(j) * n + r0;
    const double wa = wa_col[j], wb = wb_col[j];
    for (int l = 0; l < kLanes; ++l) {
      Lanes lanes;
      __builtin_memcpy(&lanes, column + 4 * l, sizeof lanes);
      sum_a[l] += wa * lanes;
      sum_b[l] += wb * lanes;
    }
  };
  for (int j = parent[k]; j >= 0; j = parent[j]) add(j);
  for (int j = k; j < end; ++j) add(j);
  for (int l = 0; l < kLanes; ++l) {
    const Lanes results[2] = {-sum_a[l], -sum_b[l]};
    __builtin_memcpy(out_a + r0 + 4 * l, &results[0], sizeof(Lanes));
    __builtin_memcpy(out_b + r0 + 4 * l, &results[1], sizeof(Lanes));
  }
}

// All rows of the same when there are fewer than four.
[[gnu::always_inline]] inline void accumulate_last_rows(const std::vector<int>& parent, int end,
                                                        int k, int n, int r0, const double* a,
                                                        const double* wa_col, const double* wb_col,
                                                        double* out_a, double* out_b) {
  const int rows = n - r0;
  double sum_a[4] = {}, sum_b[4] = {};
  const auto add = [&](int j) {
    const double* column = a + static_cast<std::ptrdiff_t>(j) * n + r0;
    const double wa = wa_col[j], wb = wb_col[j];
    for (int i = 0; i < rows; ++i) {
      sum_a[i] += wa * column[i];
      sum_b[i] += wb * column[i];
    }
  };
  for (int j = parent[k]; j >= 0; j = parent[j]) add(j);
  for (int j = k; j < end; ++j) add(j);
  for (int i = 0; i < rows; ++i) {
    out_a[r0 + i] = -sum_a[i];
    out_b[r0 + i] = -sum_b[i];
  }
}

}  // namespace

TORQUED_AVX2_CLONES bool negated_products(const std::vector<int>& parent,
                                          const std::vector<int>& end, int n, const double* a,
                                          const double* wa, const double* wb, double* out_a,
                                          double* out_b, InterruptionPoll& poll) {
  for (int k = 0; k < n; ++k) {
    // Two products per row of each column of A read: k's ancestors' and its subtree's.
    int related = end[k] - k;
    for (int j = parent[k]; j >= 0; j = parent[j]) ++related;
    if (poll.stop_requested(4.0 * n * related)) return false;
    const std::ptrdiff_t col = static_cast<std::ptrdiff_t>(k) * n;
    int r = 0;
    for (; r + 16 <= n; r += 16) {
      accumulate_row_block<4>(parent, end[k], k, n, r, a, wa + col, wb + col, out_a + col,
                              out_b + col);
    }
    if (r + 8 <= n) {
      accumulate_row_block<2>(parent, end[k], k, n, r, a, wa + col, wb + col, out_a + col,
                              out_b + col);
      r += 8;
    }
    if (r + 4 <= n) {
      accumulate_row_block<1>(parent, end[k], k, n, r, a, wa + col, wb + col, out_a + col,
                              out_b + col);
      r += 4;
    }
    if (r == n) continue;
    if (n >= 4) {
      // The last rows through a block ending at the last row: the rows it shares with the
      // previous block are computed again by the same operations, so they do not change.
      accumulate_row_block<1>(parent, end[k], k, n, n - 4, a, wa + col, wb + col, out_a + col,
                              out_b + col);
    } else {
      accumulate_last_rows(parent, end[k], k, n, r, a, wa + col, wb + col, out_a + col,
                           out_b + col);
    }
  }
  return true;
}

}  // namespace torqued::tree_sparse
