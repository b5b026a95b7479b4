// Complementarity solvers for contact problems (Featherstone 1987, §9.8.2: the contact equations
// are a linear complementarity problem, solved by an LCP method that also covers the positive
// semi-definite case; Cottle, Pang & Stone, The Linear Complementarity Problem, §4.4 for Lemke).
//
//  - Lemke's complementary pivoting for  w = A z + b,  z ≥ 0,  w ≥ 0,  zᵀw = 0, with the
//    covering vector 1 and the lexicographic ratio test, so that it cannot cycle on degenerate
//    problems. For a positive semi-definite A it ends either with a solution or on a secondary
//    ray, which proves that no solution exists.
//  - Projected Gauss-Seidel on the Coulomb friction cone, for contacts whose unknowns are grouped
//    by three [normal, tangent 1, tangent 2]: the normal unknown is complementary to its w, the
//    tangential pair lies in the disc of radius μ λ_n and opposes its w (maximal dissipation).
#pragma once

#include <Eigen/Core>
#include <Eigen/LU>
#include <span>
#include <vector>

#include "engine/algorithms/interruption.hpp"

namespace torqued {

enum class ComplementarityStatus {
  kSolved,          // the residual is within the tolerance
  kNoSolution,      // Lemke ended on a ray: for a positive semi-definite A, no solution exists
  kIterationLimit,  // pivots or sweeps exhausted; the last iterate is returned
};

struct ComplementarityResult {
  ComplementarityStatus status = ComplementarityStatus::kSolved;
  int iterations = 0;     // pivots (Lemke) or sweeps (Gauss-Seidel)
  double residual = 0.0;  // in the units of w, see the solvers below
};

// Lemke's algorithm on problems of up to `capacity` unknowns, with its tableau preallocated.
class LemkeSolver {
 public:
  explicit LemkeSolver(int capacity);

  std::size_t heap_bytes() const;

  // Solves the LCP for the n = b.size() unknowns. The residual is max_i |min(A_ii z_i, w_i)|:
  // zero exactly when z ≥ 0, w ≥ 0 and zᵀw = 0, and in the units of w. Polls `interruption`
  // between pivots (throws Interrupted).
  ComplementarityResult solve(const Eigen::Ref<const Eigen::MatrixXd>& a,
                              const Eigen::Ref<const Eigen::VectorXd>& b,
                              Eigen::Ref<Eigen::VectorXd> z, int max_pivots,
                              const Interruption& interruption = {});

 private:
  void pivot(int n, int row, int column);

  // [B⁻¹ | B⁻¹(−A) | B⁻¹(−1) | B⁻¹ b], n rows; row-major for the row operations of a pivot.
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> tableau_;
  std::vector<int> basis_;  // basic variable of each row: w_i = i, z_i = n + i, z0 = 2n
};

// Projected Gauss-Seidel on the friction cone for up to `max_contacts` contacts.
class FrictionConeSolver {
 public:
  explicit FrictionConeSolver(int max_contacts);

  std::size_t heap_bytes() const;

  // Solves for λ (3 per contact, [normal; tangent 1; tangent 2]) with w = A λ + b:
  //   λ_n ≥ 0,  w_n ≥ 0,  λ_n w_n = 0,
  //   ‖λ_t‖ ≤ μ λ_n,  and w_t = 0 inside the disc, w_t = −s λ_t (s ≥ 0) on its rim.
  // A contact with `slide_direction` set (a unit 2-vector û of its tangential velocity; zero
  // otherwise) is sliding already: its friction is fixed at λ_t = −μ λ_n û (the acceleration-level
  // problem of a sliding contact) and only its normal row is solved.
  // `lambda` is the starting point on entry (a warm start) and the solution on exit. Each sweep
  // first tries the exact 3x3 block solve of a contact (exact for sticking contacts), and otherwise
  // a scalar normal step followed by a projected step on the tangential pair. The residual is the
  // largest violation of the conditions above, in the units of w: |min(A_nn λ_n, w_n)| and
  // ‖λ_t − Π(λ_t − ρ w_t)‖ / ρ with ρ = 1 / λ_max(A_tt). Polls `interruption` between sweeps
  // (throws Interrupted).
  ComplementarityResult solve(const Eigen::Ref<const Eigen::MatrixXd>& a,
                              const Eigen::Ref<const Eigen::VectorXd>& b,
                              std::span<const double> friction,
                              std::span<const Eigen::Vector2d> slide_direction,
                              Eigen::Ref<Eigen::VectorXd> lambda, double tolerance, int max_sweeps,
                              const Interruption& interruption = {});

 private:
  double residual(const Eigen::Ref<const Eigen::MatrixXd>& a, std::span<const double> friction,
                  std::span<const Eigen::Vector2d> slide_direction,
                  const Eigen::Ref<const Eigen::VectorXd>& lambda) const;

  Eigen::VectorXd w_;
  std::vector<Eigen::Matrix3d> block_inverse_;  // A_cc⁻¹ per contact
  std::vector<bool> block_invertible_;
  std::vector<Eigen::Matrix2d> tangent_inverse_;  // A_tt⁻¹ per contact
  std::vector<bool> tangent_invertible_;
  std::vector<double> tangent_step_;  // ρ = 1 / λ_max(A_tt)
};

}  // namespace torqued
