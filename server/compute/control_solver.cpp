// FDDP on a planned problem, its knots spread over the workers (see control_solver.hpp).
#include "server/compute/control_solver.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "server/compute/knot_parallel.hpp"

namespace torqued::server {
namespace {

using Clock = std::chrono::steady_clock;

// The engine's test: the call's end, and the time budget while the solver runs (not while the
// answer is completed after it). Before a deadline the solver stops earlier by the time of a pass
// of derivatives over the knots (the last one, or the one under way projected from its knots done
// so far), which bounds the answer's own pass over them (spread the same way, without
// derivatives), so that the answer is complete before the deadline.
struct SolveInterruption {
  const SolveLimit* limit = nullptr;
  bool budget_applies = true;
  std::atomic<Clock::rep> last_pass{0};
  std::atomic<Clock::rep> pass_start{0};  // 0 between passes
  std::atomic<int> pass_knots{0}, knots_done{0};

  // For a solve within `solve_limit`, before its helpers start.
  void start(const SolveLimit& solve_limit) {
    limit = &solve_limit;
    budget_applies = true;
    last_pass.store(0, std::memory_order_relaxed);
    pass_start.store(0, std::memory_order_relaxed);
  }

  Clock::duration reserve() const {
    Clock::duration reserve(last_pass.load(std::memory_order_relaxed));
    const Clock::rep start = pass_start.load(std::memory_order_relaxed);
    const int done = knots_done.load(std::memory_order_relaxed);
    const int knots = pass_knots.load(std::memory_order_relaxed);
    // Projected once a sixteenth of the knots is done: the first ones pay the pass's first
    // touches of memory.
    if (start != 0 && done > 0 && done >= knots / 16) {
      const Clock::duration elapsed = Clock::now().time_since_epoch() - Clock::duration(start);
      reserve = std::max(reserve, elapsed * knots / done);
    }
    return reserve;
  }

  static bool requested(const void* state) {
    const auto& self = *static_cast<const SolveInterruption*>(state);
    const SolveLimit& limit = *self.limit;
    if (self.budget_applies) {
      const Clock::time_point now = Clock::now();
      if (now >= limit.budget_end || (limit.answer_by != Clock::time_point::max() &&
                                      now + self.reserve() >= limit.answer_by)) {
        return true;
      }
    }
    return (limit.call_should_stop != nullptr && limit.call_should_stop(limit.call));
  }
};

// The planned problem, whose knots' derivatives (FDDP's differentiate(), most of an iteration)
// and final values are computed by every participant of a solve's KnotParallel, each with its own
// scratch.
class SpreadProblem final : public MultibodyProblem {
 public:
  SpreadProblem(const PlannedSolve& plan, SolveInterruption& state,
                const Interruption& interruption)
      : MultibodyProblem(*plan.entry->model, plan.x0, plan.dynamics, plan.models, plan.knot_models,
                         plan.terminal_model),
        state_(state),
        interruption_(interruption),
        done_(static_cast<std::size_t>(knots()) + 1) {}

  // Becomes `plan`'s problem (on the same model), keeping the workers while their sizes fit.
  void rebind(const PlannedSolve& plan) {
    assign(plan.x0, plan.dynamics, plan.models, plan.knot_models, plan.terminal_model);
    if (done_.size() != static_cast<std::size_t>(knots()) + 1) {
      done_ = std::vector<std::atomic<bool>>(static_cast<std::size_t>(knots()) + 1);
    }
    if (!workers_.empty() && workers_.front()->sizes != worker_sizes()) workers_.clear();
  }

  // The solve's participants, a worker for each.
  void spread_over(KnotParallel& parallel) {
    parallel_ = &parallel;
    while (static_cast<int>(workers_.size()) < parallel.participants()) {
      workers_.push_back(make_worker());
      workers_.back()->data.interruption = interruption_;
    }
  }

  int workers() const { return static_cast<int>(workers_.size()); }

