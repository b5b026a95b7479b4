// torqued_horizon: Linearize's engine work per knot, timed as ../shared/anchors' anchor_horizon
// times Pinocchio's (same options, same output rows), so that bench/compare_horizon.py can put
// the two side by side in one run:
//
//   torqued_horizon --urdf FILE [--base fixed|floating] [--knots 100] [--dt 0.01] [--threads 1]
//                   [--contacts FRAME,FRAME,...] [--contact-type 3d|6d] [--seconds 0.5]
//                   [--seed 1] [--phase-knots 10]
//
// Each knot is a random configuration, a velocity in [−1, 1] and controls in [−10, 10], with the
// free-flyer root unactuated on a floating base (nu = nv − 6). With --threads T the knots are split
// evenly over T threads, each with its own Data, as the server's workers split a call's knots.
// With --contacts the named frames are rigid contacts with the world (3D: point constraints; 6D:
// welds), held without Baumgarte's stabilization, as anchor_horizon holds them.
// Rows (ns per knot, median over repeats of the whole horizon):
//   aba_derivatives / constraint_dynamics_derivatives   the dynamics derivatives alone
//   step_linearization               the semi-implicit Euler step: x⁺, Fx, Fu
//   explicit_step_linearization      the explicit Euler step
//   rk4_step_linearization           the RK4 step (four dynamics derivatives)
// and with two contacts or more, a contact schedule's (Linearize's phases):
//   touchdown_step_linearization     the semi-implicit step at a touchdown of every contact: the
//                                    impact, its derivatives and the step after it
//   trot_step_linearization          the knots of a trot: --phase-knots knots on the contacts of
//                                    even index, then as many on those of odd index (a quadruped's
//                                    diagonal pairs when its feet are listed FL, FR, HL, HR: FL
//                                    and HR, then FR and HL; a biped's feet in turn), and so on,
//                                    each phase's first knot its contacts' touchdown
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "engine/algorithms/discrete_step.hpp"
#include "engine/io/urdf.hpp"
#include "engine/model/build.hpp"
#include "engine/model/configuration.hpp"

namespace torqued {
namespace {

struct Knot {
  Eigen::VectorXd q, v, u;
  int index = 0;
};

// One thread's Data and the step's outputs.
struct Worker {
  Data data;
  Eigen::VectorXd q_next, v_next;
  RowMajorMatrix fx, fu;

  Worker(const Model& model, int nu)
      : data(model),
        q_next(model.nq),
        v_next(model.nv),
        fx(2 * model.nv, 2 * model.nv),
        fu(2 * model.nv, nu) {}
  StepOutput out() { return {.q_next = q_next, .v_next = v_next, .fx = fx, .fu = fu}; }
};

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Median ns per knot of `body(worker, knot)` over the horizon, knots split over the workers.
template <class Body>
double time_horizon(std::vector<Worker>& workers, const std::vector<Knot>& knots, double seconds,
                    Body body) {
  const std::size_t threads = workers.size(), count = knots.size();
  auto run = [&] {
    std::vector<std::thread> others;
    for (std::size_t t = 1; t < threads; ++t) {
      others.emplace_back([&, t] {
        for (std::size_t k = t * count / threads; k < (t + 1) * count / threads; ++k) {
          body(workers[t], knots[k]);
        }
      });
    }
    for (std::size_t k = 0; k < count / threads; ++k) body(workers[0], knots[k]);
    for (std::thread& other : others) other.join();
  };
  run();  // warm-up: binds the workspaces
  std::vector<double> samples;
  const double start = now();
  while (samples.size() < 5 || (now() - start < seconds && samples.size() < 10000)) {
    const double begin = now();
    run();
    samples.push_back((now() - begin) * 1e9 / static_cast<double>(count));
  }
  std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
  return samples[samples.size() / 2];
}

int run(int argc, char** argv) {
  std::string urdf, base = "fixed", contact_list, contact_type = "3d";
  int knot_count = 100, threads = 1, phase_knots = 10;
  double dt = 0.01, seconds = 0.5;
  std::uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error("missing value after " + arg);
      return argv[++i];
    };
    if (arg == "--urdf") {
      urdf = next();
    } else if (arg == "--base") {
      base = next();
    } else if (arg == "--knots") {
      knot_count = std::stoi(next());
    } else if (arg == "--dt") {
      dt = std::stod(next());
    } else if (arg == "--threads") {
      threads = std::stoi(next());
    } else if (arg == "--seconds") {
      seconds = std::stod(next());
    } else if (arg == "--contacts") {
      contact_list = next();
    } else if (arg == "--contact-type") {
      contact_type = next();
    } else if (arg == "--seed") {
      seed = std::stoull(next());
    } else if (arg == "--phase-knots") {
      phase_knots = std::stoi(next());
    } else {
      std::cerr << "usage: see the comment at the top of bench/horizon_bench.cpp\n";
      return 2;
    }
  }
  if (urdf.empty() || (base != "fixed" && base != "floating") || knot_count < threads ||
      threads < 1 || (contact_type != "3d" && contact_type != "6d") || phase_knots < 1) {
    std::cerr << "usage: see the comment at the top of bench/horizon_bench.cpp\n";
    return 2;
  }
  UrdfOptions options;
  options.floating_base = base == "floating";
  const ModelPtr model_ptr = build_model(read_urdf_file(urdf, options));
  const Model& model = *model_ptr;
  std::vector<int> actuated(model.nv - (model.floating_base ? 6 : 0));
  std::iota(actuated.begin(), actuated.end(), model.floating_base ? 6 : 0);
  const int nu = static_cast<int>(actuated.size());
  std::vector<BilateralConstraint> contacts;
  for (std::size_t at = 0; at < contact_list.size();) {
    const std::size_t comma = std::min(contact_list.find(',', at), contact_list.size());
    const std::string name = contact_list.substr(at, comma - at);
    at = comma + 1;
    const int frame = model.find_frame(name);
    if (frame < 0) throw std::runtime_error("no frame named " + name);
    BilateralConstraint& contact = contacts.emplace_back();
    contact.name = name;
    contact.type = contact_type == "6d" ? ConstraintType::kWeld : ConstraintType::kPoint;
    contact.body1 = model.frames[frame].body;
    contact.placement1 = model.frames[frame].placement;
  }

  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::vector<Knot> knots(knot_count);
  for (Knot& k : knots) {
    k.index = static_cast<int>(&k - knots.data());
    k.q = random_configuration(model, rng);
    k.v = Eigen::VectorXd::NullaryExpr(model.nv, [&] { return unit(rng); });
    k.u = Eigen::VectorXd::NullaryExpr(nu, [&] { return 10.0 * unit(rng); });
  }
  std::vector<Worker> workers;
  workers.reserve(threads);
  for (int t = 0; t < threads; ++t) workers.emplace_back(model, nu);

