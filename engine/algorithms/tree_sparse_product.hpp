// Products of a dense symmetric matrix by matrices with the DOF tree's sparsity: the engine's one
// kernel written for the instruction set, because the compiler leaves its plain loops scalar.
// Column k of such a matrix W is non-zero only at the DOFs related to k, its ancestors (λ(k),
// λ(λ(k)), ...: data.dof_parent) and its subtree k .. end[k] − 1 (data.dof_subtree_end), so
//   (A W)[:, k] = Σ over j related to k of W[j, k] A[:, j],
// which streams only those columns of A past partial sums held in vector registers: blocks of 16,
// 8 and 4 rows in GCC vector types of four doubles (two SSE2 registers each in the x86-64
// baseline, one AVX register where AVX2 runs). A portable build compiles the kernel twice, for
// the baseline and for AVX2, the version chosen when the program starts (GCC function
// multiversioning); neither uses FMA, so both do the same operations in the same order and return
// bitwise the same results.
#pragma once

#include <vector>

#include "engine/algorithms/interruption.hpp"

namespace torqued::tree_sparse {

// out_a = −A W_a and out_b = −A W_b, column-major, for A of `rows` x n (a symmetric n x n A may
// be given by its rows, which are its columns) and W_a, W_b of n x n with the sparsity of the DOF
// tree given by `parent` and `end`, column by column. Returns false, the products unfinished, when
// `poll` says stop: an exception must not leave a target_clones function (the process would
// terminate), so the caller throws.
bool negated_products(const std::vector<int>& parent, const std::vector<int>& end, int rows, int n,
                      const double* a, const double* wa, const double* wb, double* out_a,
                      double* out_b, InterruptionPoll& poll);

// out = −A W for one such W.
bool negated_product(const std::vector<int>& parent, const std::vector<int>& end, int rows, int n,
                     const double* a, const double* w, double* out, InterruptionPoll& poll);

// The same with the columns of A and of the outputs `lda` and `ld_out` apart: the leading rows of
// taller matrices, such as a workspace's room for more constraint rows than a call has.
bool negated_products(const std::vector<int>& parent, const std::vector<int>& end, int rows, int n,
                      const double* a, int lda, const double* wa, const double* wb, double* out_a,
                      double* out_b, int ld_out, InterruptionPoll& poll);
bool negated_product(const std::vector<int>& parent, const std::vector<int>& end, int rows, int n,
                     const double* a, int lda, const double* w, double* out, int ld_out,
                     InterruptionPoll& poll);

// The same for dense W_a and W_b (every j related to every k): the products that chain a dense
// Jacobian, which Eigen, built without its vectorization (CMakeLists.txt), leaves scalar.
bool dense_negated_products(int rows, int n, const double* a, const double* wa, const double* wb,
                            double* out_a, double* out_b, InterruptionPoll& poll);

// out = −A W for one dense W, A of rows x inner and W of inner x n whose columns are `ldw` apart
// (the leading rows of a taller matrix).
bool dense_negated_product(int rows, int inner, int n, const double* a, const double* w, int ldw,
                           double* out, InterruptionPoll& poll);

}  // namespace torqued::tree_sparse
