// Dense matrix products C = ± A W (or C ± = A W): the trajectory optimizer's backward pass
// (optimal_control/fddp.cpp), whose products of n x n matrices, n = 2 nv, Eigen built without its
// vectorization (CMakeLists.txt) leaves scalar. A register-blocked kernel (Goto & van de Geijn,
// "Anatomy of High-Performance Matrix Multiplication", ACM TOMS 34(3), 2008, §4: a micro-tile of
// C held in registers while the columns of A stream past it and W's entries are broadcast)
// written in GCC vector types, with the baseline and AVX2 clones of tree_sparse_product.hpp: no
// FMA, so both return bitwise the same results.
#pragma once

namespace torqued::matrix_product {

// A matrix's entries in memory: entry (i, j) at data[i * row_step + j * column_step], so that W
// may be column-major (1, ld) or row-major (ld, 1), a transpose being the other.
struct View {
  const double* data;
  int row_step;
  int column_step;
};

// C = sign · A W, or C += sign · A W with `accumulate`, for A of rows x inner (column-major,
// columns `lda` apart), W of inner x cols, C of rows x cols (column-major, columns `ldc` apart).
// C may not overlap A or W.
void multiply(int rows, int inner, int cols, const double* a, int lda, View w, double* c, int ldc,
              double sign, bool accumulate);

// The same for a square C of which only the upper triangle is wanted (a product known to be
// symmetric, such as F_xᵀ V_xx F_x): the entries on and above the diagonal are those of
// multiply(), the tiles crossing the diagonal also write some entries below it, and the rest of
// the lower triangle is left as it was. About half of multiply()'s work for a large C.
void multiply_upper(int size, int inner, const double* a, int lda, View w, double* c, int ldc,
                    double sign, bool accumulate);

}  // namespace torqued::matrix_product
