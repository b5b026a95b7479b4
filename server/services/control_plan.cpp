// ControlService.Solve's plan (see control_plan.hpp). The horizon is cut where anything changes
// (a phase begins, a touchdown ends, a running cost term starts or stops), and each stretch
// becomes one of the engine's knot models, with its phase's contacts and the terms that cover it.
#include "server/services/control_plan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "server/compute/engine_enums.hpp"
#include "server/models/model_from_request.hpp"
#include "server/services/dynamics_rpcs.hpp"
#include "server/services/request_checks.hpp"

namespace torqued::server {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// The step's workspaces bound a phase's constraint rows, as Linearize's do.
constexpr Algorithm kSolveStep = LinearizeRpc::kEulerStep;

grpc::Status read_values(const std::string& field, const DoubleArray& in, Eigen::VectorXd& out,
                         bool infinities_allowed = false) {
  out.resize(in.size());
  for (int i = 0; i < in.size(); ++i) {
    if (std::isnan(in[i]) || (!infinities_allowed && !std::isfinite(in[i]))) {
      return invalid(field + "[" + std::to_string(i) + "] is " +
                     (std::isnan(in[i]) ? "NaN" : "infinite") + "; values must be " +
                     (infinities_allowed ? "numbers (±inf allowed)" : "finite"));
    }
    out[i] = in[i];
  }
  return grpc::Status::OK;
}

grpc::Status check_size(const std::string& field, const Eigen::VectorXd& values, int expected,
                        const std::string& what) {
  if (values.size() == expected) return grpc::Status::OK;
  return invalid(field + ": expected " + std::to_string(expected) + " values (" + what + "), got " +
                 std::to_string(values.size()));
}

bool is_contact_residual(ResidualType type) {
  return type == ResidualType::kContactForce || type == ResidualType::kFrictionCone;
}

// A cost term as read from the request, before the knots it covers are known.
struct ReadTerm {
  std::string field;  // running_costs[i] ("name")
  CostTerm term;
  v1::ResidualType type = v1::RESIDUAL_TYPE_UNSPECIFIED;
  int frame = -1;              // the frame residuals' frame, the contact residuals' frame1
  bool has_reference = false;  // the contact force's f* given
  int first_knot = 0, end_knot = 0;
};

// The model's joint limits as bounds on x ⊖ (neutral, 0): position limits on the DOF of each
// 1-DOF joint with one coordinate, velocity limits on every 1-DOF joint, ±∞ elsewhere.
void joint_limit_bounds(const Model& m, Eigen::VectorXd& lower, Eigen::VectorXd& upper) {
  lower = Eigen::VectorXd::Constant(2 * m.nv, -kInfinity);
  upper = Eigen::VectorXd::Constant(2 * m.nv, kInfinity);
  for (int b = 1; b < m.nbodies(); ++b) {
    const Joint& joint = m.joints[b];
    if (joint.nv != 1 || static_cast<std::size_t>(b) >= m.limits.size()) continue;
    const JointLimits& limits = m.limits[static_cast<std::size_t>(b)];
    if (joint.nq == 1) {
      lower[joint.idx_v] = limits.lower;
      upper[joint.idx_v] = limits.upper;
    }
    lower[m.nv + joint.idx_v] = -limits.velocity;
    upper[m.nv + joint.idx_v] = limits.velocity;
  }
}

grpc::Status read_activation(const v1::Activation& in, const std::string& field, Activation& out) {
  if (grpc::Status s = check_enum((field + ".type").c_str(), in.type(), v1::ActivationType_IsValid);
      !s.ok()) {
    return s;
  }
  switch (in.type()) {
    case v1::ACTIVATION_TYPE_WEIGHTED_QUADRATIC:
      out.type = ActivationType::kWeightedQuadratic;
      break;
    case v1::ACTIVATION_TYPE_QUADRATIC_BARRIER:
      out.type = ActivationType::kQuadraticBarrier;
      break;
    case v1::ACTIVATION_TYPE_WEIGHTED_QUADRATIC_BARRIER:
      out.type = ActivationType::kWeightedQuadraticBarrier;
      break;
    case v1::ACTIVATION_TYPE_SMOOTH_1_NORM:
      out.type = ActivationType::kSmooth1Norm;
      break;
    default:
      out.type = ActivationType::kQuadratic;
  }
  const bool weighted = out.type == ActivationType::kWeightedQuadratic ||
                        out.type == ActivationType::kWeightedQuadraticBarrier;
  const bool barrier = out.type == ActivationType::kQuadraticBarrier ||
                       out.type == ActivationType::kWeightedQuadraticBarrier;
  const std::string type = v1::ActivationType_Name(in.type());
  if (weighted) {
    if (grpc::Status s = read_values(field + ".weights", in.weights(), out.weights); !s.ok()) {
      return s;
    }
    for (Eigen::Index i = 0; i < out.weights.size(); ++i) {
      if (out.weights[i] < 0) {
        return invalid(field + ".weights[" + std::to_string(i) + "]: " + number(out.weights[i]) +
                       " is negative; weights must be >= 0");
      }
    }
  } else if (!in.weights().empty()) {
    return invalid(field + ".weights: must be empty with " + type);
  }
  if (barrier) {
    if (grpc::Status s = read_values(field + ".lower", in.lower(), out.lower, true); !s.ok()) {
      return s;
    }
    if (grpc::Status s = read_values(field + ".upper", in.upper(), out.upper, true); !s.ok()) {
      return s;
    }
    if (out.lower.size() != out.upper.size()) {
      return invalid(field + ".lower and .upper: " + std::to_string(out.lower.size()) + " and " +
                     std::to_string(out.upper.size()) + " values; they must have as many");
    }
    for (Eigen::Index i = 0; i < out.lower.size(); ++i) {
      if (out.lower[i] > out.upper[i]) {
        return invalid(field + ".lower[" + std::to_string(i) + "] (" + number(out.lower[i]) +
                       ") is above upper[" + std::to_string(i) + "] (" + number(out.upper[i]) +
                       ")");
      }
    }
  } else if (!in.lower().empty() || !in.upper().empty()) {
    return invalid(field + ".lower and .upper: must be empty with " + type);
  }
  if (in.has_smoothing()) {
    if (out.type != ActivationType::kSmooth1Norm) {
      return invalid(field + ".smoothing: only with ACTIVATION_TYPE_SMOOTH_1_NORM");
    }
    if (grpc::Status s = check_range(field + ".smoothing", in.smoothing(),
                                     std::numeric_limits<double>::min(), kInfinity, "> 0");
        !s.ok()) {
      return s;
    }
    out.smoothing = in.smoothing();
  }
  return grpc::Status::OK;
}

// The activation's sizes against its residual's `size` values.
grpc::Status check_activation_size(const std::string& field, const Activation& a, int size) {
  if (a.weights.size() > 0 || a.type == ActivationType::kWeightedQuadratic ||
      a.type == ActivationType::kWeightedQuadraticBarrier) {
    if (grpc::Status s = check_size(field + ".weights", a.weights, size, "one per residual value");
        !s.ok()) {
      return s;
    }
  }
  if (a.type == ActivationType::kQuadraticBarrier ||
      a.type == ActivationType::kWeightedQuadraticBarrier) {
    if (grpc::Status s = check_size(field + ".lower", a.lower, size, "one per residual value");
        !s.ok()) {
      return s;
    }
  }
  return grpc::Status::OK;
}

grpc::Status read_residual(const Model& m, int nu, const v1::Residual& in, const std::string& field,
                           ReadTerm& out) {
  Residual& r = out.term.residual;
  out.type = in.type();
  if (grpc::Status s = check_enum((field + ".type").c_str(), in.type(), v1::ResidualType_IsValid);
      !s.ok()) {
    return s;
  }
  const bool framed = in.type() == v1::RESIDUAL_TYPE_FRAME_TRANSLATION ||
                      in.type() == v1::RESIDUAL_TYPE_FRAME_PLACEMENT ||
                      in.type() == v1::RESIDUAL_TYPE_FRAME_ROTATION ||
                      in.type() == v1::RESIDUAL_TYPE_FRAME_VELOCITY ||
                      in.type() == v1::RESIDUAL_TYPE_CONTACT_FORCE ||
                      in.type() == v1::RESIDUAL_TYPE_FRICTION_CONE;
  if (framed) {
    if (grpc::Status s = find_frame(m, field + ".frame", in.frame(), out.frame); !s.ok()) return s;
    if (out.frame < 0) {
      return invalid(field + ".frame: no frame named " + quote_input(in.frame()) + " in model " +
                     quote_input(m.name) + " (see Model.frames)");
    }
    r.frame = out.frame;
  } else if (!in.frame().empty()) {
    return invalid(field + ".frame: must be empty with " + v1::ResidualType_Name(in.type()));
  }
  const bool placed = in.type() == v1::RESIDUAL_TYPE_FRAME_PLACEMENT ||
                      in.type() == v1::RESIDUAL_TYPE_FRAME_ROTATION;
  if (in.has_placement()) {
    if (!placed) {
      return invalid(field +
                     ".placement: only with RESIDUAL_TYPE_FRAME_PLACEMENT or "
                     "RESIDUAL_TYPE_FRAME_ROTATION");
    }
    for (const double x :
         {in.placement().xyz().x(), in.placement().xyz().y(), in.placement().xyz().z(),
          in.placement().rpy().x(), in.placement().rpy().y(), in.placement().rpy().z()}) {
      if (!std::isfinite(x)) return invalid(field + ".placement must be finite");
    }
    r.placement = to_transform(in.placement());
  }
  if (in.velocity_frame() != v1::REFERENCE_FRAME_UNSPECIFIED) {
    if (in.type() != v1::RESIDUAL_TYPE_FRAME_VELOCITY) {
      return invalid(field + ".velocity_frame: only with RESIDUAL_TYPE_FRAME_VELOCITY");
    }
    if (in.velocity_frame() != v1::REFERENCE_FRAME_LOCAL &&
        in.velocity_frame() != v1::REFERENCE_FRAME_LOCAL_WORLD_ALIGNED) {
      return invalid(field +
                     ".velocity_frame: REFERENCE_FRAME_LOCAL or "
                     "REFERENCE_FRAME_LOCAL_WORLD_ALIGNED, got " +
                     std::to_string(in.velocity_frame()));
    }
    r.velocity_frame = to_reference(in.velocity_frame());
  }
  if (in.has_cone() && in.type() != v1::RESIDUAL_TYPE_FRICTION_CONE) {
    return invalid(field + ".cone: only with RESIDUAL_TYPE_FRICTION_CONE");
  }
  const std::string reference = field + ".reference";
  if (grpc::Status s = read_values(reference, in.reference(), r.target); !s.ok()) return s;
  const auto sized = [&](int size, const std::string& what, bool optional) {
    if (optional && r.target.size() == 0) {
      r.target = Eigen::VectorXd::Zero(size);
      return grpc::Status::OK;
    }
    return check_size(reference, r.target, size, what);
  };
  const auto none = [&]() {
    return r.target.size() == 0
               ? grpc::Status::OK
               : invalid(reference + ": must be empty with " + v1::ResidualType_Name(in.type()));
  };
  switch (in.type()) {
    case v1::RESIDUAL_TYPE_UNSPECIFIED:
      return invalid(field + ".type: must be set to a RESIDUAL_TYPE_* value");
    case v1::RESIDUAL_TYPE_STATE:
    case v1::RESIDUAL_TYPE_JOINT_LIMITS: {
      r.type = ResidualType::kState;
      if (in.type() == v1::RESIDUAL_TYPE_JOINT_LIMITS || r.target.size() == 0) {
        if (grpc::Status s = none(); !s.ok()) return s;
        r.target.resize(m.nq + m.nv);
        r.target << m.neutral_configuration(), Eigen::VectorXd::Zero(m.nv);
        return grpc::Status::OK;
      }
      if (grpc::Status s = sized(m.nq + m.nv, "nq + nv: q* then v*", false); !s.ok()) return s;
      return check_quaternions(m, in.reference(), 1, reference.c_str());
    }
    case v1::RESIDUAL_TYPE_CONTROL:
      r.type = ResidualType::kControl;
      return sized(nu, "nu", true);
    case v1::RESIDUAL_TYPE_CONTROL_GRAVITY:
      r.type = ResidualType::kControlGravity;
      return none();
    case v1::RESIDUAL_TYPE_FRAME_TRANSLATION:
      r.type = ResidualType::kFrameTranslation;
      return sized(3, "a position in the world", false);
    case v1::RESIDUAL_TYPE_FRAME_PLACEMENT:
      r.type = ResidualType::kFramePlacement;
      return none();
    case v1::RESIDUAL_TYPE_FRAME_ROTATION:
      r.type = ResidualType::kFrameRotation;
      return none();
    case v1::RESIDUAL_TYPE_FRAME_VELOCITY:
      r.type = ResidualType::kFrameVelocity;
      return sized(6, "a twist [linear; angular]", true);
    case v1::RESIDUAL_TYPE_CENTER_OF_MASS:
      r.type = ResidualType::kCenterOfMass;
      return sized(3, "a position in the world", false);
    case v1::RESIDUAL_TYPE_CONTACT_FORCE:
      r.type = ResidualType::kContactForce;
      out.has_reference = r.target.size() > 0;
      return grpc::Status::OK;  // sized at each knot, by the contact's rows
    case v1::RESIDUAL_TYPE_FRICTION_CONE: {
      r.type = ResidualType::kFrictionCone;
      if (grpc::Status s = none(); !s.ok()) return s;
      const v1::FrictionCone& cone = in.cone();
      if (grpc::Status s = check_range(field + ".cone.friction", cone.friction(),
                                       std::numeric_limits<double>::min(), kInfinity, "> 0");
          !s.ok()) {
        return s;
      }
      const std::uint32_t faces = cone.faces() == 0 ? 4 : cone.faces();
      if (faces < 3 || faces > 64) {
        return invalid(field + ".cone.faces: " + std::to_string(cone.faces()) +
                       " is out of range; it must be 3 to 64 (0: 4)");
      }
      Vec3 normal = Vec3::UnitZ();
      if (cone.has_normal()) {
        normal = Vec3(cone.normal().x(), cone.normal().y(), cone.normal().z());
        if (!normal.allFinite() || normal.norm() < 1e-9) {
          return invalid(field + ".cone.normal must be finite and not zero");
        }
        normal.normalize();
      }
      r.cone = {.friction = cone.friction(), .faces = static_cast<int>(faces), .normal = normal};
      return grpc::Status::OK;
    }
    default:
      return invalid(field + ".type: unknown value " + std::to_string(in.type()));
  }
}

grpc::Status read_term(const Model& m, int nu, int knots, const v1::CostTerm& in, bool terminal,
                       const std::string& list, int index, std::set<std::string>& names,
                       ReadTerm& out) {
  // `names`: the list's (Crocoddyl's running and terminal models have a cost sum each).
  const std::string at = list + "[" + std::to_string(index) + "]";
  out.term.name = in.name().empty() ? at : in.name();
  out.field = at + " (" + quote_input(out.term.name) + ")";
  if (!names.insert(out.term.name).second) {
    return invalid(out.field + ".name: already the name of another term of " + list);
  }
  if (in.has_weight()) {
    if (grpc::Status s = check_range(out.field + ".weight", in.weight(), 0.0, kInfinity, ">= 0");
        !s.ok()) {
      return s;
    }
    out.term.weight = in.weight();
  }
  if (!in.has_residual()) return invalid(out.field + ".residual must be set");
  if (grpc::Status s = read_residual(m, nu, in.residual(), out.field + ".residual", out); !s.ok()) {
    return s;
  }
  const std::string activation = out.field + ".activation";
  if (grpc::Status s = read_activation(in.activation(), activation, out.term.activation); !s.ok()) {
    return s;
  }
  if (out.type == v1::RESIDUAL_TYPE_JOINT_LIMITS) {
    Activation& a = out.term.activation;
    if (a.type != ActivationType::kQuadraticBarrier &&
        a.type != ActivationType::kWeightedQuadraticBarrier) {
      return invalid(activation +
                     ".type: RESIDUAL_TYPE_JOINT_LIMITS takes ACTIVATION_TYPE_QUADRATIC_BARRIER "
                     "or ACTIVATION_TYPE_WEIGHTED_QUADRATIC_BARRIER");
    }
    if (a.lower.size() == 0) joint_limit_bounds(m, a.lower, a.upper);
  }
  if (terminal) {
    if (in.first_knot() != 0 || in.has_end_knot()) {
      return invalid(out.field + ": a terminal term takes no knot range (first_knot, end_knot)");
    }
    if (residual_depends_on_control(out.term.residual) ||
        is_contact_residual(out.term.residual.type)) {
      return invalid(out.field + ".residual.type: " + v1::ResidualType_Name(out.type) +
                     " reads the controls or the contacts, which the terminal knot has not");
    }
  } else {
    out.first_knot = static_cast<int>(std::min<std::uint32_t>(in.first_knot(), knots));
    out.end_knot = in.has_end_knot()
                       ? static_cast<int>(std::min<std::uint32_t>(in.end_knot(), knots + 1))
                       : knots;
    if (in.first_knot() >= static_cast<std::uint32_t>(knots) || out.end_knot > knots ||
        out.first_knot >= out.end_knot) {
      return invalid(out.field + ": knots [" + std::to_string(in.first_knot()) + ", " +
                     (in.has_end_knot() ? std::to_string(in.end_knot()) : "T") +
                     ") are not a range of the running knots [0, " + std::to_string(knots) + ")");
    }
  }
  if (!is_contact_residual(out.term.residual.type)) {
    const int size = residual_size(m, out.term.residual, nu, {});
    return check_activation_size(activation, out.term.activation, size);
  }
  return grpc::Status::OK;
}

// Knot t's copy of a running term: its contact found in the knot's contacts and the sizes checked
// against that contact's rows.
grpc::Status place_term(const Model& m, int nu, const ReadTerm& read, int t,
                        std::span<const BilateralConstraint> contacts, CostTerm& out) {
  out = read.term;
  if (!is_contact_residual(read.term.residual.type)) return grpc::Status::OK;
  const Frame& frame = m.frames[static_cast<std::size_t>(read.frame)];
  for (std::size_t c = 0; c < contacts.size(); ++c) {
    if (contacts[c].body1 == frame.body &&
        contacts[c].placement1.translation == frame.placement.translation) {
      out.residual.contact = static_cast<int>(c);
    }
  }
  if (out.residual.contact < 0) {
    return invalid(read.field + ".residual.frame: " + quote_input(m.frame_reference(read.frame)) +
                   " is not in contact at knot " + std::to_string(t) +
                   ", which the term covers (see phases)");
  }
  const int size = residual_size(m, out.residual, nu, contacts);
  if (out.residual.type == ResidualType::kContactForce) {
    if (!read.has_reference) {
      out.residual.target = Eigen::VectorXd::Zero(size);
    } else if (grpc::Status s = check_size(read.field + ".residual.reference", out.residual.target,
                                           size, "the contact's rows at knot " + std::to_string(t));
               !s.ok()) {
      return s;
    }
  }
  return check_activation_size(read.field + ".activation", out.activation, size);
}

grpc::Status plan_settings(const Planning& planning, const v1::SolverSettings& in,
                           FddpSettings& out) {
  if (in.has_max_iterations()) {
    if (in.max_iterations() < 1) return invalid("solver.max_iterations: must be at least 1");
    if (in.max_iterations() > static_cast<std::uint32_t>(planning.limits.max_ocp_iterations)) {
      return over_limit("solver.max_iterations", in.max_iterations(),
                        planning.limits.max_ocp_iterations, "--max-ocp-iterations");
    }
    out.max_iterations = static_cast<int>(in.max_iterations());
  }
  if (in.has_stop_threshold()) {
    if (grpc::Status s =
            check_range("solver.stop_threshold", in.stop_threshold(), 0.0, kInfinity, ">= 0");
        !s.ok()) {
      return s;
    }
    out.stop_threshold = in.stop_threshold();
  }
  const double tiny = std::numeric_limits<double>::min();
  const struct {
    const char* field;
    bool has;
    double value;
    double* into;
  } regularizations[] = {{"solver.initial_regularization", in.has_initial_regularization(),
                          in.initial_regularization(), &out.initial_regularization},
                         {"solver.min_regularization", in.has_min_regularization(),
                          in.min_regularization(), &out.min_regularization},
                         {"solver.max_regularization", in.has_max_regularization(),
                          in.max_regularization(), &out.max_regularization}};
  for (const auto& r : regularizations) {
    if (!r.has) continue;
    if (grpc::Status s = check_range(r.field, r.value, tiny, kInfinity, "> 0"); !s.ok()) return s;
    *r.into = r.value;
  }
  const struct {
    const char* field;
    bool has;
    double value;
    double low, high;
    const char* range;
    double* into;
  } thresholds[] = {
      {"solver.regularization_factor", in.has_regularization_factor(), in.regularization_factor(),
       std::nextafter(1.0, 2.0), kInfinity, "> 1", &out.regularization_factor},
      {"solver.accept_ratio", in.has_accept_ratio(), in.accept_ratio(), tiny,
       std::nextafter(1.0, 0.0), "in (0, 1)", &out.accept_ratio},
      {"solver.accept_gap_ratio", in.has_accept_gap_ratio(), in.accept_gap_ratio(), 0.0, kInfinity,
       ">= 0", &out.accept_gap_ratio},
      {"solver.gradient_threshold", in.has_gradient_threshold(), in.gradient_threshold(), 0.0,
       kInfinity, ">= 0", &out.gradient_threshold},
      {"solver.decrease_above", in.has_decrease_above(), in.decrease_above(), tiny, 1.0,
       "in (0, 1]", &out.decrease_above},
      {"solver.increase_at_most", in.has_increase_at_most(), in.increase_at_most(), tiny, 1.0,
       "in (0, 1]", &out.increase_at_most}};
  for (const auto& t : thresholds) {
    if (!t.has) continue;
    if (grpc::Status s = check_range(t.field, t.value, t.low, t.high, t.range); !s.ok()) return s;
    *t.into = t.value;
  }
  if (out.min_regularization > out.max_regularization) {
    return invalid("solver.min_regularization (" + number(out.min_regularization) +
                   ") is above solver.max_regularization (" + number(out.max_regularization) + ")");
  }
  return grpc::Status::OK;
}

grpc::Status plan_bounds(const v1::ControlBounds& in, int nu, ControlBounds& out) {
  if (in.lower().empty() && in.upper().empty()) return grpc::Status::OK;
  if (grpc::Status s = read_values("control_bounds.lower", in.lower(), out.lower, true); !s.ok()) {
    return s;
  }
  if (grpc::Status s = read_values("control_bounds.upper", in.upper(), out.upper, true); !s.ok()) {
    return s;
  }
  if (grpc::Status s = check_size("control_bounds.lower", out.lower, nu, "nu"); !s.ok()) return s;
  if (grpc::Status s = check_size("control_bounds.upper", out.upper, nu, "nu"); !s.ok()) return s;
  for (int i = 0; i < nu; ++i) {
    if (out.lower[i] > out.upper[i]) {
      return invalid("control_bounds.lower[" + std::to_string(i) + "] (" + number(out.lower[i]) +
                     ") is above control_bounds.upper[" + std::to_string(i) + "] (" +
                     number(out.upper[i]) + ")");
    }
  }
  return grpc::Status::OK;
}

grpc::Status plan_guess(const Model& m, const v1::SolveRequest& request, int knots, int nu,
                        PlannedSolve& out) {
  const bool any =
      !request.guess_q().empty() || !request.guess_v().empty() || !request.guess_u().empty();
  if (!any) {
    if (request.guess_feasible()) {
      return invalid("guess_feasible: set without a guess (guess_q, guess_v, guess_u)");
    }
    return grpc::Status::OK;
  }
  const ArrayRows states{"knots + 1 =", "state"}, controls{"knots =", "knot"};
  if (grpc::Status s = check_array("guess_q", request.guess_q(), knots + 1, m.nq, false, states);
      !s.ok()) {
    return s;
  }
  if (grpc::Status s = check_array("guess_v", request.guess_v(), knots + 1, m.nv, false, states);
      !s.ok()) {
    return s;
  }
  if (grpc::Status s = check_array("guess_u", request.guess_u(), knots, nu, false, controls);
      !s.ok()) {
    return s;
  }
  if (grpc::Status s = check_quaternions(m, request.guess_q(), knots + 1, "guess_q"); !s.ok()) {
    return s;
  }
  out.xs.resize(static_cast<std::size_t>(knots) + 1);
  out.us.resize(static_cast<std::size_t>(knots));
  for (int t = 0; t <= knots; ++t) {
    Eigen::VectorXd& x = out.xs[static_cast<std::size_t>(t)];
    x.resize(m.nq + m.nv);
    x << Eigen::Map<const Eigen::VectorXd>(request.guess_q().data() + std::ptrdiff_t{t} * m.nq,
                                           m.nq),
        Eigen::Map<const Eigen::VectorXd>(request.guess_v().data() + std::ptrdiff_t{t} * m.nv,
                                          m.nv);
    if (t < knots) {
      out.us[static_cast<std::size_t>(t)] =
          Eigen::Map<const Eigen::VectorXd>(request.guess_u().data() + std::ptrdiff_t{t} * nu, nu);
    }
  }
  out.feasible = request.guess_feasible();
  return grpc::Status::OK;
}

}  // namespace

