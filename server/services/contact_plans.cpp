// The plans of the contact RPCs, ContactDynamics, Impact and Simulate (declared by their rows,
// dynamics_rpcs.hpp).
// Contacts and candidates are resolved from frame or link names to the engine's (body, point in
// the body frame) once per call, and every option is checked against the range the engine
// assumes.
#include <cmath>
#include <limits>
#include <type_traits>

#include "server/compute/contact_kernels.hpp"
#include "server/compute/engine_enums.hpp"
#include "server/services/dynamics_plans.hpp"
#include "server/services/dynamics_rpcs.hpp"
#include "server/services/request_checks.hpp"

namespace torqued::server {
namespace {

constexpr double kNormalTolerance = 1e-6;

// The work of one state of a contact problem of `rows` rows in units of one dynamics call (about
// a thousand floating-point operations), at the solver's worst: every iteration a pass over the
// rows² Delassus matrix. For the runner's inline and split decisions, so that a problem that may
// take long never runs on a gRPC thread.
std::int64_t contact_cost(int rows, int max_iterations) {
  return 1 + 3 * static_cast<std::int64_t>(rows) * rows * max_iterations / 1000;
}

int contact_rows(std::span<const PointContact> contacts) {
  return static_cast<int>(contacts.size()) * (has_friction(contacts) ? 3 : 1);
}

// The options a chunk runs with: the call's, and the chunk's way to stop them.
template <typename Options>
Options interruptible(Options options, const WorkerContext& worker) {
  if constexpr (std::is_same_v<Options, SimulationOptions>) {
    options.solver.interruption = worker.interruption();
  } else {
    options.interruption = worker.interruption();
  }
  return options;
}

// The body and the point in the body frame of `point` given in the frame (or link) `name`.
grpc::Status resolve_point(const Model& m, const std::string& field, const std::string& name,
                           const DoubleArray& point, int& body, Vec3& in_body) {
  Transform placement = Transform::Identity();
  int f = -1;
  if (grpc::Status s = find_frame(m, field + ".frame", name, f); !s.ok()) return s;
  if (f >= 0) {
    body = m.frames[f].body;
    placement = m.frames[f].placement;
  } else if (const int b = m.find_body(name); b >= 0) {
    body = b;
  } else {
    return invalid(field + ".frame: no frame or link named " + quote_input(name) + " in model " +
                   quote_input(m.name) + " (see Model.frames)");
  }
  if (body == 0) {
    return invalid(field + ".frame: " + quote_input(name) +
                   " is on the fixed base, which no contact can move; name a frame of a "
                   "moving body");
  }
  if (!point.empty() && point.size() != 3) {
    return invalid(field + ".point: expected 3 values (x, y, z) or none, got " +
                   std::to_string(point.size()));
  }
  Vec3 p = Vec3::Zero();
  for (int i = 0; i < point.size(); ++i) {
    if (grpc::Status s = check_range(field + ".point[" + std::to_string(i) + "]", point[i],
                                     -INFINITY, INFINITY, "finite");
        !s.ok()) {
      return s;
    }
    p[i] = point[i];
  }
  in_body = placement.act(p);
  return grpc::Status::OK;
}

// The Delassus matrix and the solvers' buffers grow with the square of the contacts, in the
// workspace of every thread that runs the call.
grpc::Status check_contact_count(const char* field, int count, const RequestLimits& limits,
                                 const RegisteredModel& entry) {
  if (count > limits.max_contacts) {
    return over_limit(field, count, limits.max_contacts, "--max-contacts");
  }
  const std::int64_t bytes =
      static_cast<std::int64_t>(workspace_bytes(*entry.model, SimulateRpc::kSimulate.workspaces) +
                                contact_workspace_bytes(entry.model->nv, count));
  if (bytes > limits.max_workspace_bytes) {
    return over_limit(std::string(field) + ": the workspace bytes for " + std::to_string(count),
                      bytes, limits.max_workspace_bytes, "--max-workspace-bytes");
  }
  return grpc::Status::OK;
}

grpc::Status resolve_contacts(const RegisteredModel& entry, const RequestLimits& limits,
                              const google::protobuf::RepeatedPtrField<v1::PointContact>& in,
                              std::vector<PointContact>& out) {
  const Model& m = *entry.model;
  if (grpc::Status s = check_contact_count("contacts", in.size(), limits, entry); !s.ok()) {
    return s;
  }
  out.resize(in.size());
  for (int k = 0; k < in.size(); ++k) {
    const v1::PointContact& c = in[k];
    const std::string field = "contacts[" + std::to_string(k) + "]";
    grpc::Status s = resolve_point(m, field, c.frame(), c.point(), out[k].body, out[k].point);
    if (!s.ok()) return s;
    if (!c.normal().empty()) {
      if (c.normal().size() != 3) {
        return invalid(field + ".normal: expected 3 values (x, y, z) or none, got " +
                       std::to_string(c.normal().size()));
      }
      for (int i = 0; i < 3; ++i) {
        if (s = check_range(field + ".normal[" + std::to_string(i) + "]", c.normal(i), -INFINITY,
                            INFINITY, "finite");
            !s.ok()) {
          return s;
        }
      }
      out[k].normal = Vec3(c.normal(0), c.normal(1), c.normal(2));
      const double norm = out[k].normal.norm();
      if (std::abs(norm - 1.0) > kNormalTolerance) {
        return invalid(field + ".normal: has norm " + number(norm) +
                       "; it must be a unit vector (norm 1 within 1e-6)");
      }
    }
    if (s = check_range(field + ".friction", c.friction(), 0.0, INFINITY, "≥ 0"); !s.ok()) {
      return s;
    }
    out[k].friction = c.friction();
  }
  return grpc::Status::OK;
}

// The solver options: `out` keeps its defaults where a field is unset.
grpc::Status resolve_solver(const v1::ContactSolverOptions& in, const RequestLimits& limits,
                            ContactOptions& out) {
  grpc::Status s;
  if (in.has_tolerance()) {
    if (s = check_range("solver.tolerance", in.tolerance(), 0.0, INFINITY, "≥ 0"); !s.ok()) {
      return s;
    }
    out.tolerance = in.tolerance();
  }
  if (in.has_max_iterations()) {
    if (in.max_iterations() < 1) return invalid("solver.max_iterations: must be at least 1");
    if (in.max_iterations() > static_cast<std::uint32_t>(limits.max_solver_iterations)) {
      return over_limit("solver.max_iterations", in.max_iterations(), limits.max_solver_iterations,
                        "--max-solver-iterations");
    }
    out.max_iterations = static_cast<int>(in.max_iterations());
  }
  if (in.has_slip_velocity()) {
    if (s = check_range("solver.slip_velocity", in.slip_velocity(), 0.0, INFINITY, "≥ 0");
        !s.ok()) {
      return s;
    }
    out.slip_velocity = in.slip_velocity();
  }
  return grpc::Status::OK;
}

// An optional option: the default unless set, then within [low, high].
grpc::Status resolve_optional(const char* field, bool has, double value, double low, double high,
                              const std::string& range, double& out) {
  if (!has) return grpc::Status::OK;
  if (grpc::Status s = check_range(field, value, low, high, range); !s.ok()) return s;
  out = value;
  return grpc::Status::OK;
}

// Sizes a repeated field to n values and returns its storage.
template <typename T>
T* resize(google::protobuf::RepeatedField<T>* field, std::int64_t n) {
  field->Resize(static_cast<int>(n), T{});
  return field->mutable_data();
}

// The values of ContactDynamics' and Impact's per-state results.
std::int64_t contact_output_values(int n, int nv, int contacts) {
  return static_cast<std::int64_t>(n) * (nv + 5 + 4 * contacts);
}

// The per-state results of ContactDynamics and Impact, `velocities` N × nv and C contacts' values,
// sized in `response`.
template <typename Response>
void size_contact_output(Response* response, int n, int nv, int contacts, DoubleArray* velocities,
                         DoubleArray* forces, ContactOutput& out) {
  const std::int64_t states = n;
  response->set_batch_size(n);
  out = {resize(velocities, states * nv),
         resize(forces, 3 * states * contacts),
         resize(response->mutable_modes(), states * contacts),
         resize(response->mutable_status(), states),
         resize(response->mutable_iterations(), states),
         resize(response->mutable_residual(), states)};
}

}  // namespace

grpc::Status ContactDynamicsRpc::plan(const Planning& planning, const RegisteredModelPtr& entry,
                                      int n, const v1::ContactDynamicsRequest* request,
                                      v1::ContactDynamicsResponse* response, PlannedWork& job,
                                      Reservation& memory) {
  grpc::Status s;
  const Model& m = *entry->model;
  if (s = check_array("v", request->v(), n, m.nv); !s.ok()) return s;
  if (s = check_array("tau", request->tau(), n, m.nv); !s.ok()) return s;
  std::vector<PointContact> contacts;
  if (s = resolve_contacts(*entry, planning.limits, request->contacts(), contacts); !s.ok())
    return s;
  ContactOptions options;
  if (s = resolve_solver(request->solver(), planning.limits, options); !s.ok()) return s;
  const int count = static_cast<int>(contacts.size());
  if (s = planning.reserve_response(contact_output_values(n, m.nv, count), memory); !s.ok())
    return s;
  ContactOutput out;
  size_contact_output(response, n, m.nv, count, response->mutable_a(), response->mutable_forces(),
                      out);
  const std::int64_t cost = contact_cost(contact_rows(contacts), options.max_iterations);
  job = {kContactDynamics,
         [entry, request, contacts = std::move(contacts), options, out](WorkerContext& w, int b,
                                                                        int e) {
           contact_dynamics(*entry->model, w.workspace(*entry), *request, contacts,
                            interruptible(options, w), b, e, out);
         },
         cost};
  return grpc::Status::OK;
}

grpc::Status ImpactRpc::plan(const Planning& planning, const RegisteredModelPtr& entry, int n,
                             const v1::ImpactRequest* request, v1::ImpactResponse* response,
                             PlannedWork& job, Reservation& memory) {
  grpc::Status s;
  const Model& m = *entry->model;
  if (s = check_array("v", request->v(), n, m.nv); !s.ok()) return s;
  std::vector<PointContact> contacts;
  if (s = resolve_contacts(*entry, planning.limits, request->contacts(), contacts); !s.ok())
    return s;
  if (s = check_range("restitution", request->restitution(), 0.0, 1.0, "in [0, 1]"); !s.ok()) {
    return s;
  }
  ContactOptions options;
  if (s = resolve_solver(request->solver(), planning.limits, options); !s.ok()) return s;
  const int count = static_cast<int>(contacts.size());
  if (s = planning.reserve_response(contact_output_values(n, m.nv, count), memory); !s.ok())
    return s;
  ContactOutput out;
  size_contact_output(response, n, m.nv, count, response->mutable_v(), response->mutable_impulses(),
                      out);
  const std::int64_t cost = 2 * contact_cost(contact_rows(contacts), options.max_iterations);
  job = {kImpact,
         [entry, request, contacts = std::move(contacts), options, out](WorkerContext& w, int b,
                                                                        int e) {
           impact(*entry->model, w.workspace(*entry), *request, contacts, interruptible(options, w),
                  b, e, out);
         },
         cost};
  return grpc::Status::OK;
}

grpc::Status SimulateRpc::plan(const Planning& planning, const RegisteredModelPtr& entry, int n,
                               const v1::SimulateRequest* request, v1::SimulateResponse* response,
                               PlannedWork& job, Reservation& memory) {
  grpc::Status s;
  const Model& m = *entry->model;
  if (s = check_array("v", request->v(), n, m.nv); !s.ok()) return s;
  const std::uint32_t steps = request->steps();
  if (steps == 0) return invalid("steps: must be at least 1");
  if (steps > static_cast<std::uint32_t>(planning.limits.max_simulation_steps)) {
    const grpc::Status over =
        over_limit("steps", steps, planning.limits.max_simulation_steps, "--max-simulation-steps");
    return {over.error_code(),
            over.error_message() + "; continue from the last state in another call"};
  }
  const int s_steps = static_cast<int>(steps);
  const std::int64_t held = static_cast<std::int64_t>(n) * m.nv;
  const int torque_columns = request->tau().empty()          ? 0
                             : request->tau().size() == held ? 1
                                                             : s_steps;
  if (torque_columns == s_steps &&
      request->tau().size() != held * static_cast<std::int64_t>(s_steps)) {
    return invalid("tau: expected none, " + std::to_string(held) + " values (batch_size " +
                   std::to_string(n) + " × " + std::to_string(m.nv) + ", held) or " +
                   std::to_string(held * s_steps) + " (batch_size " + std::to_string(n) + " × " +
                   std::to_string(steps) + " steps × " + std::to_string(m.nv) +
                   ", one per step), got " + std::to_string(request->tau().size()));
  }
  if (s = check_array("tau", request->tau(), n, torque_columns * m.nv, true); !s.ok()) return s;

  SimulationOptions options;
  if (s = resolve_optional("time_step", request->has_time_step(), request->time_step(),
                           std::numeric_limits<double>::min(), INFINITY, "> 0", options.time_step);
      !s.ok()) {
    return s;
  }
  if (s = check_enum("integrator", request->integrator(), v1::Integrator_IsValid); !s.ok()) {
    return s;
  }
  if (request->integrator() != v1::INTEGRATOR_SEMI_IMPLICIT_EULER &&
      !request->candidates().empty()) {
    return invalid("integrator: " + v1::Integrator_Name(request->integrator()) +
                   " is for contact-free runs; with candidates the time stepping is "
                   "INTEGRATOR_SEMI_IMPLICIT_EULER");
  }
  options.integrator = to_integrator(request->integrator());
  const v1::GroundPlane& ground = request->ground();
  if (s = check_range("ground.height", ground.height(), -INFINITY, INFINITY, "finite"); !s.ok()) {
    return s;
  }
  if (s = check_range("ground.friction", ground.friction(), 0.0, INFINITY, "≥ 0"); !s.ok()) {
    return s;
  }
  if (s = check_range("ground.restitution", ground.restitution(), 0.0, 1.0, "in [0, 1]"); !s.ok()) {
    return s;
  }
  options.ground_height = ground.height();
  options.friction = ground.friction();
  options.restitution = ground.restitution();
  if (s = resolve_optional("contact_margin", request->has_contact_margin(),
                           request->contact_margin(), 0.0, INFINITY, "≥ 0", options.contact_margin);
      !s.ok()) {
    return s;
  }
  if (s = resolve_optional("stabilization", request->has_stabilization(), request->stabilization(),
                           0.0, 1.0, "in [0, 1]", options.stabilization);
      !s.ok()) {
    return s;
  }
  if (s = resolve_optional("restitution_velocity", request->has_restitution_velocity(),
                           request->restitution_velocity(), 0.0, INFINITY, "≥ 0",
                           options.restitution_velocity);
      !s.ok()) {
    return s;
  }
  if (s = resolve_solver(request->solver(), planning.limits, options.solver); !s.ok()) return s;

  if (s = check_contact_count("candidates", request->candidates_size(), planning.limits, *entry);
      !s.ok()) {
    return s;
  }
  std::vector<ContactCandidate> candidates(request->candidates_size());
  for (int k = 0; k < request->candidates_size(); ++k) {
    const v1::ContactCandidate& c = request->candidates(k);
    if (s = resolve_point(m, "candidates[" + std::to_string(k) + "]", c.frame(), c.point(),
                          candidates[k].body, candidates[k].point);
        !s.ok()) {
      return s;
    }
  }

  const std::int64_t states = n;
  const std::int64_t per_state = static_cast<std::int64_t>(steps) * (m.nq + m.nv) + 4;
  if (s = planning.reserve_response(states * per_state, memory); !s.ok()) {
    return {s.error_code(), s.error_message() + " or fewer steps"};
  }
  response->set_batch_size(n);
  response->set_steps(steps);
  const SimulationOutput out{resize(response->mutable_q(), states * steps * m.nq),
                             resize(response->mutable_v(), states * steps * m.nv),
                             resize(response->mutable_status(), states),
                             resize(response->mutable_max_iterations(), states),
                             resize(response->mutable_max_residual(), states),
                             resize(response->mutable_max_contacts(), states)};
  const int candidate_rows = static_cast<int>(candidates.size()) * (options.friction > 0.0 ? 3 : 1);
  const std::int64_t step_cost =
      candidates.empty() ? 1 : contact_cost(candidate_rows, options.solver.max_iterations);
  job = {kSimulate,
         [entry, request, candidates = std::move(candidates), options, s_steps, torque_columns,
          out](WorkerContext& w, int b, int e) {
           simulate(*entry->model, w.workspace(*entry), *request, candidates,
                    interruptible(options, w), s_steps, torque_columns, b, e, out);
         },
         s_steps * step_cost};
  return grpc::Status::OK;
}

}  // namespace torqued::server
