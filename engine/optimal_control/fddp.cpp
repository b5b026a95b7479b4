// FDDP (see the header). The recursions, with f̄ the gaps and μ the regularization:
//   V_xx,T = ℓ_xx,T + μ,  V_x,T = ℓ_x,T (+ V_xx,T f̄_T while infeasible)
//   Q_x = ℓ_x + F_xᵀ V'_x,  Q_u = ℓ_u + F_uᵀ V'_x
//   Q_xx = ℓ_xx + F_xᵀ V'_xx F_x,  Q_xu = ℓ_xu + F_xᵀ V'_xx F_u,  Q_uu = ℓ_uu + F_uᵀ V'_xx F_u + μ
//   k = Q_uu⁻¹ Q_u,  K = Q_uu⁻¹ Q_xuᵀ  (Cholesky of Q_uu)
//   V_x = Q_x − Kᵀ Q_u,  V_xx = sym(Q_xx − Q_xu K) + μ  (V_x += V_xx f̄ while infeasible)
// and the expected change of the cost for a step α, α (d₁ + α d₂ / 2), with
//   d₁ = Σ Q_uᵀ k − Σ V_xᵀ f̄ + Σ f̄ᵀ V_xx δx,   d₂ = −Σ kᵀ Q_uu k + Σ f̄ᵀ V_xx f̄ − 2 Σ f̄ᵀ V_xx δx
// (the f̄ terms only while infeasible; δx = x̄ ⊖ x_trial), as Crocoddyl's SolverFDDP computes it.
#include "engine/optimal_control/fddp.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <exception>

#include "engine/algorithms/matrix_product.hpp"

