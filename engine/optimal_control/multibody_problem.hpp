// A robot's optimal-control problem in multiple-shooting form: the knots of a ShootingProblem
// whose dynamics are the engine's discrete step (discrete_step.hpp: its integrators, actuation,
// contact phases and touchdown impacts) and whose costs are weighted activations of residuals
// (Crocoddyl's IntegratedActionModel over a DifferentialActionModel{Free,Contact}FwdDynamics with
// a CostModelSum; Mastalli et al., "Crocoddyl: An Efficient and Versatile Framework for
// Multi-Contact Optimal Control", ICRA 2020, §III):
//   running knot t:  x_{t+1} = step(x_t, u_t),  ℓ_t = dt Σ_i w_i a_i(r_i(x_t, u_t))
//   terminal knot:   ℓ_T = Σ_i w_i a_i(r_i(x_T))
// with the Gauss-Newton Hessians of least squares, ℓ_xx = dt Σ w_i R_xᵀ a_rr R_x and likewise for
// u and xu. The state is x = (q, q̇) on the configuration's Lie group (nx = nq + nv, ndx = 2 nv).
// A knot's residuals see it as it begins: before a touchdown's impact, except the contact
// residuals, which read λ of the dynamics after it.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/algorithms/discrete_step.hpp"
#include "engine/optimal_control/activation.hpp"
#include "engine/optimal_control/residual.hpp"
#include "engine/optimal_control/shooting_problem.hpp"

namespace torqued {

// One term of a knot's cost: weight · a(r(x, u)).
struct CostTerm {
  std::string name = {};
  Residual residual = {};
  Activation activation = {};
  double weight = 1.0;
};

// What a knot does: its step (dt > 0; 0 at the terminal knot), the contacts of its phase, whether
// it begins that phase with their touchdown (and the impact's restitution), and its costs.
struct KnotModel {
  double dt = 0.0;
  std::vector<BilateralConstraint> contacts = {};
  bool touchdown = false;
  double restitution = 0.0;
  std::vector<CostTerm> costs = {};
};

// How every knot steps: the integrator, the actuated DOFs (control c drives DOF
// actuated_dofs[c]), Baumgarte's gains of the contacts, and the controls' bounds (none while
// empty).
struct MultibodyDynamics {
  Integrator integrator = Integrator::kSemiImplicitEuler;
  std::vector<int> actuated_dofs = {};
  BaumgarteGains gains = {};
  ControlBounds control_bounds = {};
};

class MultibodyProblem : public ShootingProblem {
 public:
  // What a worker's buffers are sized for: the controls, the most constraint rows of a knot's
  // contacts, and the largest residual.
  struct WorkerSizes {
    int controls = 0, constraint_rows = 0, residual = 0;
    bool operator==(const WorkerSizes&) const = default;
  };

  // One thread's scratch: a Data and the knot's buffers. Knots evaluated with different workers
  // may run concurrently; the problem itself is read-only to them.
  struct Worker {
    WorkerSizes sizes;
    Data data;
    ResidualWorkspace residuals;
    Eigen::VectorXd q_next, v_next;
    // The knot's λ and its rates (row-major, as the step writes them), then chained into x and u.
    Eigen::VectorXd lambda;
    RowMajorMatrix da_dq, da_dv, da_dtau, dlambda_dq, dlambda_dv, dlambda_dtau;
    Eigen::MatrixXd dlambda_dx, dlambda_du;
    // One residual at a time: r, a_r, a_rr, R_x, R_u and the scaled curvature times R.
    Eigen::VectorXd r, gradient, curvature;
    Eigen::MatrixXd rx, ru, weighted;

    Worker(const Model& model, WorkerSizes sizes);
  };

  // T = knot_models.size() running knots, knot t stepping by models[knot_models[t]], and the
  // terminal knot's costs from models[terminal_model]. Checks the indices and sizes; the model,
  // residuals and activations are the caller's to validate (the server does).
  MultibodyProblem(const Model& model, Eigen::VectorXd initial_state, MultibodyDynamics dynamics,
                   std::vector<KnotModel> models, std::vector<int> knot_models, int terminal_model);
  ~MultibodyProblem() override;

