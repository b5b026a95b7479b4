// An Mpc stream's problem and solution (see mpc_window.hpp).
#include "server/services/mpc_window.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "server/base/status_messages.hpp"
#include "server/services/control_plan.hpp"
#include "server/services/request_checks.hpp"

namespace torqued::server {
namespace {

// Replaces the reference, placement and weight of every cost term named `update.name`.
grpc::Status apply_update(const v1::TermUpdate& update, const std::string& field,
                          v1::SolveRequest& problem) {
  bool found = false;
  for (auto* terms : {problem.mutable_running_costs(), problem.mutable_terminal_costs()}) {
    for (v1::CostTerm& term : *terms) {
      if (term.name() != update.name()) continue;
      found = true;
      if (!update.reference().empty()) {
        *term.mutable_residual()->mutable_reference() = update.reference();
      }
      if (update.has_placement())
        *term.mutable_residual()->mutable_placement() = update.placement();
      if (update.has_weight()) term.set_weight(update.weight());
    }
  }
  if (!found) {
    return invalid(field + ".name: no cost term named " + quote_input(update.name()) +
                   " in the stream's problem");
  }
  return grpc::Status::OK;
}

// A later problem must keep what the last solution's shape depends on (its controls are compared
// once it is planned).
grpc::Status check_same_shape(const v1::SolveRequest& problem, const v1::SolveRequest& held) {
  if (problem.model_id() != held.model_id()) {
    return invalid("problem.model_id: " + quote_input(problem.model_id()) +
                   " is not the stream's model " + quote_input(held.model_id()) +
                   " (open a new stream for another model)");
  }
  if (problem.knots() != held.knots()) {
    return invalid("problem.knots: " + std::to_string(problem.knots()) +
                   ", the stream's problem has " + std::to_string(held.knots()) +
                   " (a new problem keeps its knots, dt and controls)");
  }
  if (problem.dt() != held.dt()) {
    return invalid("problem.dt: " + number(problem.dt()) + ", the stream's problem has " +
                   number(held.dt()) + " (a new problem keeps its knots, dt and controls)");
  }
  if (!problem.guess_q().empty() || !problem.guess_v().empty() || !problem.guess_u().empty()) {
    return invalid(
        "problem.guess_q: must be empty after the stream's first message (the last solution, "
        "shifted, is the guess)");
  }
  return grpc::Status::OK;
}

}  // namespace

grpc::Status MpcWindow::prepare(const Planning& planning, const FindModel& find_model, int threads,
                                const v1::MpcRequest& request) {
  if (request.has_iterations() &&
      (request.iterations() < 1 ||
       request.iterations() > static_cast<std::uint32_t>(planning.limits.max_ocp_iterations))) {
    if (request.iterations() < 1) return invalid("iterations: must be at least 1");
    return over_limit("iterations", request.iterations(), planning.limits.max_ocp_iterations,
                      "--max-ocp-iterations");
  }
  if (grpc::Status s =
          check_range("max_seconds", request.max_seconds(), 0.0, kInfinity, ">= 0 (0: none)");
      !s.ok()) {
    return s;
  }
  if (grpc::Status s = check_range("time", request.time(), -kInfinity, kInfinity, "finite");
      !s.ok()) {
    return s;
  }

  // A new plan for a new problem or new cost terms, in replaced_ until the solve succeeds.
  replaced_.reset();
  if (held_ == nullptr || request.has_problem() || !request.updates().empty()) {
    if (held_ == nullptr && !request.has_problem()) {
      return invalid("problem: the stream's first message must state the problem");
    }
    replaced_ = std::make_unique<Held>();
    replaced_->problem = request.has_problem() ? request.problem() : held_->problem;
    for (int i = 0; i < request.updates_size(); ++i) {
      if (grpc::Status s = apply_update(request.updates(i), "updates[" + std::to_string(i) + "]",
                                        replaced_->problem);
          !s.ok()) {
        return s;
      }
    }
    v1::SolveRequest& problem = replaced_->problem;
    problem.set_feedback(true);
    problem.set_max_seconds(0.0);
    RegisteredModelPtr entry;
    if (grpc::Status s = find_model(problem.model_id(), "problem.model_id", entry); !s.ok()) {
      return s;
    }
    if (held_ != nullptr && request.has_problem()) {
      if (grpc::Status s = check_same_shape(problem, held_->problem); !s.ok()) return s;
    }
    if (grpc::Status s =
            plan_solve(planning, entry, problem, threads, replaced_->plan, replaced_->memory);
        !s.ok()) {
      // The problem's fields are named as the problem's own.
      return request.has_problem() ? grpc::Status(s.error_code(), "problem." + s.error_message())
                                   : s;
    }
    if (const std::size_t nu = replaced_->plan.dynamics.actuated_dofs.size();
        held_ != nullptr && nu != held_->plan.dynamics.actuated_dofs.size()) {
      return invalid("problem.actuation: " + std::to_string(nu) +
                     " controls, the stream's problem has " +
                     std::to_string(held_->plan.dynamics.actuated_dofs.size()) +
                     " (a new problem keeps its knots, dt and controls)");
    }
  }
  Held& next = replaced_ ? *replaced_ : *held_;
  PlannedSolve& plan = next.plan;
  const Model& model = *plan.entry->model;
  const int knots = static_cast<int>(next.problem.knots());

  // The measured state.
  if (!request.q().empty() || !request.v().empty()) {
    if (grpc::Status s = check_array("q", request.q(), 1, model.nq); !s.ok()) return s;
    if (grpc::Status s = check_quaternions(model, request.q(), 1, "q"); !s.ok()) return s;
    if (grpc::Status s = check_array("v", request.v(), 1, model.nv); !s.ok()) return s;
    plan.x0 << Eigen::Map<const Eigen::VectorXd>(request.q().data(), model.nq),
        Eigen::Map<const Eigen::VectorXd>(request.v().data(), model.nv);
  } else if (!request.has_problem()) {
    return invalid("q: the measured state (q and v) is required after the stream's first message");
  } else {
    plan.x0 << Eigen::Map<const Eigen::VectorXd>(next.problem.q0().data(), model.nq),
        Eigen::Map<const Eigen::VectorXd>(next.problem.v0().data(), model.nv);
  }

  // The guess: the last solution shifted by the knots elapsed.
  shift_ = 0;
  if (held_ != nullptr) {
    if (request.time() < held_->time) {
      return invalid("time: " + number(request.time()) + " is before the last message's " +
                     number(held_->time));
    }
    shift_ = static_cast<int>(std::min<double>(
        knots, std::nearbyint((request.time() - held_->time) / next.problem.dt())));
    plan.xs.resize(held_->xs.size());
    plan.us.resize(held_->us.size());
    for (int t = 0; t <= knots; ++t) {
      plan.xs[static_cast<std::size_t>(t)] =
          held_->xs[static_cast<std::size_t>(std::min(t + shift_, knots))];
      if (t < knots) {
        plan.us[static_cast<std::size_t>(t)] =
            held_->us[static_cast<std::size_t>(std::min(t + shift_, knots - 1))];
      }
    }
    plan.xs.front() = plan.x0;
    plan.feasible = false;
  }
  // A new problem takes its own solver.max_iterations (the plan's); a tick, one iteration.
  if (request.has_iterations()) {
    plan.settings.max_iterations = static_cast<int>(request.iterations());
  } else if (!request.has_problem()) {
    plan.settings.max_iterations = 1;
  }
  plan.max_seconds = request.max_seconds();
  return grpc::Status::OK;
}

void MpcWindow::commit(const v1::MpcRequest& request, v1::SolveResponse& solution,
                       v1::MpcResponse& response) {
  Held& next = replaced_ ? *replaced_ : *held_;
  const Model& model = *next.plan.entry->model;
  const int knots = static_cast<int>(next.problem.knots());
  const int nu = static_cast<int>(solution.nu()), ndx = 2 * model.nv;
  response.set_shift(static_cast<std::uint32_t>(shift_));
  response.mutable_u0()->Assign(solution.u().begin(), solution.u().begin() + nu);
  response.mutable_feedback0()->Assign(solution.feedback().begin(),
                                       solution.feedback().begin() + nu * ndx);
  next.xs.resize(static_cast<std::size_t>(knots) + 1);
  next.us.resize(static_cast<std::size_t>(knots));
  for (int t = 0; t <= knots; ++t) {
    Eigen::VectorXd& x = next.xs[static_cast<std::size_t>(t)];
    x.resize(model.nq + model.nv);
    x << Eigen::Map<const Eigen::VectorXd>(solution.q().data() + std::ptrdiff_t{t} * model.nq,
                                           model.nq),
        Eigen::Map<const Eigen::VectorXd>(solution.v().data() + std::ptrdiff_t{t} * model.nv,
                                          model.nv);
    if (t < knots) {
      next.us[static_cast<std::size_t>(t)] =
          Eigen::Map<const Eigen::VectorXd>(solution.u().data() + std::ptrdiff_t{t} * nu, nu);
    }
  }
  next.time = request.time();
  if (replaced_) held_ = std::move(replaced_);
  if (!request.plan()) {
    solution.clear_q();
    solution.clear_v();
    solution.clear_u();
    solution.clear_feedback();
  }
}

}  // namespace torqued::server
