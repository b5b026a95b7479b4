// A quadratic program under box constraints by the projected Newton method (Bertsekas,
// "Projected Newton Methods for Optimization Problems with Simple Constraints", SIAM J. Control
// Optim. 20(2), 1982; as Tassa, Mansard & Todorov, "Control-Limited Differential Dynamic
// Programming", ICRA 2014, §III, and Crocoddyl's BoxQP solve the controls of box-FDDP):
//   min ½ xᵀ H x + qᵀ x   subject to  l ≤ x ≤ u,   H symmetric positive definite.
// From x clamped into the box, each iteration splits the coordinates into the clamped ones (at a
// bound, the gradient g = H x + q pushing out of the box) and the free ones; it takes the Newton
// step on the free coordinates, −H_ff⁻¹ (q_f + H_ff x_f + H_fc x_c), projected on the box with
// the step lengths 1, 1/2, ..., 2⁻⁹, the first that lowers the objective by more than
// accept_ratio of the gradient's prediction g · (x − x_new); it stops when the free gradient's
// largest entry is below the threshold. H_ff⁻¹ of the last iteration is the free subspace's
// inverse Hessian, which gives DDP its feedback gains.
#pragma once

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <vector>

namespace torqued {

struct BoxQpSettings {
  int max_iterations = 100;
  double accept_ratio = 0.1;         // th_acceptstep
  double gradient_threshold = 1e-5;  // on the free gradient's ∞-norm (th_grad, box-FDDP's)
  double regularization = 0.0;       // added to H_ff's diagonal
};

class BoxQp {
 public:
  explicit BoxQp(int n);

  // Solves from `start` (clamped into the box first). False when H_ff is not positive definite.
  bool solve(const Eigen::MatrixXd& h, const Eigen::VectorXd& q, const Eigen::VectorXd& lower,
             const Eigen::VectorXd& upper, const Eigen::VectorXd& start,
             const BoxQpSettings& settings = {});

  const Eigen::VectorXd& x() const { return x_; }
  // The free and clamped coordinates of the last iteration, and H_ff⁻¹ over the free ones.
  const std::vector<int>& free() const { return free_; }
  const std::vector<int>& clamped() const { return clamped_; }
  Eigen::Ref<const Eigen::MatrixXd> free_inverse() const {
    return free_inverse_.topLeftCorner(free_count(), free_count());
  }

 private:
  int free_count() const { return static_cast<int>(free_.size()); }
  double objective(const Eigen::MatrixXd& h, const Eigen::VectorXd& q, const Eigen::VectorXd& x);

  const int n_;
  Eigen::VectorXd x_, x_new_, gradient_, step_, hx_;
  Eigen::VectorXd q_free_, x_free_, x_clamped_, step_free_;
  Eigen::MatrixXd h_free_, h_coupling_, free_inverse_;
  Eigen::LLT<Eigen::MatrixXd> factors_;
  std::vector<int> free_, clamped_;
};

}  // namespace torqued
