// ControlService.Mpc: the model-predictive-control stream (see mpc_stream.hpp).
#include "server/services/mpc_stream.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "server/base/status_messages.hpp"
#include "server/base/wire_counts.hpp"
#include "server/compute/batch_runner.hpp"
#include "server/services/control_plan.hpp"
#include "server/services/request_checks.hpp"
#include "server/transport/byte_buffers.hpp"

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

// A later problem must keep what the last solution's shape depends on.
grpc::Status check_same_shape(const v1::SolveRequest& problem, const PlannedSolve& held_plan,
                              const v1::SolveRequest& held, int nu) {
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
  if (static_cast<int>(held_plan.dynamics.actuated_dofs.size()) != nu) {
    return invalid("problem.actuation: " + std::to_string(nu) +
                   " controls, the stream's problem has " +
                   std::to_string(held_plan.dynamics.actuated_dofs.size()) +
                   " (a new problem keeps its knots, dt and controls)");
  }
  if (!problem.guess_q().empty() || !problem.guess_v().empty() || !problem.guess_u().empty()) {
    return invalid(
        "problem.guess_q: must be empty after the stream's first message (the last solution, "
        "shifted, is the guess)");
  }
  return grpc::Status::OK;
}

}  // namespace

MpcReactor::MpcReactor(ControlService& service, grpc::CallbackServerContext* context,
                       const grpc::Status& admission)
    : service_(service), context_(context), start_(service.metrics_.start()) {
  service.metrics_.rpc_started(service.mpc_method_);
  if (!admission.ok()) {
    spdlog::warn("Mpc from {}: {} ({})", context->peer(), status_code_name(admission.error_code()),
                 admission.error_message());
    finished_ = true;
    finish(admission);
    return;
  }
  // Under the service's lock: drain() cannot run before the read has started.
  order_.before_operation();
  StartRead(&read_buffer_);
}

void MpcReactor::OnReadDone(bool ok) {
  order_.in_reaction();
  grpc::Status end;
  {
    std::lock_guard lock(mutex_);
    if (finished_) return;  // a message that arrived after draining ended the stream
    if (ok) {
      working_ = true;
    } else {
      read_closed_ = true;
      if (!should_finish(end)) return;
    }
  }
  if (!ok) return finish(end);
  std::vector<Executor::Task> tasks;
  tasks.emplace_back([this] { answer(compute()); });
  if (!service_.executor_.try_submit(tasks, client_address(*context_))) {
    answer(queue_full(service_.executor_));
  }
}

void MpcReactor::OnWriteDone(bool ok) {
  order_.in_reaction();
  grpc::Status end;
  bool read = false;
  {
    std::lock_guard lock(mutex_);
    working_ = false;
    message_memory_.reset();
    response_.Clear();
    if (!ok) {
      write_failed_ = true;
      read_closed_ = true;
    }
    read = !should_finish(end);
    starting_read_ = read;
  }
  if (!read) return finish(end);
  order_.before_operation();
  StartRead(&read_buffer_);
  {
    std::lock_guard lock(mutex_);
    starting_read_ = false;
    if (!should_finish(end)) return;
  }
  finish(end);
}

void MpcReactor::OnDone() {
  order_.in_reaction();
  {
    std::lock_guard lock(service_.streams_mutex_);
    service_.streams_.erase(this);
  }
  delete this;
}

void MpcReactor::drain() {
  grpc::Status end;
  {
    std::lock_guard lock(mutex_);
    draining_ = true;
    if (!should_finish(end)) return;
  }
  finish(end);
}

bool MpcReactor::should_finish(grpc::Status& status) {
  if (finished_ || working_ || starting_read_ || !(read_closed_ || draining_)) return false;
  finished_ = true;
  if (context_->IsCancelled() || write_failed_) {
    status = {grpc::StatusCode::CANCELLED, "the stream was cancelled"};
  } else if (!read_closed_) {
    status = {grpc::StatusCode::UNAVAILABLE,
              "the server is shutting down; open a new stream (to another replica)"};
  } else {
    status = grpc::Status::OK;
  }
  return true;
}

void MpcReactor::finish(const grpc::Status& status) {
  service_.metrics_.rpc_handled(service_.mpc_method_, status.error_code(), start_);
  if (spdlog::should_log(spdlog::level::debug)) {
    spdlog::debug("Mpc from {}: {} after {} messages", context_->peer(),
                  status_code_name(status.error_code()), messages_read_);
  }
  order_.before_operation();
  Finish(status);  // the reactor may be deleted from here on
}