  void differentiate(std::span<const Eigen::VectorXd> xs, std::span<const Eigen::VectorXd> us,
                     std::span<KnotValues> values) override {
    differentiate_overlapping(xs, us, values, [](int) {});
  }

  // The knots from T down, the driver (slot 0) telling `ready` after each of its own how far
  // down every knot is done, so that FDDP's backward pass, on the driver, follows the helpers.
  void differentiate_overlapping(std::span<const Eigen::VectorXd> xs,
                                 std::span<const Eigen::VectorXd> us, std::span<KnotValues> values,
                                 const std::function<void(int from)>& ready) override {
    const int count = knots();
    const Clock::time_point start = Clock::now();
    state_.pass_knots.store(count + 1, std::memory_order_relaxed);
    state_.knots_done.store(0, std::memory_order_relaxed);
    state_.pass_start.store(start.time_since_epoch().count(), std::memory_order_relaxed);
    for (std::atomic<bool>& knot : done_) knot.store(false, std::memory_order_relaxed);
    int done_from = count + 1;
    parallel_->run(count + 1, [&](int slot, int taken) {
      // A small model's knot is below the engine's own polling: ask before each one.
      if (SolveInterruption::requested(&state_)) throw Interrupted();
      const int t = count - taken;
      const auto at = static_cast<std::size_t>(t);
      differentiate_knot(worker(slot), t, xs[at], us[t < count ? at : at - 1], values[at]);
      done_[at].store(true, std::memory_order_release);
      state_.knots_done.fetch_add(1, std::memory_order_relaxed);
      if (slot != 0) return;
      while (done_from > 0 &&
             done_[static_cast<std::size_t>(done_from - 1)].load(std::memory_order_acquire)) {
        --done_from;
      }
      ready(done_from);
    });
    state_.pass_start.store(0, std::memory_order_relaxed);
    state_.last_pass.store((Clock::now() - start).count(), std::memory_order_relaxed);
  }

  Worker& worker(int slot) { return *workers_[static_cast<std::size_t>(slot)]; }

 private:
  KnotParallel* parallel_ = nullptr;  // the solve's under way
  SolveInterruption& state_;
  const Interruption& interruption_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::atomic<bool>> done_;  // knot t differentiated in the current pass
};

v1::StopReason stop_reason(FddpOutcome outcome) {
  switch (outcome) {
    case FddpOutcome::kConverged:
      return v1::STOP_REASON_CONVERGED;
    case FddpOutcome::kIterationLimit:
      return v1::STOP_REASON_ITERATION_LIMIT;
    case FddpOutcome::kRegularizationLimit:
      return v1::STOP_REASON_REGULARIZATION_LIMIT;
    case FddpOutcome::kInterrupted:
      return v1::STOP_REASON_TIME_BUDGET;
  }
  return v1::STOP_REASON_UNSPECIFIED;
}

// Throws SolveOverflow naming the first of the answer's values that is not finite.
void check_finite(const v1::SolveResponse& response) {
  const auto check = [](const char* field, std::span<const double> values) {
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (!std::isfinite(values[i])) {
        throw SolveOverflow(std::string("the solution's ") + field + "[" + std::to_string(i) +
                            "] is not finite (inf or NaN): the problem's values (its states, "
                            "references or weights) overflow its costs or dynamics");
      }
    }
  };
  check("q", {response.q().data(), static_cast<std::size_t>(response.q_size())});
  check("v", {response.v().data(), static_cast<std::size_t>(response.v_size())});
  check("u", {response.u().data(), static_cast<std::size_t>(response.u_size())});
  check("feedback",
        {response.feedback().data(), static_cast<std::size_t>(response.feedback_size())});
  const double totals[] = {response.cost(), response.max_gap()};
  check("cost", totals);
  for (int i = 0; i < response.cost_terms_size(); ++i) {
    const double value = response.cost_terms(i).value();
    check("cost_terms value", {&value, 1});
  }
  for (const v1::SolverIteration& it : response.iterations()) {
    const double logged[] = {it.cost(), it.stop(), it.step(), it.regularization(), it.gaps()};
    check("iterations", logged);
  }
}

double* sized(google::protobuf::RepeatedField<double>* field, std::size_t n) {
  field->Resize(static_cast<int>(n), 0.0);
  return field->mutable_data();
}

// A model's solver, kept in its workspace between solves (workspace_pool.hpp): the problem with
// each participant's scratch, FDDP's buffers (most of the bytes: every knot's derivatives, value
// function and gains, which a new solver allocates and first touches) and the answer's. Rebound
// to each solve's plan; FDDP's buffers stay while the knots, state and control sizes do.
struct SolveWork final : CallBuffers {
  explicit SolveWork(const PlannedSolve& plan)
      : model(plan.entry->model),
        interruption{&SolveInterruption::requested, &state},
        problem(plan, state, interruption),
        fddp(std::in_place, problem) {}

