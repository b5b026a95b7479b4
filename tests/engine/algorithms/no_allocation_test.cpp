// Once a Data exists, the algorithms allocate nothing (docs/engine.md): forward kinematics (all
// three levels), frame placements, frame Jacobians, RNEA with and without external forces,
// nonlinear effects, gravity, CRBA, ABA, hybrid and floating-base inverse dynamics, M⁻¹ and
// the forward-dynamics algorithms (CRBA + LᵀDL, the innovations factorization), the
// homogeneous-matrix Lagrangian, the Coriolis matrix, the centroidal quantities, the constraint
// Jacobian, constrained dynamics and closed-chain inverse dynamics (once a first call has sized
// the constraint buffers for the constraint set), contact dynamics (Lemke and the friction cone),
// impacts and simulation (contact-free and with contacts).
//
// Two independent detectors:
//  - this binary is compiled with EIGEN_RUNTIME_NO_MALLOC, and Eigen's malloc is forbidden
//    (Eigen::internal::set_is_malloc_allowed(false)) around the calls, so that any Eigen heap
//    allocation made in code compiled into this test (inlined headers) asserts;
//  - global operator new/delete AND malloc/calloc/realloc are replaced by counting versions (under
//    a sanitizer, its allocation hook counts instead), so an allocation anywhere in the engine
//    library (which is compiled without the Eigen flag, and whose Eigen temporaries go straight
//    to malloc, not operator new) is counted. The counters must not change across the calls.
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <functional>
#include <memory>
#include <new>
#include <numeric>
#include <random>

#include "engine/algorithms/aba.hpp"
#include "engine/algorithms/aba_derivatives.hpp"
#include "engine/algorithms/centroidal.hpp"
#include "engine/algorithms/closed_chain_inverse_dynamics.hpp"
#include "engine/algorithms/constrained_dynamics.hpp"
#include "engine/algorithms/constrained_dynamics_derivatives.hpp"
#include "engine/algorithms/constraint_jacobian.hpp"
#include "engine/algorithms/contact_dynamics.hpp"
#include "engine/algorithms/coriolis_matrix.hpp"
#include "engine/algorithms/crba.hpp"
#include "engine/algorithms/discrete_step.hpp"
#include "engine/algorithms/floating_base_inverse_dynamics.hpp"
#include "engine/algorithms/forward_dynamics.hpp"
#include "engine/algorithms/generalized_gravity_derivatives.hpp"
#include "engine/algorithms/hybrid_dynamics.hpp"
#include "engine/algorithms/impact.hpp"
#include "engine/algorithms/impulse_dynamics.hpp"
#include "engine/algorithms/impulse_dynamics_derivatives.hpp"
#include "engine/algorithms/jacobian.hpp"
#include "engine/algorithms/kinematics.hpp"
#include "engine/algorithms/lagrange_homogeneous.hpp"
#include "engine/algorithms/minverse.hpp"
#include "engine/algorithms/rnea.hpp"
#include "engine/algorithms/rnea_derivatives.hpp"
#include "engine/algorithms/rollout.hpp"
#include "engine/algorithms/simulate.hpp"
#include "engine/model/build.hpp"
#include "engine/model/configuration.hpp"
#include "engine/model/data.hpp"
#include "tests/engine/support/random_tree.hpp"
#include "tests/engine/support/shared_models.hpp"

#ifndef EIGEN_RUNTIME_NO_MALLOC
#error "no_allocation_test must be compiled with EIGEN_RUNTIME_NO_MALLOC"
#endif

// ---- Counting allocators ------------------------------------------------------------------------

namespace {
std::atomic<long> g_new_count{0};
std::atomic<long> g_malloc_count{0};
volatile double g_sink = 0.0;  // keeps the results of the calls observable
}  // namespace

#ifdef TORQUED_SANITIZER_ALLOCATOR
// Under a sanitizer its allocator must serve every allocation (memory taken around it escapes its
// checks, and its interceptors, strdup's for one, free what they allocate through it), so rather
// than replacing malloc and operator new the test counts through the sanitizer's allocation hook,
// which sees both: they count together, as mallocs.
extern "C" int __sanitizer_install_malloc_and_free_hooks(
    void (*malloc_hook)(const volatile void* ptr, std::size_t size),
    void (*free_hook)(const volatile void* ptr));

