// torqued_ocp: the engine's FDDP on the optimal-control problems of ../shared/anchors' anchor_ocp
// (Crocoddyl 3.0.1's SolverFDDP), read from the JSON that `anchor_ocp --describe FILE` writes, and
// timed as anchor_ocp times Crocoddyl, so that the two can be put side by side:
//
//   torqued_ocp --describe FILE [--problem NAME|all] [--repeats 7] [--models DIR]
//
// Each problem is built as described: the URDF (models DIR, default ../shared/models) with a
// free-flyer root on a floating base, x0, K knots of dt, the semi-implicit Euler step, the
// contacts (3D points or 6D welds at the named frames, Baumgarte's gains as given), the running
// and terminal costs (frame translation, state, control, control about gravity, centre of mass;
// quadratic or weighted quadratic), the solver's thresholds. Every solve starts cold, from x0 at
// every knot and the quasi-static controls, on one thread; --repeats N solves, the first
// discarded. Printed per problem, in anchor_ocp's columns: iterations, whether FDDP converged, the
// median solve time and per iteration, the final cost and stopping criterion, and the task
// frame's distance to its target at the last knot.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/algorithms/kinematics.hpp"
#include "engine/io/urdf.hpp"
#include "engine/model/build.hpp"
#include "engine/optimal_control/fddp.hpp"
#include "engine/optimal_control/multibody_problem.hpp"

