// Engine benchmarks: one iteration is one call on one state, cycling through a pool of random
// states prepared beforehand, with every result consumed.
//
//   torqued_bench --urdf FILE [--floating-base] [--threads N] [--benchmark_* flags]
//   torqued_bench --random-chain N [--benchmark_* flags]   (N revolute bodies, for O(n) checks)
//   torqued_bench --random-tree N [--benchmark_* flags]    (N revolute bodies, branching)
//
// The contact benchmarks (contact_dynamics, impact, simulate_step) need feet: they are registered
// only for models with frames named *_FOOT (solo12, ...), one frictional contact (μ = 0.8) per
// foot with the ground normal +z. contact_dynamics and impact run on the random state pool;
// simulate_step runs 100 steps of 1 ms from the neutral pose lowered onto the feet, with the
// joints' gravity torques held, and reports the time per step.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "engine/algorithms/aba.hpp"
#include "engine/algorithms/aba_derivatives.hpp"
#include "engine/algorithms/centroidal.hpp"
#include "engine/algorithms/constrained_dynamics.hpp"
#include "engine/algorithms/contact_dynamics.hpp"
#include "engine/algorithms/coriolis_matrix.hpp"
#include "engine/algorithms/crba.hpp"
#include "engine/algorithms/floating_base_inverse_dynamics.hpp"
#include "engine/algorithms/forward_dynamics.hpp"
#include "engine/algorithms/forward_dynamics_crba.hpp"
#include "engine/algorithms/forward_dynamics_factorization.hpp"
#include "engine/algorithms/hybrid_dynamics.hpp"
#include "engine/algorithms/impact.hpp"
#include "engine/algorithms/kinematics.hpp"
#include "engine/algorithms/lagrange_homogeneous.hpp"
#include "engine/algorithms/minverse.hpp"
#include "engine/algorithms/rnea.hpp"
#include "engine/algorithms/rnea_derivatives.hpp"
#include "engine/algorithms/simulate.hpp"
#include "engine/io/urdf.hpp"
#include "engine/model/build.hpp"
#include "engine/model/configuration.hpp"