namespace torqued {

using matrix_product::multiply;
using matrix_product::multiply_upper;
using matrix_product::View;

namespace {

// The step lengths tried, 1, 1/2, ..., 2⁻⁹.
constexpr int kStepLengths = 10;

bool finite(const Eigen::Ref<const Eigen::MatrixXd>& m) { return m.allFinite(); }

// Q_uu = L Lᵀ (Cholesky, outer-product form) in place: L in the lower triangle, the upper one left
// as it was. False when a pivot is not positive (or not a number). At the sizes of a robot's
// controls, Eigen's blocked LLT and triangular solves spend more on set-up than on their flops:
// they were 6% of an arm's FDDP iteration.
bool cholesky_factor(Eigen::MatrixXd& a) {
  const Eigen::Index n = a.rows();
  for (Eigen::Index j = 0; j < n; ++j) {
    const double pivot = a(j, j);
    if (!(pivot > 0.0)) return false;
    const double diagonal = std::sqrt(pivot);
    a(j, j) = diagonal;
    double* column = a.col(j).data();
    for (Eigen::Index i = j + 1; i < n; ++i) column[i] /= diagonal;
    for (Eigen::Index c = j + 1; c < n; ++c) {
      double* trailing = a.col(c).data();
      const double scale = column[c];
      for (Eigen::Index i = c; i < n; ++i) trailing[i] -= column[i] * scale;
    }
  }
  return true;
}

// X ← X (L Lᵀ)⁻¹ for the factor above (X Q_uu⁻¹, Q_uu symmetric): the solves of Z Lᵀ = X and
// then of Y L = Z, each a sequence of axpys along X's columns, which are as long as the state's
// tangent, while L's columns are only as long as the controls.
void cholesky_solve_right(const Eigen::MatrixXd& l, Eigen::MatrixXd& x) {
  const Eigen::Index n = l.rows();
  const Eigen::Index rows = x.rows();
  for (Eigen::Index k = 0; k < n; ++k) {
    double* column = x.col(k).data();
    for (Eigen::Index j = 0; j < k; ++j) {
      const double* done = x.col(j).data();
      const double scale = l(k, j);
      for (Eigen::Index r = 0; r < rows; ++r) column[r] -= scale * done[r];
    }
    const double inverse = 1.0 / l(k, k);
    for (Eigen::Index r = 0; r < rows; ++r) column[r] *= inverse;
  }
  for (Eigen::Index k = n - 1; k >= 0; --k) {
    double* column = x.col(k).data();
    for (Eigen::Index j = k + 1; j < n; ++j) {
      const double* done = x.col(j).data();
      const double scale = l(j, k);
      for (Eigen::Index r = 0; r < rows; ++r) column[r] -= scale * done[r];
    }
    const double inverse = 1.0 / l(k, k);
    for (Eigen::Index r = 0; r < rows; ++r) column[r] *= inverse;
  }
}

}  // namespace

Fddp::Fddp(ShootingProblem& problem)
    : problem_(problem),
      knots_(problem.knots()),
      nx_(problem.state_size()),
      ndx_(problem.tangent_size()),
      nu_(problem.control_size()),
      bounds_(problem.control_bounds()),
      box_(problem.control_size()),
      box_lower_(Eigen::VectorXd::Zero(problem.control_size())),
      box_upper_(Eigen::VectorXd::Zero(problem.control_size())),
      quu_free_inverse_(Eigen::MatrixXd::Zero(problem.control_size(), problem.control_size())) {
  assert(knots_ >= 1);
  const auto states = static_cast<std::size_t>(knots_) + 1;
  const auto controls = static_cast<std::size_t>(knots_);
  xs_.assign(states, Eigen::VectorXd::Zero(nx_));
  xs_try_ = xs_;
  us_.assign(controls, Eigen::VectorXd::Zero(nu_));
  us_try_ = us_;
  values_.assign(states, KnotValues(nx_, ndx_, nu_));
  gaps_.assign(states, Eigen::VectorXd::Zero(ndx_));
  dx_ = gaps_;
  value_x_ = gaps_;
  value_xx_.assign(states, Eigen::MatrixXd::Zero(ndx_, ndx_));
  q_u_.assign(controls, Eigen::VectorXd::Zero(nu_));
  quu_k_ = q_u_;
  feedforward_ = q_u_;
  feedback_.assign(controls, Eigen::MatrixXd::Zero(nu_, ndx_));
  q_x_ = Eigen::VectorXd::Zero(ndx_);
  next_ = Eigen::VectorXd::Zero(nx_);
  scratch_x_ = Eigen::VectorXd::Zero(ndx_);
  gap_try_ = Eigen::VectorXd::Zero(ndx_);
  q_xx_ = Eigen::MatrixXd::Zero(ndx_, ndx_);
  q_xu_ = Eigen::MatrixXd::Zero(ndx_, nu_);
  q_uu_ = Eigen::MatrixXd::Zero(nu_, nu_);
  quu_cholesky_ = q_uu_;
  gains_transposed_ = Eigen::MatrixXd::Zero(ndx_ + 1, nu_);
  fx_t_vxx_ = Eigen::MatrixXd::Zero(ndx_, ndx_);
  fu_t_vxx_ = Eigen::MatrixXd::Zero(nu_, ndx_);
}

double Fddp::differentiate() {
  problem_.difference(xs_[0], problem_.initial_state(), gaps_[0]);
  gaps_from_ = knots_ + 1;
  start_backward();
  problem_.differentiate_overlapping(xs_, us_, values_, [this](int ready) { take_ready(ready); });
  take_ready(0);
  cost_ = 0.0;
  for (const KnotValues& v : values_) cost_ += v.cost;
  double largest = 0.0;
  for (const Eigen::VectorXd& gap : gaps_)
    largest = std::max(largest, gap.lpNorm<Eigen::Infinity>());
  return largest;
}

void Fddp::take_ready(int ready) {
  // Gap t (t ≥ 1) is x_t ⊖ f(x_t−1, u_t−1): it needs knot t − 1.
  for (; gaps_from_ - 1 > ready; --gaps_from_) {
    const int t = gaps_from_ - 1;
    problem_.difference(xs_[t], values_[t - 1].next, gaps_[t]);
  }
  advance_backward(ready);
}

bool Fddp::backward_pass() {
  start_backward();
  advance_backward(0);
  return !backward_failed_;
}

void Fddp::start_backward() {
  backward_next_ = knots_;
  backward_failed_ = false;
  backward_poll_.emplace(interruption_);
}

void Fddp::advance_backward(int ready) {
  // Knot t's step reads its own derivatives and its gap, which needs knot t − 1 (gap 0 is x̄_0's).
  while (!backward_failed_ && backward_next_ >= 0 && ready <= std::max(backward_next_ - 1, 0)) {
    if (!backward_step(backward_next_)) {
      backward_failed_ = true;
      return;
    }
    --backward_next_;
  }
}

bool Fddp::backward_step(int t) {
  const double mu = regularization_;
  if (t == knots_) {
    const KnotValues& terminal = values_[knots_];
    value_xx_[knots_] = terminal.lxx;
    value_xx_[knots_].diagonal().array() += mu;
    value_x_[knots_] = terminal.lx;
    if (!feasible_) value_x_[knots_].noalias() += value_xx_[knots_] * gaps_[knots_];
    return true;
  }
  backward_poll_->add(4.0 * ndx_ * ndx_ * (ndx_ + nu_));
  const KnotValues& v = values_[t];
  const Eigen::VectorXd& vx = value_x_[t + 1];
  const Eigen::MatrixXd& vxx = value_xx_[t + 1];
  // The cubic products by the vectorized kernel (matrix_product.hpp): F_x and F_u are
  // row-major, so their storage read column-major is F_xᵀ and F_uᵀ. Q_xx and V_xx are
  // symmetric: their products are summed on and above the diagonal only, and V_xx is that
  // triangle mirrored (Crocoddyl's ½(V_xx + V_xxᵀ) of a full product, the same to rounding).
  const View vxx_view{vxx.data(), 1, ndx_};
  const View fx_view{v.fx.data(), ndx_, 1};
  const View fu_view{v.fu.data(), nu_, 1};
  multiply(ndx_, ndx_, ndx_, v.fx.data(), ndx_, vxx_view, fx_t_vxx_.data(), ndx_, 1.0, false);
  q_x_ = v.lx;
  q_x_.noalias() += v.fx.transpose() * vx;
  q_xx_ = v.lxx;
  multiply_upper(ndx_, ndx_, fx_t_vxx_.data(), ndx_, fx_view, q_xx_.data(), ndx_, 1.0, true);
  multiply(nu_, ndx_, ndx_, v.fu.data(), nu_, vxx_view, fu_t_vxx_.data(), nu_, 1.0, false);
  q_u_[t] = v.lu;
  q_u_[t].noalias() += v.fu.transpose() * vx;
  q_uu_ = v.luu;
  multiply(nu_, ndx_, nu_, fu_t_vxx_.data(), nu_, fu_view, q_uu_.data(), nu_, 1.0, true);
  q_uu_.diagonal().array() += mu;
  q_xu_ = v.lxu;
  multiply(ndx_, ndx_, nu_, fx_t_vxx_.data(), ndx_, fu_view, q_xu_.data(), ndx_, 1.0, true);

  if (bounds_ != nullptr && feasible_) {
    if (!box_gains(t)) return false;
  } else {
    quu_cholesky_ = q_uu_;
    if (!cholesky_factor(quu_cholesky_)) return false;
    // [Kᵀ; kᵀ] = [Q_xu; Q_uᵀ] Q_uu⁻¹.
    gains_transposed_.topRows(ndx_) = q_xu_;
    gains_transposed_.row(ndx_) = q_u_[t].transpose();
    cholesky_solve_right(quu_cholesky_, gains_transposed_);
    feedback_[t] = gains_transposed_.topRows(ndx_).transpose();
    feedforward_[t] = gains_transposed_.row(ndx_).transpose();
  }

  quu_k_[t].noalias() = q_uu_ * feedforward_[t];
  value_x_[t] = q_x_;
  value_x_[t].noalias() -= feedback_[t].transpose() * q_u_[t];
  multiply_upper(ndx_, nu_, q_xu_.data(), ndx_, View{feedback_[t].data(), 1, nu_}, q_xx_.data(),
                 ndx_, -1.0, true);
  value_xx_[t] = q_xx_.selfadjointView<Eigen::Upper>();
  value_xx_[t].diagonal().array() += mu;
  if (!feasible_) value_x_[t].noalias() += value_xx_[t] * gaps_[t];
  return finite(value_x_[t]) && finite(value_xx_[t]);
}

bool Fddp::box_gains(int t) {
  // The QP starts from the last feed-forward k, as Crocoddyl's SolverBoxFDDP starts it.
  box_lower_ = bounds_->lower - us_[t];
  box_upper_ = bounds_->upper - us_[t];
  if (!box_.solve(q_uu_, q_u_[t], box_lower_, box_upper_, feedforward_[t])) return false;
  const std::vector<int>& free = box_.free();
  const auto inverse = box_.free_inverse();
  quu_free_inverse_.setZero();
  for (std::size_t i = 0; i < free.size(); ++i) {
    for (std::size_t j = 0; j < free.size(); ++j) {
      quu_free_inverse_(free[i], free[j]) =
          inverse(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j));
    }
  }
  feedback_[t].noalias() = quu_free_inverse_ * q_xu_.transpose();
  feedforward_[t] = -box_.x();
  // The clamped controls' gradient is spent against their bounds: it predicts no improvement.
  for (const int c : box_.clamped()) q_u_[t][c] = 0.0;
  return true;
}

