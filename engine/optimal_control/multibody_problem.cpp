// A robot's shooting problem (see the header): the engine's step at every running knot, and the
// sum of weighted activations of residuals with its Gauss-Newton derivatives. The products of a
// term's R_x and R_u skip the blocks a residual cannot fill (R_q̇ of a configuration residual, R_u
// of a state residual), and the state and control residuals, whose R is the identity but for the
// multi-DOF joints' blocks of R_q, add their terms block by block, as control about gravity adds
// those of its R_u, which selects the actuated DOFs.
#include "engine/optimal_control/multibody_problem.hpp"

#include <algorithm>
#include <cassert>
#include <stdexcept>

#include "engine/algorithms/world_frame.hpp"
#include "engine/model/configuration.hpp"
#include "engine/optimal_control/quasi_static.hpp"

namespace torqued {

MultibodyProblem::Worker::Worker(const Model& model, WorkerSizes sizes)
    : sizes(sizes),
      data(model),
      // A friction cone's residual has 1 + faces values: room for the largest one's faces.
      residuals(model, std::max(sizes.residual, 1)),
      q_next(model.nq),
      v_next(model.nv),
      lambda(sizes.constraint_rows),
      da_dq(model.nv, model.nv),
      da_dv(model.nv, model.nv),
      da_dtau(model.nv, model.nv),
      dlambda_dq(sizes.constraint_rows, model.nv),
      dlambda_dv(sizes.constraint_rows, model.nv),
      dlambda_dtau(sizes.constraint_rows, model.nv),
      dlambda_dx(sizes.constraint_rows, 2 * model.nv),
      dlambda_du(sizes.constraint_rows, sizes.controls),
      r(sizes.residual),
      gradient(sizes.residual),
      curvature(sizes.residual),
      rx(sizes.residual, 2 * model.nv),
      ru(sizes.residual, sizes.controls),
      weighted(sizes.residual, 2 * model.nv + sizes.controls) {}

namespace {

bool reads_multipliers(const KnotModel& knot) {
  return std::any_of(knot.costs.begin(), knot.costs.end(), [](const CostTerm& term) {
    return term.residual.type == ResidualType::kContactForce ||
           term.residual.type == ResidualType::kFrictionCone;
  });
}

// lx += R_xᵀ g, lu += R_uᵀ g, and the Gauss-Newton lxx += R_xᵀ C R_x, luu += R_uᵀ C R_u,
// lxu += R_xᵀ C R_u, with g and C the term's weighted gradient and curvature (diagonal).
void add_term_derivatives(const Model& model, const Residual& residual,
                          const Eigen::Ref<const Eigen::VectorXd>& g,
                          const Eigen::Ref<const Eigen::VectorXd>& c,
                          const Eigen::Ref<const Eigen::MatrixXd>& rx,
                          const Eigen::Ref<const Eigen::MatrixXd>& ru,
                          std::span<const int> actuated_dofs, Eigen::MatrixXd& weighted,
                          KnotValues& values) {
  const int nv = model.nv;
  const auto size = g.size();
  switch (residual.type) {
    case ResidualType::kState: {
      // R_q is block diagonal per joint, R_q̇ the identity.
      for_each_joint_block(model, [&]<int kDofs>(int at) {
        const auto block = rx.block<kDofs, kDofs>(at, at);
        values.lx.segment<kDofs>(at).noalias() += block.transpose() * g.segment<kDofs>(at);
        values.lxx.block<kDofs, kDofs>(at, at).noalias() +=
            block.transpose() * c.segment<kDofs>(at).asDiagonal() * block;
      });
      values.lx.tail(nv) += g.tail(nv);
      values.lxx.diagonal().tail(nv) += c.tail(nv);
      return;
    }
    case ResidualType::kControl:
      values.lu += g;
      values.luu.diagonal() += c;
      return;
    default:
      break;
  }
  const int columns = residual_depends_on_velocity(residual) ? 2 * nv : nv;
  const auto rxs = rx.leftCols(columns);
  auto weighted_rx = weighted.topLeftCorner(size, columns);
  weighted_rx.noalias() = c.asDiagonal() * rxs;
  values.lx.head(columns).noalias() += rxs.transpose() * g;
  values.lxx.topLeftCorner(columns, columns).noalias() += rxs.transpose() * weighted_rx;
  if (residual.type == ResidualType::kControlGravity) {
    // R_u selects the actuated DOFs' rows: its products are those rows of g, C and C R_q.
    for (std::size_t i = 0; i < actuated_dofs.size(); ++i) {
      const int dof = actuated_dofs[i];
      const auto at = static_cast<Eigen::Index>(i);
      values.lu[at] += g[dof];
      values.luu(at, at) += c[dof];
      values.lxu.col(at).head(columns) += weighted_rx.row(dof).transpose();
    }
    return;
  }
  if (residual_depends_on_control(residual)) {
    auto weighted_ru = weighted.block(0, columns, size, ru.cols());
    weighted_ru.noalias() = c.asDiagonal() * ru;
    values.lu.noalias() += ru.transpose() * g;
    values.luu.noalias() += ru.transpose() * weighted_ru;
    values.lxu.topRows(columns).noalias() += rxs.transpose() * weighted_ru;
  }
}

// Throws std::invalid_argument when the sizes, indices or cost terms of a problem's arguments do
// not fit the model.
void check_problem(const Model& model, const Eigen::VectorXd& initial_state,
                   const MultibodyDynamics& dynamics, const std::vector<KnotModel>& models,
                   const std::vector<int>& knot_models, int terminal_model) {
  const int count = static_cast<int>(models.size());
  const auto valid = [&](int index) { return index >= 0 && index < count; };
  if (initial_state.size() != model.nq + model.nv || knot_models.empty() ||
      !valid(terminal_model) || !std::all_of(knot_models.begin(), knot_models.end(), valid)) {
    throw std::invalid_argument("MultibodyProblem: x0's size or a knot's model index is wrong");
  }
  const ControlBounds& bounds = dynamics.control_bounds;
  const auto controls = static_cast<Eigen::Index>(dynamics.actuated_dofs.size());
  if ((bounds.lower.size() > 0 || bounds.upper.size() > 0) &&
      (bounds.lower.size() != controls || bounds.upper.size() != controls ||
       (bounds.lower.array() > bounds.upper.array()).any())) {
    throw std::invalid_argument("MultibodyProblem: control bounds of the wrong size or crossed");
  }
  for (int index = 0; index < count; ++index) {
    const KnotModel& knot = models[static_cast<std::size_t>(index)];
    for (const CostTerm& term : knot.costs) {
      const Residual& residual = term.residual;
      const bool contact = residual.type == ResidualType::kContactForce ||
                           residual.type == ResidualType::kFrictionCone;
      const bool frame = residual.type == ResidualType::kFrameTranslation ||
                         residual.type == ResidualType::kFramePlacement ||
                         residual.type == ResidualType::kFrameRotation ||
                         residual.type == ResidualType::kFrameVelocity ||
                         residual.type == ResidualType::kFrictionCone;
      if ((contact &&
           (residual.contact < 0 || residual.contact >= static_cast<int>(knot.contacts.size()))) ||
          (frame &&
           (residual.frame < 0 || residual.frame >= static_cast<int>(model.frames.size()))) ||
          (index == terminal_model && residual_depends_on_control(residual))) {
        throw std::invalid_argument("MultibodyProblem: cost term " + term.name +
                                    " names no contact or frame of its knot, or reads the "
                                    "controls at the terminal knot");
      }
    }
  }
}

}  // namespace

MultibodyProblem::MultibodyProblem(const Model& model, Eigen::VectorXd initial_state,
                                   MultibodyDynamics dynamics, std::vector<KnotModel> models,
                                   std::vector<int> knot_models, int terminal_model)
    : model_(model),
      initial_state_(std::move(initial_state)),
      dynamics_(std::move(dynamics)),
      models_(std::move(models)),
      knot_models_(std::move(knot_models)),
      terminal_model_(terminal_model) {
  check_problem(model_, initial_state_, dynamics_, models_, knot_models_, terminal_model_);
  worker_ = make_worker();
  size_evaluated_terms();
}

void MultibodyProblem::assign(Eigen::VectorXd initial_state, MultibodyDynamics dynamics,
                              std::vector<KnotModel> models, std::vector<int> knot_models,
                              int terminal_model) {
  check_problem(model_, initial_state, dynamics, models, knot_models, terminal_model);
  initial_state_ = std::move(initial_state);
  dynamics_ = std::move(dynamics);
  models_ = std::move(models);
  knot_models_ = std::move(knot_models);
  terminal_model_ = terminal_model;
  if (worker_->sizes != worker_sizes()) worker_ = make_worker();
  size_evaluated_terms();
}

void MultibodyProblem::size_evaluated_terms() {
  evaluated_terms_.resize(static_cast<std::size_t>(knots()) + 1);
  for (int t = 0; t <= knots(); ++t) {
    evaluated_terms_[static_cast<std::size_t>(t)].assign(knot_model(t).costs.size(), 0.0);
  }
}

MultibodyProblem::~MultibodyProblem() = default;

MultibodyProblem::WorkerSizes MultibodyProblem::worker_sizes() const {
  WorkerSizes sizes{.controls = control_size()};
  for (const KnotModel& knot : models_) {
    sizes.constraint_rows = std::max(sizes.constraint_rows, constraint_rows(model_, knot.contacts));
    for (const CostTerm& term : knot.costs) {
      sizes.residual = std::max(
          sizes.residual, residual_size(model_, term.residual, control_size(), knot.contacts));
    }
  }
  return sizes;
}

std::unique_ptr<MultibodyProblem::Worker> MultibodyProblem::make_worker() const {
  return std::make_unique<Worker>(model_, worker_sizes());
}

void MultibodyProblem::integrate(const Eigen::VectorXd& x, const Eigen::VectorXd& dx,
                                 Eigen::VectorXd& out) const {
  const int nq = model_.nq, nv = model_.nv;
  torqued::integrate(model_, x.head(nq), dx.head(nv), out.head(nq));
  out.tail(nv) = x.tail(nv) + dx.tail(nv);
}

void MultibodyProblem::difference(const Eigen::VectorXd& x0, const Eigen::VectorXd& x1,
                                  Eigen::VectorXd& out) const {
  const int nq = model_.nq, nv = model_.nv;
  torqued::difference(model_, x0.head(nq), x1.head(nq), out.head(nv));
  out.tail(nv) = x1.tail(nv) - x0.tail(nv);
}

StepSettings MultibodyProblem::step_settings(const KnotModel& knot) const {
  return {.dt = knot.dt,
          .integrator = dynamics_.integrator,
          .actuated_dofs = dynamics_.actuated_dofs,
          .constraints = knot.contacts,
          .gains = dynamics_.gains,
          .touchdown = knot.touchdown,
          .restitution = knot.restitution};
}

void MultibodyProblem::step(Worker& worker, int t, const Eigen::VectorXd& x,
                            const Eigen::VectorXd& u, KnotValues* values) const {
  const KnotModel& knot = knot_model(t);
  const int nq = model_.nq, nv = model_.nv;
  const StepSettings settings = step_settings(knot);
  const int rows = constraint_rows(model_, knot.contacts);
  const bool multipliers = rows > 0 && reads_multipliers(knot);
  const auto span_of = [](auto& matrix, int count) {
    return std::span<double>(matrix.data(), static_cast<std::size_t>(count));
  };
  const KnotDerivatives rates{
      span_of(worker.da_dq, nv * nv),        span_of(worker.da_dv, nv * nv),
      span_of(worker.da_dtau, nv * nv),      span_of(worker.dlambda_dq, rows * nv),
      span_of(worker.dlambda_dv, rows * nv), span_of(worker.dlambda_dtau, rows * nv)};
  // Ref members bind at construction: with the Jacobians, the knot's fx and fu.
  StepOutput out = values != nullptr
                       ? StepOutput{.q_next = worker.q_next,
                                    .v_next = worker.v_next,
                                    .fx = values->fx,
                                    .fu = values->fu,
                                    .knot_derivatives = multipliers ? &rates : nullptr}
                       : StepOutput{.q_next = worker.q_next, .v_next = worker.v_next};
  if (multipliers) out.multipliers = span_of(worker.lambda, rows);
  torqued::step(model_, worker.data, x.head(nq), x.tail(nv), u, settings, out);
  if (values == nullptr || !multipliers) return;
  // ∂λ/∂x and ∂λ/∂u, through a touchdown's impact: λ is that of the dynamics at (q, v⁺).
  const auto dlambda_dq = worker.dlambda_dq.topRows(rows);
  const auto dlambda_dv = worker.dlambda_dv.topRows(rows);
  auto dlambda_dx = worker.dlambda_dx.topRows(rows);
  if (knot.touchdown) {
    const ImpulseDerivativesWorkspace& impact =
        worker.data.workspace<ImpulseDerivativesWorkspace>();
    dlambda_dx.leftCols(nv) = dlambda_dq;
    dlambda_dx.leftCols(nv).noalias() += dlambda_dv * impact.dvelocity_dq;
    dlambda_dx.rightCols(nv).noalias() = dlambda_dv * impact.dvelocity_dv;
  } else {
    dlambda_dx.leftCols(nv) = dlambda_dq;
    dlambda_dx.rightCols(nv) = dlambda_dv;
  }
  for (int c = 0; c < control_size(); ++c) {
    worker.dlambda_du.col(c).head(rows) =
        worker.dlambda_dtau.col(dynamics_.actuated_dofs[static_cast<std::size_t>(c)]).head(rows);
  }
}

double MultibodyProblem::knot_costs(Worker& worker, int t, const Eigen::VectorXd& x,
                                    const Eigen::VectorXd& u, KnotValues* values,
                                    std::span<double> terms) const {
  const KnotModel& knot = knot_model(t);
  const int nq = model_.nq, nv = model_.nv, nu = control_size();
  const bool running = t < knots();
  const double scale = running ? knot.dt : 1.0;
  const int rows = constraint_rows(model_, knot.contacts);
  const auto q = x.head(nq);
  const auto v = x.tail(nv);
  const KnotPoint point{
      q,
      v,
      running ? Eigen::Ref<const Eigen::VectorXd>(u) : Eigen::Ref<const Eigen::VectorXd>(u.head(0)),
      dynamics_.actuated_dofs,
      knot.contacts,
      worker.lambda.head(rows),
      worker.dlambda_dx.topRows(rows),
      worker.dlambda_du.topRows(rows)};
  // The residuals read the bodies placed at q: the step at this knot left them so, or here.
  if (!running || !step_leaves_knot_placements(model_, step_settings(knot))) {
    place_in_world(model_, worker.data, q.data());
  }
  double cost = 0.0;
  for (std::size_t i = 0; i < knot.costs.size(); ++i) {
    const CostTerm& term = knot.costs[i];
    const Residual& residual = term.residual;
    const int size = residual_size(model_, residual, nu, knot.contacts);
    auto r = worker.r.head(size);
    auto rx = worker.rx.topRows(size);
    auto ru = worker.ru.topRows(size);
    const bool derivatives = values != nullptr;
    evaluate_residual(model_, worker.data, worker.residuals, residual, point, derivatives, r, rx,
                      ru);
    const double weight = scale * term.weight;
    double value;
    if (!derivatives) {
      value = activation_value(term.activation, r);
    } else {
      auto gradient = worker.gradient.head(size);
      auto curvature = worker.curvature.head(size);
      value = activation_derivatives(term.activation, r, gradient, curvature);
      gradient *= weight;
      curvature *= weight;
      add_term_derivatives(model_, residual, gradient, curvature, rx, ru, dynamics_.actuated_dofs,
                           worker.weighted, *values);
    }
    cost += weight * value;
    if (!terms.empty()) terms[i] = weight * value;
  }
  return cost;
}

double MultibodyProblem::evaluate_knot(Worker& worker, int t, const Eigen::VectorXd& x,
                                       const Eigen::VectorXd& u, Eigen::VectorXd& next,
                                       std::span<double> terms) const {
  if (t < knots()) {
    step(worker, t, x, u, nullptr);
    next << worker.q_next, worker.v_next;
  }
  return knot_costs(worker, t, x, u, nullptr, terms);
}

void MultibodyProblem::differentiate_knot(Worker& worker, int t, const Eigen::VectorXd& x,
                                          const Eigen::VectorXd& u, KnotValues& values) const {
  values.lx.setZero();
  values.lu.setZero();
  values.lxx.setZero();
  values.luu.setZero();
  values.lxu.setZero();
  if (t < knots()) {
    step(worker, t, x, u, &values);
    values.next << worker.q_next, worker.v_next;
  }
  values.cost = knot_costs(worker, t, x, u, &values, {});
}

void MultibodyProblem::cost_terms(Worker& worker, int t, const Eigen::VectorXd& x,
                                  const Eigen::VectorXd& u, std::span<double> values) const {
  assert(values.size() == knot_model(t).costs.size());
  if (t < knots()) step(worker, t, x, u, nullptr);
  knot_costs(worker, t, x, u, nullptr, values);
}

double MultibodyProblem::evaluate(int t, const Eigen::VectorXd& x, const Eigen::VectorXd& u,
                                  Eigen::VectorXd& next) {
  return evaluate_knot(*worker_, t, x, u, next, evaluated_terms_[static_cast<std::size_t>(t)]);
}

void MultibodyProblem::differentiate(std::span<const Eigen::VectorXd> xs,
                                     std::span<const Eigen::VectorXd> us,
                                     std::span<KnotValues> values) {
  const int count = knots();
  for (int t = 0; t <= count; ++t) {
    const std::size_t at = static_cast<std::size_t>(t);
    differentiate_knot(*worker_, t, xs[at], t < count ? us[at] : us[at - 1], values[at]);
  }
}

void MultibodyProblem::cold_start(std::vector<Eigen::VectorXd>& xs,
                                  std::vector<Eigen::VectorXd>& us) const {
  const int count = knots();
  xs.assign(static_cast<std::size_t>(count) + 1, initial_state_);
  std::vector<Eigen::VectorXd> per_model(models_.size());
  us.resize(static_cast<std::size_t>(count));
  for (int t = 0; t < count; ++t) {
    const int index = knot_models_[static_cast<std::size_t>(t)];
    Eigen::VectorXd& u = per_model[static_cast<std::size_t>(index)];
    if (u.size() == 0) {
      u.resize(control_size());
      quasi_static_controls(model_, worker_->data, initial_state_.head(model_.nq),
                            dynamics_.actuated_dofs,
                            models_[static_cast<std::size_t>(index)].contacts, u);
    }
    us[static_cast<std::size_t>(t)] = u;
  }
}

}  // namespace torqued
