// crocoddyl_tick: Crocoddyl 3.0.1's SolverFDDP on a torqued optimal-control problem, timed as an
// MPC tick is, in process: the reference a ControlService.Mpc tick is measured against
// (bench/mpc_tick.py, docs/benchmarks.md).
//
//   crocoddyl_tick --request FILE --urdf FILE [--threads 1] [--ticks 200]
//
// --request is a torqued.v1.SolveRequest in protobuf's JSON mapping (field names in lowerCamelCase,
// as json_format.MessageToJson writes them); --urdf the model its model_id was registered from,
// with a free-flyer root when the request's actuation leaves the root unactuated. The problem is
// rebuilt in Crocoddyl's terms, knot by knot:
// - each running knot an IntegratedActionModelEuler (semi-implicit Euler, dt) over a
//   DifferentialActionModelContactFwdDynamics whose contacts are the knot's phase's point contacts
//   (ContactModel3D at the anchor, LOCAL_WORLD_ALIGNED, the request's Baumgarte gains), or over a
//   DifferentialActionModelFreeFwdDynamics in flight; ActuationModelFloatingBase or Full;
// - a phase that adds contacts begins with their touchdown: Crocoddyl's
//   ActionModelImpulseFwdDynamics (plastic, ImpulseModel3D per contact of the new phase, no cost)
//   is inserted before its first knot, where torqued's step applies the impact first: the two
//   problems have the same terms, but not the same costs after the first touchdown;
// - the cost terms on the knots their range covers: residuals STATE, CONTROL, CONTROL_GRAVITY,
//   FRAME_TRANSLATION, FRAME_PLACEMENT, CENTER_OF_MASS and FRICTION_CONE (Crocoddyl's FrictionCone,
//   the request's μ and faces, inner pyramid; its rows are the faces and the normal force's
//   bound); activations QUADRATIC, WEIGHTED_QUADRATIC and QUADRATIC_BARRIER (a friction cone's
//   barrier takes the cone's own bounds). Anything else is refused, named.
// The state's layout must be torqued's: the URDF's joints, depth first, siblings sorted by name,
// which Pinocchio's order is checked against.
//
// The problem is solved from a cold start (q0, v0 at every knot, quasi-static controls) to
// convergence (at most the request's max_iterations, 100 unset), its cost after each iteration
// logged. Then --ticks ticks follow, each as torqued-load's Mpc ticks are: the solution shifted
// by one knot (its last repeated; a control whose knot changes kind stays), x0 the problem's
// start, and one FDDP iteration. Printed as JSON:
// the cold solve's iterations, time per iteration and cost after each iteration, and the ticks'
// median, p90 and p99 in milliseconds and median step length, on --threads threads (Crocoddyl's
// knot loop; Eigen's products on one).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <crocoddyl/core/activations/quadratic-barrier.hpp>
#include <crocoddyl/core/activations/quadratic.hpp>
#include <crocoddyl/core/activations/weighted-quadratic.hpp>
#include <crocoddyl/core/costs/cost-sum.hpp>
#include <crocoddyl/core/costs/residual.hpp>
#include <crocoddyl/core/integrator/euler.hpp>
#include <crocoddyl/core/optctrl/shooting.hpp>
#include <crocoddyl/core/residuals/control.hpp>
#include <crocoddyl/core/solvers/fddp.hpp>
#include <crocoddyl/core/utils/callbacks.hpp>
#include <crocoddyl/multibody/actions/contact-fwddyn.hpp>
#include <crocoddyl/multibody/actions/free-fwddyn.hpp>
#include <crocoddyl/multibody/actions/impulse-fwddyn.hpp>
#include <crocoddyl/multibody/actuations/floating-base.hpp>
#include <crocoddyl/multibody/actuations/full.hpp>
#include <crocoddyl/multibody/contacts/contact-3d.hpp>
#include <crocoddyl/multibody/contacts/multiple-contacts.hpp>
#include <crocoddyl/multibody/friction-cone.hpp>
#include <crocoddyl/multibody/impulses/impulse-3d.hpp>
#include <crocoddyl/multibody/impulses/multiple-impulses.hpp>
#include <crocoddyl/multibody/residuals/com-position.hpp>
#include <crocoddyl/multibody/residuals/contact-friction-cone.hpp>
#include <crocoddyl/multibody/residuals/control-gravity.hpp>
#include <crocoddyl/multibody/residuals/frame-placement.hpp>
#include <crocoddyl/multibody/residuals/frame-translation.hpp>
#include <crocoddyl/multibody/residuals/state.hpp>
#include <crocoddyl/multibody/states/multibody.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <pinocchio/algorithm/center-of-mass.hpp>
#include <pinocchio/math/rpy.hpp>
#include <pinocchio/multibody/joint/joint-free-flyer.hpp>
#include <pinocchio/parsers/urdf.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace croc = crocoddyl;
namespace pin = pinocchio;
using Eigen::VectorXd;
using nlohmann::json;