namespace torqued {
namespace {

constexpr int kPoolSize = 64;

struct StatePool {
  std::vector<Eigen::VectorXd> q, v, a, tau;
};

StatePool make_pool(const Model& model) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  StatePool pool;
  for (int k = 0; k < kPoolSize; ++k) {
    pool.q.push_back(random_configuration(model, rng));
    pool.v.push_back(Eigen::VectorXd::NullaryExpr(model.nv, [&] { return unit(rng); }));
    pool.a.push_back(Eigen::VectorXd::NullaryExpr(model.nv, [&] { return unit(rng); }));
    pool.tau.push_back(Eigen::VectorXd::NullaryExpr(model.nv, [&] { return 10.0 * unit(rng); }));
  }
  return pool;
}

// Revolute joints about random axes with random inertias. Body i hangs from one of the previous
// `branching` bodies, drawn at random: 1 gives a serial chain, 3 a tree that branches while
// staying about as deep as a robot's limbs.
ModelPtr random_revolute_tree(const std::string& name, int bodies, int branching,
                              std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  ModelSpec spec;
  spec.name = name + "_" + std::to_string(bodies);
  spec.links.push_back({"link0", {}});
  for (int i = 1; i <= bodies; ++i) {
    LinkSpec link;
    link.name = "link" + std::to_string(i);
    link.inertial.mass = 0.5 + 0.5 * (unit(rng) + 1.0);
    link.inertial.origin.translation = Vec3(0.1 * unit(rng), 0.1 * unit(rng), 0.1);
    link.inertial.inertia = Vec3(0.02, 0.025, 0.03).asDiagonal();
    spec.links.push_back(link);
    JointSpec joint;
    joint.name = "joint" + std::to_string(i);
    joint.type = JointType::kRevolute;
    const int back = branching > 1 ? static_cast<int>(rng() % branching) : 0;
    joint.parent_link = "link" + std::to_string(std::max(0, i - 1 - back));
    joint.child_link = link.name;
    joint.origin.rotation =
        axis_angle_rotation(Vec3(unit(rng), unit(rng), unit(rng)).normalized(), unit(rng));
    joint.origin.translation = Vec3(0.0, 0.0, 0.2);
    joint.axis = Vec3::Unit(i % 3);
    spec.joints.push_back(joint);
  }
  return build_model(spec);
}

template <typename Call>
void run(benchmark::State& state, const Model& model, Call call) {
  Data data(model);
  int k = 0;
  for (auto _ : state) {
    call(data, k);
    k = (k + 1) % kPoolSize;
    benchmark::ClobberMemory();
  }
  state.counters["nv"] = benchmark::Counter(model.nv, benchmark::Counter::kAvgThreads);
  // Calls per second over all threads (with --threads, the in-process throughput).
  state.SetItemsProcessed(state.iterations());
}

// The feet held by the ground, for constrained_dynamics: point contacts at the four feet of a
// quadruped (solo12's *_FOOT frames), 6D contacts at a humanoid's soles (talos' *_sole_link).
std::vector<BilateralConstraint> foot_constraints(const Model& model) {
  std::vector<BilateralConstraint> contacts;
  const std::pair<const char*, ConstraintType> feet[] = {
      {"FL_FOOT", ConstraintType::kPoint},       {"FR_FOOT", ConstraintType::kPoint},
      {"HL_FOOT", ConstraintType::kPoint},       {"HR_FOOT", ConstraintType::kPoint},
      {"left_sole_link", ConstraintType::kWeld}, {"right_sole_link", ConstraintType::kWeld}};
  for (const auto& [name, type] : feet) {
    const int frame = model.find_frame(name);
    if (frame < 0) continue;
    BilateralConstraint contact;
    contact.name = name;
    contact.type = type;
    contact.body1 = model.frames[frame].body;
    contact.placement1 = model.frames[frame].placement;
    contacts.push_back(contact);
  }
  return contacts;
}

// With threads > 1, every benchmark runs on that many threads at once, each with its own Data,
// timed by the wall clock.
void register_benchmarks(const ModelPtr& model_ptr, const StatePool& pool, int threads) {
  const Model& model = *model_ptr;
  auto add = [threads](const char* name, auto benchmark_function) {
    benchmark::internal::Benchmark* b = benchmark::RegisterBenchmark(name, benchmark_function);
    if (threads > 1) b->Threads(threads)->UseRealTime();
  };
  add("rnea", [&](benchmark::State& s) {
    run(s, model, [&](Data& d, int k) {
      benchmark::DoNotOptimize(rnea(model, d, pool.q[k], pool.v[k], pool.a[k]).data());
    });
  });
  add("crba", [&](benchmark::State& s) {
    run(s, model,
        [&](Data& d, int k) { benchmark::DoNotOptimize(crba(model, d, pool.q[k]).data()); });
  });
  add("aba", [&](benchmark::State& s) {
    run(s, model, [&](Data& d, int k) {
      benchmark::DoNotOptimize(aba(model, d, pool.q[k], pool.v[k], pool.tau[k]).data());
    });
  });
  add("hybrid", [&](benchmark::State& s) {
    // Every other DOF acceleration-given: both kinds of step on every model.
    std::vector<DofInput> mask(model.nv);
    for (int k = 0; k < model.nv; ++k) {
      mask[k] = k % 2 == 0 ? DofInput::kAcceleration : DofInput::kForce;
    }
    run(s, model, [&](Data& d, int k) {
      hybrid_dynamics(model, d, pool.q[k], pool.v[k], pool.a[k], pool.tau[k], mask);
      benchmark::DoNotOptimize(d.tau.data());
    });
  });
  if (model.floating_base) {
    add("floating_base_id", [&](benchmark::State& s) {
      run(s, model, [&](Data& d, int k) {
        floating_base_inverse_dynamics(model, d, pool.q[k], pool.v[k], pool.a[k]);
        benchmark::DoNotOptimize(d.tau.data());
      });
    });
  }
  add("minverse", [&](benchmark::State& s) {
    run(s, model,
        [&](Data& d, int k) { benchmark::DoNotOptimize(minverse(model, d, pool.q[k]).data()); });
  });
  add("fd_crba", [&](benchmark::State& s) {
    run(s, model, [&](Data& d, int k) {
      benchmark::DoNotOptimize(
          forward_dynamics_crba(model, d, pool.q[k], pool.v[k], pool.tau[k]).data());
    });
  });
  add("fd_factorization", [&](benchmark::State& s) {
    run(s, model, [&](Data& d, int k) {
      benchmark::DoNotOptimize(
          forward_dynamics_factorization(model, d, pool.q[k], pool.v[k], pool.tau[k]).data());
    });
  });
  add("fd_auto", [&](benchmark::State& s) {
    run(s, model, [&](Data& d, int k) {
      benchmark::DoNotOptimize(
          forward_dynamics(model, d, pool.q[k], pool.v[k], pool.tau[k]).data());
    });
  });
  add("rnea_derivatives", [&](benchmark::State& s) {
    run(s, model, [&](Data& d, int k) {
      rnea_derivatives(model, d, pool.q[k], pool.v[k], pool.a[k]);
      benchmark::DoNotOptimize(d.workspace<RneaDerivativesWorkspace>().dtau_dq.data());
    });
  });
  add("aba_derivatives", [&](benchmark::State& s) {
    run(s, model, [&](Data& d, int k) {
      aba_derivatives(model, d, pool.q[k], pool.v[k], pool.tau[k]);
      benchmark::DoNotOptimize(d.workspace<AbaDerivativesWorkspace>().ddq_dq.data());
    });
  });
  add("forward_kinematics", [&](benchmark::State& s) {
    run(s, model, [&](Data& d, int k) {
      forward_kinematics(model, d, pool.q[k], pool.v[k], pool.a[k]);
      benchmark::DoNotOptimize(d.a.back().linear.data());
    });
  });
  add("gravity", [&](benchmark::State& s) {
    run(s, model, [&](Data& d, int k) {
      benchmark::DoNotOptimize(generalized_gravity(model, d, pool.q[k]).data());
    });
  });
  add("lagrange_homogeneous", [&](benchmark::State& s) {
    run(s, model, [&](Data& d, int k) {
      benchmark::DoNotOptimize(
          lagrange_homogeneous(model, d, pool.q[k], pool.v[k], pool.a[k]).data());
    });
  });
  add("coriolis_matrix", [&](benchmark::State& s) {
    run(s, model, [&](Data& d, int k) {
      benchmark::DoNotOptimize(coriolis_matrix(model, d, pool.q[k], pool.v[k]).data());
    });
  });
  if (std::vector<BilateralConstraint> contacts = foot_constraints(model);
      !contacts.empty() || !model.loop_closures.empty()) {
    add("constrained_dynamics", [&, contacts](benchmark::State& s) {
      Eigen::VectorXd ddq(model.nv), lambda(constraint_rows(model, contacts));
      run(s, model, [&](Data& d, int k) {
        constrained_dynamics(model, d, pool.q[k], pool.v[k], pool.tau[k], contacts,
                             BaumgarteGains{}, ddq, lambda);
        benchmark::DoNotOptimize(ddq.data());
      });
      s.counters["constraint_rows"] = static_cast<double>(lambda.size());
    });
  }
  // The centroidal momentum matrix A_G (which also computes the centre of mass).
  add("centroidal", [&](benchmark::State& s) {
    run(s, model, [&](Data& d, int k) {
      benchmark::DoNotOptimize(centroidal_momentum_matrix(model, d, pool.q[k]).data());
    });
  });
}

std::vector<PointContact> foot_contacts(const Model& model) {
  std::vector<PointContact> feet;
  for (const Frame& frame : model.frames) {
    if (frame.name.size() >= 5 && frame.name.ends_with("_FOOT")) {
      feet.push_back({frame.body, frame.placement.translation, Vec3::UnitZ(), 0.8});
    }
  }
  return feet;
}

void register_contact_benchmarks(const ModelPtr& model_ptr, const StatePool& pool) {
  const Model& model = *model_ptr;
  static const std::vector<PointContact> feet = foot_contacts(model);
  if (feet.empty()) return;
  const int m = static_cast<int>(feet.size());
  benchmark::RegisterBenchmark("contact_dynamics", [&model, &pool, m](benchmark::State& s) {
    ContactWorkspace ws(model, m);
    run(s, model, [&](Data& d, int k) {
      contact_dynamics(model, d, ws, pool.q[k], pool.v[k], pool.tau[k], feet);
      benchmark::DoNotOptimize(ws.acceleration.data());
    });
  });
  benchmark::RegisterBenchmark("impact", [&model, &pool, m](benchmark::State& s) {
    ContactWorkspace ws(model, m);
    run(s, model, [&](Data& d, int k) {
      impact(model, d, ws, pool.q[k], pool.v[k], feet, 0.5);
      benchmark::DoNotOptimize(ws.velocity.data());
    });
  });
  benchmark::RegisterBenchmark("simulate_step", [&model, m](benchmark::State& s) {
    constexpr int kSteps = 100;
    Data data(model);
    Eigen::VectorXd q = model.neutral_configuration();
    forward_kinematics(model, data, q);
    double lowest = 0.0;
    for (const PointContact& f : feet) {
      lowest = std::min(lowest, data.oMi[f.body].act(f.point).z());
    }
    if (model.floating_base) q[2] -= lowest;
    Eigen::VectorXd tau = generalized_gravity(model, data, q);
    if (model.floating_base) tau.head<6>().setZero();
    std::vector<ContactCandidate> candidates;
    for (const PointContact& f : feet) candidates.push_back({f.body, f.point});
    SimulationWorkspace ws(model, m);
    Eigen::MatrixXd q_out(model.nq, kSteps), v_out(model.nv, kSteps);
    const Eigen::VectorXd v = Eigen::VectorXd::Zero(model.nv);
    const SimulationOptions options;
    int contacts = 0;
    for (auto _ : s) {
      contacts =
          simulate(model, data, ws, q, v, tau, candidates, options, q_out, v_out).max_contacts;
      benchmark::DoNotOptimize(q_out.data());
      benchmark::ClobberMemory();
    }
    s.counters["contacts"] = contacts;
    s.counters["ns_per_step"] =
        benchmark::Counter(static_cast<double>(kSteps) * s.iterations() * 1e-9,
                           benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    s.counters["steps_per_s"] = benchmark::Counter(static_cast<double>(kSteps) * s.iterations(),
                                                   benchmark::Counter::kIsRate);
  });
}

int usage(const char* argv0) {
  std::cerr << "usage: " << argv0
            << " (--urdf FILE [--floating-base] | --random-chain N | --random-tree N)"
            << " [--threads N] [--benchmark_* flags]\n";
  return 2;
}

}  // namespace
}  // namespace torqued