  const double derivatives_ns =
      time_horizon(workers, knots, seconds, [&](Worker& w, const Knot& k) {
        Eigen::VectorXd& tau = w.v_next;  // scratch: B u
        actuate(actuated, k.u, tau);
        forward_dynamics_derivatives(model, w.data, k.q, k.v, tau, contacts);
      });
  const auto linearization = [&](Integrator integrator) {
    const StepSettings settings{
        .dt = dt, .integrator = integrator, .actuated_dofs = actuated, .constraints = contacts};
    return time_horizon(workers, knots, seconds, [&](Worker& w, const Knot& k) {
      step(model, w.data, k.q, k.v, k.u, settings, w.out());
    });
  };
  const double semi_implicit_ns = linearization(Integrator::kSemiImplicitEuler);
  const double explicit_ns = linearization(Integrator::kExplicitEuler);
  const double rk4_ns = linearization(Integrator::kRungeKutta4);
  // A schedule's knots: the contacts of even index, then of odd index, each phase beginning with
  // a touchdown.
  std::vector<BilateralConstraint> halves[2];
  for (std::size_t c = 0; c < contacts.size(); ++c) halves[c % 2].push_back(contacts[c]);
  const StepSettings touchdown{
      .dt = dt, .actuated_dofs = actuated, .constraints = contacts, .touchdown = true};
  const double touchdown_ns =
      contacts.size() < 2 ? 0.0
                          : time_horizon(workers, knots, seconds, [&](Worker& w, const Knot& k) {
                              step(model, w.data, k.q, k.v, k.u, touchdown, w.out());
                            });
  const double trot_ns =
      contacts.size() < 2
          ? 0.0
          : time_horizon(workers, knots, seconds, [&](Worker& w, const Knot& k) {
              const StepSettings settings{.dt = dt,
                                          .actuated_dofs = actuated,
                                          .constraints = halves[(k.index / phase_knots) % 2],
                                          .touchdown = k.index % phase_knots == 0};
              step(model, w.data, k.q, k.v, k.u, settings, w.out());
            });
  std::printf("model %s base %s nv %d nu %d contacts %zu (%s) knots %d threads %d dt %g\n",
              urdf.substr(urdf.find_last_of('/') + 1).c_str(), base.c_str(), model.nv, nu,
              contacts.size(), contact_type.c_str(), knot_count, threads, dt);
  std::printf("%-34s %10.0f ns/knot\n",
              contacts.empty() ? "aba_derivatives" : "constraint_dynamics_derivatives",
              derivatives_ns);
  std::printf("%-34s %10.0f ns/knot\n", "step_linearization", semi_implicit_ns);
  std::printf("%-34s %10.0f ns/knot\n", "explicit_step_linearization", explicit_ns);
  std::printf("%-34s %10.0f ns/knot\n", "rk4_step_linearization", rk4_ns);
  if (contacts.size() >= 2) {
    std::printf("%-34s %10.0f ns/knot\n", "touchdown_step_linearization", touchdown_ns);
    std::printf("%-34s %10.0f ns/knot\n", "trot_step_linearization", trot_ns);
  }
  return 0;
}

}  // namespace
}  // namespace torqued

int main(int argc, char** argv) {
  try {
    return torqued::run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "torqued_horizon: " << e.what() << "\n";
    return 1;
  }
}
