// An optimal-control problem in multiple-shooting form, as the feasibility-driven DDP solves it
// (Mastalli et al., "Crocoddyl: An Efficient and Versatile Framework for Multi-Contact Optimal
// Control", ICRA 2020, §III; Crocoddyl's ShootingProblem):
//   min over x_0..T, u_0..T−1 of  Σ_t ℓ_t(x_t, u_t) + ℓ_T(x_T)
//   subject to  x_0 = x̂_0,  x_{t+1} = f_t(x_t, u_t),
// on a state manifold with ⊕ and ⊖ (a robot's configuration space is a Lie group: integrate()
// and difference() in configuration.hpp). Derivatives are in the tangent space, of size ndx.
#pragma once

#include <Eigen/Core>
#include <functional>
#include <span>

namespace torqued {

// One knot's value and, when differentiated, its derivatives. A running knot has all of them;
// the terminal knot only the cost and its x-derivatives.
struct KnotValues {
  Eigen::VectorXd next;  // x_{t+1} = f_t(x_t, u_t), nx
  double cost = 0.0;     // ℓ_t
  // ∂f/∂x (ndx x ndx) and ∂f/∂u (ndx x nu), row-major as the engine's step writes them.
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> fx;
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> fu;
  Eigen::VectorXd lx;   // ∂ℓ/∂x, ndx
  Eigen::VectorXd lu;   // ∂ℓ/∂u, nu
  Eigen::MatrixXd lxx;  // ∂²ℓ/∂x², ndx x ndx (the Gauss-Newton part of least squares)
  Eigen::MatrixXd luu;  // nu x nu
  Eigen::MatrixXd lxu;  // ndx x nu

  KnotValues(int nx, int ndx, int nu)
      : next(Eigen::VectorXd::Zero(nx)),
        fx(Eigen::MatrixXd::Zero(ndx, ndx)),
        fu(Eigen::MatrixXd::Zero(ndx, nu)),
        lx(Eigen::VectorXd::Zero(ndx)),
        lu(Eigen::VectorXd::Zero(nu)),
        lxx(Eigen::MatrixXd::Zero(ndx, ndx)),
        luu(Eigen::MatrixXd::Zero(nu, nu)),
        lxu(Eigen::MatrixXd::Zero(ndx, nu)) {}
};

// Bounds lower ≤ u ≤ upper on the controls of every running knot (±∞ where a control is free).
struct ControlBounds {
  Eigen::VectorXd lower = {}, upper = {};
};

class ShootingProblem {
 public:
  virtual ~ShootingProblem() = default;

  virtual int knots() const = 0;                             // T, the running knots
  virtual int state_size() const = 0;                        // nx
  virtual int tangent_size() const = 0;                      // ndx
  virtual int control_size() const = 0;                      // nu, at every running knot
  virtual const Eigen::VectorXd& initial_state() const = 0;  // x̂_0
  // The controls' bounds, or none: with them FDDP is box-FDDP.
  virtual const ControlBounds* control_bounds() const { return nullptr; }

  // out = x ⊕ dx, and out = x1 ⊖ x0 (the dx with x0 ⊕ dx = x1).
  virtual void integrate(const Eigen::VectorXd& x, const Eigen::VectorXd& dx,
                         Eigen::VectorXd& out) const = 0;
  virtual void difference(const Eigen::VectorXd& x0, const Eigen::VectorXd& x1,
                          Eigen::VectorXd& out) const = 0;

  // Running knot t's next state into `next`, returning its cost; the terminal cost for t = T
  // (u and `next` unused). Throws when the knot cannot be evaluated there (a singular step).
  virtual double evaluate(int t, const Eigen::VectorXd& x, const Eigen::VectorXd& u,
                          Eigen::VectorXd& next) = 0;

  // Every knot's values and derivatives at (xs, us): values[t] for t < T (xs has T + 1 states,
  // us T controls), values[T] the terminal knot's. The knots are independent of each other, so an
  // implementation may spread them over threads. Throws as evaluate() does.
  virtual void differentiate(std::span<const Eigen::VectorXd> xs,
                             std::span<const Eigen::VectorXd> us, std::span<KnotValues> values) = 0;

  // The same, telling the caller which knots are done while others are still being computed, so
  // that it can begin with them (FDDP's backward pass, which runs from knot T down, overlaps the
  // derivatives this way): `ready(from)` is called on the calling thread, any number of times,
  // each time with knots from..T all done. An implementation that spreads knots over threads
  // differentiates them from T down and calls `ready` between its own knots; this one does all
  // of them first. Every knot is done when it returns, whatever `ready` was told.
  virtual void differentiate_overlapping(std::span<const Eigen::VectorXd> xs,
                                         std::span<const Eigen::VectorXd> us,
                                         std::span<KnotValues> values,
                                         const std::function<void(int from)>& /*ready*/) {
    differentiate(xs, us, values);
  }
};

}  // namespace torqued
