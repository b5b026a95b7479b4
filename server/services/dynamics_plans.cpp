// The plans of the batched dynamics RPCs (declared by their rows, dynamics_rpcs.hpp): each
// request's fields checked against its model, its response sized and reserved, its work described.
#include "server/services/dynamics_plans.hpp"

#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "server/compute/dynamics_kernels.hpp"
#include "server/compute/engine_enums.hpp"
#include "server/compute/trajectory_kernels.hpp"
#include "server/models/model_layout.hpp"
#include "server/services/dynamics_rpcs.hpp"
#include "server/services/request_checks.hpp"

namespace torqued::server {

RequestLimits request_limits(const Config& config) {
  return {config.max_batch_states,
          config.max_message_bytes,
          config.max_workspace_bytes,
          config.max_constraint_rows,
          config.max_constraint_residual,
          config.max_contacts,
          config.max_kinematics_frames,
          config.max_solver_iterations,
          config.max_simulation_steps,
          config.max_session_queued,
          config.max_phases,
          config.max_ocp_knots,
          config.max_cost_terms,
          config.max_ocp_iterations};
}

grpc::Status Planning::reserve_response(std::int64_t values, Reservation& memory) const {
  if (grpc::Status s = check_response_size(values, limits.max_message_bytes); !s.ok()) return s;
  // The response, then its encoding while gRPC sends it.
  const auto bytes = 2 * static_cast<std::size_t>(response_bytes(values));
  if (!memory.add(budget, bytes)) {
    return {grpc::StatusCode::RESOURCE_EXHAUSTED, budget.refusal("the response", bytes)};
  }
  return grpc::Status::OK;
}

namespace {

// Sizes a repeated double field to n values and returns its storage.
double* resize(google::protobuf::RepeatedField<double>* field, std::int64_t n) {
  field->Resize(static_cast<int>(n), 0.0);
  return field->mutable_data();
}

// The optional external forces: none, or one wrench per moving body and state.
grpc::Status check_external_forces(const DoubleArray& values, const Model& m, int states) {
  return check_array("external_forces", values, states, 6 * (m.nbodies() - 1), true);
}

// The algorithm that runs for a ForwardDynamics request: AUTO resolved, and ABA whenever
// external forces are given (the only algorithm that takes them).
ForwardDynamicsAlgorithm resolve(const Model& m, const v1::ForwardDynamicsRequest& request) {
  switch (request.algorithm()) {
    case v1::FORWARD_DYNAMICS_ALGORITHM_CRBA:
      return ForwardDynamicsAlgorithm::kCrba;
    case v1::FORWARD_DYNAMICS_ALGORITHM_FACTORIZATION:
      return ForwardDynamicsAlgorithm::kFactorization;
    case v1::FORWARD_DYNAMICS_ALGORITHM_AUTO:
      return request.external_forces().empty() ? auto_forward_dynamics_algorithm(m)
                                               : ForwardDynamicsAlgorithm::kAba;
    default:
      return ForwardDynamicsAlgorithm::kAba;
  }
}

v1::ForwardDynamicsAlgorithm to_proto(ForwardDynamicsAlgorithm a) {
  switch (a) {
    case ForwardDynamicsAlgorithm::kCrba:
      return v1::FORWARD_DYNAMICS_ALGORITHM_CRBA;
    case ForwardDynamicsAlgorithm::kFactorization:
      return v1::FORWARD_DYNAMICS_ALGORITHM_FACTORIZATION;
    default:
      return v1::FORWARD_DYNAMICS_ALGORITHM_ABA;
  }
}

Algorithm metric_label(ForwardDynamicsAlgorithm a) {
  switch (a) {
    case ForwardDynamicsAlgorithm::kCrba:
      return ForwardDynamicsRpc::kCrba;
    case ForwardDynamicsAlgorithm::kFactorization:
      return ForwardDynamicsRpc::kFactorization;
    default:
      return ForwardDynamicsRpc::kAba;
  }
}

Algorithm metric_label(const v1::MassMatrixRequest& request) {
  if (request.algorithm() == v1::MASS_MATRIX_ALGORITHM_LAGRANGE_HOMOGENEOUS) {
    return request.inverse() ? MassMatrixRpc::kLagrangeHomogeneousInverse
                             : MassMatrixRpc::kLagrangeHomogeneous;
  }
  return request.inverse() ? MassMatrixRpc::kInverse : MassMatrixRpc::kCrba;
}

// Mirrors the engine's precondition of floating_base_inverse_dynamics().
bool has_free_flyer_root(const Model& m) {
  return m.nbodies() > 1 && m.joints[1].type == JointType::kFreeFlyer && m.parent[1] == 0 &&
         m.subtree_end[1] == m.nbodies();
}

bool is_finite(const v1::Placement& p) {
  for (const double x :
       {p.xyz().x(), p.xyz().y(), p.xyz().z(), p.rpy().x(), p.rpy().y(), p.rpy().z()}) {
    if (!std::isfinite(x)) return false;
  }
  return true;
}

// A constraint frame: the body it is on and its placement there. frame2 may name the world.
grpc::Status locate_frame(const Model& m, const v1::ConstraintFrame& in, const std::string& field,
                          bool world_allowed, int& body, Transform& placement) {
  if (!is_finite(in.placement())) return invalid(field + ".placement must be finite");
  int f = -1;
  if (grpc::Status s = find_frame(m, field + ".frame", in.frame(), f); !s.ok()) return s;
  if (f >= 0) {
    body = m.frames[f].body;
    placement = m.frames[f].placement * to_transform(in.placement());
    return grpc::Status::OK;
  }
  if (world_allowed && (in.frame().empty() || in.frame() == "world")) {
    body = 0;
    placement = to_transform(in.placement());
    return grpc::Status::OK;
  }
  return invalid(field + ".frame: no frame named " + quote_input(in.frame()) + " in model " +
                 quote_input(m.name) + " (see Model.frames)");
}

// Whether a constraint holds frame 1 to the world without an anchor, so where it stands:
// frame2 unset, empty or "world" (not a frame of the model), and its placement unset.
bool held_in_place(const Model& m, const v1::Constraint& c) {
  const std::string& frame2 = c.frame2().frame();
  return !c.frame2().has_placement() && m.find_frame(frame2) < 0 &&
         (frame2.empty() || frame2 == "world");
}

// The request's constraints (the field `list`) in engine form, each named (by default
// "constraints[i]") uniquely among them and the model's loop closures, and which of them are held
// in place.
grpc::Status to_constraints(const Model& m,
                            const google::protobuf::RepeatedPtrField<v1::Constraint>& in,
                            CallConstraints& out, const std::string& list = "constraints") {
  std::set<std::string> names;
  for (const BilateralConstraint& loop : m.loop_closures) names.insert(loop.name);
  for (int i = 0; i < in.size(); ++i) {
    const v1::Constraint& c = in[i];
    const std::string field = list + "[" + std::to_string(i) + "]";
    BilateralConstraint constraint;
    constraint.name = c.name().empty() ? field : c.name();
    const std::string what = field + " (" + quote_input(constraint.name) + ")";
    if (!names.insert(constraint.name).second) {
      return invalid(what + ": name already used by a loop closure or an earlier constraint");
    }
    if (!to_constraint_type(c.type(), constraint.type)) {
      return invalid(what + ": type must be set to a CONSTRAINT_TYPE_* value");
    }
    if (!c.has_frame1()) return invalid(what + ": frame1 must be set");
    if (grpc::Status s = locate_frame(m, c.frame1(), field + ".frame1", false, constraint.body1,
                                      constraint.placement1);
        !s.ok()) {
      return s;
    }
    if (grpc::Status s = locate_frame(m, c.frame2(), field + ".frame2", true, constraint.body2,
                                      constraint.placement2);
        !s.ok()) {
      return s;
    }
    if (constraint.body1 == constraint.body2) {
      return invalid(what + ": frame1 and frame2 are on the same body " +
                     quote_input(m.body_names[constraint.body1]) +
                     ", so the constraint constrains nothing");
    }
    if (held_in_place(m, c)) out.held_in_place.push_back(i);
    out.constraints.push_back(std::move(constraint));
  }
  return grpc::Status::OK;
}

}  // namespace

BaumgarteGains engine_gains(const Planning& planning, const v1::BaumgarteGains& gains) {
  return {gains.position(),
          gains.velocity(),
          {planning.limits.max_constraint_residual, "--max-constraint-residual"}};
}

grpc::Status check_gains(const v1::BaumgarteGains& gains) {
  if (!std::isfinite(gains.position()) || gains.position() < 0) {
    return invalid("gains.position must be finite and >= 0, got " +
                   std::to_string(gains.position()));
  }
  if (!std::isfinite(gains.velocity()) || gains.velocity() < 0) {
    return invalid("gains.velocity must be finite and >= 0, got " +
                   std::to_string(gains.velocity()));
  }
  return grpc::Status::OK;
}

namespace {

// What the workspaces of `set` grow by from room for the loop closures' constraint rows, which
// workspace_bytes() counts, to room for `rows`: every workspace of the engine's list, so that each
// one sized by constraint rows is counted without being named here.
std::size_t constraint_rows_growth(const Model& m, WorkspaceSet set, int rows) {
  const Extents loop_closures(m), call(m, rows);
  std::size_t growth = 0;
  [&]<class... Ws>(WorkspaceList<Ws...>) {
    ((growth += set.contains<Ws>() ? Ws::bytes(call) - Ws::bytes(loop_closures) : 0), ...);
  }(Workspaces{});
  return growth;
}

// The request's constraints in engine form (to_constraints()) with `rows`, the loop closures' and
// theirs, and where each one's rows are in λ; RESOURCE_EXHAUSTED when the rows, or the workspace
// of `algorithm` grown to them, pass their limits.
// RESOURCE_EXHAUSTED when `rows` constraint rows (of the field `list`), or the workspace of
// `algorithm` grown to them, pass their limits.
grpc::Status check_constraint_rows(const Planning& planning, const Model& m,
                                   const Algorithm& algorithm, int rows, const std::string& list) {
  // Each row costs the worker's workspace O(rows · (rows + nv)) memory and the solve O(rows³)
  // time. A weld per body is the most that can be independent, with room to spare for redundant
  // ones, and the server's limit bounds the rest.
  const int max_rows = 12 * m.nbodies();
  if (rows > max_rows) {
    return {grpc::StatusCode::RESOURCE_EXHAUSTED,
            list + ": " + std::to_string(rows) + " constraint rows exceed the limit of " +
                std::to_string(max_rows) + " (12 per body) for model " + quote_input(m.name)};
  }
  if (rows > planning.limits.max_constraint_rows) {
    return over_limit(list + ": constraint rows", rows, planning.limits.max_constraint_rows,
                      "--max-constraint-rows");
  }
  const std::size_t workspace = workspace_bytes(m, algorithm.workspaces) +
                                constraint_rows_growth(m, algorithm.workspaces, rows);
  if (static_cast<std::int64_t>(workspace) > planning.limits.max_workspace_bytes) {
    return over_limit(
        list + ": the workspace bytes for " + std::to_string(rows) + " constraint rows",
        static_cast<std::int64_t>(workspace), planning.limits.max_workspace_bytes,
        "--max-workspace-bytes");
  }
  return grpc::Status::OK;
}

// Where the rows of the loop closures and then of `constraints` are in λ.
void list_constraint_rows(const RegisteredModelPtr& entry,
                          std::span<const BilateralConstraint> constraints,
                          google::protobuf::RepeatedPtrField<v1::ConstraintRows>& layout) {
  layout = entry->layout.loop_closures();
  int offset = constraint_rows(*entry->model, {});
  for (const BilateralConstraint& c : constraints) {
    *layout.Add() = constraint_rows(c, offset);
    offset += constraint_dimension(c.type);
  }
}

grpc::Status plan_constraints(const Planning& planning, const RegisteredModelPtr& entry,
                              const google::protobuf::RepeatedPtrField<v1::Constraint>& in,
                              const Algorithm& algorithm, CallConstraints& out, int& rows,
                              google::protobuf::RepeatedPtrField<v1::ConstraintRows>& layout) {
  const Model& m = *entry->model;
  if (grpc::Status s = to_constraints(m, in, out); !s.ok()) return s;
  rows = constraint_rows(m, out.constraints);
  if (grpc::Status s = check_constraint_rows(planning, m, algorithm, rows, "constraints");
      !s.ok()) {
    return s;
  }
  list_constraint_rows(entry, out.constraints, layout);
  return grpc::Status::OK;
}

// The model's frames that `names` name, in order: at most --max-kinematics-frames of them, each
// known to the model.
grpc::Status named_frames(const Planning& planning, const Model& m,
                          const google::protobuf::RepeatedPtrField<std::string>& names,
                          std::vector<int>& frames) {
  if (names.size() > planning.limits.max_kinematics_frames) {
    return over_limit("frames", names.size(), planning.limits.max_kinematics_frames,
                      "--max-kinematics-frames");
  }
  frames.clear();
  for (int k = 0; k < names.size(); ++k) {
    const std::string field = "frames[" + std::to_string(k) + "]";
    int f = -1;
    if (grpc::Status s = find_frame(m, field, names[k], f); !s.ok()) return s;
    if (f < 0) {
      return invalid(field + ": no frame named " + quote_input(names[k]) + " in model " +
                     quote_input(m.name) + " (see Model.frames)");
    }
    frames.push_back(f);
  }
  return grpc::Status::OK;
}

grpc::Status check_reference(v1::ReferenceFrame reference) {
  if (reference < v1::REFERENCE_FRAME_UNSPECIFIED || reference > v1::REFERENCE_FRAME_WORLD) {
    return invalid("reference: unknown ReferenceFrame " + std::to_string(reference));
  }
  return grpc::Status::OK;
}

}  // namespace

grpc::Status InverseDynamicsRpc::plan(const Planning& planning, const RegisteredModelPtr& entry,
                                      int n, const v1::InverseDynamicsRequest* request,
                                      v1::InverseDynamicsResponse* response, PlannedWork& job,
                                      Reservation& memory) {
  grpc::Status s;
  const Model& m = *entry->model;
  if (s = check_array("v", request->v(), n, m.nv); !s.ok()) return s;
  if (s = check_array("a", request->a(), n, m.nv); !s.ok()) return s;
  if (s = check_external_forces(request->external_forces(), m, n); !s.ok()) return s;
  if (s = check_enum("algorithm", request->algorithm(), v1::InverseDynamicsAlgorithm_IsValid);
      !s.ok()) {
    return s;
  }
  const bool lagrange = request->algorithm() == v1::INVERSE_DYNAMICS_ALGORITHM_LAGRANGE_HOMOGENEOUS;
  if (lagrange) {
    if (s = check_empty("external_forces", request->external_forces(),
                        "with algorithm INVERSE_DYNAMICS_ALGORITHM_LAGRANGE_HOMOGENEOUS, which "
                        "takes no external forces (use INVERSE_DYNAMICS_ALGORITHM_RNEA)");
        !s.ok()) {
      return s;
    }
  }
  const std::int64_t out_size = static_cast<std::int64_t>(n) * m.nv;
  if (s = planning.reserve_response(out_size, memory); !s.ok()) return s;
  response->set_batch_size(n);
  double* tau = resize(response->mutable_tau(), out_size);
  job = {lagrange ? kLagrangeHomogeneous : kRnea,
         [entry, request, tau](WorkerContext& w, int b, int e) {
           inverse_dynamics(*entry->model, w.workspace(*entry), *request, b, e, tau);
         }};
  return grpc::Status::OK;
}

grpc::Status ForwardDynamicsRpc::plan(const Planning& planning, const RegisteredModelPtr& entry,
                                      int n, const v1::ForwardDynamicsRequest* request,
                                      v1::ForwardDynamicsResponse* response, PlannedWork& job,
                                      Reservation& memory) {
  grpc::Status s;
  const Model& m = *entry->model;
  if (s = check_array("v", request->v(), n, m.nv); !s.ok()) return s;
  if (s = check_array("tau", request->tau(), n, m.nv); !s.ok()) return s;
  if (s = check_external_forces(request->external_forces(), m, n); !s.ok()) return s;
  if (s = check_enum("algorithm", request->algorithm(), v1::ForwardDynamicsAlgorithm_IsValid);
      !s.ok()) {
    return s;
  }
  if (request->algorithm() == v1::FORWARD_DYNAMICS_ALGORITHM_CRBA ||
      request->algorithm() == v1::FORWARD_DYNAMICS_ALGORITHM_FACTORIZATION) {
    if (s = check_empty("external_forces", request->external_forces(),
                        "with algorithm " +
                            v1::ForwardDynamicsAlgorithm_Name(request->algorithm()) +
                            " (external forces need FORWARD_DYNAMICS_ALGORITHM_ABA or _AUTO)");
        !s.ok()) {
      return s;
    }
  }
  const std::int64_t out_size = static_cast<std::int64_t>(n) * m.nv;
  if (s = planning.reserve_response(out_size, memory); !s.ok()) return s;
  const ForwardDynamicsAlgorithm algorithm = resolve(m, *request);
  response->set_batch_size(n);
  response->set_algorithm(to_proto(algorithm));
  double* a = resize(response->mutable_a(), out_size);
  job = {metric_label(algorithm), [entry, request, algorithm, a](WorkerContext& w, int b, int e) {
           forward_dynamics(*entry->model, w.workspace(*entry), *request, algorithm, b, e, a);
         }};
  return grpc::Status::OK;
}

grpc::Status MassMatrixRpc::plan(const Planning& planning, const RegisteredModelPtr& entry, int n,
                                 const v1::MassMatrixRequest* request,
                                 v1::MassMatrixResponse* response, PlannedWork& job,
                                 Reservation& memory) {
  grpc::Status s;
  const Model& m = *entry->model;
  if (s = check_enum("algorithm", request->algorithm(), v1::MassMatrixAlgorithm_IsValid); !s.ok()) {
    return s;
  }
  const std::int64_t out_size = static_cast<std::int64_t>(n) * m.nv * m.nv;
  if (s = planning.reserve_response(request->inverse() ? 2 * out_size : out_size, memory);
      !s.ok()) {
    return s;
  }
  response->set_batch_size(n);
  double* mass = resize(response->mutable_mass_matrix(), out_size);
  double* inverse = request->inverse() ? resize(response->mutable_inverse(), out_size) : nullptr;
  job = {metric_label(*request), [entry, request, mass, inverse](WorkerContext& w, int b, int e) {
           mass_matrix(*entry->model, w.workspace(*entry), *request, b, e, mass, inverse);
         }};
  return grpc::Status::OK;
}

grpc::Status NonlinearEffectsRpc::plan(const Planning& planning, const RegisteredModelPtr& entry,
                                       int n, const v1::NonlinearEffectsRequest* request,
                                       v1::NonlinearEffectsResponse* response, PlannedWork& job,
                                       Reservation& memory) {
  grpc::Status s;
  const Model& m = *entry->model;
  if (s = check_array("v", request->v(), n, m.nv); !s.ok()) return s;
  const std::int64_t out_size = static_cast<std::int64_t>(n) * m.nv;
  if (s = planning.reserve_response(out_size, memory); !s.ok()) return s;
  response->set_batch_size(n);
  double* tau = resize(response->mutable_tau(), out_size);
  job = {kNonlinearEffects, [entry, request, tau](WorkerContext& w, int b, int e) {
           nonlinear_effects(*entry->model, w.workspace(*entry), *request, b, e, tau);
         }};
  return grpc::Status::OK;
}

grpc::Status GravityRpc::plan(const Planning& planning, const RegisteredModelPtr& entry, int n,
                              const v1::GravityRequest* request, v1::GravityResponse* response,
                              PlannedWork& job, Reservation& memory) {
  grpc::Status s;
  const std::int64_t out_size = static_cast<std::int64_t>(n) * entry->model->nv;
  if (s = planning.reserve_response(out_size, memory); !s.ok()) return s;
  response->set_batch_size(n);
  double* tau = resize(response->mutable_tau(), out_size);
  job = {kGravity, [entry, request, tau](WorkerContext& w, int b, int e) {
           gravity(*entry->model, w.workspace(*entry), *request, b, e, tau);
         }};
  return grpc::Status::OK;
}

grpc::Status KinematicsRpc::plan(const Planning& planning, const RegisteredModelPtr& entry, int n,
                                 const v1::KinematicsRequest* request,
                                 v1::KinematicsResponse* response, PlannedWork& job,
                                 Reservation& memory) {
  grpc::Status s;
  const Model& m = *entry->model;
  if (s = check_array("v", request->v(), n, m.nv, true); !s.ok()) return s;
  if (s = check_reference(request->reference()); !s.ok()) return s;
  std::vector<int> frames;
  if (request->frames().empty()) {
    for (int f = 0; f < static_cast<int>(m.frames.size()); ++f) frames.push_back(f);
    if (static_cast<std::int64_t>(frames.size()) > planning.limits.max_kinematics_frames) {
      return over_limit("frames", static_cast<std::int64_t>(frames.size()),
                        planning.limits.max_kinematics_frames, "--max-kinematics-frames");
    }
  } else if (s = named_frames(planning, m, request->frames(), frames); !s.ok()) {
    return s;
  }
  const std::int64_t slots =
      static_cast<std::int64_t>(n) * static_cast<std::int64_t>(frames.size());
  const bool velocities = !request->v().empty();
  const std::int64_t per_slot = 12 + (velocities ? 6 : 0) + (request->jacobians() ? 6 * m.nv : 0);
  if (s = planning.reserve_response(slots * per_slot, memory); !s.ok()) {
    return s;
  }
  response->set_batch_size(n);
  for (const int f : frames) response->add_frames(m.frame_reference(f));
  KinematicsOutput out{
      resize(response->mutable_positions(), 3 * slots),
      resize(response->mutable_rotations(), 9 * slots),
      velocities ? resize(response->mutable_velocities(), 6 * slots) : nullptr,
      request->jacobians() ? resize(response->mutable_jacobians(), 6 * m.nv * slots) : nullptr};
  job = {kKinematics,
         [entry, request, frames = std::move(frames), out](WorkerContext& w, int b, int e) {
           kinematics(*entry->model, w.workspace(*entry), *request, frames, b, e, out);
         }};
  return grpc::Status::OK;
}

grpc::Status HybridDynamicsRpc::plan(const Planning& planning, const RegisteredModelPtr& entry,
                                     int n, const v1::HybridDynamicsRequest* request,
                                     v1::HybridDynamicsResponse* response, PlannedWork& job,
                                     Reservation& memory) {
  grpc::Status s;
  const Model& m = *entry->model;
  if (s = check_array("v", request->v(), n, m.nv); !s.ok()) return s;
  if (s = check_dof_inputs(request->inputs(), m.nv); !s.ok()) return s;
  if (s = check_array("a", request->a(), n, m.nv); !s.ok()) return s;
  if (s = check_array("tau", request->tau(), n, m.nv); !s.ok()) return s;
  if (s = check_external_forces(request->external_forces(), m, n); !s.ok()) return s;
  const std::int64_t out_size = static_cast<std::int64_t>(n) * m.nv;
  if (s = planning.reserve_response(2 * out_size, memory); !s.ok()) {
    return s;
  }
  std::vector<DofInput> inputs;
  inputs.reserve(m.nv);
  for (const int input : request->inputs()) {
    inputs.push_back(input == v1::DOF_INPUT_FORCE ? DofInput::kForce : DofInput::kAcceleration);
  }
  response->set_batch_size(n);
  double* a = resize(response->mutable_a(), out_size);
  double* tau = resize(response->mutable_tau(), out_size);
  job = {kHybridDynamics,
         [entry, request, inputs = std::move(inputs), a, tau](WorkerContext& w, int b, int e) {
           hybrid_dynamics(*entry->model, w.workspace(*entry), *request, inputs, b, e, a, tau);
         }};
  return grpc::Status::OK;
}

grpc::Status FloatingBaseInverseDynamicsRpc::plan(
    const Planning& planning, const RegisteredModelPtr& entry, int n,
    const v1::FloatingBaseInverseDynamicsRequest* request,
    v1::FloatingBaseInverseDynamicsResponse* response, PlannedWork& job, Reservation& memory) {
  grpc::Status s;
  const Model& m = *entry->model;
  if (!has_free_flyer_root(m)) {
    return {grpc::StatusCode::FAILED_PRECONDITION,
            "model_id: model " + quote_input(m.name) +
                " has no free-flyer root joint carrying the whole tree; "
                "FloatingBaseInverseDynamics needs one (use InverseDynamics)"};
  }
  if (s = check_array("v", request->v(), n, m.nv); !s.ok()) return s;
  if (s = check_array("a", request->a(), n, m.nv); !s.ok()) return s;
  if (s = check_external_forces(request->external_forces(), m, n); !s.ok()) return s;
  const std::int64_t out_size = static_cast<std::int64_t>(n) * m.nv;
  if (s = planning.reserve_response(2 * out_size, memory); !s.ok()) {
    return s;
  }
  response->set_batch_size(n);
  double* a = resize(response->mutable_a(), out_size);
  double* tau = resize(response->mutable_tau(), out_size);
  job = {kFloatingBaseInverseDynamics, [entry, request, a, tau](WorkerContext& w, int b, int e) {
           floating_base_inverse_dynamics(*entry->model, w.workspace(*entry), *request, b, e, a,
                                          tau);
         }};
  return grpc::Status::OK;
}

grpc::Status DerivativesRpc::plan(const Planning& planning, const RegisteredModelPtr& entry, int n,
                                  const v1::DerivativesRequest* request,
                                  v1::DerivativesResponse* response, PlannedWork& job,
                                  Reservation& memory) {
  grpc::Status s;
  const Model& m = *entry->model;
  if (s = check_array("v", request->v(), n, m.nv); !s.ok()) return s;
  if (s = check_enum("of", request->of(), v1::DerivativesOf_IsValid); !s.ok()) {
    return s;
  }
  const bool inverse = request->of() == v1::DERIVATIVES_OF_INVERSE_DYNAMICS;
  const bool constrained = request->of() == v1::DERIVATIVES_OF_CONSTRAINED_DYNAMICS;
  const std::string with = "with of = " + v1::DerivativesOf_Name(request->of());
  if (s = inverse ? check_array("a", request->a(), n, m.nv) : check_empty("a", request->a(), with);
      !s.ok()) {
    return s;
  }
  if (s = inverse ? check_empty("tau", request->tau(), with)
                  : check_array("tau", request->tau(), n, m.nv);
      !s.ok()) {
    return s;
  }
  CallConstraints constraints;
  int rows = 0;
  if (constrained) {
    if (s = check_empty("external_forces", request->external_forces(), with); !s.ok()) return s;
    if (s = check_gains(request->gains()); !s.ok()) return s;
    if (s = plan_constraints(planning, entry, request->constraints(),
                             kConstrainedDynamicsDerivatives, constraints, rows,
                             *response->mutable_rows());
        !s.ok()) {
      return s;
    }
  } else {
    if (s = check_external_forces(request->external_forces(), m, n); !s.ok()) return s;
    if (!request->constraints().empty() || request->has_gains()) {
      return invalid("constraints and gains: must be empty " + with +
                     " (they go with DERIVATIVES_OF_CONSTRAINED_DYNAMICS)");
    }
  }
  const std::int64_t states = n;
  const std::int64_t out_size = states * m.nv * m.nv;
  const std::int64_t multipliers_size = states * rows * (1 + 3 * m.nv);
  if (s = planning.reserve_response(3 * out_size + multipliers_size, memory); !s.ok()) {
    return s;
  }
  response->set_batch_size(n);
  const std::int64_t rows_by_dofs = states * rows * m.nv;
  const DerivativesOutput out{
      resize(response->mutable_d_dq(), out_size),
      resize(response->mutable_d_dv(), out_size),
      resize(response->mutable_d_du(), out_size),
      constrained ? resize(response->mutable_multipliers(), states * rows) : nullptr,
      constrained ? resize(response->mutable_dmultipliers_dq(), rows_by_dofs) : nullptr,
      constrained ? resize(response->mutable_dmultipliers_dv(), rows_by_dofs) : nullptr,
      constrained ? resize(response->mutable_dmultipliers_dtau(), rows_by_dofs) : nullptr};
  const BaumgarteGains gains = engine_gains(planning, request->gains());
  job = {constrained ? kConstrainedDynamicsDerivatives
                     : (inverse ? kRneaDerivatives : kAbaDerivatives),
         [entry, request, constraints = std::move(constraints), gains, rows, out](WorkerContext& w,
                                                                                  int b, int e) {
           derivatives(*entry->model, w.workspace(*entry), *request, constraints, gains, rows, b, e,
                       out);
         },
         kDerivativesCost};
  return grpc::Status::OK;
}

grpc::Status CoriolisMatrixRpc::plan(const Planning& planning, const RegisteredModelPtr& entry,
                                     int n, const v1::CoriolisMatrixRequest* request,
                                     v1::CoriolisMatrixResponse* response, PlannedWork& job,
                                     Reservation& memory) {
  grpc::Status s;
  const Model& m = *entry->model;
  if (s = check_array("v", request->v(), n, m.nv); !s.ok()) return s;
  const std::int64_t out_size = static_cast<std::int64_t>(n) * m.nv * m.nv;
  if (s = planning.reserve_response(out_size, memory); !s.ok()) return s;
  response->set_batch_size(n);
  double* coriolis = resize(response->mutable_coriolis_matrix(), out_size);
  job = {kCoriolisMatrix, [entry, request, coriolis](WorkerContext& w, int b, int e) {
           coriolis_matrix(*entry->model, w.workspace(*entry), *request, b, e, coriolis);
         }};
  return grpc::Status::OK;
}

grpc::Status CentroidalRpc::plan(const Planning& planning, const RegisteredModelPtr& entry, int n,
                                 const v1::CentroidalRequest* request,
                                 v1::CentroidalResponse* response, PlannedWork& job,
                                 Reservation& memory) {
  grpc::Status s;
  const Model& m = *entry->model;
  if (s = check_array("v", request->v(), n, m.nv); !s.ok()) return s;
  const std::int64_t states = n;
  if (s = planning.reserve_response(states * (12 + 9 * m.nv), memory); !s.ok()) {
    return s;
  }
  response->set_batch_size(n);
  const CentroidalOutput out{resize(response->mutable_com(), 3 * states),
                             resize(response->mutable_com_velocity(), 3 * states),
                             resize(response->mutable_com_jacobian(), 3 * m.nv * states),
                             resize(response->mutable_momentum(), 6 * states),
                             resize(response->mutable_momentum_matrix(), 6 * m.nv * states)};
  job = {kCentroidal, [entry, request, out](WorkerContext& w, int b, int e) {
           centroidal(*entry->model, w.workspace(*entry), *request, b, e, out);
         }};
  return grpc::Status::OK;
}

grpc::Status ConstrainedDynamicsRpc::plan(const Planning& planning, const RegisteredModelPtr& entry,
                                          int n, const v1::ConstrainedDynamicsRequest* request,
                                          v1::ConstrainedDynamicsResponse* response,
                                          PlannedWork& job, Reservation& memory) {
  grpc::Status s;
  const Model& m = *entry->model;
  if (s = check_array("v", request->v(), n, m.nv); !s.ok()) return s;
  if (s = check_enum("mode", request->mode(), v1::ConstrainedDynamicsMode_IsValid); !s.ok()) {
    return s;
  }
  const bool inverse = request->mode() == v1::CONSTRAINED_DYNAMICS_MODE_INVERSE;
  if (inverse) {
    if (s = check_dof_inputs(request->inputs(), m.nv); !s.ok()) return s;
    if (s = check_array("a", request->a(), n, m.nv); !s.ok()) return s;
  } else {
    const std::string with = "with mode CONSTRAINED_DYNAMICS_MODE_FORWARD";
    if (s = check_empty("a", request->a(), with); !s.ok()) return s;
    if (!request->inputs().empty()) {
      return invalid("inputs: must be empty " + with + ", got " +
                     std::to_string(request->inputs_size()) + " entries");
    }
  }
  if (s = check_array("tau", request->tau(), n, m.nv); !s.ok()) return s;
  if (s = check_gains(request->gains()); !s.ok()) return s;
  const Algorithm algorithm = inverse ? kClosedChainInverseDynamics : kConstrainedDynamics;
  CallConstraints constraints;
  int rows = 0;
  if (s = plan_constraints(planning, entry, request->constraints(), algorithm, constraints, rows,
                           *response->mutable_rows());
      !s.ok()) {
    return s;
  }
  const std::int64_t states = n;
  if (s = planning.reserve_response(states * ((inverse ? 2 : 1) * m.nv + rows), memory); !s.ok()) {
    return s;
  }
  std::vector<DofInput> inputs;
  if (inverse) {
    inputs.reserve(m.nv);
    for (const int input : request->inputs()) {
      inputs.push_back(input == v1::DOF_INPUT_FORCE ? DofInput::kForce : DofInput::kAcceleration);
    }
  }
  response->set_batch_size(n);
  const ConstrainedDynamicsOutput out{
      resize(response->mutable_a(), states * m.nv),
      resize(response->mutable_multipliers(), states * rows),
      inverse ? resize(response->mutable_tau(), states * m.nv) : nullptr};
  const BaumgarteGains gains = engine_gains(planning, request->gains());
  job = {algorithm, [entry, request, constraints = std::move(constraints), gains,
                     inputs = std::move(inputs), rows, out](WorkerContext& w, int b, int e) {
           constrained_dynamics(*entry->model, w.workspace(*entry), *request, constraints, gains,
                                inputs, rows, b, e, out);
         }};
  return grpc::Status::OK;
}

grpc::Status actuated_dofs(const Model& m, const v1::Actuation& actuation, std::vector<int>& dofs) {
  if (grpc::Status s = check_enum("actuation.kind", actuation.kind(), v1::ActuationKind_IsValid);
      !s.ok()) {
    return s;
  }
  const bool by_name = actuation.kind() == v1::ACTUATION_KIND_JOINTS;
  if (!by_name && !actuation.joints().empty()) {
    return invalid("actuation.joints: must be empty with " +
                   v1::ActuationKind_Name(actuation.kind()) + ", got " +
                   std::to_string(actuation.joints().size()) + " names");
  }
  dofs.clear();
  if (actuation.kind() == v1::ACTUATION_KIND_ALL) {
    for (int dof = 0; dof < m.nv; ++dof) dofs.push_back(dof);
  } else if (actuation.kind() == v1::ACTUATION_KIND_UNACTUATED_ROOT) {
    if (!m.floating_base) {
      return invalid(
          "actuation.kind: ACTUATION_KIND_UNACTUATED_ROOT needs a floating-base model; " +
          quote_input(m.name) + " has a fixed base");
    }
    const Joint& root = m.joints[1];
    for (int dof = 0; dof < m.nv; ++dof) {
      if (dof < root.idx_v || dof >= root.idx_v + root.nv) dofs.push_back(dof);
    }
  } else {
    if (actuation.joints().empty()) {
      return invalid(
          "actuation.joints: names no joint, which leaves no control (nu = 0); name at least one "
          "with ACTUATION_KIND_JOINTS");
    }
    std::set<int> named;
    for (int i = 0; i < actuation.joints().size(); ++i) {
      const std::string field = "actuation.joints[" + std::to_string(i) + "]";
      const std::string& name = actuation.joints(i);
      const int body = m.find_joint(name);
      if (body <= 0) {
        return invalid(field + ": model " + quote_input(m.name) + " has no joint " +
                       quote_input(name));
      }
      if (m.joints[body].nv == 0) {
        return invalid(field + ": joint " + quote_input(name) + " has no DOF");
      }
      if (!named.insert(body).second) {
        return invalid(field + ": joint " + quote_input(name) + " is named twice");
      }
      for (int k = 0; k < m.joints[body].nv; ++k) dofs.push_back(m.joints[body].idx_v + k);
    }
  }
  if (dofs.empty()) {
    return invalid("actuation: leaves no control (nu = 0) on model " + quote_input(m.name));
  }
  return grpc::Status::OK;
}

namespace {

// Sizes a repeated double field to n values that the kernel writes every one of, without
// writing them first: the pages of a large answer (hundreds of megabytes for a long horizon) are
// touched once, by the workers, and not at all past a deadline.
double* sized_for_writing(google::protobuf::RepeatedField<double>* field, std::int64_t n) {
  field->Clear();
  field->Reserve(static_cast<int>(n));
  return field->AddNAlreadyReserved(static_cast<int>(n));
}

// The joints with several DOFs, whose blocks of J_q and J_w a STEP_JACOBIANS_VELOCITY_ROWS answer
// carries (the other DOFs' are 1).
void list_integration_blocks(const Model& model,
                             google::protobuf::RepeatedPtrField<v1::DofBlock>& blocks) {
  for (int i = 1; i < model.nbodies(); ++i) {
    const Joint& joint = model.joints[i];
    if (joint_nv(joint.type) < 2) continue;
    v1::DofBlock& block = *blocks.Add();
    block.set_first_dof(static_cast<std::uint32_t>(joint.idx_v));
    block.set_dofs(static_cast<std::uint32_t>(joint_nv(joint.type)));
  }
}

// Reads a step's `jacobians` layout: whether the answer carries only the v⁺ rows of Fx and Fu.
grpc::Status plan_jacobian_layout(const char* field, int layout, bool rk4, bool& velocity_rows) {
  if (grpc::Status s = check_enum(field, layout, v1::StepJacobians_IsValid); !s.ok()) return s;
  velocity_rows = layout == v1::STEP_JACOBIANS_VELOCITY_ROWS;
  if (velocity_rows && rk4) {
    return invalid(std::string(field) +
                   ": STEP_JACOBIANS_VELOCITY_ROWS needs an Euler integrator (an RK4 step's q⁺ "
                   "rows are not a product of its v⁺ rows)");
  }
  return grpc::Status::OK;
}

// A contact of a schedule or under a friction cone: a point or a weld (3D or 6D contact).
bool is_contact(const BilateralConstraint& c) {
  return c.type == ConstraintType::kPoint || c.type == ConstraintType::kWeld;
}

}  // namespace

grpc::Status plan_phase(const Planning& planning, const RegisteredModelPtr& entry,
                        const v1::ContactPhase& in, const std::string& field,
                        const CallPhase* previous, int horizon, const Algorithm& algorithm,
                        CallPhase& out) {
  const Model& m = *entry->model;
  const std::int64_t first_knot = in.first_knot();
  if (previous == nullptr && first_knot != 0) {
    return invalid(field + ".first_knot: the first phase begins at knot 0, got " +
                   std::to_string(first_knot));
  }
  if (previous != nullptr && first_knot <= previous->first_knot) {
    return invalid(field + ".first_knot: " + std::to_string(first_knot) +
                   " is not after the phase before's (" + std::to_string(previous->first_knot) +
                   "); phases are in order of their first knots");
  }
  if (first_knot >= horizon) {
    return invalid(field + ".first_knot: " + std::to_string(first_knot) +
                   " is past the horizon's last knot (" + std::to_string(horizon - 1) + ")");
  }
  out.first_knot = static_cast<int>(first_knot);
  if (grpc::Status s = check_range(field + ".restitution", in.restitution(), 0.0, 1.0, "in [0, 1]");
      !s.ok()) {
    return s;
  }
  out.restitution = in.restitution();
  const std::string list = field + ".contacts";
  if (grpc::Status s = to_constraints(m, in.contacts(), out.contacts, list); !s.ok()) return s;
  const std::vector<BilateralConstraint>& contacts = out.contacts.constraints;
  for (std::size_t i = 0; i < contacts.size(); ++i) {
    const std::string what =
        list + "[" + std::to_string(i) + "] (" + quote_input(contacts[i].name) + ")";
    if (!is_contact(contacts[i])) {
      return invalid(what +
                     ": a contact is CONSTRAINT_TYPE_POINT (3D) or CONSTRAINT_TYPE_WELD (6D)");
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (contacts[j].body1 == contacts[i].body1 &&
          contacts[j].placement1.translation == contacts[i].placement1.translation) {
        return invalid(what + ": its frame1 is already in contact in this phase, by " + list + "[" +
                       std::to_string(j) + "] (" + quote_input(contacts[j].name) + ")");
      }
    }
  }
  out.rows = constraint_rows(m, contacts);
  if (grpc::Status s = check_constraint_rows(planning, m, algorithm, out.rows, list); !s.ok()) {
    return s;
  }
  out.touchdown = previous != nullptr && adds_contact(previous->contacts.constraints, contacts);
  return grpc::Status::OK;
}

namespace {

// The request's contact schedule and friction cone (Linearize, Rollout) over `horizon` knots:
// the phases into step.phases, and where each knot's values are, into step's offsets and the
// answer's `layout`, which stays unset without phases or a cone. With phases the answer's
// one-set `rows` is cleared.
template <class Request>
grpc::Status plan_schedule(const Planning& planning, const RegisteredModelPtr& entry,
                           const Request& request, const Algorithm& algorithm, int horizon,
                           PlannedStep& step, v1::KnotLayout& layout,
                           google::protobuf::RepeatedPtrField<v1::ConstraintRows>& rows) {
  const auto& phases = request.phases();
  if (!phases.empty() && !request.constraints().empty()) {
    return invalid("phases: a call holds the robot by constraints or by phases, not both (" +
                   std::to_string(request.constraints().size()) + " constraints given)");
  }
  if (phases.size() > planning.limits.max_phases) {
    return over_limit("phases", phases.size(), planning.limits.max_phases, "--max-phases");
  }
  step.phases.resize(static_cast<std::size_t>(phases.size()));
  for (int p = 0; p < phases.size(); ++p) {
    const auto at = static_cast<std::size_t>(p);
    if (grpc::Status s = plan_phase(planning, entry, phases[p], "phases[" + std::to_string(p) + "]",
                                    p == 0 ? nullptr : &step.phases[at - 1], horizon, algorithm,
                                    step.phases[at]);
        !s.ok()) {
      return s;
    }
  }
  if (request.has_friction_cone()) {
    const v1::FrictionCone& cone = request.friction_cone();
    if (grpc::Status s =
            check_range("friction_cone.friction", cone.friction(), 0.0, INFINITY, ">= 0");
        !s.ok()) {
      return s;
    }
    const std::uint32_t faces = cone.faces() == 0 ? 4 : cone.faces();
    if (faces < 3 || faces > 64) {
      return invalid("friction_cone.faces: " + std::to_string(cone.faces()) +
                     " is out of range; it must be 3 to 64 (0: 4)");
    }
    Vec3 normal = Vec3::UnitZ();
    if (cone.has_normal()) {
      normal = Vec3(cone.normal().x(), cone.normal().y(), cone.normal().z());
      if (!normal.allFinite() || normal.norm() < 1e-9) {
        return invalid("friction_cone.normal must be finite and not zero");
      }
      normal.normalize();
    }
    const auto refuse = [](const std::string& what, const BilateralConstraint& c) {
      return invalid("friction_cone: " + what + " (" + quote_input(c.name) +
                     ") is not a point or weld contact; a cone holds a contact's force");
    };
    for (std::size_t i = 0; i < step.constraints.constraints.size(); ++i) {
      const BilateralConstraint& c = step.constraints.constraints[i];
      if (!is_contact(c)) return refuse("constraints[" + std::to_string(i) + "]", c);
    }
    step.cones = true;
    step.cone = {.friction = cone.friction(), .faces = static_cast<int>(faces), .normal = normal};
  }
  const auto knots = static_cast<std::size_t>(horizon);
  const auto values = static_cast<std::size_t>(friction_cone_values(step.cone));
  if (step.phases.empty()) {
    step.multipliers_at.per_knot = static_cast<std::size_t>(step.rows);
    step.cones_at.per_knot = step.cones ? step.constraints.constraints.size() * values : 0;
    if (!step.cones) return grpc::Status::OK;
  } else {
    rows.Clear();
    // Every knot's offsets, phase by phase.
    step.multipliers_at.at.assign(knots + 1, 0);
    step.cones_at.at.assign(knots + 1, 0);
    step.impulses_at.at.assign(knots + 1, 0);
    std::size_t p = 0;
    for (std::size_t k = 0; k < knots; ++k) {
      while (p + 1 < step.phases.size() &&
             static_cast<std::size_t>(step.phases[p + 1].first_knot) <= k) {
        ++p;
      }
      const CallPhase& phase = step.phases[p];
      const auto phase_rows = static_cast<std::size_t>(phase.rows);
      const bool touchdown = phase.touchdown && static_cast<std::size_t>(phase.first_knot) == k;
      step.multipliers_at.at[k + 1] = step.multipliers_at.at[k] + phase_rows;
      step.cones_at.at[k + 1] =
          step.cones_at.at[k] + (step.cones ? phase.contacts.constraints.size() * values : 0);
      step.impulses_at.at[k + 1] = step.impulses_at.at[k] + (touchdown ? phase_rows : 0);
      if (touchdown) layout.add_touchdown_knots(static_cast<std::uint32_t>(k));
    }
    for (const CallPhase& phase : step.phases) {
      list_constraint_rows(entry, phase.contacts.constraints, *layout.add_phases()->mutable_rows());
    }
  }
  for (std::size_t k = 0; k <= knots; ++k) {
    layout.add_multipliers_at(step.multipliers_at[k]);
    if (step.cones) layout.add_cones_at(step.cones_at[k]);
  }
  return grpc::Status::OK;
}

template <class Request>
grpc::Status plan_step(const Planning& planning, const RegisteredModelPtr& entry,
                       const Request& request, const Algorithm& algorithm, PlannedStep& out,
                       google::protobuf::RepeatedPtrField<v1::ConstraintRows>& layout) {
  grpc::Status s;
  const Model& m = *entry->model;
  if (s = check_range("dt", request.dt(), std::numeric_limits<double>::min(), INFINITY,
                      "> 0 (seconds)");
      !s.ok()) {
    return s;
  }
  if (s = actuated_dofs(m, request.actuation(), out.actuated); !s.ok()) return s;
  if (s = check_gains(request.gains()); !s.ok()) return s;
  if (s = plan_constraints(planning, entry, request.constraints(), algorithm, out.constraints,
                           out.rows, layout);
      !s.ok()) {
    return s;
  }
  out.dt = request.dt();
  out.integrator = to_integrator(request.integrator());
  out.gains = engine_gains(planning, request.gains());
  return grpc::Status::OK;
}

}  // namespace

grpc::Status LinearizeRpc::plan(const Planning& planning, const RegisteredModelPtr& entry, int n,
                                const v1::LinearizeRequest* request,
                                v1::LinearizeResponse* response, PlannedWork& job,
                                Reservation& memory) {
  grpc::Status s;
  const Model& m = *entry->model;
  if (s = check_array("v", request->v(), n, m.nv); !s.ok()) return s;
  if (s = check_enum("integrator", request->integrator(), v1::Integrator_IsValid); !s.ok()) {
    return s;
  }
  const bool rk4 = request->integrator() == v1::INTEGRATOR_RK4;
  // An RK4 step runs the dynamics derivatives four times.
  const Algorithm algorithm = rk4 ? kRungeKuttaStep : kEulerStep;
  PlannedStep step;
  if (s = plan_step(planning, entry, *request, algorithm, step, *response->mutable_rows());
      !s.ok()) {
    return s;
  }
  const int nu = static_cast<int>(step.actuated.size());
  if (s = check_array("u", request->u(), n, nu); !s.ok()) return s;
  if (s = plan_schedule(planning, entry, *request, algorithm, n, step, *response->mutable_layout(),
                        *response->mutable_rows());
      !s.ok()) {
    return s;
  }
  const auto knots = static_cast<std::size_t>(n);
  // The values of λ, of the touchdowns' impulses and of the cones over the knots.
  const auto all_rows = static_cast<std::int64_t>(step.multipliers_at[knots]);
  const auto impulses = static_cast<std::int64_t>(step.impulses_at[knots]);
  const auto cones = static_cast<std::int64_t>(step.cones ? step.cones_at[knots] : 0);
  const auto layout_values = static_cast<std::int64_t>(response->layout().multipliers_at_size() +
                                                       response->layout().cones_at_size() +
                                                       response->layout().touchdown_knots_size());

  const std::int64_t states = n;
  const std::int64_t nx = 2 * m.nv;
  const std::int64_t nv2 = static_cast<std::int64_t>(m.nv) * m.nv;
  const bool continuous = request->continuous_derivatives();
  const bool multipliers = continuous && all_rows > 0;
  const std::int64_t rows_by_dofs = all_rows * m.nv;
  bool velocity_rows = false;
  if (s = plan_jacobian_layout("jacobians", request->jacobians(), rk4, velocity_rows); !s.ok()) {
    return s;
  }
  // The multi-DOF joints' blocks of J_q and J_w, which velocity_rows sends.
  std::int64_t block_values = 0;
  if (velocity_rows) {
    list_integration_blocks(m, *response->mutable_integration_blocks());
    block_values = static_cast<std::int64_t>(integration_block_values(m));
  }
  // The rows of Fx and Fu the answer carries.
  const std::int64_t jacobian_rows = velocity_rows ? m.nv : nx;
  if (s = planning.reserve_response(
          states * (m.nq + m.nv + jacobian_rows * (nx + nu) + 2 * block_values) +
              (continuous ? 3 * states * nv2 : 0) +
              (multipliers ? all_rows + 3 * rows_by_dofs : 0) + impulses + cones * (1 + nx + nu) +
              layout_values,
          memory);
      !s.ok()) {
    return s;
  }
  response->set_batch_size(n);
  response->set_nu(nu);
  const LinearizeOutput out{
      sized_for_writing(response->mutable_q_next(), states * m.nq),
      sized_for_writing(response->mutable_v_next(), states * m.nv),
      sized_for_writing(velocity_rows ? response->mutable_dv_next_dx() : response->mutable_fx(),
                        states * jacobian_rows * nx),
      sized_for_writing(velocity_rows ? response->mutable_dv_next_du() : response->mutable_fu(),
                        states * jacobian_rows * nu),
      velocity_rows ? sized_for_writing(response->mutable_integrate_dq(), states * block_values)
                    : nullptr,
      velocity_rows ? sized_for_writing(response->mutable_integrate_dw(), states * block_values)
                    : nullptr,
      continuous ? sized_for_writing(response->mutable_da_dq(), states * nv2) : nullptr,
      continuous ? sized_for_writing(response->mutable_da_dv(), states * nv2) : nullptr,
      continuous ? sized_for_writing(response->mutable_da_dtau(), states * nv2) : nullptr,
      multipliers ? sized_for_writing(response->mutable_multipliers(), all_rows) : nullptr,
      multipliers ? sized_for_writing(response->mutable_dmultipliers_dq(), rows_by_dofs) : nullptr,
      multipliers ? sized_for_writing(response->mutable_dmultipliers_dv(), rows_by_dofs) : nullptr,
      multipliers ? sized_for_writing(response->mutable_dmultipliers_dtau(), rows_by_dofs)
                  : nullptr,
      impulses > 0 ? sized_for_writing(response->mutable_impulses(), impulses) : nullptr,
      cones > 0 ? sized_for_writing(response->mutable_friction_cones(), cones) : nullptr,
      cones > 0 ? sized_for_writing(response->mutable_dfriction_cones_dx(), cones * nx) : nullptr,
      cones > 0 ? sized_for_writing(response->mutable_dfriction_cones_du(), cones * nu) : nullptr};
  job = {
      algorithm,
      [entry, request, step = std::move(step), out, velocity_rows](WorkerContext& w, int b, int e) {
        linearize(*entry->model, w.workspace(*entry), *request, step, velocity_rows, b, e, out);
      },
      rk4 ? kRungeKuttaDerivativesCost : kDerivativesCost};
  return grpc::Status::OK;
}

grpc::Status RolloutRpc::plan(const Planning& planning, const RegisteredModelPtr& entry, int n,
                              const v1::RolloutRequest* request, v1::RolloutResponse* response,
                              PlannedWork& job, Reservation& memory) {
  grpc::Status s;
  const Model& m = *entry->model;
  if (s = check_array("v", request->v(), n, m.nv); !s.ok()) return s;
  if (request->knots() == 0) return invalid("knots: must be at least 1");
  const std::int64_t rollouts = n;
  const std::int64_t knots = request->knots();
  if (rollouts * knots > planning.limits.max_batch_states) {
    return over_limit("batch_size × knots: steps", rollouts * knots,
                      planning.limits.max_batch_states, "--max-batch-states");
  }
  if (s = check_enum("integrator", request->integrator(), v1::Integrator_IsValid); !s.ok()) {
    return s;
  }
  PlannedStep step;
  if (s = plan_step(planning, entry, *request, kRollout, step, *response->mutable_rows());
      !s.ok()) {
    return s;
  }
  const int k = static_cast<int>(knots);
  if (s = plan_schedule(planning, entry, *request, kRollout, k, step, *response->mutable_layout(),
                        *response->mutable_rows());
      !s.ok()) {
    return s;
  }
  const int nu = static_cast<int>(step.actuated.size());
  const int nx = 2 * m.nv;
  if (s = check_array("u", request->u(), n, k * nu, false, {"batch_size", "rollout"}); !s.ok()) {
    return s;
  }
  const bool closed_loop = !request->q_nominal().empty() || !request->v_nominal().empty() ||
                           !request->feedback().empty();
  if (closed_loop) {
    const ArrayRows by_knot{"knots", "knot"};
    if (s = check_array("q_nominal", request->q_nominal(), k, m.nq, false, by_knot); !s.ok()) {
      return s;
    }
    if (s = check_quaternions(m, request->q_nominal(), k, "q_nominal"); !s.ok()) return s;
    if (s = check_array("v_nominal", request->v_nominal(), k, m.nv, false, by_knot); !s.ok()) {
      return s;
    }
    if (s = check_array("feedback", request->feedback(), k, nu * nx, false, by_knot); !s.ok()) {
      return s;
    }
  }
  std::vector<int> frames;
  if (s = named_frames(planning, m, request->frames(), frames); !s.ok()) return s;
  if (request->frame_jacobians() && frames.empty()) {
    return invalid("frame_jacobians: names no frame to differentiate; list them in frames");
  }
  if (s = check_reference(request->reference()); !s.ok()) return s;

  const bool jacobians = request->jacobians();
  bool velocity_rows = false;
  if (s = plan_jacobian_layout("jacobian_layout", request->jacobian_layout(),
                               step.integrator == Integrator::kRungeKutta4, velocity_rows);
      !s.ok()) {
    return s;
  }
  if (velocity_rows && !jacobians) {
    return invalid(
        "jacobian_layout: lays out the Jacobians of a rollout that asks for none; set "
        "jacobians");
  }
  // The multi-DOF joints' blocks of J_q and J_w, which velocity_rows sends.
  std::int64_t block_values = 0;
  if (velocity_rows) {
    list_integration_blocks(m, *response->mutable_integration_blocks());
    block_values = static_cast<std::int64_t>(integration_block_values(m));
  }

  const std::int64_t states = rollouts * (knots + 1);
  const std::int64_t steps = rollouts * knots;
  const std::int64_t slots = states * static_cast<std::int64_t>(frames.size());
  // The rows of Fx and Fu the answer carries.
  const std::int64_t jacobian_rows = velocity_rows ? m.nv : nx;
  const std::int64_t frame_values = slots * (12 + (request->frame_jacobians() ? 6 * m.nv : 0));
  // Each rollout's values of λ, of the touchdowns' impulses and of the cones.
  const auto rollout_rows = static_cast<std::int64_t>(step.multipliers_at[knots]);
  const auto rollout_impulses = static_cast<std::int64_t>(step.impulses_at[knots]);
  const auto rollout_cones = static_cast<std::int64_t>(step.cones ? step.cones_at[knots] : 0);
  const auto layout_values = static_cast<std::int64_t>(response->layout().multipliers_at_size() +
                                                       response->layout().cones_at_size() +
                                                       response->layout().touchdown_knots_size());
  if (s = planning.reserve_response(
          states * (m.nq + m.nv) + steps * nu +
              rollouts * (rollout_rows + rollout_impulses +
                          rollout_cones * (1 + (jacobians ? nx + nu : 0))) +
              (jacobians ? steps * (jacobian_rows * (nx + nu) + 2 * block_values) : 0) +
              frame_values + layout_values,
          memory);
      !s.ok()) {
    return {s.error_code(), s.error_message() + " or fewer knots"};
  }
  response->set_batch_size(n);
  response->set_nu(nu);
  response->set_knots(request->knots());
  for (const int f : frames) response->add_frames(m.frame_reference(f));
  response->mutable_steps()->Resize(n, request->knots());
  for (int r = 0; r < n; ++r) response->add_status();
  const auto array = [](google::protobuf::RepeatedField<double>* field, std::int64_t size) {
    return std::span<double>(sized_for_writing(field, size), static_cast<std::size_t>(size));
  };
  const RolloutArrays out{
      .q = array(response->mutable_q(), states * m.nq),
      .v = array(response->mutable_v(), states * m.nv),
      .u = array(response->mutable_u(), steps * nu),
      .fx = jacobians
                ? array(velocity_rows ? response->mutable_dv_next_dx() : response->mutable_fx(),
                        steps * jacobian_rows * nx)
                : std::span<double>(),
      .fu = jacobians
                ? array(velocity_rows ? response->mutable_dv_next_du() : response->mutable_fu(),
                        steps * jacobian_rows * nu)
                : std::span<double>(),
      .integrate_dq = velocity_rows ? array(response->mutable_integrate_dq(), steps * block_values)
                                    : std::span<double>(),
      .integrate_dw = velocity_rows ? array(response->mutable_integrate_dw(), steps * block_values)
                                    : std::span<double>(),
      .multipliers = array(response->mutable_multipliers(), rollouts * rollout_rows),
      .impulses = array(response->mutable_impulses(), rollouts * rollout_impulses),
      .friction_cones = array(response->mutable_friction_cones(), rollouts * rollout_cones),
      .dfriction_cones_dx =
          jacobians ? array(response->mutable_dfriction_cones_dx(), rollouts * rollout_cones * nx)
                    : std::span<double>(),
      .dfriction_cones_du =
          jacobians ? array(response->mutable_dfriction_cones_du(), rollouts * rollout_cones * nu)
                    : std::span<double>(),
      .positions = array(response->mutable_frame_positions(), slots * 3),
      .rotations = array(response->mutable_frame_rotations(), slots * 9),
      .frame_jacobians = request->frame_jacobians()
                             ? array(response->mutable_frame_jacobians(), slots * 6 * m.nv)
                             : std::span<double>()};
  const ReferenceFrame reference = to_reference(request->reference());
  // A step's work in dynamics calls: four stages for RK4, and its Jacobians when asked for.
  const bool rk4 = step.integrator == Integrator::kRungeKutta4;
  const std::int64_t cost =
      knots * (jacobians ? (rk4 ? kRungeKuttaDerivativesCost : kDerivativesCost) : (rk4 ? 4 : 1));
  job = {kRollout,
         [entry, request, response, step = std::move(step), frames = std::move(frames), out,
          closed_loop, reference, velocity_rows](WorkerContext& w, int b, int e) {
           const RolloutExtras extras{.closed_loop = closed_loop,
                                      .velocity_rows = velocity_rows,
                                      .frames = frames,
                                      .reference = reference};
           rollout(*entry->model, w.workspace(*entry), *request, *response, step, extras, b, e,
                   out);
         },
         cost};
  return grpc::Status::OK;
}

}  // namespace torqued::server