  // Whether FDDP's buffers fit `plan`'s problem.
  bool fits(const PlannedSolve& plan) const {
    return model == plan.entry->model &&
           problem.knots() == static_cast<int>(plan.knot_models.size()) &&
           problem.control_size() == static_cast<int>(plan.dynamics.actuated_dofs.size());
  }

  void rebind(const PlannedSolve& plan) {
    problem.rebind(plan);
    if (!fddp->fits()) {
      fddp.reset();
      fddp.emplace(problem);
    }
  }

  std::size_t heap_bytes() const override {
    return solve_bytes(*model, problem.knots(), problem.control_size(), problem.workers());
  }

  const ModelPtr model;  // the problem's
  SolveInterruption state;
  const Interruption interruption;
  SpreadProblem problem;
  std::optional<Fddp> fddp;
  std::vector<Eigen::VectorXd> cold_xs, cold_us;
  // The answer's pass over the knots: each knot's cost terms and gap, each participant's scratch.
  std::vector<std::vector<double>> terms;
  std::vector<double> gaps;
  std::vector<Eigen::VectorXd> next, gap;
};

// A workspace of the plan's model leased for its solver (one whose solver fits the plan when the
// pool has one), given back when the lease ends (once the answer is on its way).
class SolverLease {
 public:
  SolverLease(WorkspacePool& workspaces, const PlannedSolve& plan)
      : workspaces_(workspaces),
        entry_(plan.entry),
        workspace_(workspaces.acquire(*plan.entry, WorkspaceSet{}, [&](const ModelWorkspace& idle) {
          // Only solve() puts a solver in a workspace.
          return idle.solver != nullptr && static_cast<const SolveWork&>(*idle.solver).fits(plan);
        })) {
    if (workspace_->solver) workspace_->memory.release(workspace_->solver->heap_bytes());
  }
  ~SolverLease() { workspaces_.release(*entry_, std::move(workspace_)); }

  SolverLease(const SolverLease&) = delete;
  SolverLease& operator=(const SolverLease&) = delete;

  // The workspace's solver bound to `plan`: rebound when there is one, else new.
  SolveWork& solver(const PlannedSolve& plan) {
    // Only solve() puts a solver in a workspace.
    auto* work = static_cast<SolveWork*>(workspace_->solver.get());
    if (work != nullptr && work->model == plan.entry->model) {
      try {
        work->rebind(plan);
        return *work;
      } catch (...) {
        workspace_->solver.reset();
        throw;
      }
    }
    workspace_->solver.reset();
    auto created = std::make_unique<SolveWork>(plan);
    work = created.get();
    workspace_->solver = std::move(created);
    return *work;
  }

 private:
  WorkspacePool& workspaces_;
  const RegisteredModelPtr entry_;
  std::unique_ptr<ModelWorkspace> workspace_;
};

}  // namespace