// A JSON number, or protobuf's "Infinity", "-Infinity" and "NaN" strings.
double number(const json& value) {
  if (value.is_number()) return value.get<double>();
  const std::string text = value.get<std::string>();
  if (text == "Infinity") return std::numeric_limits<double>::infinity();
  if (text == "-Infinity") return -std::numeric_limits<double>::infinity();
  if (text == "NaN") return std::numeric_limits<double>::quiet_NaN();
  throw std::runtime_error("not a number: " + text);
}

VectorXd vector_of(const json& object, const char* field) {
  if (!object.contains(field)) return {};
  const json& values = object[field];
  VectorXd out(static_cast<Eigen::Index>(values.size()));
  for (std::size_t i = 0; i < values.size(); ++i)
    out[static_cast<Eigen::Index>(i)] = number(values[i]);
  return out;
}

// A Vector3 message (x, y, z; unset ones zero).
Eigen::Vector3d vector3_of(const json& object, const char* field) {
  Eigen::Vector3d out = Eigen::Vector3d::Zero();
  if (!object.contains(field)) return out;
  const char* axes[] = {"x", "y", "z"};
  for (int i = 0; i < 3; ++i) {
    if (object[field].contains(axes[i])) out[i] = number(object[field][axes[i]]);
  }
  return out;
}

// A Placement message: R = Rz(yaw) Ry(pitch) Rx(roll), as model.proto states it.
pin::SE3 placement_of(const json& object, const char* field) {
  if (!object.contains(field)) return pin::SE3::Identity();
  const json& placement = object[field];
  const Eigen::Vector3d rpy = vector3_of(placement, "rpy");
  return pin::SE3(pin::rpy::rpyToMatrix(rpy[0], rpy[1], rpy[2]), vector3_of(placement, "xyz"));
}

std::uint32_t unsigned_of(const json& object, const char* field, std::uint32_t otherwise) {
  return object.contains(field) ? object[field].get<std::uint32_t>() : otherwise;
}

std::string string_of(const json& object, const char* field) {
  return object.contains(field) ? object[field].get<std::string>() : std::string();
}

pin::FrameIndex frame_id(const pin::Model& model, const std::string& name) {
  if (!model.existFrame(name)) throw std::runtime_error("no frame named " + name);
  return model.getFrameId(name);
}

// torqued's joint order: depth first, siblings sorted by name. Pinocchio's URDF parser keeps the
// file's order, so the two agree when each joint's children come sorted.
void check_joint_order(const pin::Model& model) {
  for (pin::JointIndex parent = 0; parent < static_cast<pin::JointIndex>(model.njoints); ++parent) {
    std::vector<std::string> children;
    for (pin::JointIndex j = parent + 1; j < static_cast<pin::JointIndex>(model.njoints); ++j) {
      if (model.parents[j] == parent) children.push_back(model.names[j]);
    }
    if (!std::is_sorted(children.begin(), children.end())) {
      throw std::runtime_error("the children of joint " + model.names[parent] +
                               " are not in torqued's order (sorted by name)");
    }
  }
}

// One contact phase: from its first knot, its point contacts (frame, world anchor).
struct Phase {
  std::uint32_t first_knot = 0;
  std::vector<std::pair<std::string, Eigen::Vector3d>> contacts;
};

