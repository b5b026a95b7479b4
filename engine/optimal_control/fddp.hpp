// Feasibility-driven differential dynamic programming (FDDP; Mastalli et al., "Crocoddyl: An
// Efficient and Versatile Framework for Multi-Contact Optimal Control", ICRA 2020, §IV), the
// solver of Crocoddyl's SolverFDDP, with its settings and acceptance rules, so that the same
// problem from the same guess takes the same iterations.
//
// The trajectory may start infeasible: the gaps f̄_0 = x̂_0 ⊖ x_0 and f̄_{t+1} = f_t(x_t, u_t) ⊖
// x_{t+1} enter the backward pass, a Riccati recursion on the quadratic model of the cost with
// the dynamics linearized (Q_x = ℓ_x + F_xᵀ V'_x, ..., V'_x = V_x + V_xx f̄ while infeasible,
// regularization μ on Q_uu and V_xx), which gives the feed-forward k = Q_uu⁻¹ Q_u and the
// feedback K = Q_uu⁻¹ Q_uxᵀ. The forward pass rolls the nonlinear dynamics out with
// u = ū − α k − K (x ⊖ x̄) and closes a fraction α of each gap (fully when α = 1, or once the
// trajectory is feasible). A step is taken when the cost drops by more than a tenth of the
// expected α (d₁ + α d₂ / 2), where d₁, d₂ count the gaps' contribution; a step that closes gaps
// may raise the cost by up to twice its expected change. α halves from 1 to 2⁻⁹; μ shrinks ten
// times after a step over 1/2 and grows ten times after one of 1/100 or less. It stops when
// the trajectory is feasible and |d₁ + d₂ / 2| falls below the threshold.
//
// With control bounds it is box-FDDP (Mastalli et al., "A Feasibility-Driven Approach to
// Control-Limited DDP", Autonomous Robots 46, 2022, §IV; Crocoddyl's SolverBoxFDDP): once the
// trajectory is feasible, the feed-forward step solves Q_u's quadratic model in the box
// l − ū ≤ δu ≤ u − ū (box_qp.hpp), the feedback acts on the free controls only (K = Q_uu,ff⁻¹ Q_ux
// on them, 0 on the clamped ones, whose Q_u then counts as 0), and the rollout clamps u into the
// bounds.
#pragma once

#include <Eigen/Core>
#include <optional>
#include <vector>

#include "engine/algorithms/interruption.hpp"
#include "engine/optimal_control/box_qp.hpp"
#include "engine/optimal_control/shooting_problem.hpp"

namespace torqued {

// Crocoddyl's defaults.
struct FddpSettings {
  int max_iterations = 100;
  double stop_threshold = 1e-9;          // on |d₁ + d₂ / 2| (th_stop)
  double initial_regularization = 1e-9;  // μ at the first iteration
  double min_regularization = 1e-9;
  double max_regularization = 1e9;  // reaching it ends the solve
  double regularization_factor = 10.0;
  double accept_ratio = 0.1;          // cost drop over its expectation (th_acceptstep)
  double accept_gap_ratio = 2.0;      // the same while gaps close (th_acceptnegstep)
  double gradient_threshold = 1e-12;  // |d₁| below it accepts any descent (th_grad)
  double decrease_above = 0.5;        // a step over it shrinks μ (th_stepdec)
  double increase_at_most = 0.01;     // a step of it or less grows μ (th_stepinc)
};

enum class FddpOutcome {
  kConverged,            // feasible, and |d₁ + d₂ / 2| under the threshold
  kIterationLimit,       // max_iterations done
  kRegularizationLimit,  // μ reached its maximum: no descent direction found
  kInterrupted,          // the caller's Interruption asked, between or inside iterations
};

// One iteration's record, as Crocoddyl's callbacks print it.
struct FddpIteration {
  double cost = 0.0;            // after the iteration's step
  double stop = 0.0;            // |d₁ + d₂ / 2|
  double step = 0.0;            // α of the last step tried
  double regularization = 0.0;  // μ after the iteration
  double gaps = 0.0;            // max ‖f̄_t‖∞ at the iteration's start
};

class Fddp {
 public:
  // Binds every buffer for `problem`'s sizes: a solve allocates nothing but its iteration log.
  // The problem may change between solves while fits() holds (MultibodyProblem::assign).
  explicit Fddp(ShootingProblem& problem);

  // Whether the buffers fit the problem as it is now: its knots, state and control sizes.
  bool fits() const {
    return problem_.knots() == knots_ && problem_.state_size() == nx_ &&
           problem_.tangent_size() == ndx_ && problem_.control_size() == nu_;
  }

  // Solves from the guess (T ≥ 1; T + 1 states, T controls; `feasible` when xs is the rollout of us
  // from x̂_0, which starts the forward passes without gaps). The candidate, its gains and the log
  // are left in the accessors below whatever the outcome: the last accepted iterate is the best
  // one. Rethrows what the problem throws while differentiating the candidate.
  FddpOutcome solve(const std::vector<Eigen::VectorXd>& xs, const std::vector<Eigen::VectorXd>& us,
                    bool feasible, const FddpSettings& settings = {},
                    const Interruption& interruption = {});