int main(int argc, char** argv) {
  using namespace torqued;
  std::string urdf;
  bool floating_base = false;
  int chain = 0;
  int tree = 0;
  int threads = 1;
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--urdf") == 0 && i + 1 < argc) {
      urdf = argv[++i];
    } else if (std::strcmp(argv[i], "--floating-base") == 0) {
      floating_base = true;
    } else if (std::strcmp(argv[i], "--random-chain") == 0 && i + 1 < argc) {
      chain = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--random-tree") == 0 && i + 1 < argc) {
      tree = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--help") == 0) {
      usage(argv[0]);
      rest.push_back(argv[i]);
    } else {
      rest.push_back(argv[i]);
    }
  }
  if ((urdf.empty() ? 0 : 1) + (chain > 0 ? 1 : 0) + (tree > 0 ? 1 : 0) != 1) return usage(argv[0]);
  ModelPtr model;
  try {
    model = chain > 0 ? random_revolute_tree("random_chain", chain, 1, 7)
            : tree > 0
                ? random_revolute_tree("random_tree", tree, 3, 11)
                : build_model(read_urdf_file(urdf, UrdfOptions{.floating_base = floating_base}));
  } catch (const std::exception& e) {
    std::cerr << "torqued_bench: " << e.what() << "\n";
    return 1;
  }
  const StatePool pool = make_pool(*model);
  register_benchmarks(model, pool, threads);
  register_contact_benchmarks(model, pool);
  int rest_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_argc, rest.data());
  if (benchmark::ReportUnrecognizedArguments(rest_argc, rest.data())) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