namespace {
void count_allocation(const volatile void*, std::size_t) {
  g_malloc_count.fetch_add(1, std::memory_order_relaxed);
}
void ignore_free(const volatile void*) {}
[[maybe_unused]] const int g_hooks_installed =
    __sanitizer_install_malloc_and_free_hooks(count_allocation, ignore_free);
}  // namespace
#else
// glibc's own allocator entry points, which the replacements below forward to.
extern "C" {
void* __libc_malloc(std::size_t size);
void* __libc_calloc(std::size_t count, std::size_t size);
void* __libc_realloc(void* ptr, std::size_t size);
void* __libc_memalign(std::size_t alignment, std::size_t size);
void __libc_free(void* ptr);

void* malloc(std::size_t size) noexcept {
  g_malloc_count.fetch_add(1, std::memory_order_relaxed);
  return __libc_malloc(size);
}
void* calloc(std::size_t count, std::size_t size) noexcept {
  g_malloc_count.fetch_add(1, std::memory_order_relaxed);
  return __libc_calloc(count, size);
}
void* realloc(void* ptr, std::size_t size) noexcept {
  g_malloc_count.fetch_add(1, std::memory_order_relaxed);
  return __libc_realloc(ptr, size);
}
void* aligned_alloc(std::size_t alignment, std::size_t size) noexcept {
  g_malloc_count.fetch_add(1, std::memory_order_relaxed);
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** ptr, std::size_t alignment, std::size_t size) noexcept {
  g_malloc_count.fetch_add(1, std::memory_order_relaxed);
  *ptr = __libc_memalign(alignment, size);
  return *ptr == nullptr ? ENOMEM : 0;
}
void free(void* ptr) noexcept { __libc_free(ptr); }
}