struct Request {
  json costs_running, costs_terminal;
  std::vector<Phase> phases;
  VectorXd x0;
  std::uint32_t knots = 0;
  double dt = 0;
  bool floating = false;
  Eigen::Vector2d gains = Eigen::Vector2d::Zero();
  std::uint32_t max_iterations = 100;
  double th_stop = 1e-9;
};

// Whether the request's actuation leaves a free-flyer root unactuated (the URDF is then read
// with one); full actuation otherwise.
bool floating_base(const json& j) {
  const std::string actuation =
      j.contains("actuation") ? string_of(j["actuation"], "kind") : std::string();
  if (!actuation.empty() && actuation != "ACTUATION_KIND_UNACTUATED_ROOT" &&
      actuation != "ACTUATION_KIND_FULL") {
    throw std::runtime_error("actuation " + actuation + " is not rebuilt here");
  }
  return actuation == "ACTUATION_KIND_UNACTUATED_ROOT";
}

Request read_request(const json& j, const pin::Model& model) {
  Request r;
  r.knots = unsigned_of(j, "knots", 0);
  r.dt = number(j.at("dt"));
  r.floating = floating_base(j);
  const VectorXd q0 = vector_of(j, "q0");
  VectorXd v0 = vector_of(j, "v0");
  if (v0.size() == 0) v0 = VectorXd::Zero(model.nv);
  if (q0.size() != model.nq || v0.size() != model.nv) {
    throw std::runtime_error("q0 or v0 does not fit the URDF's model");
  }
  r.x0.resize(model.nq + model.nv);
  r.x0 << q0, v0;
  if (j.contains("gains"))
    r.gains << number(j["gains"].value("position", json(0.0))),
        number(j["gains"].value("velocity", json(0.0)));
  for (const json& phase : j.value("phases", json::array())) {
    Phase& p = r.phases.emplace_back();
    p.first_knot = unsigned_of(phase, "firstKnot", 0);
    for (const json& contact : phase.value("contacts", json::array())) {
      if (string_of(contact, "type") != "CONSTRAINT_TYPE_POINT") {
        throw std::runtime_error("only point contacts are rebuilt here");
      }
      const json& frame2 = contact.value("frame2", json::object());
      if (!frame2.contains("placement") ||
          !(string_of(frame2, "frame").empty() || string_of(frame2, "frame") == "world")) {
        throw std::runtime_error("only contacts anchored at a point of the world are rebuilt here");
      }
      p.contacts.emplace_back(string_of(contact["frame1"], "frame"),
                              placement_of(frame2, "placement").translation());
    }
  }
  if (r.phases.empty()) r.phases.emplace_back();
  r.costs_running = j.value("runningCosts", json::array());
  r.costs_terminal = j.value("terminalCosts", json::array());
  if (j.contains("solver")) {
    r.max_iterations = unsigned_of(j["solver"], "maxIterations", r.max_iterations);
    if (j["solver"].contains("stopThreshold")) r.th_stop = number(j["solver"]["stopThreshold"]);
  }
  return r;
}

const Phase& phase_at(const Request& r, std::uint32_t knot) {
  const Phase* found = &r.phases.front();
  for (const Phase& p : r.phases) {
    if (p.first_knot <= knot) found = &p;
  }
  return *found;
}

class Builder {
 public:
  Builder(const Request& request, std::shared_ptr<pin::Model> model)
      : request_(request), model_(std::move(model)) {
    state_ = std::make_shared<croc::StateMultibody>(model_);
    if (request.floating) {
      actuation_ = std::make_shared<croc::ActuationModelFloatingBase>(state_);
    } else {
      actuation_ = std::make_shared<croc::ActuationModelFull>(state_);
    }
    nu_ = actuation_->get_nu();
  }