void Fddp::update_expected_improvement() {
  gradient_term_ = 0.0;
  curvature_term_ = 0.0;
  if (!feasible_) {
    gradient_term_ -= value_x_[knots_].dot(gaps_[knots_]);
    scratch_x_.noalias() = value_xx_[knots_] * gaps_[knots_];
    curvature_term_ += gaps_[knots_].dot(scratch_x_);
  }
  for (int t = 0; t < knots_; ++t) {
    gradient_term_ += q_u_[t].dot(feedforward_[t]);
    curvature_term_ -= feedforward_[t].dot(quu_k_[t]);
    if (!feasible_) {
      gradient_term_ -= value_x_[t].dot(gaps_[t]);
      scratch_x_.noalias() = value_xx_[t] * gaps_[t];
      curvature_term_ += gaps_[t].dot(scratch_x_);
    }
  }
}

Eigen::Vector2d Fddp::expected_improvement() {
  double dv = 0.0;
  if (!feasible_) {
    for (int t = 0; t <= knots_; ++t) {
      problem_.difference(xs_try_[t], xs_[t], dx_[t]);
      scratch_x_.noalias() = value_xx_[t] * dx_[t];
      dv -= gaps_[t].dot(scratch_x_);
    }
  }
  return {gradient_term_ + dv, curvature_term_ - 2.0 * dv};
}

