// Simulation by the discrete step (semi-implicit or explicit Euler, RK4), or velocity-level contact
// time stepping (Stewart & Trinkle 1996; Anitescu & Potra 1997); see simulate.hpp for the schemes.
#include "engine/algorithms/simulate.hpp"

#include <algorithm>
#include <cassert>
#include <numeric>

#include "engine/algorithms/ltdl.hpp"
#include "engine/algorithms/rnea.hpp"
#include "engine/model/configuration.hpp"
#include "engine/model/heap_bytes.hpp"

namespace torqued {

namespace {

void merge(SimulationResult& total, const ComplementarityResult& step, int contacts) {
  if (total.status == ComplementarityStatus::kSolved) total.status = step.status;
  total.max_iterations = std::max(total.max_iterations, step.iterations);
  total.max_residual = std::max(total.max_residual, step.residual);
  total.max_contacts = std::max(total.max_contacts, contacts);
}

// A contact-free step by step() (discrete_step.hpp), every DOF driven by its torque.
void free_step(const Model& model, Data& data, SimulationWorkspace& ws, const ConstVectorRef& tau,
               const SimulationOptions& options) {
  const StepSettings settings{
      .dt = options.time_step, .integrator = options.integrator, .actuated_dofs = ws.every_dof};
  step(model, data, ws.q, ws.v, tau, settings, {.q_next = ws.q_next, .v_next = ws.v_next});
  ws.q.swap(ws.q_next);
  ws.v.swap(ws.v_next);
}

ComplementarityResult contact_step(const Model& model, Data& data, SimulationWorkspace& ws,
                                   const ConstVectorRef& tau,
                                   std::span<const ContactCandidate> candidates,
                                   const SimulationOptions& options, int& active) {
  const double h = options.time_step;
  ContactWorkspace& cw = ws.contact;
  Eigen::VectorXd& v_next = cw.velocity;
  v_next = tau - nonlinear_effects(model, data, ws.q, ws.v);
  factor_mass_and_place_bodies(model, data, ws.q);
  ltdl_solve(data, v_next);
  v_next = ws.v + h * v_next;

  int m = 0;
  for (int i = 0; i < static_cast<int>(candidates.size()); ++i) {
    const ContactCandidate& candidate = candidates[i];
    const double gap = data.oMi[candidate.body].act(candidate.point).z() - options.ground_height;
    if (gap >= options.contact_margin) continue;
    ws.contacts[m] = {.body = candidate.body,
                      .point = candidate.point,
                      .normal = Vec3::UnitZ(),
                      .friction = options.friction};
    ws.contact_candidate[m] = i;
    ws.gap[m] = gap;
    ++m;
  }
  active = m;
  ComplementarityResult result;
  if (m > 0) {
    const std::span<const PointContact> contacts(ws.contacts.data(), m);
    assemble_contact_problem(model, data, cw, contacts, options.friction > 0.0);
    const int r = cw.rows_per_contact;
    const int rows = r * m;
    const auto jacobian = cw.jacobian.topRows(rows);
    cw.bias.head(rows).noalias() = jacobian.lazyProduct(v_next);
    for (int c = 0; c < m; ++c) {
      const int row = r * c;
      const double gap = ws.gap[c];
      double target = gap >= 0.0 ? -gap / h : -options.stabilization * gap / h;
      const double approach = jacobian.row(row).dot(ws.v);
      if (approach < -options.restitution_velocity && gap + h * cw.bias[row] < 0.0) {
        target = std::max(target, -options.restitution * approach);
      }
      cw.bias[row] -= target;
      cw.lambda.segment(row, r) = ws.impulses.col(ws.contact_candidate[c]).head(r);
    }
    result = solve_contact_problem(cw, m, options.solver);
    v_next.noalias() += cw.minv_jacobian_t.leftCols(rows).lazyProduct(cw.lambda.head(rows));
    ws.impulses.setZero();
    for (int c = 0; c < m; ++c) {
      ws.impulses.col(ws.contact_candidate[c]).head(r) = cw.lambda.segment(r * c, r);
    }
  } else {
    ws.impulses.setZero();
  }
  ws.v = v_next;
  ws.scaled_v = h * ws.v;
  integrate(model, ws.q, ws.scaled_v, ws.q);
  return result;
}

}  // namespace

SimulationWorkspace::SimulationWorkspace(const Model& model, int max_candidates)
    : contact(model, max_candidates),
      contacts(max_candidates),
      contact_candidate(max_candidates, 0),
      gap(max_candidates, 0.0),
      impulses(Eigen::MatrixXd::Zero(3, max_candidates)),
      q(model.nq),
      v(model.nv),
      tau_zero(Eigen::VectorXd::Zero(model.nv)),
      scaled_v(model.nv),
      q_next(model.nq),
      v_next(model.nv),
      every_dof(static_cast<std::size_t>(model.nv)) {
  std::iota(every_dof.begin(), every_dof.end(), 0);
}

std::size_t SimulationWorkspace::heap_bytes() const {
  return contact.heap_bytes() + total_heap_bytes(contacts, contact_candidate, gap, impulses, q, v,
                                                 tau_zero, scaled_v, q_next, v_next, every_dof);
}

SimulationResult simulate(const Model& model, Data& data, SimulationWorkspace& ws,
                          const ConstVectorRef& q0, const ConstVectorRef& v0,
                          const Eigen::Ref<const Eigen::MatrixXd>& torques,
                          std::span<const ContactCandidate> candidates,
                          const SimulationOptions& options, Eigen::Ref<Eigen::MatrixXd> q_out,
                          Eigen::Ref<Eigen::MatrixXd> v_out) {
  const int steps = static_cast<int>(q_out.cols());
  assert(fits(model, data, q0, v0));
  assert(v_out.cols() == steps && q_out.rows() == model.nq && v_out.rows() == model.nv);
  assert(torques.cols() == 0 || torques.cols() == 1 || torques.cols() == steps);
  assert(static_cast<int>(candidates.size()) <= ws.contact.max_contacts);
  ws.q = q0;
  ws.v = v0;
  ws.impulses.setZero();
  SimulationResult result;
  // A step costs about a mass matrix and its factorization, plus the contact problem.
  const double step_work =
      4.0 * model.nv * (model.nv + model.nbodies()) + 9.0 * candidates.size() * candidates.size();
  InterruptionPoll poll(options.solver.interruption);
  for (int k = 0; k < steps; ++k) {
    poll.add(step_work);
    const ConstVectorRef tau = torques.cols() == 0   ? ConstVectorRef(ws.tau_zero)
                               : torques.cols() == 1 ? torques.col(0)
                                                     : torques.col(k);
    if (!candidates.empty()) {
      int active = 0;
      const ComplementarityResult step =
          contact_step(model, data, ws, tau, candidates, options, active);
      merge(result, step, active);
    } else {
      free_step(model, data, ws, tau, options);
    }
    q_out.col(k) = ws.q;
    v_out.col(k) = ws.v;
    ++result.steps;
  }
  return result;
}

}  // namespace torqued
