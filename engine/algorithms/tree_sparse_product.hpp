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

// out_a = −A W_a and out_b = −A W_b, all n x n and column-major (A symmetric, so that its rows
// are its columns), for W_a and W_b with the sparsity of the DOF tree given by `parent` and
// `end`, column by column. Returns false, the products unfinished, when `poll` says stop: an
// exception must not leave a target_clones function (the process would terminate), so the caller
// throws.
bool negated_products(const std::vector<int>& parent, const std::vector<int>& end, int n,
                      const double* a, const double* wa, const double* wb, double* out_a,
                      double* out_b, InterruptionPoll& poll);

}  // namespace torqued::tree_sparse