bool Fddp::forward_pass(double alpha) {
  // Gaps closed in full at α = 1 or once feasible, else by the fraction α.
  const bool closes_gaps = feasible_ || alpha == 1.0;
  rolled_out_ = false;
  gap_try_largest_ = 0.0;
  cost_try_ = 0.0;
  next_ = problem_.initial_state();
  InterruptionPoll poll(interruption_);
  for (int t = 0; t <= knots_; ++t) {
    poll.add(10.0 * ndx_ * ndx_);
    if (closes_gaps) {
      xs_try_[t] = next_;
    } else {
      scratch_x_ = (alpha - 1.0) * gaps_[t];
      problem_.integrate(next_, scratch_x_, xs_try_[t]);
      problem_.difference(xs_try_[t], next_, gap_try_);
      gap_try_largest_ = std::max(gap_try_largest_, gap_try_.lpNorm<Eigen::Infinity>());
    }
    if (t < knots_) {
      problem_.difference(xs_[t], xs_try_[t], dx_[t]);
      us_try_[t] = us_[t];
      us_try_[t].noalias() -= alpha * feedforward_[t];
      us_try_[t].noalias() -= feedback_[t] * dx_[t];
      if (bounds_ != nullptr)
        us_try_[t] = us_try_[t].cwiseMax(bounds_->lower).cwiseMin(bounds_->upper);
    }
    try {
      cost_try_ += problem_.evaluate(t, xs_try_[t], t < knots_ ? us_try_[t] : no_control_, next_);
    } catch (const Interrupted&) {
      throw;
    } catch (const std::exception&) {
      return false;
    }
    if (!std::isfinite(cost_try_) || (t < knots_ && !finite(next_))) return false;
  }
  return true;
}

