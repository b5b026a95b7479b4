// The dense product kernel (see matrix_product.hpp), defined in this one translation unit
// (avx2_clones.hpp). C is computed in micro-tiles of 8 rows by 4 columns, 8 vector registers of
// four doubles, summed over A's columns: each step loads 8 entries of A's column once and
// broadcasts 4 of W's row, for 32 products. The rows below the last multiple of 4 are summed in
// scalars, the columns past the last multiple of 4 by narrower tiles. multiply_upper() stops each
// block of columns at its diagonal: for a block starting at column k, rows 0 .. k + 3.
#include "engine/algorithms/matrix_product.hpp"

#include <cstddef>

#include "engine/algorithms/avx2_clones.hpp"

namespace torqued::matrix_product {
namespace {

// Four doubles as one value (GCC vector extension).
using Lanes = double __attribute__((vector_size(32)));

// Rows r .. r + 4 kBlocks − 1 of columns k .. k + kCols − 1 of C.
template <int kBlocks, int kCols>
[[gnu::always_inline]] inline void tile(int inner, int r, int k, const double* a, int lda, View w,
                                        double* c, int ldc, double sign, bool accumulate) {
  Lanes sums[kCols][kBlocks] = {};
  const double* w_row = w.data + static_cast<std::ptrdiff_t>(k) * w.column_step;
  for (int j = 0; j < inner; ++j) {
    const double* column = a + static_cast<std::ptrdiff_t>(j) * lda + r;
    Lanes lanes[kBlocks];
    for (int b = 0; b < kBlocks; ++b) __builtin_memcpy(&lanes[b], column + 4 * b, sizeof(Lanes));
    const double* w_j = w_row + static_cast<std::ptrdiff_t>(j) * w.row_step;
    for (int col = 0; col < kCols; ++col) {
      const double weight = w_j[static_cast<std::ptrdiff_t>(col) * w.column_step];
      for (int b = 0; b < kBlocks; ++b) sums[col][b] += weight * lanes[b];
    }
  }
  for (int col = 0; col < kCols; ++col) {
    double* out = c + static_cast<std::ptrdiff_t>(k + col) * ldc + r;
    for (int b = 0; b < kBlocks; ++b) {
      Lanes result = sign * sums[col][b];
      if (accumulate) {
        Lanes previous;
        __builtin_memcpy(&previous, out + 4 * b, sizeof(Lanes));
        result += previous;
      }
      __builtin_memcpy(out + 4 * b, &result, sizeof(Lanes));
    }
  }
}

// Rows r .. rows − 1 (fewer than four) of column k, in scalars.
[[gnu::always_inline]] inline void last_rows(int rows, int inner, int r, int k, const double* a,
                                             int lda, View w, double* c, int ldc, double sign,
                                             bool accumulate) {
  for (int i = r; i < rows; ++i) {
    double sum = 0.0;
    for (int j = 0; j < inner; ++j) {
      sum += w.data[static_cast<std::ptrdiff_t>(j) * w.row_step +
                    static_cast<std::ptrdiff_t>(k) * w.column_step] *
             a[static_cast<std::ptrdiff_t>(j) * lda + i];
    }
    double& out = c[static_cast<std::ptrdiff_t>(k) * ldc + i];
    out = accumulate ? out + sign * sum : sign * sum;
  }
}

template <int kCols>
[[gnu::always_inline]] inline void columns(int rows, int inner, int k, const double* a, int lda,
                                           View w, double* c, int ldc, double sign,
                                           bool accumulate) {
  int r = 0;
  for (; r + 8 <= rows; r += 8) tile<2, kCols>(inner, r, k, a, lda, w, c, ldc, sign, accumulate);
  if (r + 4 <= rows) {
    tile<1, kCols>(inner, r, k, a, lda, w, c, ldc, sign, accumulate);
    r += 4;
  }
  if (r < rows) {
    for (int col = 0; col < kCols; ++col) {
      last_rows(rows, inner, r, k + col, a, lda, w, c, ldc, sign, accumulate);
    }
  }
}

// C's columns in blocks of four; with `Upper` (C square), each block's rows only down to its last
// column's diagonal entry.
template <bool Upper>
[[gnu::always_inline]] inline void product(int rows, int inner, int cols, const double* a, int lda,
                                           View w, double* c, int ldc, double sign,
                                           bool accumulate) {
  const auto rows_of = [rows](int last_column) { return Upper ? last_column + 1 : rows; };
  int k = 0;
  for (; k + 4 <= cols; k += 4) {
    columns<4>(rows_of(k + 3), inner, k, a, lda, w, c, ldc, sign, accumulate);
  }
  switch (cols - k) {
    case 3:
      columns<3>(rows_of(k + 2), inner, k, a, lda, w, c, ldc, sign, accumulate);
      break;
    case 2:
      columns<2>(rows_of(k + 1), inner, k, a, lda, w, c, ldc, sign, accumulate);
      break;
    case 1:
      columns<1>(rows_of(k), inner, k, a, lda, w, c, ldc, sign, accumulate);
      break;
    default:
      break;
  }
}

}  // namespace

TORQUED_AVX2_CLONES void multiply(int rows, int inner, int cols, const double* a, int lda, View w,
                                  double* c, int ldc, double sign, bool accumulate) {
  product<false>(rows, inner, cols, a, lda, w, c, ldc, sign, accumulate);
}

TORQUED_AVX2_CLONES void multiply_upper(int size, int inner, const double* a, int lda, View w,
                                        double* c, int ldc, double sign, bool accumulate) {
  product<true>(size, inner, size, a, lda, w, c, ldc, sign, accumulate);
}

}  // namespace torqued::matrix_product