void* operator new(std::size_t size) {
  g_new_count.fetch_add(1, std::memory_order_relaxed);
  if (void* p = __libc_malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  g_new_count.fetch_add(1, std::memory_order_relaxed);
  return __libc_malloc(size == 0 ? 1 : size);
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept {
  return operator new(size, tag);
}
void* operator new(std::size_t size, std::align_val_t alignment) {
  g_new_count.fetch_add(1, std::memory_order_relaxed);
  if (void* p = __libc_memalign(static_cast<std::size_t>(alignment), size == 0 ? 1 : size)) {
    return p;
  }
  throw std::bad_alloc();
}
void* operator new[](std::size_t size, std::align_val_t alignment) {
  return operator new(size, alignment);
}
void operator delete(void* p) noexcept { __libc_free(p); }
void operator delete[](void* p) noexcept { __libc_free(p); }
void operator delete(void* p, std::size_t) noexcept { __libc_free(p); }
void operator delete[](void* p, std::size_t) noexcept { __libc_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { __libc_free(p); }
#endif  // TORQUED_SANITIZER_ALLOCATOR

namespace torqued {
namespace {

struct Counts {
  long news;
  long mallocs;
};

Counts counts() { return {g_new_count.load(), g_malloc_count.load()}; }

// Runs `body` with Eigen's allocations forbidden and returns how many allocations it made.
template <typename F>
Counts allocations_during(F&& body) {
  Eigen::internal::set_is_malloc_allowed(false);
  const Counts before = counts();
  body();
  const Counts after = counts();
  Eigen::internal::set_is_malloc_allowed(true);
  return {after.news - before.news, after.mallocs - before.mallocs};
}

class NoAllocationTest : public ::testing::Test {
 protected:
  // Calls every algorithm on `model` with a preallocated Data; each must allocate nothing.
  void check_model(const Model& model, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    const test_support::RandomState s = test_support::random_state(model, rng);
    const Eigen::VectorXd zero = Eigen::VectorXd::Zero(model.nv);
    Eigen::MatrixXd jac(6, model.nv);
    const int n_frames = static_cast<int>(model.frames.size());
    const int last_frame = n_frames - 1;
    Motion sink = Motion::Zero();  // keeps results observable
    // Alternating given accelerations and forces, so that multi-DOF joints get mixed masks.
    std::vector<DofInput> mixed_mask(model.nv);
    for (int k = 0; k < model.nv; ++k) {
      mixed_mask[k] = k % 2 == 0 ? DofInput::kAcceleration : DofInput::kForce;
    }

    // Three contacts on the last bodies, and the same points as simulation candidates under a
    // ground plane raised above the whole robot, so that every candidate is in contact.
    std::vector<PointContact> contacts;
    std::vector<ContactCandidate> candidates;
    for (int k = 0; k < 3; ++k) {
      const int body = model.nbodies() - 1 - k;
      contacts.push_back({body, Vec3(0.1, -0.05, 0.02), Vec3(0.0, 0.6, 0.8), 0.7});
      candidates.push_back({body, Vec3(0.1, -0.05, 0.02)});
    }
    std::vector<PointContact> frictionless = contacts;
    for (PointContact& c : frictionless) c.friction = 0.0;
    ContactWorkspace contact_ws(model, 3);
    SimulationWorkspace sim_ws(model, 3);
    Eigen::MatrixXd q_out(model.nq, 3), v_out(model.nv, 3);
    const Eigen::MatrixXd held_torque = s.tau;
    SimulationOptions ground;
    ground.ground_height = 1e3;
    SimulationOptions rk4;
    rk4.integrator = Integrator::kRungeKutta4;

    // Sanity: the counters see an Eigen temporary (Eigen allowed to allocate here).
    const Counts before = counts();
    {
      Eigen::VectorXd tmp = Eigen::VectorXd::Constant(model.nv + 8, 1.0);
      sink.linear[0] += tmp.sum();
    }
    EXPECT_GT(counts().mallocs, before.mallocs) << "the malloc counter does not work";

    // A point contact of the last body with the world and a weld between two bodies.
    const int last = model.nbodies() - 1;
    std::vector<BilateralConstraint> constraints(2);
    constraints[0].type = ConstraintType::kPoint;
    constraints[0].body1 = last;
    constraints[1].body1 = std::max(1, last / 2);
    constraints[1].body2 = last == constraints[1].body1 ? 0 : last;
    const int rows = constraint_rows(model, constraints);
    Eigen::MatrixXd constraint_k(rows, model.nv);
    Eigen::VectorXd constraint_b(rows), lambda(rows), ddq_out(model.nv), tau_out(model.nv);
    const std::vector<DofInput> all_actuated(model.nv, DofInput::kAcceleration);
    const BaumgarteGains gains{10.0, 5.0};
    std::vector<int> every_dof(model.nv);
    std::iota(every_dof.begin(), every_dof.end(), 0);
    Eigen::VectorXd q_next(model.nq), v_next(model.nv);
    RowMajorMatrix fx(2 * model.nv, 2 * model.nv), fu(2 * model.nv, model.nv);
    constexpr Integrator kIntegrators[] = {Integrator::kSemiImplicitEuler,
                                           Integrator::kExplicitEuler, Integrator::kRungeKutta4};
    const auto free_step = [&](Integrator integrator) {
      return StepSettings{.dt = 0.01, .integrator = integrator, .actuated_dofs = every_dof};
    };
    const auto contact_step = [&](Integrator integrator) {
      return StepSettings{.dt = 0.01,
                          .integrator = integrator,
                          .actuated_dofs = every_dof,
                          .constraints = constraints,
                          .gains = gains};
    };
    const auto touchdown_step = [&](Integrator integrator) {
      StepSettings settings = contact_step(integrator);
      settings.touchdown = true;
      settings.restitution = 0.2;
      settings.friction_cone = {.friction = 0.7, .faces = 8};
      return settings;
    };
    // The two contacts' friction cones, 1 + 8 residuals each, and their derivatives.
    constexpr std::size_t kCones = 2 * 9;
    std::vector<double> cones(kCones), dcones_dx(kCones * 2 * model.nv),
        dcones_du(kCones * model.nv);
    std::vector<double> knot_values(3 * static_cast<std::size_t>(model.nv) * (model.nv + rows));
    const std::span<double> knot_span(knot_values);
    const auto nv2 = static_cast<std::size_t>(model.nv) * model.nv;
    const auto rows_nv = static_cast<std::size_t>(rows) * model.nv;
    const KnotDerivatives knot_derivatives{knot_span.subspan(0, nv2),
                                           knot_span.subspan(nv2, nv2),
                                           knot_span.subspan(2 * nv2, nv2),
                                           knot_span.subspan(3 * nv2, rows_nv),
                                           knot_span.subspan(3 * nv2 + rows_nv, rows_nv),
                                           knot_span.subspan(3 * nv2 + 2 * rows_nv, rows_nv)};
    // A 3-knot rollout about its own open-loop trajectory, with random gains.
    constexpr int kRolloutKnots = 3;
    const auto knots = static_cast<std::size_t>(kRolloutKnots);
    const auto nq = static_cast<std::size_t>(model.nq), nv = static_cast<std::size_t>(model.nv);
    std::vector<double> rollout_controls(knots * nv, 0.5), nominal_q, nominal_v;
    for (std::size_t k = 0; k < knots; ++k) {
      nominal_q.insert(nominal_q.end(), s.q.data(), s.q.data() + nq);
      nominal_v.insert(nominal_v.end(), s.v.data(), s.v.data() + nv);
    }
    std::vector<double> feedback_gains(knots * nv * 2 * nv, 0.1);
    const auto lambda_size = static_cast<std::size_t>(rows);
    const RolloutFeedback rollout_feedback{nominal_q, nominal_v, feedback_gains};
    std::vector<double> trajectory_q((knots + 1) * nq), trajectory_v((knots + 1) * nv),
        applied(knots * nv), rollout_fx(knots * 4 * nv * nv), rollout_fu(knots * 2 * nv * nv),
        rollout_lambda(knots * static_cast<std::size_t>(rows));
    const RolloutOutput rollout_values{trajectory_q, trajectory_v, applied, {}, {}, {}};
    const RolloutOutput rollout_linearized{trajectory_q, trajectory_v, applied,
                                           rollout_fx,   rollout_fu,   {}};
    const RolloutOutput rollout_in_contact{trajectory_q, trajectory_v, applied,
                                           rollout_fx,   rollout_fu,   rollout_lambda};

    // Each step runs on a fresh Data with the workspaces its algorithms name bound ahead of time
    // (and the constraint buffers reserved for the constraint set), so that a set missing a
    // workspace shows as an allocation, and again on a Data every step has run on.
    struct Step {
      const char* name;
      WorkspaceSet binds;
      std::function<void(Data&)> run;
    };
    const std::vector<Step> steps = {
        {"forward_kinematics(q)", {}, [&](Data& data) { forward_kinematics(model, data, s.q); }},
        {"forward_kinematics(q, v)",
         {},
         [&](Data& data) { forward_kinematics(model, data, s.q, s.v); }},
        {"forward_kinematics(q, v, a)",
         {},
         [&](Data& data) { forward_kinematics(model, data, s.q, s.v, s.a); }},
        {"update_frame_placements", {}, [&](Data& data) { update_frame_placements(model, data); }},
        {"frame_placement/velocity/acceleration",
         {},
         [&](Data& data) {
           for (int f = 0; f < n_frames; ++f) {
             sink.linear += frame_placement(model, data, f).translation;
             for (ReferenceFrame ref : {ReferenceFrame::kLocal, ReferenceFrame::kLocalWorldAligned,
                                        ReferenceFrame::kWorld}) {
               sink += frame_velocity(model, data, f, ref);
               sink += frame_acceleration(model, data, f, ref);
             }
           }
         }},
        {"frame_jacobian",
         {},
         [&](Data& data) {
           for (ReferenceFrame ref : {ReferenceFrame::kLocal, ReferenceFrame::kLocalWorldAligned,
                                      ReferenceFrame::kWorld}) {
             frame_jacobian(model, data, last_frame, ref, jac);
             frame_jacobian(model, data, 0, ref, jac);
           }
         }},
        {"rnea", {}, [&](Data& data) { rnea(model, data, s.q, s.v, s.a); }},
        {"rnea with external forces",
         {},
         [&](Data& data) { rnea(model, data, s.q, s.v, s.a, s.f_ext); }},
        {"nonlinear_effects", {}, [&](Data& data) { nonlinear_effects(model, data, s.q, s.v); }},
        {"generalized_gravity", {}, [&](Data& data) { generalized_gravity(model, data, s.q); }},
        {"crba", kCrbaWorkspaces, [&](Data& data) { crba(model, data, s.q); }},
        {"aba", kAbaWorkspaces, [&](Data& data) { aba(model, data, s.q, s.v, s.tau); }},
        {"aba with external forces", kAbaWorkspaces,
         [&](Data& data) { aba(model, data, s.q, s.v, s.tau, s.f_ext); }},
        {"aba at rest", kAbaWorkspaces, [&](Data& data) { aba(model, data, s.q, zero, zero); }},
        {"rnea_derivatives", kRneaDerivativesWorkspaces,
         [&](Data& data) { rnea_derivatives(model, data, s.q, s.v, s.a); }},
        {"rnea_derivatives with external forces", kRneaDerivativesWorkspaces,
         [&](Data& data) { rnea_derivatives(model, data, s.q, s.v, s.a, s.f_ext); }},
        {"generalized_gravity_derivatives", kGeneralizedGravityDerivativesWorkspaces,
         [&](Data& data) { generalized_gravity_derivatives(model, data, s.q); }},
        {"aba_derivatives", kAbaDerivativesWorkspaces,
         [&](Data& data) { aba_derivatives(model, data, s.q, s.v, s.tau); }},
        {"aba_derivatives with external forces", kAbaDerivativesWorkspaces,
         [&](Data& data) { aba_derivatives(model, data, s.q, s.v, s.tau, s.f_ext); }},
        {"step with Jacobians (semi-implicit, explicit, RK4)", kStepWorkspaces,
         [&](Data& data) {
           for (Integrator integrator : kIntegrators) {
             step(model, data, s.q, s.v, s.tau, free_step(integrator),
                  {.q_next = q_next, .v_next = v_next, .fx = fx, .fu = fu});
           }
         }},
        {"step (semi-implicit, explicit, RK4)", kStepWorkspaces,
         [&](Data& data) {
           for (Integrator integrator : kIntegrators) {
             step(model, data, s.q, s.v, s.tau, free_step(integrator),
                  {.q_next = q_next, .v_next = v_next});
           }
         }},
        {"rollout (closed loop, with and without Jacobians)", kRolloutWorkspaces,
         [&](Data& data) {
           rollout(model, data, s.q, s.v, kRolloutKnots, rollout_controls,
                   free_step(Integrator::kSemiImplicitEuler), rollout_feedback, rollout_values);
           rollout(model, data, s.q, s.v, kRolloutKnots, rollout_controls,
                   free_step(Integrator::kRungeKutta4), rollout_feedback, rollout_linearized);
         }},
        {"hybrid_dynamics", kAbaWorkspaces,
         [&](Data& data) {
           hybrid_dynamics(model, data, s.q, s.v, s.a, s.tau, mixed_mask, s.f_ext);
         }},
        {"floating_base_inverse_dynamics", kAbaWorkspaces,
         [&](Data& data) {
           if (model.floating_base) {
             floating_base_inverse_dynamics(model, data, s.q, s.v, s.a, s.f_ext);
           }
         }},
        {"minverse", kMinverseWorkspaces, [&](Data& data) { minverse(model, data, s.q); }},
        {"forward_dynamics (crba + ltdl)",
         forward_dynamics_workspaces(model, ForwardDynamicsAlgorithm::kCrba),
         [&](Data& data) {
           forward_dynamics(model, data, s.q, s.v, s.tau, ForwardDynamicsAlgorithm::kCrba);
         }},
        {"forward_dynamics (factorization)",
         forward_dynamics_workspaces(model, ForwardDynamicsAlgorithm::kFactorization),
         [&](Data& data) {
           forward_dynamics(model, data, s.q, s.v, s.tau, ForwardDynamicsAlgorithm::kFactorization);
         }},
        {"forward_dynamics (auto)",
         forward_dynamics_workspaces(model, ForwardDynamicsAlgorithm::kAuto),
         [&](Data& data) { forward_dynamics(model, data, s.q, s.v, s.tau); }},
        {"lagrange_homogeneous (tau, M, bias, gravity)", kHomogeneousWorkspaces,
         [&](Data& data) {
           lagrange_homogeneous(model, data, s.q, s.v, s.a);
           lagrange_homogeneous_mass_matrix(model, data, s.q);
           lagrange_homogeneous_bias(model, data, s.q, s.v);
           lagrange_homogeneous_gravity(model, data, s.q);
         }},
        {"coriolis_matrix", kCoriolisWorkspaces,
         [&](Data& data) { coriolis_matrix(model, data, s.q, s.v); }},
        {"contact_dynamics (friction cone)", kContactWorkspaces,
         [&](Data& data) { contact_dynamics(model, data, contact_ws, s.q, s.v, s.tau, contacts); }},
        {"contact_dynamics (frictionless, Lemke)", kContactWorkspaces,
         [&](Data& data) {
           contact_dynamics(model, data, contact_ws, s.q, s.v, s.tau, frictionless);
         }},
        {"impact (friction cone and Lemke)", kContactWorkspaces,
         [&](Data& data) { impact(model, data, contact_ws, s.q, s.v, contacts, 0.5); }},
        {"impact (frictionless)", kContactWorkspaces,
         [&](Data& data) { impact(model, data, contact_ws, s.q, s.v, frictionless, 0.5); }},
        {"simulate (contact-free, Euler and RK4)", kSimulateWorkspaces,
         [&](Data& data) {
           simulate(model, data, sim_ws, s.q, s.v, held_torque, {}, {}, q_out, v_out);
           simulate(model, data, sim_ws, s.q, s.v, held_torque, {}, rk4, q_out, v_out);
         }},
        {"simulate (ground contacts)", kSimulateWorkspaces,
         [&](Data& data) {
           simulate(model, data, sim_ws, s.q, s.v, held_torque, candidates, ground, q_out, v_out);
         }},
        {"centroidal (com, Jcom, h_G, A_G)", kCentroidalWorkspaces,
         [&](Data& data) {
           sink.linear += center_of_mass(model, data, s.q);
           center_of_mass(model, data, s.q, s.v);
           center_of_mass_jacobian(model, data, s.q);
           sink.linear += centroidal_momentum(model, data, s.q, s.v).linear;
           centroidal_momentum_matrix(model, data, s.q);
         }},
        {"constraint_jacobian",
         {},
         [&](Data& data) {
           constraint_jacobian(model, data, s.q, s.v, constraints, gains, constraint_k,
                               constraint_b);
         }},
        {"constrained_dynamics", kConstrainedDynamicsWorkspaces,
         [&](Data& data) {
           constrained_dynamics(model, data, s.q, s.v, s.tau, constraints, gains, ddq_out, lambda);
         }},
        {"constrained_dynamics_derivatives", kConstrainedDynamicsDerivativesWorkspaces,
         [&](Data& data) {
           constrained_dynamics_derivatives(model, data, s.q, s.v, s.tau, constraints, gains);
         }},
        {"impulse_dynamics", kImpulseDynamicsWorkspaces,
         [&](Data& data) {
           impulse_dynamics(model, data, s.q, s.v, constraints, 0.3, {}, ddq_out, lambda);
         }},
        {"impulse_dynamics_derivatives", kImpulseDynamicsDerivativesWorkspaces,
         [&](Data& data) {
           impulse_dynamics_derivatives(model, data, s.q, s.v, constraints, 0.3);
         }},
        {"step at a touchdown, with and without Jacobians, impulses and friction cones "
         "(semi-implicit and RK4)",
         kStepWorkspaces,
         [&](Data& data) {
           for (Integrator integrator :
                {Integrator::kSemiImplicitEuler, Integrator::kRungeKutta4}) {
             step(model, data, s.q, s.v, s.tau, touchdown_step(integrator),
                  {.q_next = q_next,
                   .v_next = v_next,
                   .fx = fx,
                   .fu = fu,
                   .multipliers = {lambda.data(), lambda_size},
                   .impulses = {constraint_b.data(), lambda_size},
                   .friction_cones = cones,
                   .dfriction_cones_dx = dcones_dx,
                   .dfriction_cones_du = dcones_du});
             step(model, data, s.q, s.v, s.tau, touchdown_step(integrator),
                  {.q_next = q_next, .v_next = v_next, .friction_cones = cones});
           }
         }},
        {"step in contact with Jacobians, λ and the knot's derivatives (semi-implicit and RK4)",
         kStepWorkspaces,
         [&](Data& data) {
           for (Integrator integrator :
                {Integrator::kSemiImplicitEuler, Integrator::kRungeKutta4}) {
             step(model, data, s.q, s.v, s.tau, contact_step(integrator),
                  {.q_next = q_next,
                   .v_next = v_next,
                   .fx = fx,
                   .fu = fu,
                   .multipliers = {lambda.data(), lambda_size},
                   .knot_derivatives = &knot_derivatives});
           }
         }},
        {"step in contact (semi-implicit and RK4, λ returned or not)", kStepWorkspaces,
         [&](Data& data) {
           for (Integrator integrator :
                {Integrator::kSemiImplicitEuler, Integrator::kRungeKutta4}) {
             step(
                 model, data, s.q, s.v, s.tau, contact_step(integrator),
                 {.q_next = q_next, .v_next = v_next, .multipliers = {lambda.data(), lambda_size}});
             step(model, data, s.q, s.v, s.tau, contact_step(integrator),
                  {.q_next = q_next, .v_next = v_next});
           }
         }},
        {"rollout in contact (λ and Jacobians, RK4 and Euler)", kRolloutWorkspaces,
         [&](Data& data) {
           rollout(model, data, s.q, s.v, kRolloutKnots, rollout_controls,
                   contact_step(Integrator::kRungeKutta4), rollout_feedback, rollout_in_contact);
           rollout(model, data, s.q, s.v, kRolloutKnots, rollout_controls,
                   contact_step(Integrator::kSemiImplicitEuler), {}, rollout_in_contact);
         }},
        {"closed_chain_inverse_dynamics", kClosedChainInverseDynamicsWorkspaces,
         [&](Data& data) {
           closed_chain_inverse_dynamics(model, data, s.q, s.v, s.a, s.tau, all_actuated,
                                         constraints, gains, ddq_out, tau_out, lambda);
         }},
    };
    // Every step once on one Data, which binds what each needs, and reports a step that cannot
    // run at all as such.
    Data data(model);
    for (const Step& step : steps) step.run(data);
    for (const Step& step : steps) {
      Data bound(model);
      bound.bind(model, step.binds);
      if (bound.bound().contains<ConstraintWorkspace>()) {
        bound.workspace<ConstraintWorkspace>().reserve_rows(model, rows);
      }
      if (bound.bound().contains<ConstrainedDerivativesWorkspace>()) {
        bound.workspace<ConstrainedDerivativesWorkspace>().reserve_rows(model, rows);
      }
      if (bound.bound().contains<ImpulseDerivativesWorkspace>()) {
        bound.workspace<ImpulseDerivativesWorkspace>().reserve_rows(model, rows);
      }
      for (Data* d : {&bound, &data}) {
        const Counts c = allocations_during([&] { step.run(*d); });
        const char* which = d == &bound ? " (its workspaces bound ahead)" : " (after every step)";
        EXPECT_EQ(c.news, 0) << step.name << which << " called operator new " << c.news << " times";
        EXPECT_EQ(c.mallocs, 0) << step.name << which << " called malloc " << c.mallocs << " times";
      }
    }
    g_sink = sink.linear.sum() + sink.angular.sum();
  }
};

TEST_F(NoAllocationTest, RandomTreeWithEveryJointKind) {
  for (bool floating : {false, true}) {
    SCOPED_TRACE(floating ? "floating base" : "fixed base");
    test_support::RandomTreeOptions options;
    options.min_links = 40;
    options.floating_base = floating;
    const ModelPtr model = build_model(test_support::random_tree_spec(4242, options));
    check_model(*model, 7);
  }
}

TEST_F(NoAllocationTest, TalosReducedFloating) {
  const std::optional<ModelPtr> talos = test_support::shared_floating_model("talos_reduced");
  if (!talos) GTEST_SKIP() << "the shared reference material is not checked out";
  check_model(**talos, 11);
}

}  // namespace
}  // namespace torqued