void Fddp::accept_trial(bool feasible) {
  std::swap(xs_, xs_try_);
  std::swap(us_, us_try_);
  cost_ = cost_try_;
  feasible_ = feasible;
  rolled_out_ = true;
  rolled_out_gap_ = gap_try_largest_;
}

FddpOutcome Fddp::solve(const std::vector<Eigen::VectorXd>& xs,
                        const std::vector<Eigen::VectorXd>& us, bool feasible,
                        const FddpSettings& settings, const Interruption& interruption) {
  assert(fits() && static_cast<int>(xs.size()) == knots_ + 1 &&
         static_cast<int>(us.size()) == knots_);
  bounds_ = problem_.control_bounds();
  for (int t = 0; t <= knots_; ++t) xs_[t] = xs[t];
  for (int t = 0; t < knots_; ++t) us_[t] = us[t];
  feasible_ = feasible;
  rolled_out_ = false;
  interruption_ = interruption;
  regularization_ = settings.initial_regularization;
  expected_.setZero();
  log_.clear();
  log_.reserve(static_cast<std::size_t>(std::max(settings.max_iterations, 0)));
  const auto stop_asked = [&] {
    return interruption.requested != nullptr && interruption.requested(interruption.state);
  };
  try {
    bool was_feasible = false;
    bool differentiated = false;
    double gaps = 0.0;
    for (int iteration = 0; iteration < settings.max_iterations; ++iteration) {
      if (stop_asked()) return FddpOutcome::kInterrupted;
      // A new candidate's backward pass runs while its knots are differentiated.
      bool solved = false;
      if (!differentiated) {
        gaps = differentiate();
        differentiated = true;
        solved = !backward_failed_;
      } else {
        solved = backward_pass();
      }
      while (!solved) {
        regularization_ =
            std::min(regularization_ * settings.regularization_factor, settings.max_regularization);
        if (regularization_ == settings.max_regularization) {
          return FddpOutcome::kRegularizationLimit;
        }
        solved = backward_pass();
      }
      update_expected_improvement();

      double alpha = 1.0;
      for (int trial = 0; trial < kStepLengths; ++trial) {
        alpha = std::ldexp(1.0, -trial);
        if (stop_asked()) return FddpOutcome::kInterrupted;
        if (!forward_pass(alpha)) continue;
        const double drop = cost_ - cost_try_;
        expected_ = expected_improvement();
        const Eigen::Vector2d& d = expected_;
        const double expected = alpha * (d[0] + 0.5 * alpha * d[1]);
        const bool accepted = expected >= 0.0
                                  ? std::abs(d[0]) < settings.gradient_threshold ||
                                        drop > settings.accept_ratio * expected
                                  : !feasible_ && drop > settings.accept_gap_ratio * expected;
        if (accepted) {
          was_feasible = feasible_;
          accept_trial(was_feasible || alpha == 1.0);
          differentiated = false;
          break;
        }
      }
      if (alpha > settings.decrease_above) {
        regularization_ =
            std::max(regularization_ / settings.regularization_factor, settings.min_regularization);
      }
      if (alpha <= settings.increase_at_most) {
        regularization_ =
            std::min(regularization_ * settings.regularization_factor, settings.max_regularization);
        if (regularization_ == settings.max_regularization) {
          return FddpOutcome::kRegularizationLimit;
        }
      }
      // d₁, d₂ of the last trial rolled out (an earlier iteration's when none could be).
      const double stop = std::abs(expected_[0] + 0.5 * expected_[1]);
      log_.push_back({cost_, stop, alpha, regularization_, gaps});
      if (was_feasible && stop < settings.stop_threshold) return FddpOutcome::kConverged;
    }
  } catch (const Interrupted&) {
    return FddpOutcome::kInterrupted;
  }
  return FddpOutcome::kIterationLimit;
}

}  // namespace torqued