std::size_t solve_bytes(const Model& model, int knots, int nu, int threads) {
  const std::size_t nx = static_cast<std::size_t>(model.nq + model.nv);
  const std::size_t ndx = 2 * static_cast<std::size_t>(model.nv), u = static_cast<std::size_t>(nu);
  const std::size_t doubles = 3 * ndx * ndx + 4 * ndx * u + 2 * u * u + 8 * ndx + 4 * nx + 6 * u;
  const std::size_t allocations = 24;
  const std::size_t per_worker =
      8 * (6 * static_cast<std::size_t>(model.nv) * model.nv + 64 * model.nv);
  return (static_cast<std::size_t>(knots) + 1) * (8 * doubles + 32 * allocations) +
         static_cast<std::size_t>(threads) * (per_worker + 65536);
}

void solve(const PlannedSolve& plan, WorkspacePool& workspaces, Executor* executor, int threads,
           const SolveLimit& limit, v1::SolveResponse& response, SolveRemains& remains) {
  const Clock::time_point start = Clock::now();
  const Model& model = *plan.entry->model;
  auto lease = std::make_shared<SolverLease>(workspaces, plan);
  remains = lease;
  SolveWork& work = lease->solver(plan);
  KnotParallel parallel(executor, threads);
  SolveInterruption& state = work.state;
  state.start(limit);
  SpreadProblem& problem = work.problem;
  problem.spread_over(parallel);
  Fddp& fddp = *work.fddp;

  const int knots = problem.knots(), nq = model.nq, nv = model.nv, nu = problem.control_size();
  const int ndx = 2 * nv;

  std::vector<Eigen::VectorXd>& cold_xs = work.cold_xs;
  std::vector<Eigen::VectorXd>& cold_us = work.cold_us;
  const bool warm = !plan.xs.empty();
  if (!warm) {
    problem.cold_start(cold_xs, cold_us);
    // Box-FDDP rolls out clamped controls: a guess outside the bounds (gravity beyond the
    // torque limits) would leave every step's expectation wrong.
    if (const ControlBounds* bounds = problem.control_bounds(); bounds != nullptr) {
      for (Eigen::VectorXd& u : cold_us) u = u.cwiseMax(bounds->lower).cwiseMin(bounds->upper);
    }
  }
  const FddpOutcome outcome = fddp.solve(warm ? plan.xs : cold_xs, warm ? plan.us : cold_us,
                                         warm && plan.feasible, plan.settings, work.interruption);
  // The budget, not the call, ends an interrupted solve: the call's own end is an error.
  if (outcome == FddpOutcome::kInterrupted && limit.call_should_stop != nullptr &&
      limit.call_should_stop(limit.call)) {
    throw Interrupted();
  }
  state.budget_applies = false;

  response.set_knots(static_cast<std::uint32_t>(knots));
  response.set_nu(static_cast<std::uint32_t>(nu));
  response.set_stop_reason(stop_reason(outcome));
  for (const FddpIteration& it : fddp.iterations()) {
    v1::SolverIteration& out = *response.add_iterations();
    out.set_cost(it.cost);
    out.set_stop(it.stop);
    out.set_step(it.step);
    out.set_regularization(it.regularization);
    out.set_gaps(it.gaps);
  }
  double* q = sized(response.mutable_q(), static_cast<std::size_t>(knots + 1) * nq);
  double* v = sized(response.mutable_v(), static_cast<std::size_t>(knots + 1) * nv);
  double* u = sized(response.mutable_u(), static_cast<std::size_t>(knots) * nu);
  for (int t = 0; t <= knots; ++t) {
    const Eigen::VectorXd& x = fddp.xs()[static_cast<std::size_t>(t)];
    Eigen::Map<Eigen::VectorXd>(q + static_cast<std::ptrdiff_t>(t) * nq, nq) = x.head(nq);
    Eigen::Map<Eigen::VectorXd>(v + static_cast<std::ptrdiff_t>(t) * nv, nv) = x.tail(nv);
    if (t < knots) {
      Eigen::Map<Eigen::VectorXd>(u + static_cast<std::ptrdiff_t>(t) * nu, nu) =
          fddp.us()[static_cast<std::size_t>(t)];
    }
  }
  if (plan.feedback) {
    // Rollout's sign: u = ū + K (x ⊖ x̄), where FDDP's policy is u = ū − K (x ⊖ x̄).
    double* k = sized(response.mutable_feedback(), static_cast<std::size_t>(knots) * nu * ndx);
    for (int t = 0; t < knots; ++t) {
      Eigen::Map<Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
          k + static_cast<std::ptrdiff_t>(t) * nu * ndx, nu, ndx) =
          -fddp.feedback()[static_cast<std::size_t>(t)];
    }
  }

  // The solution's cost by term and its largest gap: from FDDP's rollout of it when its last
  // iteration took a step (as Crocoddyl's datas hold them after its solve()), else from one more
  // pass over the knots, spread like the derivatives (the last iteration's values are the
  // iterate's before its step): cost_terms() steps each running knot, leaving its next state in
  // the worker.
  const bool rolled_out = fddp.rolled_out();
  double max_gap = fddp.rolled_out_gap();
  std::vector<std::vector<double>>& terms = work.terms;
  if (!rolled_out) {
    std::vector<double>& gaps = work.gaps;
    std::vector<Eigen::VectorXd>& next = work.next;
    std::vector<Eigen::VectorXd>& gap = work.gap;
    terms.resize(static_cast<std::size_t>(knots) + 1);
    gaps.assign(static_cast<std::size_t>(knots) + 1, 0.0);
    next.assign(static_cast<std::size_t>(parallel.participants()), Eigen::VectorXd(nq + nv));
    gap.assign(static_cast<std::size_t>(parallel.participants()), Eigen::VectorXd(ndx));
    const Eigen::VectorXd no_control = Eigen::VectorXd::Zero(nu);
    parallel.run(knots + 1, [&](int slot, int t) {
      const auto at = static_cast<std::size_t>(t), s = static_cast<std::size_t>(slot);
      const Eigen::VectorXd& x = fddp.xs()[at];
      MultibodyProblem::Worker& worker = problem.worker(slot);
      terms[at].resize(problem.knot_model(t).costs.size());
      problem.cost_terms(worker, t, x, t < knots ? fddp.us()[at] : no_control, terms[at]);
      if (t < knots) {
        next[s] << worker.q_next, worker.v_next;
        problem.difference(fddp.xs()[at + 1], next[s], gap[s]);
        gaps[at + 1] = gap[s].lpNorm<Eigen::Infinity>();
      } else {
        problem.difference(fddp.xs()[0], problem.initial_state(), gap[s]);
        gaps[0] = gap[s].lpNorm<Eigen::Infinity>();
      }
    });
    max_gap = *std::max_element(gaps.begin(), gaps.end());
  }
  std::vector<double> by_term(plan.term_names.size(), 0.0);
  for (int t = 0; t <= knots; ++t) {
    const auto at = static_cast<std::size_t>(t);
    const int index = t < knots ? plan.knot_models[at] : plan.terminal_model;
    const std::vector<int>& term_of = plan.terms_of_model[static_cast<std::size_t>(index)];
    const std::span<const double> values =
        rolled_out ? problem.evaluated_terms(t) : std::span<const double>(terms[at]);
    for (std::size_t i = 0; i < values.size(); ++i) {
      by_term[static_cast<std::size_t>(term_of[i])] += values[i];
    }
  }
  double cost = 0.0;
  for (std::size_t i = 0; i < by_term.size(); ++i) {
    v1::CostValue& out = *response.add_cost_terms();
    out.set_name(plan.term_names[i]);
    out.set_value(by_term[i]);
    cost += by_term[i];
  }
  response.set_cost(cost);
  response.set_max_gap(max_gap);
  response.set_feasible(fddp.feasible());
  check_finite(response);
  response.set_solve_seconds(std::chrono::duration<double>(Clock::now() - start).count());
}

}  // namespace torqued::server