  // Makes this the problem of the same arguments on the same model, checked as the constructor
  // checks them (unchanged when they throw), keeping the buffers that fit: a caller that solves one
  // problem after another (an FDDP whose sizes stay, its own workers while worker_sizes() stays)
  // allocates little.
  void assign(Eigen::VectorXd initial_state, MultibodyDynamics dynamics,
              std::vector<KnotModel> models, std::vector<int> knot_models, int terminal_model);

  int knots() const override { return static_cast<int>(knot_models_.size()); }
  int state_size() const override { return model_.nq + model_.nv; }
  int tangent_size() const override { return 2 * model_.nv; }
  int control_size() const override { return static_cast<int>(dynamics_.actuated_dofs.size()); }
  const Eigen::VectorXd& initial_state() const override { return initial_state_; }
  const ControlBounds* control_bounds() const override {
    return dynamics_.control_bounds.lower.size() > 0 ? &dynamics_.control_bounds : nullptr;
  }
  void integrate(const Eigen::VectorXd& x, const Eigen::VectorXd& dx,
                 Eigen::VectorXd& out) const override;
  void difference(const Eigen::VectorXd& x0, const Eigen::VectorXd& x1,
                  Eigen::VectorXd& out) const override;
  // Keeps each cost term's value at the knot (evaluated_terms()).
  double evaluate(int t, const Eigen::VectorXd& x, const Eigen::VectorXd& u,
                  Eigen::VectorXd& next) override;
  void differentiate(std::span<const Eigen::VectorXd> xs, std::span<const Eigen::VectorXd> us,
                     std::span<KnotValues> values) override;

  // The same per knot with a worker's scratch, for callers that spread the knots over threads.
  WorkerSizes worker_sizes() const;
  std::unique_ptr<Worker> make_worker() const;
  // With `terms`, each cost term's value as cost_terms() gives them.
  double evaluate_knot(Worker& worker, int t, const Eigen::VectorXd& x, const Eigen::VectorXd& u,
                       Eigen::VectorXd& next, std::span<double> terms = {}) const;
  void differentiate_knot(Worker& worker, int t, const Eigen::VectorXd& x, const Eigen::VectorXd& u,
                          KnotValues& values) const;

  // Each cost term's value at knot t (running: times dt), in the order of its model's costs.
  void cost_terms(Worker& worker, int t, const Eigen::VectorXd& x, const Eigen::VectorXd& u,
                  std::span<double> values) const;
  // The same from the last evaluate() at knot t (zeros before the first): after FDDP's rollout of
  // its iterate (Fddp::rolled_out()), the iterate's, as Crocoddyl's datas hold its last calc().
  std::span<const double> evaluated_terms(int t) const {
    return evaluated_terms_[static_cast<std::size_t>(t)];
  }

  // The cold start: x̂₀ at every knot, and at each running knot the quasi-static controls at x̂₀
  // under its contacts (quasi_static.hpp).
  void cold_start(std::vector<Eigen::VectorXd>& xs, std::vector<Eigen::VectorXd>& us) const;

  const Model& model() const { return model_; }
  const KnotModel& knot_model(int t) const {
    return models_[static_cast<std::size_t>(t < knots() ? knot_models_[t] : terminal_model_)];
  }

 private:
  // The knot's costs (scaled by dt when running), and with `values` their derivatives into it;
  // each term's value into `terms` when it is not empty. At a running knot, after step() at the
  // same x and u: reads λ and its rates from the worker, where step() leaves them when the knot's
  // costs read them, and the bodies' placements when step() leaves them at the knot.
  double knot_costs(Worker& worker, int t, const Eigen::VectorXd& x, const Eigen::VectorXd& u,
                    KnotValues* values, std::span<double> terms) const;
  StepSettings step_settings(const KnotModel& knot) const;
  void step(Worker& worker, int t, const Eigen::VectorXd& x, const Eigen::VectorXd& u,
            KnotValues* values) const;
  // Sizes evaluated_terms_ for the knots' costs.
  void size_evaluated_terms();

  const Model& model_;
  Eigen::VectorXd initial_state_;
  MultibodyDynamics dynamics_;
  std::vector<KnotModel> models_;
  std::vector<int> knot_models_;
  int terminal_model_;
  std::unique_ptr<Worker> worker_;                    // the serial evaluate() and differentiate()'s
  std::vector<std::vector<double>> evaluated_terms_;  // per knot
};

}  // namespace torqued
