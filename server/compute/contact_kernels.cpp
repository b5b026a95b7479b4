// Kernels of the contact RPCs: thin loops over the states of a batch around contact_dynamics(),
// impact() and simulate().
#include "server/compute/contact_kernels.hpp"

#include <algorithm>

#include "server/compute/state_arrays.hpp"

namespace torqued::server {
namespace {

int to_proto(ComplementarityStatus status) {
  switch (status) {
    case ComplementarityStatus::kNoSolution:
      return v1::CONTACT_SOLVER_STATUS_NO_SOLUTION;
    case ComplementarityStatus::kIterationLimit:
      return v1::CONTACT_SOLVER_STATUS_ITERATION_LIMIT;
    default:
      return v1::CONTACT_SOLVER_STATUS_SOLVED;
  }
}

int to_proto(ContactMode mode) {
  switch (mode) {
    case ContactMode::kSticking:
      return v1::CONTACT_MODE_STICKING;
    case ContactMode::kSliding:
      return v1::CONTACT_MODE_SLIDING;
    default:
      return v1::CONTACT_MODE_SEPARATING;
  }
}

ContactWorkspace& contact_workspace(const Model& model, ModelWorkspace& ws, int contacts) {
  if (!ws.contact || ws.contact->max_contacts < contacts) {
    ws.contact = std::make_unique<ContactWorkspace>(model, std::max(1, contacts));
  }
  return *ws.contact;
}

SimulationWorkspace& simulation_workspace(const Model& model, ModelWorkspace& ws, int candidates) {
  if (!ws.simulation || ws.simulation->contact.max_contacts < candidates) {
    ws.simulation = std::make_unique<SimulationWorkspace>(model, std::max(1, candidates));
  }
  return *ws.simulation;
}

// State `state`'s contact results.
void write_contacts(const ContactWorkspace& cw, int contacts, const ComplementarityResult& result,
                    int state, const ContactOutput& out) {
  const std::ptrdiff_t first = static_cast<std::ptrdiff_t>(state) * contacts;
  for (int c = 0; c < contacts; ++c) {
    Eigen::Map<Vec3>(out.forces + 3 * (first + c)) = cw.forces[c];
    out.modes[first + c] = to_proto(cw.modes[c]);
  }
  out.status[state] = to_proto(result.status);
  out.iterations[state] = static_cast<std::uint32_t>(result.iterations);
  out.residual[state] = result.residual;
}

}  // namespace

std::size_t contact_workspace_bytes(int nv, int contacts) {
  const auto rows = static_cast<std::size_t>(3 * contacts);
  const auto c = static_cast<std::size_t>(contacts);
  return sizeof(double) *
         (2 * rows * static_cast<std::size_t>(nv) + rows * rows + c * (2 * c + 2) + c * c);
}

void contact_dynamics(const Model& model, ModelWorkspace& ws,
                      const v1::ContactDynamicsRequest& request,
                      std::span<const PointContact> contacts, const ContactOptions& options,
                      int begin, int end, const ContactOutput& out) {
  const int count = static_cast<int>(contacts.size());
  ContactWorkspace& cw = contact_workspace(model, ws, count);
  for (int s = begin; s < end; ++s) {
    const ComplementarityResult result = torqued::contact_dynamics(
        model, ws.data, cw, row(request.q(), s, model.nq), row(request.v(), s, model.nv),
        row(request.tau(), s, model.nv), contacts, options);
    copy_out(cw.acceleration, out.velocities, s);
    write_contacts(cw, count, result, s, out);
  }
}

void impact(const Model& model, ModelWorkspace& ws, const v1::ImpactRequest& request,
            std::span<const PointContact> contacts, const ContactOptions& options, int begin,
            int end, const ContactOutput& out) {
  const int count = static_cast<int>(contacts.size());
  ContactWorkspace& cw = contact_workspace(model, ws, count);
  for (int s = begin; s < end; ++s) {
    const ComplementarityResult result =
        torqued::impact(model, ws.data, cw, row(request.q(), s, model.nq),
                        row(request.v(), s, model.nv), contacts, request.restitution(), options);
    copy_out(cw.velocity, out.velocities, s);
    write_contacts(cw, count, result, s, out);
  }
}

void simulate(const Model& model, ModelWorkspace& ws, const v1::SimulateRequest& request,
              std::span<const ContactCandidate> candidates, const SimulationOptions& options,
              int steps, int torque_columns, int begin, int end, const SimulationOutput& out) {
  SimulationWorkspace& sw = simulation_workspace(model, ws, static_cast<int>(candidates.size()));
  const std::ptrdiff_t q_size = static_cast<std::ptrdiff_t>(steps) * model.nq;
  const std::ptrdiff_t v_size = static_cast<std::ptrdiff_t>(steps) * model.nv;
  const std::ptrdiff_t tau_size = static_cast<std::ptrdiff_t>(torque_columns) * model.nv;
  for (int s = begin; s < end; ++s) {
    const Eigen::Map<const Eigen::MatrixXd> torques(request.tau().data() + s * tau_size, model.nv,
                                                    torque_columns);
    const SimulationResult result = torqued::simulate(
        model, ws.data, sw, row(request.q(), s, model.nq), row(request.v(), s, model.nv), torques,
        candidates, options, Eigen::Map<Eigen::MatrixXd>(out.q + s * q_size, model.nq, steps),
        Eigen::Map<Eigen::MatrixXd>(out.v + s * v_size, model.nv, steps));
    out.status[s] = to_proto(result.status);
    out.max_iterations[s] = static_cast<std::uint32_t>(result.max_iterations);
    out.max_residual[s] = result.max_residual;
    out.max_contacts[s] = static_cast<std::uint32_t>(result.max_contacts);
  }
}

}  // namespace torqued::server