  std::shared_ptr<croc::ShootingProblem> problem() {
    std::vector<std::shared_ptr<croc::ActionModelAbstract>> models;
    const Phase* previous = nullptr;
    for (std::uint32_t k = 0; k < request_.knots; ++k) {
      const Phase& phase = phase_at(request_, k);
      if (previous != nullptr && &phase != previous && adds_contacts(*previous, phase)) {
        models.push_back(impulse(phase));
      }
      previous = &phase;
      models.push_back(running(phase, k));
    }
    auto terminal = std::make_shared<croc::IntegratedActionModelEuler>(
        dynamics(phase_at(request_, request_.knots),
                 costs(request_.costs_terminal, nullptr, 0, true)),
        0.0);
    return std::make_shared<croc::ShootingProblem>(request_.x0, models, terminal);
  }

 private:
  static bool adds_contacts(const Phase& before, const Phase& after) {
    std::set<std::string> held;
    for (const auto& c : before.contacts) held.insert(c.first);
    for (const auto& c : after.contacts) {
      if (held.count(c.first) == 0) return true;
    }
    return false;
  }

  std::shared_ptr<croc::ActionModelAbstract> running(const Phase& phase, std::uint32_t knot) {
    return std::make_shared<croc::IntegratedActionModelEuler>(
        dynamics(phase, costs(request_.costs_running, &phase, knot, false)), request_.dt);
  }

  std::shared_ptr<croc::DifferentialActionModelAbstract> dynamics(
      const Phase& phase, std::shared_ptr<croc::CostModelSum> costs) {
    if (phase.contacts.empty()) {
      return std::make_shared<croc::DifferentialActionModelFreeFwdDynamics>(state_, actuation_,
                                                                            costs);
    }
    auto contacts = std::make_shared<croc::ContactModelMultiple>(state_, nu_);
    for (const auto& [frame, anchor] : phase.contacts) {
      contacts->addContact(frame, std::make_shared<croc::ContactModel3D>(
                                      state_, frame_id(*model_, frame), anchor,
                                      pin::LOCAL_WORLD_ALIGNED, nu_, request_.gains));
    }
    return std::make_shared<croc::DifferentialActionModelContactFwdDynamics>(
        state_, actuation_, contacts, costs, 0.0, true);
  }

  // The touchdown before a knot: the new phase's contacts hit plastically. No cost: torqued's
  // touchdown is the first part of its knot's step, whose costs the node after this one has.
  std::shared_ptr<croc::ActionModelAbstract> impulse(const Phase& phase) {
    auto impulses = std::make_shared<croc::ImpulseModelMultiple>(state_);
    for (const auto& contact : phase.contacts) {
      impulses->addImpulse(contact.first,
                           std::make_shared<croc::ImpulseModel3D>(
                               state_, frame_id(*model_, contact.first), pin::LOCAL_WORLD_ALIGNED));
    }
    return std::make_shared<croc::ActionModelImpulseFwdDynamics>(
        state_, impulses, std::make_shared<croc::CostModelSum>(state_, 0), 0.0, 0.0, true);
  }

  static bool covers(const json& term, std::uint32_t knot) {
    const std::uint32_t first = unsigned_of(term, "firstKnot", 0);
    const std::uint32_t end =
        unsigned_of(term, "endKnot", std::numeric_limits<std::uint32_t>::max());
    return first <= knot && knot < end;
  }

  std::shared_ptr<croc::CostModelSum> costs(const json& terms, const Phase* phase,
                                            std::uint32_t knot, bool terminal) {
    auto sum = std::make_shared<croc::CostModelSum>(state_, nu_);
    for (const json& term : terms) {
      if (terminal || covers(term, knot)) add_cost(*sum, term, phase);
    }
    return sum;
  }

