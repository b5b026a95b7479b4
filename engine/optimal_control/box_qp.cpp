// The box-constrained QP by projected Newton steps (see the header), as Crocoddyl's BoxQP takes
// them, so that box-FDDP makes the same decisions.
#include "engine/optimal_control/box_qp.hpp"

#include <algorithm>
#include <cmath>

namespace torqued {
namespace {

constexpr int kProjectedStepLengths = 10;  // 1, 1/2, ..., 2⁻⁹

}  // namespace

BoxQp::BoxQp(int n)
    : n_(n),
      x_(Eigen::VectorXd::Zero(n)),
      x_new_(n),
      gradient_(n),
      step_(n),
      hx_(n),
      q_free_(n),
      x_free_(n),
      x_clamped_(n),
      step_free_(n),
      h_free_(n, n),
      h_coupling_(n, n),
      free_inverse_(n, n),
      factors_(n) {
  free_.reserve(static_cast<std::size_t>(n));
  clamped_.reserve(static_cast<std::size_t>(n));
}

double BoxQp::objective(const Eigen::MatrixXd& h, const Eigen::VectorXd& q,
                        const Eigen::VectorXd& x) {
  hx_.noalias() = h * x;
  return 0.5 * x.dot(hx_) + q.dot(x);
}

bool BoxQp::solve(const Eigen::MatrixXd& h, const Eigen::VectorXd& q, const Eigen::VectorXd& lower,
                  const Eigen::VectorXd& upper, const Eigen::VectorXd& start,
                  const BoxQpSettings& settings) {
  x_ = start.cwiseMin(upper).cwiseMax(lower);
  for (int iteration = 0; iteration < settings.max_iterations; ++iteration) {
    // The active set: clamped where a bound holds x and the gradient pushes past it.
    gradient_ = q;
    gradient_.noalias() += h * x_;
    free_.clear();
    clamped_.clear();
    for (int j = 0; j < n_; ++j) {
      const bool held =
          (x_[j] == lower[j] && gradient_[j] > 0.0) || (x_[j] == upper[j] && gradient_[j] < 0.0);
      (held ? clamped_ : free_).push_back(j);
    }
    const int nf = free_count();
    const int nc = static_cast<int>(clamped_.size());
    auto h_ff = h_free_.topLeftCorner(nf, nf);
    auto h_fc = h_coupling_.topLeftCorner(nf, nc);
    auto q_f = q_free_.head(nf);
    auto x_f = x_free_.head(nf);
    auto x_c = x_clamped_.head(nc);
    for (int i = 0; i < nf; ++i) {
      const int fi = free_[static_cast<std::size_t>(i)];
      q_f[i] = q[fi];
      x_f[i] = x_[fi];
      for (int j = 0; j < nf; ++j) h_ff(i, j) = h(fi, free_[static_cast<std::size_t>(j)]);
      for (int j = 0; j < nc; ++j) h_fc(i, j) = h(fi, clamped_[static_cast<std::size_t>(j)]);
    }
    for (int j = 0; j < nc; ++j) x_c[j] = x_[clamped_[static_cast<std::size_t>(j)]];
    h_ff.diagonal().array() += settings.regularization;
    factors_.compute(h_ff);
    if (factors_.info() != Eigen::Success) return false;
    auto inverse = free_inverse_.topLeftCorner(nf, nf);
    inverse.setIdentity();
    factors_.solveInPlace(inverse);
    // The free gradient q_f + H_ff x_f + H_fc x_c, and the Newton step on the free coordinates.
    q_f.noalias() += h_ff * x_f;
    if (nc > 0) q_f.noalias() += h_fc * x_c;
    auto step_f = step_free_.head(nf);
    step_f = -q_f;
    factors_.solveInPlace(step_f);
    step_.setZero();
    for (int i = 0; i < nf; ++i) {
      const int fi = free_[static_cast<std::size_t>(i)];
      step_[fi] = step_f[i];
      gradient_[fi] = -q_f[i];
    }
    // The first projected step length that lowers the objective enough.
    const double before = objective(h, q, x_);
    for (int trial = 0; trial < kProjectedStepLengths; ++trial) {
      const double alpha = std::ldexp(1.0, -trial);
      x_new_ = (x_ + alpha * step_).cwiseMin(upper).cwiseMax(lower);
      const double after = objective(h, q, x_new_);
      if (before - after > settings.accept_ratio * gradient_.dot(x_ - x_new_)) {
        x_ = x_new_;
        break;
      }
    }
    if (nf == 0 || q_f.lpNorm<Eigen::Infinity>() <= settings.gradient_threshold) return true;
  }
  return true;
}

}  // namespace torqued
