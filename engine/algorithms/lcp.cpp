// Lemke's complementary pivoting (Cottle, Pang & Stone §4.4) and projected Gauss-Seidel on the
// friction cone; see lcp.hpp.
//
// Lemke: with the artificial variable z0 and covering vector 1, the system w − A z − 1 z0 = b is
// made feasible by one pivot that brings z0 in at the row of the most negative b_i. Each further
// pivot brings in the complement of the variable that just left, with the minimum-ratio row
// leaving; the path ends when z0 leaves (a solution) or when the entering column has no positive
// entry (a secondary ray). Ties in the ratio test are broken lexicographically on the rows of B⁻¹,
// which is what guarantees termination on degenerate problems (e.g. four coplanar feet).
#include "engine/algorithms/lcp.hpp"

#include <algorithm>
#include <cmath>

#include "engine/model/heap_bytes.hpp"

namespace torqued {

namespace {

// Lemke's ratio test: a column entry at most this fraction of the problem's scale (the larger of
// A's and the entering column's largest entries) is rounding, not a positive pivot.
constexpr double kLemkePivotTolerance = 1e-11;
// Two ratios (and the lexicographic rows that break their tie) this close, relative to their
// size, are equal: a degenerate tie, not a strict minimum.
constexpr double kLemkeTieTolerance = 1e-12;
// A contact's 3x3 (or tangential 2x2) Delassus block whose determinant is below this fraction of
// its trace cubed (squared) is singular: relative, so that it holds in any units.
constexpr double kBlockSingularTolerance = 1e-12;
// Along a sliding contact's direction, an effective normal stiffness below this fraction of the
// normal's own diagonal entry takes no force.
constexpr double kSlidingStiffnessTolerance = 1e-12;

Eigen::Vector2d project_on_disc(const Eigen::Vector2d& x, double radius) {
  const double norm = x.norm();
  if (norm <= radius) return x;
  return radius > 0.0 ? Eigen::Vector2d(x * (radius / norm)) : Eigen::Vector2d::Zero();
}

}  // namespace

LemkeSolver::LemkeSolver(int capacity) : tableau_(capacity, 2 * capacity + 2), basis_(capacity) {}

std::size_t LemkeSolver::heap_bytes() const { return total_heap_bytes(tableau_, basis_); }

void LemkeSolver::pivot(int n, int row, int column) {
  const int columns = 2 * n + 2;
  double* pivot_row = tableau_.data() + static_cast<std::ptrdiff_t>(row) * tableau_.cols();
  const double inverse = 1.0 / pivot_row[column];
  for (int j = 0; j < columns; ++j) pivot_row[j] *= inverse;
  pivot_row[column] = 1.0;
  for (int i = 0; i < n; ++i) {
    if (i == row) continue;
    double* r = tableau_.data() + static_cast<std::ptrdiff_t>(i) * tableau_.cols();
    const double factor = r[column];
    if (factor == 0.0) continue;
    for (int j = 0; j < columns; ++j) r[j] -= factor * pivot_row[j];
    r[column] = 0.0;
  }
}

ComplementarityResult LemkeSolver::solve(const Eigen::Ref<const Eigen::MatrixXd>& a,
                                         const Eigen::Ref<const Eigen::VectorXd>& b,
                                         Eigen::Ref<Eigen::VectorXd> z, int max_pivots,
                                         const Interruption& interruption) {
  const int n = static_cast<int>(b.size());
  const int z0 = 2 * n;
  const int rhs = 2 * n + 1;
  ComplementarityResult result;
  z.setZero();
  int start = 0;
  for (int i = 1; i < n; ++i) {
    if (b[i] < b[start]) start = i;
  }
  if (n > 0 && b[start] < 0.0) {
    auto t = tableau_.topLeftCorner(n, 2 * n + 2);
    t.setZero();
    for (int i = 0; i < n; ++i) {
      t(i, i) = 1.0;
      t.row(i).segment(n, n) = -a.row(i);
      t(i, z0) = -1.0;
      t(i, rhs) = b[i];
      basis_[i] = i;
    }
    const double scale = std::max(1.0, a.cwiseAbs().maxCoeff());
    pivot(n, start, z0);
    basis_[start] = z0;
    int entering = n + start;
    result.iterations = 1;
    result.status = ComplementarityStatus::kIterationLimit;
    InterruptionPoll poll(interruption);
    while (result.iterations < max_pivots) {
      poll.add(2.0 * n * (n + 1));
      const double column_max = t.col(entering).cwiseAbs().maxCoeff();
      const double eps = kLemkePivotTolerance * std::max(scale, column_max);
      int leave = -1;
      double best = 0.0;
      for (int i = 0; i < n; ++i) {
        const double c = t(i, entering);
        if (c <= eps) continue;
        const double ratio = t(i, rhs) / c;
        const bool tie =
            leave >= 0 && std::abs(ratio - best) <= kLemkeTieTolerance * (1.0 + std::abs(best));
        if (leave < 0 || (!tie && ratio < best)) {
          leave = i;
          best = ratio;
        } else if (tie && basis_[leave] != z0) {
          // z0 leaving ends the path; otherwise the lexicographic rule on the B⁻¹ columns.
          bool smaller = basis_[i] == z0;
          for (int j = 0; j < n && !smaller; ++j) {
            const double x = t(i, j) / c;
            const double y = t(leave, j) / t(leave, entering);
            if (std::abs(x - y) > kLemkeTieTolerance * (1.0 + std::abs(y))) {
              if (x < y) smaller = true;
              break;
            }
          }
          if (smaller) {
            leave = i;
            best = ratio;
          }
        }
      }
      if (leave < 0) {
        result.status = ComplementarityStatus::kNoSolution;
        break;
      }
      pivot(n, leave, entering);
      ++result.iterations;
      const int left = basis_[leave];
      basis_[leave] = entering;
      if (left == z0) {
        result.status = ComplementarityStatus::kSolved;
        break;
      }
      entering = left < n ? left + n : left - n;
    }
    for (int i = 0; i < n; ++i) {
      if (basis_[i] >= n && basis_[i] < z0) z[basis_[i] - n] = std::max(0.0, t(i, rhs));
    }
  }
  for (int i = 0; i < n; ++i) {
    const double w = a.row(i).dot(z) + b[i];
    result.residual = std::max(result.residual, std::abs(std::min(a(i, i) * z[i], w)));
  }
  return result;
}

FrictionConeSolver::FrictionConeSolver(int max_contacts)
    : w_(3 * max_contacts),
      block_inverse_(max_contacts),
      block_invertible_(max_contacts),
      tangent_inverse_(max_contacts),
      tangent_invertible_(max_contacts),
      tangent_step_(max_contacts) {}

std::size_t FrictionConeSolver::heap_bytes() const {
  return total_heap_bytes(w_, block_inverse_, tangent_inverse_, tangent_step_) +
         (block_invertible_.capacity() + tangent_invertible_.capacity()) / 8;
}

double FrictionConeSolver::residual(const Eigen::Ref<const Eigen::MatrixXd>& a,
                                    std::span<const double> friction,
                                    std::span<const Eigen::Vector2d> slide_direction,
                                    const Eigen::Ref<const Eigen::VectorXd>& lambda) const {
  double worst = 0.0;
  for (std::size_t c = 0; c < friction.size(); ++c) {
    const int k = 3 * static_cast<int>(c);
    worst = std::max(worst, std::abs(std::min(a(k, k) * lambda[k], w_[k])));
    if (friction[c] == 0.0 || !slide_direction[c].isZero()) continue;
    const Eigen::Vector2d lt = lambda.segment<2>(k + 1);
    const double rho = tangent_step_[c];
    const Eigen::Vector2d p =
        project_on_disc(lt - rho * w_.segment<2>(k + 1), friction[c] * lambda[k]);
    worst = std::max(worst, (lt - p).norm() / rho);
  }
  return worst;
}

ComplementarityResult FrictionConeSolver::solve(const Eigen::Ref<const Eigen::MatrixXd>& a,
                                                const Eigen::Ref<const Eigen::VectorXd>& b,
                                                std::span<const double> friction,
                                                std::span<const Eigen::Vector2d> slide_direction,
                                                Eigen::Ref<Eigen::VectorXd> lambda,
                                                double tolerance, int max_sweeps,
                                                const Interruption& interruption) {
  const int n = static_cast<int>(b.size());
  const int m = n / 3;
  for (int c = 0; c < m; ++c) {
    const int k = 3 * c;
    const Eigen::Matrix3d block = a.block<3, 3>(k, k);
    const double trace = block.trace();
    block_invertible_[c] = block.determinant() > kBlockSingularTolerance * trace * trace * trace;
    if (block_invertible_[c]) block_inverse_[c] = block.inverse();
    const Eigen::Matrix2d tangent = block.bottomRightCorner<2, 2>();
    const double tangent_trace = tangent.trace();
    tangent_invertible_[c] =
        tangent.determinant() > kBlockSingularTolerance * tangent_trace * tangent_trace;
    if (tangent_invertible_[c]) tangent_inverse_[c] = tangent.inverse();
    const double half_gap = 0.5 * (tangent(0, 0) - tangent(1, 1));
    const double largest = 0.5 * tangent_trace + std::hypot(half_gap, tangent(0, 1));
    tangent_step_[c] = largest > 0.0 ? 1.0 / largest : 0.0;
  }
  auto w = w_.head(n);
  const auto update_w = [&] { w.noalias() = a.lazyProduct(lambda) + b; };
  update_w();
  ComplementarityResult result;
  result.status = ComplementarityStatus::kIterationLimit;
  InterruptionPoll poll(interruption);
  for (;;) {
    poll.add(3.0 * n * n);
    result.residual = residual(a, friction, slide_direction, lambda);
    if (result.residual <= tolerance) {
      result.status = ComplementarityStatus::kSolved;
      break;
    }
    if (result.iterations >= max_sweeps) break;
    ++result.iterations;
    for (int c = 0; c < m; ++c) {
      const int k = 3 * c;
      const double mu = friction[c];
      const Eigen::Vector3d old = lambda.segment<3>(k);
      const Eigen::Vector3d wc = w.segment<3>(k);
      const double a_nn = a(k, k);
      Eigen::Vector3d next;
      bool done = false;
      if (!slide_direction[c].isZero()) {
        const Eigen::Vector3d direction(1.0, -mu * slide_direction[c].x(),
                                        -mu * slide_direction[c].y());
        const double effective = a.row(k).segment<3>(k).dot(direction);
        const double normal = effective > kSlidingStiffnessTolerance * a_nn
                                  ? std::max(0.0, old[0] - wc[0] / effective)
                                  : 0.0;
        next = normal * direction;
        done = true;
      } else if (mu > 0.0 && block_invertible_[c]) {
        // The exact block solve, kept when it is a sticking contact.
        next = old - block_inverse_[c] * wc;
        done = next[0] >= 0.0 && next.tail<2>().norm() <= mu * next[0];
      }
      if (!done) {
        next[0] = a_nn > 0.0 ? std::max(0.0, old[0] - wc[0] / a_nn) : 0.0;
        const double radius = mu * next[0];
        if (radius == 0.0) {
          next.tail<2>().setZero();
        } else {
          const Eigen::Vector2d lt = old.tail<2>();
          const Eigen::Vector2d wt = wc.tail<2>() + a.block<2, 1>(k + 1, k) * (next[0] - old[0]);
          Eigen::Vector2d candidate = lt;
          if (tangent_invertible_[c]) candidate -= tangent_inverse_[c] * wt;
          next.tail<2>() = tangent_invertible_[c] && candidate.norm() <= radius
                               ? candidate
                               : project_on_disc(lt - tangent_step_[c] * wt, radius);
        }
      }
      const Eigen::Vector3d delta = next - old;
      lambda.segment<3>(k) = next;
      w.noalias() += a.middleCols<3>(k).lazyProduct(delta);
    }
    update_w();
  }
  return result;
}

}  // namespace torqued