  void add_cost(croc::CostModelSum& sum, const json& term, const Phase* phase) {
    const std::size_t nu = nu_;
    const json& residual = term.at("residual");
    const std::string type = residual.value("type", std::string("RESIDUAL_TYPE_UNSPECIFIED"));
    const std::string name = term.value("name", std::string("term"));
    const std::string frame = string_of(residual, "frame");
    const VectorXd reference = vector_of(residual, "reference");
    std::shared_ptr<croc::ResidualModelAbstract> r;
    VectorXd lower, upper;  // a friction cone's own bounds
    if (type == "RESIDUAL_TYPE_STATE") {
      VectorXd x_ref = reference;
      if (x_ref.size() == 0) {
        x_ref = VectorXd::Zero(model_->nq + model_->nv);
        x_ref.head(model_->nq) = pin::neutral(*model_);
      }
      r = std::make_shared<croc::ResidualModelState>(state_, x_ref, nu);
    } else if (type == "RESIDUAL_TYPE_CONTROL") {
      r = reference.size() ? std::make_shared<croc::ResidualModelControl>(state_, reference)
                           : std::make_shared<croc::ResidualModelControl>(state_, nu);
    } else if (type == "RESIDUAL_TYPE_CONTROL_GRAVITY") {
      r = std::make_shared<croc::ResidualModelControlGrav>(state_, nu);
    } else if (type == "RESIDUAL_TYPE_FRAME_TRANSLATION") {
      r = std::make_shared<croc::ResidualModelFrameTranslation>(state_, frame_id(*model_, frame),
                                                                Eigen::Vector3d(reference), nu);
    } else if (type == "RESIDUAL_TYPE_FRAME_PLACEMENT") {
      r = std::make_shared<croc::ResidualModelFramePlacement>(
          state_, frame_id(*model_, frame), placement_of(residual, "placement"), nu);
    } else if (type == "RESIDUAL_TYPE_CENTER_OF_MASS") {
      r = std::make_shared<croc::ResidualModelCoMPosition>(state_, Eigen::Vector3d(reference), nu);
    } else if (type == "RESIDUAL_TYPE_FRICTION_CONE") {
      if (phase == nullptr) throw std::runtime_error(name + ": a friction cone needs a contact");
      const json& cone = residual.value("cone", json::object());
      const std::uint32_t faces = unsigned_of(cone, "faces", 4);
      const Eigen::Matrix3d normal_up = Eigen::Matrix3d::Identity();
      const croc::FrictionCone friction(normal_up, number(cone.value("friction", json(0.0))),
                                        faces == 0 ? std::size_t{4} : std::size_t{faces}, true);
      r = std::make_shared<croc::ResidualModelContactFrictionCone>(state_, frame_id(*model_, frame),
                                                                   friction, nu);
      lower = friction.get_lb();
      upper = friction.get_ub();
    } else {
      throw std::runtime_error(name + ": residual " + type + " is not rebuilt here");
    }
    const json& activation = term.value("activation", json::object());
    const std::string kind = activation.value("type", std::string("ACTIVATION_TYPE_QUADRATIC"));
    std::shared_ptr<croc::ActivationModelAbstract> a;
    if (kind == "ACTIVATION_TYPE_QUADRATIC") {
      a = std::make_shared<croc::ActivationModelQuad>(r->get_nr());
    } else if (kind == "ACTIVATION_TYPE_WEIGHTED_QUADRATIC") {
      a = std::make_shared<croc::ActivationModelWeightedQuad>(vector_of(activation, "weights"));
    } else if (kind == "ACTIVATION_TYPE_QUADRATIC_BARRIER") {
      if (lower.size() == 0) {
        lower = vector_of(activation, "lower");
        upper = vector_of(activation, "upper");
      }
      a = std::make_shared<croc::ActivationModelQuadraticBarrier>(
          croc::ActivationBounds(lower, upper));
    } else {
      throw std::runtime_error(name + ": activation " + kind + " is not rebuilt here");
    }
    const double weight = term.contains("weight") ? number(term["weight"]) : 1.0;
    sum.addCost(name, std::make_shared<croc::CostModelResidual>(state_, a, r), weight);
  }

  const Request& request_;
  std::shared_ptr<pin::Model> model_;
  std::shared_ptr<croc::StateMultibody> state_;
  std::shared_ptr<croc::ActuationModelAbstract> actuation_;
  std::size_t nu_ = 0;
};

// The cost after each iteration of a solve.
struct CostLog : croc::CallbackAbstract {
  std::vector<double> costs;
  void operator()(croc::SolverAbstract& solver) override { costs.push_back(solver.get_cost()); }
};

double percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  const std::size_t at = static_cast<std::size_t>(std::ceil(p * values.size())) - 1;
  return values[std::min(at, values.size() - 1)];
}

// The solution shifted by one knot, its last repeated; a control stays where its knot's kind (and
// so its size) changes.
void shift(std::vector<VectorXd>& xs, std::vector<VectorXd>& us) {
  std::rotate(xs.begin(), xs.begin() + 1, xs.end());
  xs.back() = xs[xs.size() - 2];
  for (std::size_t k = 0; k + 1 < us.size(); ++k) {
    if (us[k].size() == us[k + 1].size()) us[k] = us[k + 1];
  }
}

int run(int argc, char** argv) {
  std::string request_path, urdf;
  int threads = 1, ticks = 200;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw std::runtime_error(flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "--request") {
      request_path = value;
    } else if (flag == "--urdf") {
      urdf = value;
    } else if (flag == "--threads") {
      threads = std::stoi(value);
    } else if (flag == "--ticks") {
      ticks = std::stoi(value);
    } else {
      throw std::runtime_error("unknown option " + flag +
                               " (see the comment atop crocoddyl_tick.cpp)");
    }
  }
  if (request_path.empty() || urdf.empty() || threads < 1 || ticks < 1) {
    throw std::runtime_error(
        "usage: crocoddyl_tick --request FILE --urdf FILE [--threads N] [--ticks N]");
  }
  Eigen::setNbThreads(1);
  std::ifstream in(request_path);
  if (!in) throw std::runtime_error("cannot read " + request_path);
  const json described = json::parse(in);
  auto model = std::make_shared<pin::Model>();
  if (floating_base(described)) {
    pin::urdf::buildModel(urdf, pin::JointModelFreeFlyer(), *model);
  } else {
    pin::urdf::buildModel(urdf, *model);
  }
  check_joint_order(*model);
  const Request request = read_request(described, *model);
  Builder builder(request, model);
  auto problem = builder.problem();
  problem->set_nthreads(threads);
  croc::SolverFDDP solver(problem);
  solver.set_th_stop(request.th_stop);
  auto log = std::make_shared<CostLog>();
  solver.setCallbacks({log});

  const std::size_t nodes = problem->get_T();
  std::vector<VectorXd> xs(nodes + 1, request.x0);
  std::vector<VectorXd> us = problem->quasiStatic_xs(std::vector<VectorXd>(nodes, request.x0));
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  const bool converged = solver.solve(xs, us, request.max_iterations, false);
  const double cold = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  const std::vector<double> costs = log->costs;
  const std::size_t iterations = std::max<std::size_t>(costs.size(), 1);

  std::vector<double> tick_ms, tick_steps;
  xs = solver.get_xs();
  us = solver.get_us();
  for (int t = 0; t < ticks; ++t) {
    shift(xs, us);
    xs.front() = request.x0;
    start = Clock::now();
    solver.solve(xs, us, 1, false);
    tick_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    tick_steps.push_back(solver.get_steplength());
    xs = solver.get_xs();
    us = solver.get_us();
  }
  std::string cost_log;
  for (const double cost : costs) {
    char text[32];
    std::snprintf(text, sizeof text, "%s%.12g", cost_log.empty() ? "" : ", ", cost);
    cost_log += text;
  }
  std::printf(
      "{\"nodes\": %zu, \"threads\": %d, \"cold_iterations\": %zu, \"converged\": %s, "
      "\"cold_ms_per_iteration\": %.4f, \"costs\": [%s], \"ticks\": %d, \"tick_ms\": "
      "{\"p50\": %.4f, \"p90\": %.4f, \"p99\": %.4f}, \"tick_step_p50\": %.6g}\n",
      nodes, threads, costs.size(), converged ? "true" : "false", cold / iterations,
      cost_log.c_str(), ticks, percentile(tick_ms, 0.5), percentile(tick_ms, 0.9),
      percentile(tick_ms, 0.99), percentile(tick_steps, 0.5));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "crocoddyl_tick: " << e.what() << "\n";
    return 2;
  }
}