  const std::vector<Eigen::VectorXd>& xs() const { return xs_; }
  const std::vector<Eigen::VectorXd>& us() const { return us_; }
  // The local policy u_t(x) = ū_t − k_t − K_t (x ⊖ x̄_t) of the last backward pass.
  const std::vector<Eigen::MatrixXd>& feedback() const { return feedback_; }
  const std::vector<Eigen::VectorXd>& feedforward() const { return feedforward_; }
  const std::vector<Eigen::VectorXd>& gaps() const { return gaps_; }
  const std::vector<FddpIteration>& iterations() const { return log_; }
  double cost() const { return cost_; }
  bool feasible() const { return feasible_; }
  // Whether the last forward pass rolled out the iterate the solve ended with, as it does when
  // the last iteration took a step: the problem's last evaluation of each knot is then the
  // iterate's, and rolled_out_gap() its largest gap ‖f(x_t, u_t) ⊖ x_t+1‖∞ and ‖x̂_0 ⊖ x_0‖∞
  // (0 when the rollout closed them).
  bool rolled_out() const { return rolled_out_; }
  double rolled_out_gap() const { return rolled_out_gap_; }

 private:
  // The candidate's values, derivatives and gaps, and its backward pass (backward_failed_ says
  // how it went), begun while the knots are still differentiated; returns the largest gap.
  double differentiate();
  // Gaps and backward steps of knots ready..T, those the problem has differentiated.
  void take_ready(int ready);
  // The Riccati recursion; false when Q_uu is not positive definite or V is not finite. Polls the
  // solve's Interruption between knots, as the forward pass does (a long horizon's pass takes
  // seconds).
  bool backward_pass();
  // The recursion in steps from knot T down: start_backward() then advance_backward(ready)
  // takes every step whose knots, ready..T, are differentiated, until one fails.
  void start_backward();
  void advance_backward(int ready);
  bool backward_step(int t);
  // Knot t's gains from the box-constrained QP of box-FDDP; false when Q_uu,ff is not positive
  // definite.
  bool box_gains(int t);
  // The expectation's α-independent terms d₁, d₂ from the gains and the gaps.
  void update_expected_improvement();
  // d₁, d₂ for the trial just rolled out.
  Eigen::Vector2d expected_improvement();
  // The nonlinear rollout of step α into the trial; false when a knot fails or is not finite.
  bool forward_pass(double alpha);
  void accept_trial(bool feasible);

  ShootingProblem& problem_;
  Interruption interruption_;  // the solve's
  const int knots_, nx_, ndx_, nu_;
  std::vector<Eigen::VectorXd> xs_, us_, xs_try_, us_try_;
  std::vector<KnotValues> values_;
  std::vector<Eigen::VectorXd> gaps_, dx_;
  std::vector<Eigen::VectorXd> value_x_;   // V_x, T + 1
  std::vector<Eigen::MatrixXd> value_xx_;  // V_xx, T + 1
  std::vector<Eigen::VectorXd> q_u_, quu_k_, feedforward_;
  std::vector<Eigen::MatrixXd> feedback_;
  // Box-FDDP's: the bounds (null without), the QP, the box around ū and Q_uu,ff⁻¹ scattered.
  const ControlBounds* bounds_;
  BoxQp box_;
  Eigen::VectorXd box_lower_, box_upper_;
  Eigen::MatrixXd quu_free_inverse_;
  Eigen::VectorXd q_x_, next_, scratch_x_, gap_try_, no_control_;
  Eigen::Vector2d expected_ = Eigen::Vector2d::Zero();  // d₁, d₂ of the last trial
  Eigen::MatrixXd q_xx_, q_xu_, q_uu_, fx_t_vxx_, fu_t_vxx_;
  Eigen::MatrixXd quu_cholesky_;      // L of Q_uu = L Lᵀ, lower triangle
  Eigen::MatrixXd gains_transposed_;  // [Kᵀ; kᵀ] as they are solved for
  std::vector<FddpIteration> log_;
  double cost_ = 0.0, cost_try_ = 0.0, regularization_ = 0.0;
  double gradient_term_ = 0.0, curvature_term_ = 0.0;  // dg, dq of Crocoddyl
  bool feasible_ = false;
  bool rolled_out_ = false;
  double gap_try_largest_ = 0.0, rolled_out_gap_ = 0.0;
  // The backward pass under way: its next knot, whether a step failed, its polling; and the
  // first gap computed for the candidate being differentiated (gaps_from_..T, and gap 0).
  int backward_next_ = -1;
  bool backward_failed_ = false;
  std::optional<InterruptionPoll> backward_poll_;
  int gaps_from_ = 0;
};

}  // namespace torqued