grpc::Status plan_solve(const Planning& planning, const RegisteredModelPtr& entry,
                        const v1::SolveRequest& request, int threads, PlannedSolve& out,
                        Reservation& memory) {
  const Model& m = *entry->model;
  out.entry = entry;
  grpc::Status s;
  if (s = check_array("q0", request.q0(), 1, m.nq); !s.ok()) return s;
  if (s = check_quaternions(m, request.q0(), 1, "q0"); !s.ok()) return s;
  if (s = check_array("v0", request.v0(), 1, m.nv); !s.ok()) return s;
  out.x0.resize(m.nq + m.nv);
  out.x0 << Eigen::Map<const Eigen::VectorXd>(request.q0().data(), m.nq),
      Eigen::Map<const Eigen::VectorXd>(request.v0().data(), m.nv);
  if (request.knots() < 1) return invalid("knots: must be at least 1");
  if (request.knots() > static_cast<std::uint32_t>(planning.limits.max_ocp_knots)) {
    return over_limit("knots", request.knots(), planning.limits.max_ocp_knots, "--max-ocp-knots");
  }
  const int knots = static_cast<int>(request.knots());
  if (s = check_range("dt", request.dt(), std::numeric_limits<double>::min(), kInfinity,
                      "> 0 (seconds)");
      !s.ok()) {
    return s;
  }
  if (s = check_enum("integrator", request.integrator(), v1::Integrator_IsValid); !s.ok()) {
    return s;
  }
  out.dynamics.integrator = to_integrator(request.integrator());
  if (s = actuated_dofs(m, request.actuation(), out.dynamics.actuated_dofs); !s.ok()) return s;
  const int nu = static_cast<int>(out.dynamics.actuated_dofs.size());
  if (s = check_gains(request.gains()); !s.ok()) return s;
  out.dynamics.gains = engine_gains(planning, request.gains());
  if (s = plan_bounds(request.control_bounds(), nu, out.dynamics.control_bounds); !s.ok()) {
    return s;
  }
  if (s = plan_settings(planning, request.solver(), out.settings); !s.ok()) return s;
  if (s = check_range("max_seconds", request.max_seconds(), 0.0, kInfinity, ">= 0 (0: none)");
      !s.ok()) {
    return s;
  }
  out.max_seconds = request.max_seconds();
  out.feedback = request.feedback();
  if (s = plan_guess(m, request, knots, nu, out); !s.ok()) return s;

  // The schedule, its contacts anchored at x̂₀.
  const auto& phases = request.phases();
  if (phases.size() > planning.limits.max_phases) {
    return over_limit("phases", phases.size(), planning.limits.max_phases, "--max-phases");
  }
  std::vector<CallPhase> planned(static_cast<std::size_t>(phases.size()));
  std::vector<std::vector<BilateralConstraint>> anchored(planned.size());
  Data data(m);
  for (int p = 0; p < phases.size(); ++p) {
    const auto at = static_cast<std::size_t>(p);
    if (s = plan_phase(planning, entry, phases[p], "phases[" + std::to_string(p) + "]",
                       p == 0 ? nullptr : &planned[at - 1], knots, kSolveStep, planned[at]);
        !s.ok()) {
      return s;
    }
    // The span points into `anchoring`'s copy, which must outlive the assignment.
    AnchoredConstraints anchoring(planned[at].contacts);
    const std::span<const BilateralConstraint> held = anchoring.at(m, data, out.x0.head(m.nq));
    anchored[at].assign(held.begin(), held.end());
  }

  // The cost terms.
  const int terms = request.running_costs().size() + request.terminal_costs().size();
  if (terms > planning.limits.max_cost_terms) {
    return over_limit("running_costs and terminal_costs: cost terms", terms,
                      planning.limits.max_cost_terms, "--max-cost-terms");
  }
  std::set<std::string> running_names, terminal_names;
  std::vector<ReadTerm> running(static_cast<std::size_t>(request.running_costs().size()));
  std::vector<ReadTerm> terminal(static_cast<std::size_t>(request.terminal_costs().size()));
  for (int i = 0; i < request.running_costs().size(); ++i) {
    if (s = read_term(m, nu, knots, request.running_costs(i), false, "running_costs", i,
                      running_names, running[static_cast<std::size_t>(i)]);
        !s.ok()) {
      return s;
    }
  }
  for (int i = 0; i < request.terminal_costs().size(); ++i) {
    if (s = read_term(m, nu, knots, request.terminal_costs(i), true, "terminal_costs", i,
                      terminal_names, terminal[static_cast<std::size_t>(i)]);
        !s.ok()) {
      return s;
    }
  }
  for (const ReadTerm& term : running) out.term_names.push_back(term.term.name);
  for (const ReadTerm& term : terminal) out.term_names.push_back(term.term.name);

  // The knot models: one per stretch of knots alike.
  std::vector<int> cuts = {0, knots};
  for (const CallPhase& phase : planned) {
    cuts.push_back(phase.first_knot);
    if (phase.touchdown) cuts.push_back(std::min(phase.first_knot + 1, knots));
  }
  for (const ReadTerm& term : running) {
    cuts.push_back(term.first_knot);
    cuts.push_back(term.end_knot);
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  out.knot_models.assign(static_cast<std::size_t>(knots), 0);
  std::size_t phase = 0;
  for (std::size_t c = 0; c + 1 < cuts.size(); ++c) {
    const int begin = cuts[c], end = cuts[c + 1];
    while (phase + 1 < planned.size() && planned[phase + 1].first_knot <= begin) ++phase;
    KnotModel knot{.dt = request.dt()};
    if (!planned.empty()) {
      knot.contacts = anchored[phase];
      knot.touchdown = planned[phase].touchdown && planned[phase].first_knot == begin;
      knot.restitution = planned[phase].restitution;
    }
    std::vector<int> term_of;
    for (std::size_t i = 0; i < running.size(); ++i) {
      if (running[i].first_knot > begin || running[i].end_knot < end) continue;
      if (s = place_term(m, nu, running[i], begin, knot.contacts, knot.costs.emplace_back());
          !s.ok()) {
        return s;
      }
      term_of.push_back(static_cast<int>(i));
    }
    std::fill(out.knot_models.begin() + begin, out.knot_models.begin() + end,
              static_cast<int>(out.models.size()));
    out.models.push_back(std::move(knot));
    out.terms_of_model.push_back(std::move(term_of));
  }
  KnotModel last;
  std::vector<int> term_of;
  for (std::size_t i = 0; i < terminal.size(); ++i) {
    last.costs.push_back(terminal[i].term);
    term_of.push_back(static_cast<int>(running.size() + i));
  }
  out.terminal_model = static_cast<int>(out.models.size());
  out.models.push_back(std::move(last));
  out.terms_of_model.push_back(std::move(term_of));

  // The solve's memory and its answer's, held until the call ends.
  const std::size_t bytes = solve_bytes(m, knots, nu, threads);
  if (!memory.add(planning.budget, bytes)) {
    return {grpc::StatusCode::RESOURCE_EXHAUSTED, planning.budget.refusal("the solve", bytes)};
  }
  const std::int64_t iterations = out.settings.max_iterations;
  const std::int64_t values = std::int64_t{knots + 1} * (m.nq + m.nv) + std::int64_t{knots} * nu +
                              (out.feedback ? std::int64_t{knots} * nu * 2 * m.nv : 0) +
                              5 * iterations + 2 * terms;
  return planning.reserve_response(values, memory);
}

}  // namespace torqued::server