namespace torqued {
namespace {

using nlohmann::json;

Eigen::VectorXd vector_of(const json& values) {
  Eigen::VectorXd out(static_cast<Eigen::Index>(values.size()));
  for (std::size_t i = 0; i < values.size(); ++i) {
    out[static_cast<Eigen::Index>(i)] = values[i].get<double>();
  }
  return out;
}

int frame_of(const Model& model, const std::string& name) {
  const int frame = model.find_frame(name);
  if (frame < 0) throw std::runtime_error("no frame named " + name);
  return frame;
}

// x0 in the engine's layout from the described one, joint by joint (the orders agree for URDF,
// depth-first with siblings by joint name, but the indices are looked up, not assumed).
Eigen::VectorXd state_of(const Model& model, const json& problem) {
  const Eigen::VectorXd described = vector_of(problem["x0"]);
  const int described_nq = problem["nq"].get<int>();
  Eigen::VectorXd x = Eigen::VectorXd::Zero(model.nq + model.nv);
  for (const json& joint : problem["joints"]) {
    const std::string name = joint["name"].get<std::string>();
    const int body = name == "root_joint" ? 1 : model.find_joint(name);
    if (body < 0) throw std::runtime_error("no joint named " + name);
    const Joint& ours = model.joints[body];
    const int nq = joint["nq"].get<int>(), nv = joint["nv"].get<int>();
    x.segment(ours.idx_q, nq) = described.segment(joint["idx_q"].get<int>(), nq);
    x.segment(model.nq + ours.idx_v, nv) =
        described.segment(described_nq + joint["idx_v"].get<int>(), nv);
  }
  return x;
}

std::vector<CostTerm> costs_of(const Model& model, const json& terms) {
  std::vector<CostTerm> out;
  for (const json& term : terms) {
    CostTerm& cost = out.emplace_back();
    cost.name = term["name"].get<std::string>();
    cost.weight = term["weight"].get<double>();
    const json& residual = term["residual"];
    const std::string type = residual["type"].get<std::string>();
    if (residual.contains("reference")) cost.residual.target = vector_of(residual["reference"]);
    if (type == "frame_translation") {
      cost.residual.type = ResidualType::kFrameTranslation;
      cost.residual.frame = frame_of(model, residual["frame"].get<std::string>());
    } else if (type == "state") {
      cost.residual.type = ResidualType::kState;
    } else if (type == "control") {
      cost.residual.type = ResidualType::kControl;
    } else if (type == "control_gravity") {
      cost.residual.type = ResidualType::kControlGravity;
    } else if (type == "com_position") {
      cost.residual.type = ResidualType::kCenterOfMass;
    } else {
      throw std::runtime_error("unknown residual " + type);
    }
    const json& activation = term["activation"];
    if (activation["type"].get<std::string>() == "weighted_quad") {
      cost.activation = {.type = ActivationType::kWeightedQuadratic,
                         .weights = vector_of(activation["weights"])};
    }
  }
  return out;
}

struct Built {
  ModelPtr model;
  std::unique_ptr<MultibodyProblem> problem;
  FddpSettings settings;
  int task_frame = -1;
  Vec3 task_target;
};

Built build(const json& problem, const std::string& models) {
  Built built;
  UrdfOptions options;
  options.floating_base = problem["base"].get<std::string>() == "floating";
  const std::string path = problem["model"].get<std::string>();
  built.model = build_model(read_urdf_file(models + path.substr(path.find_last_of('/')), options));
  const Model& model = *built.model;
  // The states' joint values go to the engine's layout; the state residuals' targets too.
  const Eigen::VectorXd x0 = state_of(model, problem);
  std::vector<BilateralConstraint> contacts;
  for (const json& c : problem["contacts"]) {
    const int frame = frame_of(model, c["frame"].get<std::string>());
    BilateralConstraint& contact = contacts.emplace_back();
    contact.name = c["frame"].get<std::string>();
    contact.type = c["type"].get<std::string>() == "ContactModel3D" ? ConstraintType::kPoint
                                                                    : ConstraintType::kWeld;
    contact.body1 = model.frames[frame].body;
    contact.placement1 = model.frames[frame].placement;
    const json& reference = c["reference_placement"];
    contact.placement2.translation = vector_of(reference["translation"]);
    for (int r = 0; r < 3; ++r) {
      contact.placement2.rotation.row(r) = vector_of(reference["rotation_rows"][r]).transpose();
    }
    const Eigen::VectorXd gains = vector_of(c["baumgarte_gains"]);
    if (gains.norm() != 0.0) throw std::runtime_error("only contacts without Baumgarte's gains");
  }
  KnotModel running{.dt = problem["dt"].get<double>(),
                    .contacts = contacts,
                    .costs = costs_of(model, problem["running_costs"])};
  KnotModel terminal{.costs = costs_of(model, problem["terminal_costs"])};
  for (KnotModel* knot : {&running, &terminal}) {
    for (CostTerm& cost : knot->costs) {
      if (cost.residual.type == ResidualType::kState) {
        json described = problem;
        described["x0"] = std::vector<double>(
            cost.residual.target.data(), cost.residual.target.data() + cost.residual.target.size());
        cost.residual.target = state_of(model, described);
      }
    }
  }
  MultibodyDynamics dynamics;
  for (int k = model.floating_base ? 6 : 0; k < model.nv; ++k) dynamics.actuated_dofs.push_back(k);
  const int knots = problem["K"].get<int>();
  built.problem = std::make_unique<MultibodyProblem>(model, x0, dynamics,
                                                     std::vector<KnotModel>{running, terminal},
                                                     std::vector<int>(knots, 0), 1);
  const json& solver = problem["solver"];
  built.settings.max_iterations = solver["maxiter"].get<int>();
  built.settings.stop_threshold = solver["th_stop"].get<double>();
  built.settings.initial_regularization = solver["reg_min"].get<double>();
  built.settings.min_regularization = solver["reg_min"].get<double>();
  built.settings.max_regularization = solver["reg_max"].get<double>();
  built.settings.regularization_factor = solver["reg_incfactor"].get<double>();
  built.settings.accept_ratio = solver["th_acceptstep"].get<double>();
  built.settings.accept_gap_ratio = solver["th_acceptnegstep"].get<double>();
  built.settings.gradient_threshold = solver["th_grad"].get<double>();
  built.settings.decrease_above = solver["th_stepdec"].get<double>();
  built.settings.increase_at_most = solver["th_stepinc"].get<double>();
  built.task_frame = frame_of(model, problem["task"]["frame"].get<std::string>());
  built.task_target = vector_of(problem["task"]["target"]);
  return built;
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int run(int argc, char** argv) {
  std::string describe, which = "all", models = "../shared/models", repeats_text = "7";
  const std::map<std::string, std::string*> options = {{"--describe", &describe},
                                                       {"--problem", &which},
                                                       {"--models", &models},
                                                       {"--repeats", &repeats_text}};
  for (int i = 1; i < argc; i += 2) {
    const auto option = options.find(argv[i]);
    if (option == options.end() || i + 1 >= argc) {
      std::cerr << "usage: see the comment at the top of bench/ocp_bench.cpp\n";
      return 2;
    }
    *option->second = argv[i + 1];
  }
  const int repeats = std::stoi(repeats_text);
  if (describe.empty() || repeats < 1) {
    std::cerr << "usage: see the comment at the top of bench/ocp_bench.cpp\n";
    return 2;
  }
  std::ifstream file(describe);
  if (!file) throw std::runtime_error("cannot read " + describe);
  const json described = json::parse(file);
  const json problems = described.is_array()             ? described
                        : described.contains("problems") ? described["problems"]
                                                         : json::array({described});
  std::printf(
      "torqued_ocp: the engine's FDDP, 1 thread, %d solves per problem from the same cold "
      "start (first discarded when more than one), medians\n",
      repeats);
  std::printf("%-18s %9s %3s %5s %5s %4s %10s %9s %20s %9s %10s\n", "problem", "nq/nv/nu", "K",
              "dt", "iters", "conv", "solve_ms", "ms/iter", "cost", "stop", "task_err_m");
  for (const json& problem : problems) {
    const std::string name = problem["name"].get<std::string>();
    if (which != "all" && which != name) continue;
    Built built = build(problem, models);
    const Model& model = *built.model;
    Fddp solver(*built.problem);
    std::vector<Eigen::VectorXd> xs, us;
    built.problem->cold_start(xs, us);
    std::vector<double> times;
    FddpOutcome outcome = FddpOutcome::kIterationLimit;
    for (int r = 0; r < repeats; ++r) {
      const double start = now();
      outcome = solver.solve(xs, us, false, built.settings);
      times.push_back((now() - start) * 1e3);
    }
    if (repeats > 1) times.erase(times.begin());
    std::sort(times.begin(), times.end());
    const double median = times.size() % 2 == 1
                              ? times[times.size() / 2]
                              : 0.5 * (times[times.size() / 2 - 1] + times[times.size() / 2]);
    const std::size_t iterations = std::max<std::size_t>(solver.iterations().size(), 1);
    Data data(model);
    forward_kinematics(model, data, solver.xs().back().head(model.nq));
    const double task_error =
        (frame_placement(model, data, built.task_frame).translation - built.task_target).norm();
    char sizes[32];
    std::snprintf(sizes, sizeof sizes, "%d/%d/%d", model.nq, model.nv,
                  built.problem->control_size());
    std::printf("%-18s %9s %3d %5.3g %5zu %4s %10.2f %9.3f %20.15g %9.2e %10.2e\n", name.c_str(),
                sizes, built.problem->knots(), problem["dt"].get<double>(),
                solver.iterations().size(), outcome == FddpOutcome::kConverged ? "yes" : "no",
                median, median / static_cast<double>(iterations), solver.cost(),
                solver.iterations().empty() ? 0.0 : solver.iterations().back().stop, task_error);
  }
  return 0;
}

}  // namespace
}  // namespace torqued

int main(int argc, char** argv) {
  try {
    return torqued::run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "torqued_ocp: " << e.what() << "\n";
    return 1;
  }
}