grpc::Status MpcReactor::compute() {
  ++messages_read_;
  const std::string message = "message " + std::to_string(messages_read_);
  if (grpc::Status alive = check_alive(*context_); !alive.ok()) return alive;
  if (const std::size_t bytes = decoded_bytes(read_buffer_, v1::MpcRequest::descriptor());
      !message_memory_.add(service_.budget_, bytes)) {
    return {grpc::StatusCode::RESOURCE_EXHAUSTED, service_.budget_.refusal(message, bytes)};
  }
  if (grpc::Status decoded = decode(read_buffer_, message, request_); !decoded.ok()) {
    return decoded;
  }
  response_.set_sequence(request_.sequence());
  const v1::MpcRequest& request = request_;
  const Planning& planning = service_.planning_;
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

  // A new plan for a new problem or new cost terms, in `replaced` until the solve succeeds.
  std::unique_ptr<Held> replaced;
  if (held_ == nullptr || request.has_problem() || !request.updates().empty()) {
    if (held_ == nullptr && !request.has_problem()) {
      return invalid("problem: the stream's first message must state the problem");
    }
    replaced = std::make_unique<Held>();
    replaced->problem = request.has_problem() ? request.problem() : held_->problem;
    for (int i = 0; i < request.updates_size(); ++i) {
      if (grpc::Status s = apply_update(request.updates(i), "updates[" + std::to_string(i) + "]",
                                        replaced->problem);
          !s.ok()) {
        return s;
      }
    }
    v1::SolveRequest& problem = replaced->problem;
    problem.set_feedback(true);
    problem.set_max_seconds(0.0);
    RegisteredModelPtr entry;
    if (grpc::Status s = service_.find_model(problem.model_id(), "problem.model_id", entry);
        !s.ok()) {
      return s;
    }
    if (held_ != nullptr && request.has_problem()) {
      const auto nu = static_cast<int>(held_->plan.dynamics.actuated_dofs.size());
      if (grpc::Status s = check_same_shape(problem, held_->plan, held_->problem, nu); !s.ok()) {
        return s;
      }
    }
    if (grpc::Status s = plan_solve(planning, entry, problem, service_.executor_.workers(),
                                    replaced->plan, replaced->memory);
        !s.ok()) {
      // The problem's fields are named as the problem's own.
      return request.has_problem() ? grpc::Status(s.error_code(), "problem." + s.error_message())
                                   : s;
    }
    if (held_ != nullptr && static_cast<int>(replaced->plan.dynamics.actuated_dofs.size()) !=
                                static_cast<int>(held_->plan.dynamics.actuated_dofs.size())) {
      return invalid("problem.actuation: a new problem keeps its controls");
    }
  }
  Held& next = replaced ? *replaced : *held_;
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
  int shift = 0;
  if (held_ != nullptr) {
    if (request.time() < held_->time) {
      return invalid("time: " + number(request.time()) + " is before the last message's " +
                     number(held_->time));
    }
    shift = static_cast<int>(std::min<double>(
        knots, std::nearbyint((request.time() - held_->time) / next.problem.dt())));
    plan.xs.resize(held_->xs.size());
    plan.us.resize(held_->us.size());
    for (int t = 0; t <= knots; ++t) {
      plan.xs[static_cast<std::size_t>(t)] =
          held_->xs[static_cast<std::size_t>(std::min(t + shift, knots))];
      if (t < knots) {
        plan.us[static_cast<std::size_t>(t)] =
            held_->us[static_cast<std::size_t>(std::min(t + shift, knots - 1))];
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

  v1::SolveResponse& solution = *response_.mutable_solution();
  if (grpc::Status s = service_.solve_in_call(*context_, plan, solution); !s.ok()) {
    response_.clear_solution();
    return s;
  }

  // The first control and its gains, and the solution kept for the next message.
  const int nu = static_cast<int>(solution.nu()), ndx = 2 * model.nv;
  response_.set_shift(static_cast<std::uint32_t>(shift));
  response_.mutable_u0()->Assign(solution.u().begin(), solution.u().begin() + nu);
  response_.mutable_feedback0()->Assign(solution.feedback().begin(),
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
  if (replaced) held_ = std::move(replaced);
  if (!request.plan()) {
    solution.clear_q();
    solution.clear_v();
    solution.clear_u();
    solution.clear_feedback();
  }
  return grpc::Status::OK;
}

void MpcReactor::answer(const grpc::Status& full_status) {
  const grpc::Status status = bounded(full_status);
  if (!status.ok()) {
    const std::uint64_t sequence = response_.sequence();
    response_.Clear();
    response_.set_sequence(sequence);
    response_.mutable_status()->set_code(status.error_code());
    response_.mutable_status()->set_message(status.error_message());
    if (status.error_code() != grpc::StatusCode::CANCELLED) {
      spdlog::warn("Mpc message {} from {}: {} ({})", messages_read_, context_->peer(),
                   status_code_name(status.error_code()), status.error_message());
    }
  }
  if (!encode(response_, &write_buffer_).ok()) {
    v1::MpcResponse failed;
    failed.set_sequence(response_.sequence());
    failed.mutable_status()->set_code(grpc::StatusCode::INTERNAL);
    failed.mutable_status()->set_message("the response could not be encoded");
    encode(failed, &write_buffer_);
  }
  // working_ holds Finish off until OnWriteDone.
  order_.before_operation();
  StartWrite(&write_buffer_);
}

}  // namespace torqued::server
