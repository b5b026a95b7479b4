// Tests server/services/dynamics_service.cpp end to end: over loopback, every DynamicsService RPC
// and algorithm option returns bitwise what a direct engine call returns, for every bundled model,
// with batches split into chunks across workers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "engine/algorithms/aba.hpp"
#include "engine/algorithms/aba_derivatives.hpp"
#include "engine/algorithms/centroidal.hpp"
#include "engine/algorithms/closed_chain_inverse_dynamics.hpp"
#include "engine/algorithms/constrained_dynamics.hpp"
#include "engine/algorithms/constrained_dynamics_derivatives.hpp"
#include "engine/algorithms/coriolis_matrix.hpp"
#include "engine/algorithms/crba.hpp"
#include "engine/algorithms/discrete_step.hpp"
#include "engine/algorithms/floating_base_inverse_dynamics.hpp"
#include "engine/algorithms/forward_dynamics.hpp"
#include "engine/algorithms/hybrid_dynamics.hpp"
#include "engine/algorithms/jacobian.hpp"
#include "engine/algorithms/lagrange_homogeneous.hpp"
#include "engine/algorithms/minverse.hpp"
#include "engine/algorithms/rnea.hpp"
#include "engine/algorithms/rnea_derivatives.hpp"
#include "engine/algorithms/rollout.hpp"
#include "server/models/bundled_models.hpp"
#include "server/models/model_from_request.hpp"
#include "tests/server/bitwise.hpp"
#include "tests/server/server_process.hpp"

namespace torqued::testing {
namespace {

using Vector = Eigen::VectorXd;
using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

constexpr int kStates = 37;  // not a multiple of the chunk count

// Appends a matrix row-major.
template <typename Matrix>
void append_matrix(std::vector<double>& out, const Matrix& x) {
  const RowMajor row_major = x;
  out.insert(out.end(), row_major.data(), row_major.data() + row_major.size());
}

// The external forces of state s of a flat N × (bodies − 1) × 6 array, in engine form.
std::vector<Force> forces_of(const Model& m, const std::vector<double>& f, int s) {
  std::vector<Force> forces(m.nbodies(), Force::Zero());
  for (int b = 1; b < m.nbodies(); ++b) {
    forces[b] = Force::FromVector(row(f, s * (m.nbodies() - 1) + b - 1, 6));
  }
  return forces;
}

struct LocalModel {
  ModelPtr model;
  v1::Model layout;
};

// Sets the model, kStates states and their q (and v) of a batched request.
template <typename Request>
void fill_batch(Request& request, const LocalModel& local, const std::vector<double>& q) {
  request.set_model_id(local.layout.id());
  request.set_batch_size(kStates);
  request.mutable_q()->Add(q.begin(), q.end());
}

template <typename Request>
void fill_batch(Request& request, const LocalModel& local, const std::vector<double>& q,
                const std::vector<double>& v) {
  fill_batch(request, local, q);
  request.mutable_v()->Add(v.begin(), v.end());
}

class RpcEquivalenceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    // The constraint sets below include over-determined ones (a weld on a 2-DOF chain, given
    // accelerations on a closed chain): the server's least-squares answers are compared with the
    // engine's, which checks no residual (the refusal is bad_input_test's).
    server_ = new ServerProcess(
        {dir_->path() / "data",
         repository_dir(),
         false,
         {"--workers=3", "--split-min-states=8", "--max-constraint-residual=inf"}});
    // The same models built here, through the same readers and builder.
    std::vector<std::string> errors;
    for (const auto& entry : server::read_bundled_models(repository_dir(), errors)) {
      server::BuiltModel built;
      ASSERT_TRUE(
          server::build_from_request(entry.request, server::model_limits(server::Config{}), built)
              .ok())
          << entry.path;
      grpc::ClientContext context;
      context.set_deadline(deadline_in(30));
      v1::GetModelRequest request;
      request.set_model_id(built.id);
      v1::Model layout;
      ASSERT_TRUE(server_->models()->GetModel(&context, request, &layout).ok())
          << entry.path << ": the server has no model with id " << built.id;
      models_->emplace(built.model->name, LocalModel{built.model, layout});
    }
    ASSERT_EQ(models_->size(), 6u);
  }
  static void TearDownTestSuite() {
    delete server_;
    delete dir_;
    models_->clear();
  }

  static TempDir* dir_;
  static ServerProcess* server_;
  static std::map<std::string, LocalModel>* models_;
};

TempDir* RpcEquivalenceTest::dir_ = nullptr;
ServerProcess* RpcEquivalenceTest::server_ = nullptr;
std::map<std::string, LocalModel>* RpcEquivalenceTest::models_ =
    new std::map<std::string, LocalModel>();

TEST_F(RpcEquivalenceTest, InverseDynamicsWithAndWithoutExternalForces) {
  for (const auto& [name, local] : *models_) {
    const Model& m = *local.model;
    Data data(m);
    const auto q = random_configurations(local.layout, kStates, 1);
    const auto v = random_values(kStates * m.nv, 2);
    const auto a = random_values(kStates * m.nv, 3);
    const auto f = random_values(kStates * (m.nbodies() - 1) * 6, 4);
    for (const bool with_forces : {false, true}) {
      v1::InverseDynamicsRequest request;
      fill_batch(request, local, q, v);
      request.mutable_a()->Add(a.begin(), a.end());
      if (with_forces) request.mutable_external_forces()->Add(f.begin(), f.end());
      grpc::ClientContext context;
      context.set_deadline(deadline_in(60));
      v1::InverseDynamicsResponse response;
      const grpc::Status status =
          server_->dynamics()->InverseDynamics(&context, request, &response);
      ASSERT_TRUE(status.ok()) << name << ": " << status.error_message();
      EXPECT_EQ(response.batch_size(), static_cast<unsigned>(kStates));
      std::vector<double> want;
      std::vector<Force> forces(m.nbodies(), Force::Zero());
      for (int s = 0; s < kStates; ++s) {
        for (int b = 1; b < m.nbodies(); ++b) {
          forces[b] = Force::FromVector(row(f, s * (m.nbodies() - 1) + b - 1, 6));
        }
        append(want, rnea(m, data, row(q, s, m.nq), row(v, s, m.nv), row(a, s, m.nv),
                          with_forces ? std::span<const Force>(forces) : std::span<const Force>()));
      }
      expect_bitwise_equal(response.tau(), want, name + (with_forces ? " with forces" : ""));
    }
  }
}

TEST_F(RpcEquivalenceTest, ForwardDynamics) {
  for (const auto& [name, local] : *models_) {
    const Model& m = *local.model;
    Data data(m);
    const auto q = random_configurations(local.layout, kStates, 5);
    const auto v = random_values(kStates * m.nv, 6);
    const auto tau = random_values(kStates * m.nv, 7);
    const auto f = random_values(kStates * (m.nbodies() - 1) * 6, 8);
    v1::ForwardDynamicsRequest request;
    fill_batch(request, local, q, v);
    request.mutable_tau()->Add(tau.begin(), tau.end());
    request.mutable_external_forces()->Add(f.begin(), f.end());
    grpc::ClientContext context;
    context.set_deadline(deadline_in(60));
    v1::ForwardDynamicsResponse response;
    const grpc::Status status = server_->dynamics()->ForwardDynamics(&context, request, &response);
    // The PUMA's first link is massless but carries the others, so every model is regular.
    ASSERT_TRUE(status.ok()) << name << ": " << status.error_message();
    std::vector<double> want;
    std::vector<Force> forces(m.nbodies(), Force::Zero());
    for (int s = 0; s < kStates; ++s) {
      for (int b = 1; b < m.nbodies(); ++b) {
        forces[b] = Force::FromVector(row(f, s * (m.nbodies() - 1) + b - 1, 6));
      }
      append(want, aba(m, data, row(q, s, m.nq), row(v, s, m.nv), row(tau, s, m.nv), forces));
    }
    expect_bitwise_equal(response.a(), want, name);
  }
}

TEST_F(RpcEquivalenceTest, MassMatrixAndInverseByEachAlgorithm) {
  for (const auto& [name, local] : *models_) {
    const Model& m = *local.model;
    Data data(m);
    const auto q = random_configurations(local.layout, kStates, 9);
    for (const auto algorithm :
         {v1::MASS_MATRIX_ALGORITHM_CRBA, v1::MASS_MATRIX_ALGORITHM_LAGRANGE_HOMOGENEOUS}) {
      const bool lagrange = algorithm == v1::MASS_MATRIX_ALGORITHM_LAGRANGE_HOMOGENEOUS;
      const std::string what = name + (lagrange ? " Lagrange" : " CRBA");
      v1::MassMatrixRequest request;
      fill_batch(request, local, q);
      request.set_inverse(true);
      request.set_algorithm(algorithm);
      v1::MassMatrixResponse response;
      const grpc::Status status = with_deadline(60, [&](grpc::ClientContext* c) {
        return server_->dynamics()->MassMatrix(c, request, &response);
      });
      ASSERT_TRUE(status.ok()) << what << ": " << status.error_message();
      std::vector<double> want_m, want_inverse;
      for (int s = 0; s < kStates; ++s) {
        append_matrix(want_m, lagrange ? lagrange_homogeneous_mass_matrix(m, data, row(q, s, m.nq))
                                       : crba(m, data, row(q, s, m.nq)));
        append_matrix(want_inverse, minverse(m, data, row(q, s, m.nq)));
      }
      expect_bitwise_equal(response.mass_matrix(), want_m, what + " M");
      expect_bitwise_equal(response.inverse(), want_inverse, what + " M⁻¹");
    }
  }
}

TEST_F(RpcEquivalenceTest, InverseDynamicsByLagrangeHomogeneous) {
  for (const auto& [name, local] : *models_) {
    const Model& m = *local.model;
    Data data(m);
    const auto q = random_configurations(local.layout, kStates, 20);
    const auto v = random_values(kStates * m.nv, 21);
    const auto a = random_values(kStates * m.nv, 22);
    v1::InverseDynamicsRequest request;
    fill_batch(request, local, q, v);
    request.mutable_a()->Add(a.begin(), a.end());
    request.set_algorithm(v1::INVERSE_DYNAMICS_ALGORITHM_LAGRANGE_HOMOGENEOUS);
    v1::InverseDynamicsResponse response;
    const grpc::Status status = with_deadline(60, [&](grpc::ClientContext* c) {
      return server_->dynamics()->InverseDynamics(c, request, &response);
    });
    ASSERT_TRUE(status.ok()) << name << ": " << status.error_message();
    std::vector<double> want;
    for (int s = 0; s < kStates; ++s) {
      append(want,
             lagrange_homogeneous(m, data, row(q, s, m.nq), row(v, s, m.nv), row(a, s, m.nv)));
    }
    expect_bitwise_equal(response.tau(), want, name);
  }
}

TEST_F(RpcEquivalenceTest, ForwardDynamicsByEachAlgorithm) {
  const std::pair<v1::ForwardDynamicsAlgorithm, ForwardDynamicsAlgorithm> algorithms[] = {
      {v1::FORWARD_DYNAMICS_ALGORITHM_ABA, ForwardDynamicsAlgorithm::kAba},
      {v1::FORWARD_DYNAMICS_ALGORITHM_CRBA, ForwardDynamicsAlgorithm::kCrba},
      {v1::FORWARD_DYNAMICS_ALGORITHM_FACTORIZATION, ForwardDynamicsAlgorithm::kFactorization},
      {v1::FORWARD_DYNAMICS_ALGORITHM_AUTO, ForwardDynamicsAlgorithm::kAuto}};
  for (const auto& [name, local] : *models_) {
    const Model& m = *local.model;
    Data data(m);
    const auto q = random_configurations(local.layout, kStates, 23);
    const auto v = random_values(kStates * m.nv, 24);
    const auto tau = random_values(kStates * m.nv, 25);
    const auto f = random_values(kStates * (m.nbodies() - 1) * 6, 26);
    for (const auto& [algorithm, engine_algorithm] : algorithms) {
      const std::string what = name + " " + v1::ForwardDynamicsAlgorithm_Name(algorithm);
      v1::ForwardDynamicsRequest request;
      fill_batch(request, local, q, v);
      request.mutable_tau()->Add(tau.begin(), tau.end());
      request.set_algorithm(algorithm);
      v1::ForwardDynamicsResponse response;
      grpc::Status status = with_deadline(60, [&](grpc::ClientContext* c) {
        return server_->dynamics()->ForwardDynamics(c, request, &response);
      });
      ASSERT_TRUE(status.ok()) << what << ": " << status.error_message();
      const ForwardDynamicsAlgorithm ran = engine_algorithm == ForwardDynamicsAlgorithm::kAuto
                                               ? auto_forward_dynamics_algorithm(m)
                                               : engine_algorithm;
      EXPECT_EQ(response.algorithm(), ran == ForwardDynamicsAlgorithm::kCrba
                                          ? v1::FORWARD_DYNAMICS_ALGORITHM_CRBA
                                      : ran == ForwardDynamicsAlgorithm::kFactorization
                                          ? v1::FORWARD_DYNAMICS_ALGORITHM_FACTORIZATION
                                          : v1::FORWARD_DYNAMICS_ALGORITHM_ABA)
          << what;
      std::vector<double> want;
      for (int s = 0; s < kStates; ++s) {
        append(want, forward_dynamics(m, data, row(q, s, m.nq), row(v, s, m.nv), row(tau, s, m.nv),
                                      engine_algorithm));
      }
      expect_bitwise_equal(response.a(), want, what);
      if (algorithm != v1::FORWARD_DYNAMICS_ALGORITHM_AUTO) continue;
      // AUTO with external forces runs ABA, the one algorithm that takes them.
      request.mutable_external_forces()->Add(f.begin(), f.end());
      status = with_deadline(60, [&](grpc::ClientContext* c) {
        return server_->dynamics()->ForwardDynamics(c, request, &response);
      });
      ASSERT_TRUE(status.ok()) << what << ": " << status.error_message();
      EXPECT_EQ(response.algorithm(), v1::FORWARD_DYNAMICS_ALGORITHM_ABA) << what;
      want.clear();
      for (int s = 0; s < kStates; ++s) {
        append(want, aba(m, data, row(q, s, m.nq), row(v, s, m.nv), row(tau, s, m.nv),
                         forces_of(m, f, s)));
      }
      expect_bitwise_equal(response.a(), want, what + " with forces");
    }
  }
}

TEST_F(RpcEquivalenceTest, HybridDynamics) {
  for (const auto& [name, local] : *models_) {
    const Model& m = *local.model;
    Data data(m);
    const auto q = random_configurations(local.layout, kStates, 27);
    const auto v = random_values(kStates * m.nv, 28);
    const auto a = random_values(kStates * m.nv, 29);
    const auto tau = random_values(kStates * m.nv, 30);
    const auto f = random_values(kStates * (m.nbodies() - 1) * 6, 31);
    // Every third DOF acceleration-given, the others force-given.
    std::vector<DofInput> inputs;
    v1::HybridDynamicsRequest request;
    for (int k = 0; k < m.nv; ++k) {
      const bool acceleration = k % 3 == 1;
      inputs.push_back(acceleration ? DofInput::kAcceleration : DofInput::kForce);
      request.add_inputs(acceleration ? v1::DOF_INPUT_ACCELERATION : v1::DOF_INPUT_FORCE);
    }
    fill_batch(request, local, q, v);
    request.mutable_a()->Add(a.begin(), a.end());
    request.mutable_tau()->Add(tau.begin(), tau.end());
    request.mutable_external_forces()->Add(f.begin(), f.end());
    v1::HybridDynamicsResponse response;
    const grpc::Status status = with_deadline(60, [&](grpc::ClientContext* c) {
      return server_->dynamics()->HybridDynamics(c, request, &response);
    });
    ASSERT_TRUE(status.ok()) << name << ": " << status.error_message();
    std::vector<double> want_a, want_tau;
    for (int s = 0; s < kStates; ++s) {
      hybrid_dynamics(m, data, row(q, s, m.nq), row(v, s, m.nv), row(a, s, m.nv), row(tau, s, m.nv),
                      inputs, forces_of(m, f, s));
      append(want_a, data.ddq);
      append(want_tau, data.tau);
    }
    expect_bitwise_equal(response.a(), want_a, name + " a");
    expect_bitwise_equal(response.tau(), want_tau, name + " tau");
  }
}

TEST_F(RpcEquivalenceTest, FloatingBaseInverseDynamicsOfTheQuadruped) {
  const LocalModel& local = models_->at("quadruped");
  const Model& m = *local.model;
  Data data(m);
  const auto q = random_configurations(local.layout, kStates, 32);
  const auto v = random_values(kStates * m.nv, 33);
  const auto a = random_values(kStates * m.nv, 34);
  const auto f = random_values(kStates * (m.nbodies() - 1) * 6, 35);
  v1::FloatingBaseInverseDynamicsRequest request;
  fill_batch(request, local, q, v);
  request.mutable_a()->Add(a.begin(), a.end());
  request.mutable_external_forces()->Add(f.begin(), f.end());
  v1::FloatingBaseInverseDynamicsResponse response;
  const grpc::Status status = with_deadline(60, [&](grpc::ClientContext* c) {
    return server_->dynamics()->FloatingBaseInverseDynamics(c, request, &response);
  });
  ASSERT_TRUE(status.ok()) << status.error_message();
  std::vector<double> want_a, want_tau;
  for (int s = 0; s < kStates; ++s) {
    floating_base_inverse_dynamics(m, data, row(q, s, m.nq), row(v, s, m.nv), row(a, s, m.nv),
                                   forces_of(m, f, s));
    append(want_a, data.ddq);
    append(want_tau, data.tau);
  }
  expect_bitwise_equal(response.a(), want_a, "a");
  expect_bitwise_equal(response.tau(), want_tau, "tau");
}

TEST_F(RpcEquivalenceTest, DerivativesOfInverseAndForwardDynamics) {
  for (const auto& [name, local] : *models_) {
    const Model& m = *local.model;
    Data data(m);
    const auto q = random_configurations(local.layout, kStates, 36);
    const auto v = random_values(kStates * m.nv, 37);
    const auto u = random_values(kStates * m.nv, 38);
    const auto f = random_values(kStates * (m.nbodies() - 1) * 6, 39);
    for (const auto of :
         {v1::DERIVATIVES_OF_INVERSE_DYNAMICS, v1::DERIVATIVES_OF_FORWARD_DYNAMICS}) {
      const bool forward = of == v1::DERIVATIVES_OF_FORWARD_DYNAMICS;
      const std::string what = name + (forward ? " forward" : " inverse");
      v1::DerivativesRequest request;
      request.set_model_id(local.layout.id());
      request.set_batch_size(kStates);
      request.set_of(of);
      request.mutable_q()->Add(q.begin(), q.end());
      request.mutable_v()->Add(v.begin(), v.end());
      (forward ? request.mutable_tau() : request.mutable_a())->Add(u.begin(), u.end());
      request.mutable_external_forces()->Add(f.begin(), f.end());
      v1::DerivativesResponse response;
      const grpc::Status status = with_deadline(60, [&](grpc::ClientContext* c) {
        return server_->dynamics()->Derivatives(c, request, &response);
      });
      ASSERT_TRUE(status.ok()) << what << ": " << status.error_message();
      std::vector<double> want_dq, want_dv, want_du;
      for (int s = 0; s < kStates; ++s) {
        if (forward) {
          aba_derivatives(m, data, row(q, s, m.nq), row(v, s, m.nv), row(u, s, m.nv),
                          forces_of(m, f, s));
          append_matrix(want_dq, data.workspace<AbaDerivativesWorkspace>().ddq_dq);
          append_matrix(want_dv, data.workspace<AbaDerivativesWorkspace>().ddq_dv);
          append_matrix(want_du, data.workspace<AbaDerivativesWorkspace>().ddq_dtau);
        } else {
          rnea_derivatives(m, data, row(q, s, m.nq), row(v, s, m.nv), row(u, s, m.nv),
                           forces_of(m, f, s));
          append_matrix(want_dq, data.workspace<RneaDerivativesWorkspace>().dtau_dq);
          append_matrix(want_dv, data.workspace<RneaDerivativesWorkspace>().dtau_dv);
          append_matrix(want_du, data.workspace<MassMatrixWorkspace>().M);
        }
      }
      expect_bitwise_equal(response.d_dq(), want_dq, what + " d/dq");
      expect_bitwise_equal(response.d_dv(), want_dv, what + " d/dv");
      expect_bitwise_equal(response.d_du(), want_du, what + " d/du");
    }
  }
}

// Every integrator, with every DOF actuated and, on floating bases, with the root unactuated;
// the continuous derivatives with RK4, whose last stage is not the knot.
TEST_F(RpcEquivalenceTest, LinearizeByEachIntegratorAndActuation) {
  for (const auto& [name, local] : *models_) {
    const Model& m = *local.model;
    const int nx = 2 * m.nv;
    Data data(m);
    const auto q = random_configurations(local.layout, kStates, 61);
    const auto v = random_values(kStates * m.nv, 62);
    for (const v1::ActuationKind actuation :
         {v1::ACTUATION_KIND_ALL, v1::ACTUATION_KIND_UNACTUATED_ROOT}) {
      if (actuation == v1::ACTUATION_KIND_UNACTUATED_ROOT && !m.floating_base) continue;
      std::vector<int> actuated;
      for (int dof = actuation == v1::ACTUATION_KIND_ALL ? 0 : 6; dof < m.nv; ++dof) {
        actuated.push_back(dof);
      }
      const int nu = static_cast<int>(actuated.size());
      const auto u = random_values(kStates * nu, 63);
      for (const v1::Integrator integrator : {v1::INTEGRATOR_SEMI_IMPLICIT_EULER,
                                              v1::INTEGRATOR_EXPLICIT_EULER, v1::INTEGRATOR_RK4}) {
        const bool rk4 = integrator == v1::INTEGRATOR_RK4;
        const std::string what =
            name + " " + v1::Integrator_Name(integrator) + " " + v1::ActuationKind_Name(actuation);
        v1::LinearizeRequest request;
        fill_batch(request, local, q, v);
        request.mutable_u()->Add(u.begin(), u.end());
        request.set_dt(0.01);
        request.set_integrator(integrator);
        request.mutable_actuation()->set_kind(actuation);
        request.set_continuous_derivatives(rk4);
        v1::LinearizeResponse response;
        const grpc::Status status = with_deadline(60, [&](grpc::ClientContext* c) {
          return server_->dynamics()->Linearize(c, request, &response);
        });
        ASSERT_TRUE(status.ok()) << what << ": " << status.error_message();
        EXPECT_EQ(response.nu(), static_cast<std::uint32_t>(nu)) << what;
        std::vector<double> want_q, want_v, want_fx, want_fu, want_dq, want_dv, want_dtau;
        // STEP_JACOBIANS_VELOCITY_ROWS: Fx's and Fu's v⁺ rows, J_q's and J_w's multi-DOF blocks.
        std::vector<double> want_dv_dx, want_dv_du, want_jq, want_jw;
        Vector q_next(m.nq), v_next(m.nv);
        RowMajor fx(nx, nx), fu(nx, nu);
        for (int s = 0; s < kStates; ++s) {
          const Vector u_s = row(u, s, nu);
          const Integrator engine_integrator = rk4 ? Integrator::kRungeKutta4
                                               : integrator == v1::INTEGRATOR_EXPLICIT_EULER
                                                   ? Integrator::kExplicitEuler
                                                   : Integrator::kSemiImplicitEuler;
          step(m, data, row(q, s, m.nq), row(v, s, m.nv), u_s,
               {.dt = 0.01, .integrator = engine_integrator, .actuated_dofs = actuated},
               {.q_next = q_next, .v_next = v_next, .fx = fx, .fu = fu});
          want_q.insert(want_q.end(), q_next.data(), q_next.data() + m.nq);
          want_v.insert(want_v.end(), v_next.data(), v_next.data() + m.nv);
          append_matrix(want_fx, fx);
          append_matrix(want_fu, fu);
          append_matrix(want_dv_dx, RowMajor(fx.bottomRows(m.nv)));
          append_matrix(want_dv_du, RowMajor(fu.bottomRows(m.nv)));
          const DiscreteStepWorkspace& ws = data.workspace<DiscreteStepWorkspace>();
          for (int i = 1; i < m.nbodies(); ++i) {
            const int dofs = joint_nv(m.joints[i].type), at = m.joints[i].idx_v;
            if (dofs < 2) continue;
            append_matrix(want_jq, RowMajor(ws.integrate_dq.block(at, at, dofs, dofs)));
            append_matrix(want_jw, RowMajor(ws.integrate_dstep.block(at, at, dofs, dofs)));
          }
          if (rk4) {
            Vector tau = Vector::Zero(m.nv);
            for (int c = 0; c < nu; ++c) tau[actuated[c]] = u_s[c];
            const AbaDerivativesWorkspace& d =
                forward_dynamics_derivatives(m, data, row(q, s, m.nq), row(v, s, m.nv), tau, {});
            append_matrix(want_dq, d.ddq_dq);
            append_matrix(want_dv, d.ddq_dv);
            append_matrix(want_dtau, d.ddq_dtau);
          }
        }
        expect_bitwise_equal(response.q_next(), want_q, what + " q_next");
        expect_bitwise_equal(response.v_next(), want_v, what + " v_next");
        expect_bitwise_equal(response.fx(), want_fx, what + " fx");
        expect_bitwise_equal(response.fu(), want_fu, what + " fu");
        expect_bitwise_equal(response.da_dq(), want_dq, what + " da_dq");
        expect_bitwise_equal(response.da_dv(), want_dv, what + " da_dv");
        expect_bitwise_equal(response.da_dtau(), want_dtau, what + " da_dtau");
        if (rk4) continue;

        request.set_jacobians(v1::STEP_JACOBIANS_VELOCITY_ROWS);
        v1::LinearizeResponse rows;
        const grpc::Status by_rows = with_deadline(60, [&](grpc::ClientContext* c) {
          return server_->dynamics()->Linearize(c, request, &rows);
        });
        ASSERT_TRUE(by_rows.ok()) << what << ": " << by_rows.error_message();
        expect_bitwise_equal(rows.q_next(), want_q, what + " velocity rows: q_next");
        expect_bitwise_equal(rows.v_next(), want_v, what + " velocity rows: v_next");
        EXPECT_TRUE(rows.fx().empty() && rows.fu().empty()) << what;
        expect_bitwise_equal(rows.dv_next_dx(), want_dv_dx, what + " dv_next_dx");
        expect_bitwise_equal(rows.dv_next_du(), want_dv_du, what + " dv_next_du");
        expect_bitwise_equal(rows.integrate_dq(), want_jq, what + " integrate_dq");
        expect_bitwise_equal(rows.integrate_dw(), want_jw, what + " integrate_dw");
        std::vector<std::pair<int, int>> blocks;
        for (const v1::DofBlock& block : rows.integration_blocks()) {
          blocks.emplace_back(block.first_dof(), block.dofs());
        }
        std::vector<std::pair<int, int>> want_blocks;
        for (int i = 1; i < m.nbodies(); ++i) {
          const int dofs = joint_nv(m.joints[i].type);
          if (dofs > 1) want_blocks.emplace_back(m.joints[i].idx_v, dofs);
        }
        EXPECT_EQ(blocks, want_blocks) << what;
      }
    }
  }
}

// The quadruped's four feet in 3D contact with the world: the request's constraints and the
// engine's.
std::pair<std::vector<v1::Constraint>, std::vector<BilateralConstraint>> quadruped_feet(
    const Model& m) {
  std::vector<v1::Constraint> request;
  std::vector<BilateralConstraint> engine;
  for (const char* foot : {"FL_foot", "FR_foot", "HL_foot", "HR_foot"}) {
    v1::Constraint& c = request.emplace_back();
    c.set_type(v1::CONSTRAINT_TYPE_POINT);
    c.mutable_frame1()->set_frame(foot);
    const Frame& frame = m.frames[m.find_frame(foot)];
    BilateralConstraint& b = engine.emplace_back();
    b.type = ConstraintType::kPoint;
    b.body1 = frame.body;
    b.placement1 = frame.placement;
  }
  return {request, engine};
}

// `engine`, the engine form of `request`, with the world contacts that `request` leaves without an
// anchor (frame2 unset) held where their frame 1 is at q, as the service anchors them.
std::vector<BilateralConstraint> held_where_they_stand(const Model& m, Data& data,
                                                       const std::vector<v1::Constraint>& request,
                                                       std::vector<BilateralConstraint> engine,
                                                       const Eigen::VectorXd& q) {
  forward_kinematics(m, data, q);
  for (std::size_t i = 0; i < request.size(); ++i) {
    if (request[i].has_frame2()) continue;
    engine[i].placement2 = data.oMi[engine[i].body1] * engine[i].placement1;
  }
  return engine;
}

// Derivatives of constrained dynamics and Linearize in contact (semi-implicit and RK4, with λ and
// the continuous derivatives), against the engine's calls. The feet have no anchor: Derivatives
// holds them where they are at each state, Linearize where they are at its first knot.
TEST_F(RpcEquivalenceTest, ConstrainedDerivativesAndLinearizeInContact) {
  const LocalModel& local = models_->at("quadruped");
  const Model& m = *local.model;
  const int nx = 2 * m.nv, nu = m.nv - 6, rows = 12;
  Data data(m);
  const auto q = random_configurations(local.layout, kStates, 64);
  const auto v = random_values(kStates * m.nv, 65);
  const auto tau = random_values(kStates * m.nv, 66);
  const auto u = random_values(kStates * nu, 67);
  const auto [feet, contacts] = quadruped_feet(m);

  v1::DerivativesRequest derivatives;
  fill_batch(derivatives, local, q, v);
  derivatives.mutable_tau()->Add(tau.begin(), tau.end());
  derivatives.set_of(v1::DERIVATIVES_OF_CONSTRAINED_DYNAMICS);
  derivatives.mutable_constraints()->Add(feet.begin(), feet.end());
  derivatives.mutable_gains()->set_position(100.0);
  derivatives.mutable_gains()->set_velocity(20.0);
  v1::DerivativesResponse d_response;
  grpc::Status status = with_deadline(60, [&](grpc::ClientContext* c) {
    return server_->dynamics()->Derivatives(c, derivatives, &d_response);
  });
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(d_response.rows_size(), 4);
  EXPECT_EQ(d_response.rows(3).offset(), 9);
  std::vector<double> dq, dv, dtau, lambda, dlq, dlv, dltau;
  for (int s = 0; s < kStates; ++s) {
    const ConstrainedDerivativesWorkspace& w = constrained_dynamics_derivatives(
        m, data, row(q, s, m.nq), row(v, s, m.nv), row(tau, s, m.nv),
        held_where_they_stand(m, data, feet, contacts, row(q, s, m.nq)), {100.0, 20.0});
    const AbaDerivativesWorkspace& d = data.workspace<AbaDerivativesWorkspace>();
    append_matrix(dq, d.ddq_dq);
    append_matrix(dv, d.ddq_dv);
    append_matrix(dtau, d.ddq_dtau);
    append(lambda, w.lambda.head(rows));
    append_matrix(dlq, w.dlambda_dq.topRows(rows));
    append_matrix(dlv, w.dlambda_dv.topRows(rows));
    append_matrix(dltau, w.dlambda_dtau.topRows(rows));
  }
  expect_bitwise_equal(d_response.d_dq(), dq, "da/dq");
  expect_bitwise_equal(d_response.d_dv(), dv, "da/dv");
  expect_bitwise_equal(d_response.d_du(), dtau, "da/dtau");
  expect_bitwise_equal(d_response.multipliers(), lambda, "λ");
  expect_bitwise_equal(d_response.dmultipliers_dq(), dlq, "dλ/dq");
  expect_bitwise_equal(d_response.dmultipliers_dv(), dlv, "dλ/dv");
  expect_bitwise_equal(d_response.dmultipliers_dtau(), dltau, "dλ/dτ");

  std::vector<int> actuated(nu);
  for (int c = 0; c < nu; ++c) actuated[c] = 6 + c;
  for (const v1::Integrator integrator : {v1::INTEGRATOR_SEMI_IMPLICIT_EULER, v1::INTEGRATOR_RK4}) {
    const bool rk4 = integrator == v1::INTEGRATOR_RK4;
    const std::string what = v1::Integrator_Name(integrator);
    v1::LinearizeRequest request;
    fill_batch(request, local, q, v);
    request.mutable_u()->Add(u.begin(), u.end());
    request.set_dt(0.01);
    request.set_integrator(integrator);
    request.mutable_actuation()->set_kind(v1::ACTUATION_KIND_UNACTUATED_ROOT);
    request.set_continuous_derivatives(true);
    request.mutable_constraints()->Add(feet.begin(), feet.end());
    request.mutable_gains()->set_position(100.0);
    request.mutable_gains()->set_velocity(20.0);
    v1::LinearizeResponse response;
    status = with_deadline(60, [&](grpc::ClientContext* c) {
      return server_->dynamics()->Linearize(c, request, &response);
    });
    ASSERT_TRUE(status.ok()) << what << ": " << status.error_message();
    ASSERT_EQ(response.rows_size(), 4) << what;
    std::vector<double> want_fx, want_fu, want_lambda, want_dlq;
    const std::vector<BilateralConstraint> held =
        held_where_they_stand(m, data, feet, contacts, row(q, 0, m.nq));
    Vector q_next(m.nq), v_next(m.nv);
    RowMajor fx(nx, nx), fu(nx, nu);
    for (int s = 0; s < kStates; ++s) {
      const Vector u_s = row(u, s, nu);
      const StepSettings settings{
          .dt = 0.01,
          .integrator = rk4 ? Integrator::kRungeKutta4 : Integrator::kSemiImplicitEuler,
          .actuated_dofs = actuated,
          .constraints = held,
          .gains = {100.0, 20.0}};
      step(m, data, row(q, s, m.nq), row(v, s, m.nv), u_s, settings,
           {.q_next = q_next, .v_next = v_next, .fx = fx, .fu = fu});
      if (rk4) {
        Vector tau_s = Vector::Zero(m.nv);
        tau_s.tail(nu) = u_s;
        forward_dynamics_derivatives(m, data, row(q, s, m.nq), row(v, s, m.nv), tau_s, held,
                                     {100.0, 20.0});
      }
      append_matrix(want_fx, fx);
      append_matrix(want_fu, fu);
      const ConstrainedDerivativesWorkspace& w = data.workspace<ConstrainedDerivativesWorkspace>();
      append(want_lambda, w.lambda.head(rows));
      append_matrix(want_dlq, w.dlambda_dq.topRows(rows));
    }
    expect_bitwise_equal(response.fx(), want_fx, what + " fx");
    expect_bitwise_equal(response.fu(), want_fu, what + " fu");
    expect_bitwise_equal(response.multipliers(), want_lambda, what + " λ");
    expect_bitwise_equal(response.dmultipliers_dq(), want_dlq, what + " dλ/dq");
  }
}

// Rollouts of local's model from the starts (q, v), `rollouts` of `knots` steps of 10 ms under u.
v1::RolloutRequest rollout_request(const LocalModel& local, const std::vector<double>& q,
                                   const std::vector<double>& v, const std::vector<double>& u,
                                   int rollouts, int knots) {
  v1::RolloutRequest request;
  fill_batch(request, local, q, v);
  request.set_batch_size(rollouts);
  request.set_knots(knots);
  request.mutable_u()->Add(u.begin(), u.end());
  request.set_dt(0.01);
  return request;
}

// Rollouts spread over the workers, each the engine's: 9 rollouts of 5 steps, the feet held with
// Baumgarte's gains where they are at each rollout's x₀, about a nominal with gains, with Fx, Fu,
// λ and a foot's placement and Jacobian at every state.
TEST_F(RpcEquivalenceTest, RolloutWithFeedbackInContact) {
  const LocalModel& local = models_->at("quadruped");
  const Model& m = *local.model;
  constexpr int kRollouts = 9, kKnots = 5;
  const int nx = 2 * m.nv, nu = m.nv - 6, rows = 12;
  const auto q = random_configurations(local.layout, kRollouts, 68);
  const auto v = random_values(kRollouts * m.nv, 69);
  const auto u = random_values(kRollouts * kKnots * nu, 70);
  const auto q_nominal = random_configurations(local.layout, kKnots, 71);
  const auto v_nominal = random_values(kKnots * m.nv, 72);
  auto gains = random_values(kKnots * nu * nx, 73);
  for (double& g : gains) g *= 0.1;
  const auto [feet, contacts] = quadruped_feet(m);

  v1::RolloutRequest request = rollout_request(local, q, v, u, kRollouts, kKnots);
  request.set_integrator(v1::INTEGRATOR_RK4);
  request.mutable_actuation()->set_kind(v1::ACTUATION_KIND_UNACTUATED_ROOT);
  request.mutable_constraints()->Add(feet.begin(), feet.end());
  request.mutable_gains()->set_position(100.0);
  request.mutable_gains()->set_velocity(20.0);
  request.mutable_q_nominal()->Add(q_nominal.begin(), q_nominal.end());
  request.mutable_v_nominal()->Add(v_nominal.begin(), v_nominal.end());
  request.mutable_feedback()->Add(gains.begin(), gains.end());
  request.set_jacobians(true);
  request.add_frames("FL_foot");
  request.set_frame_jacobians(true);
  request.set_reference(v1::REFERENCE_FRAME_LOCAL_WORLD_ALIGNED);
  v1::RolloutResponse response;
  const grpc::Status status = with_deadline(60, [&](grpc::ClientContext* c) {
    return server_->dynamics()->Rollout(c, request, &response);
  });
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.nu(), static_cast<std::uint32_t>(nu));
  EXPECT_EQ(response.knots(), static_cast<std::uint32_t>(kKnots));
  ASSERT_EQ(response.rows_size(), 4);

  std::vector<int> actuated(nu);
  for (int c = 0; c < nu; ++c) actuated[c] = 6 + c;
  Data data(m);
  const int states = kKnots + 1;
  std::vector<double> want_q(kRollouts * states * m.nq), want_v(kRollouts * states * m.nv),
      want_u(kRollouts * kKnots * nu), want_fx(kRollouts * kKnots * nx * nx),
      want_fu(kRollouts * kKnots * nx * nu), want_lambda(kRollouts * kKnots * rows), want_positions,
      want_jacobians;
  const int foot = m.find_frame("FL_foot");
  for (int r = 0; r < kRollouts; ++r) {
    const auto slice = [r](std::vector<double>& all, int per_rollout) {
      return std::span<double>(all).subspan(static_cast<std::size_t>(r) * per_rollout, per_rollout);
    };
    const std::span<double> trajectory = slice(want_q, states * m.nq);
    rollout(
        m, data, row(q, r, m.nq), row(v, r, m.nv), kKnots,
        std::span<const double>(u).subspan(static_cast<std::size_t>(r) * kKnots * nu, kKnots * nu),
        {.dt = 0.01,
         .integrator = Integrator::kRungeKutta4,
         .actuated_dofs = actuated,
         .constraints = held_where_they_stand(m, data, feet, contacts, row(q, r, m.nq)),
         .gains = {100.0, 20.0}},
        {q_nominal, v_nominal, gains},
        {trajectory, slice(want_v, states * m.nv), slice(want_u, kKnots * nu),
         slice(want_fx, kKnots * nx * nx), slice(want_fu, kKnots * nx * nu),
         slice(want_lambda, kKnots * rows)});
    for (int k = 0; k < states; ++k) {
      forward_kinematics(m, data, Eigen::Map<const Vector>(trajectory.data() + k * m.nq, m.nq));
      const Transform placement = frame_placement(m, data, foot);
      append(want_positions, placement.translation);
      Eigen::MatrixXd jacobian(6, m.nv);
      frame_jacobian(m, data, foot, ReferenceFrame::kLocalWorldAligned, jacobian);
      append_matrix(want_jacobians, jacobian);
    }
  }
  expect_bitwise_equal(response.q(), want_q, "q");
  expect_bitwise_equal(response.v(), want_v, "v");
  expect_bitwise_equal(response.u(), want_u, "u");
  expect_bitwise_equal(response.fx(), want_fx, "fx");
  expect_bitwise_equal(response.fu(), want_fu, "fu");
  expect_bitwise_equal(response.multipliers(), want_lambda, "λ");
  expect_bitwise_equal(response.frame_positions(), want_positions, "frame positions");
  expect_bitwise_equal(response.frame_jacobians(), want_jacobians, "frame Jacobians");
}

// A trot's schedule on the quadruped's feet over 6 knots: the four feet, then the FL-HR diagonal
// alone from knot 2 (FR and HL lift off), then the four again from knot 4 (FR and HL touch down,
// restitution 0.2). No foot has an anchor.
struct TrotSchedule {
  std::vector<v1::ContactPhase> request;
  // The engine's contacts of each phase, and those held where they stand.
  std::vector<std::vector<BilateralConstraint>> contacts;
  std::vector<std::vector<int>> held;
};

TrotSchedule trot_schedule(const Model& m) {
  const auto [feet, contacts] = quadruped_feet(m);
  TrotSchedule t;
  const std::vector<std::vector<int>> phase_feet = {{0, 1, 2, 3}, {0, 3}, {0, 1, 2, 3}};
  const int first_knots[] = {0, 2, 4};
  for (std::size_t p = 0; p < phase_feet.size(); ++p) {
    v1::ContactPhase& phase = t.request.emplace_back();
    phase.set_first_knot(first_knots[p]);
    if (p == 2) phase.set_restitution(0.2);
    std::vector<BilateralConstraint>& engine = t.contacts.emplace_back();
    std::vector<int>& held = t.held.emplace_back();
    for (const int f : phase_feet[p]) {
      *phase.add_contacts() = feet[f];
      held.push_back(static_cast<int>(engine.size()));
      engine.push_back(contacts[f]);
      engine.back().name =
          "phases[" + std::to_string(p) + "].contacts[" + std::to_string(held.back()) + "]";
    }
  }
  return t;
}

// Phased Rollout and Linearize against the engine's schedule, bitwise: 3 rollouts of the trot,
// RK4, with Fx, Fu, λ, the touchdown's impulses and the friction cones; Linearize at the first
// rollout's states and controls, semi-implicit, each knot under its phase, the feet anchored where
// they touch down and kept there while they stand; and a one-phase schedule as the same contacts
// given as constraints.
TEST_F(RpcEquivalenceTest, PhasedRolloutAndLinearizeFollowTheSchedule) {
  const LocalModel& local = models_->at("quadruped");
  const Model& m = *local.model;
  constexpr int kRollouts = 3, kKnots = 6;
  const int nx = 2 * m.nv, nu = m.nv - 6;
  const auto q = random_configurations(local.layout, kRollouts, 74);
  const auto v = random_values(kRollouts * m.nv, 75);
  const auto u = random_values(kRollouts * kKnots * nu, 76);
  TrotSchedule trot = trot_schedule(m);
  const FrictionCone cone{.friction = 0.6, .faces = 4, .normal = Vec3::UnitZ()};
  std::vector<int> actuated(nu);
  for (int c = 0; c < nu; ++c) actuated[c] = 6 + c;

  v1::RolloutRequest request = rollout_request(local, q, v, u, kRollouts, kKnots);
  request.set_integrator(v1::INTEGRATOR_RK4);
  request.mutable_actuation()->set_kind(v1::ACTUATION_KIND_UNACTUATED_ROOT);
  request.mutable_phases()->Add(trot.request.begin(), trot.request.end());
  request.mutable_gains()->set_position(100.0);
  request.mutable_gains()->set_velocity(20.0);
  request.mutable_friction_cone()->set_friction(0.6);
  request.set_jacobians(true);
  v1::RolloutResponse response;
  grpc::Status status = with_deadline(60, [&](grpc::ClientContext* c) {
    return server_->dynamics()->Rollout(c, request, &response);
  });
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.rows_size(), 0);
  const v1::KnotLayout& layout = response.layout();
  ASSERT_EQ(layout.phases_size(), 3);
  EXPECT_EQ(layout.phases(1).rows_size(), 2);
  const std::vector<std::uint64_t> multipliers_at = {0, 12, 24, 30, 36, 48, 60};
  const std::vector<std::uint64_t> cones_at = {0, 20, 40, 50, 60, 80, 100};
  EXPECT_EQ(
      std::vector<std::uint64_t>(layout.multipliers_at().begin(), layout.multipliers_at().end()),
      multipliers_at);
  EXPECT_EQ(std::vector<std::uint64_t>(layout.cones_at().begin(), layout.cones_at().end()),
            cones_at);
  ASSERT_EQ(layout.touchdown_knots_size(), 1);
  EXPECT_EQ(layout.touchdown_knots(0), 4u);

  Data data(m);
  const int states = kKnots + 1;
  std::vector<double> want_q(kRollouts * states * m.nq), want_v(kRollouts * states * m.nv),
      want_u(kRollouts * kKnots * nu), want_fx(kRollouts * kKnots * nx * nx),
      want_fu(kRollouts * kKnots * nx * nu), want_lambda(kRollouts * 60),
      want_impulses(kRollouts * 12), want_cones(kRollouts * 100),
      want_dcones_dx(kRollouts * 100 * nx), want_dcones_du(kRollouts * 100 * nu);
  for (int r = 0; r < kRollouts; ++r) {
    const auto slice = [r](std::vector<double>& all, std::size_t per_rollout) {
      return std::span<double>(all).subspan(r * per_rollout, per_rollout);
    };
    std::vector<std::vector<BilateralConstraint>> contacts = trot.contacts;
    std::vector<ContactPhase> phases;
    for (std::size_t p = 0; p < contacts.size(); ++p) {
      phases.push_back({.first_knot = static_cast<int>(trot.request[p].first_knot()),
                        .contacts = contacts[p],
                        .anchored_at_start = trot.held[p],
                        .restitution = trot.request[p].restitution()});
    }
    rollout(
        m, data, row(q, r, m.nq), row(v, r, m.nv), kKnots,
        std::span<const double>(u).subspan(static_cast<std::size_t>(r) * kKnots * nu, kKnots * nu),
        {.dt = 0.01,
         .integrator = Integrator::kRungeKutta4,
         .actuated_dofs = actuated,
         .gains = {100.0, 20.0},
         .friction_cone = cone},
        {},
        {slice(want_q, states * m.nq),
         slice(want_v, states * m.nv),
         slice(want_u, kKnots * nu),
         slice(want_fx, kKnots * nx * nx),
         slice(want_fu, kKnots * nx * nu),
         slice(want_lambda, 60),
         false,
         {},
         {},
         slice(want_impulses, 12),
         slice(want_cones, 100),
         slice(want_dcones_dx, 100 * nx),
         slice(want_dcones_du, 100 * nu)},
        phases);
  }
  expect_bitwise_equal(response.q(), want_q, "q");
  expect_bitwise_equal(response.v(), want_v, "v");
  expect_bitwise_equal(response.fx(), want_fx, "fx");
  expect_bitwise_equal(response.fu(), want_fu, "fu");
  expect_bitwise_equal(response.multipliers(), want_lambda, "λ");
  expect_bitwise_equal(response.impulses(), want_impulses, "impulses");
  expect_bitwise_equal(response.friction_cones(), want_cones, "friction cones");
  expect_bitwise_equal(response.dfriction_cones_dx(), want_dcones_dx, "friction cones' dx");
  expect_bitwise_equal(response.dfriction_cones_du(), want_dcones_du, "friction cones' du");

  // Linearize at rollout 0's knots.
  const std::vector<double> knots_q(want_q.begin(), want_q.begin() + kKnots * m.nq);
  const std::vector<double> knots_v(want_v.begin(), want_v.begin() + kKnots * m.nv);
  const std::vector<double> knots_u(want_u.begin(), want_u.begin() + kKnots * nu);
  v1::LinearizeRequest linearize;
  fill_batch(linearize, local, knots_q, knots_v);
  linearize.set_batch_size(kKnots);
  linearize.mutable_u()->Add(knots_u.begin(), knots_u.end());
  linearize.set_dt(0.01);
  linearize.mutable_actuation()->set_kind(v1::ACTUATION_KIND_UNACTUATED_ROOT);
  linearize.set_continuous_derivatives(true);
  linearize.mutable_phases()->Add(trot.request.begin(), trot.request.end());
  linearize.mutable_gains()->set_position(100.0);
  linearize.mutable_gains()->set_velocity(20.0);
  linearize.mutable_friction_cone()->set_friction(0.6);
  v1::LinearizeResponse linearized;
  status = with_deadline(60, [&](grpc::ClientContext* c) {
    return server_->dynamics()->Linearize(c, linearize, &linearized);
  });
  ASSERT_TRUE(status.ok()) << status.error_message();
  // The feet anchored where they touch down: all four at knot 0, FR and HL again at knot 4.
  std::vector<std::vector<BilateralConstraint>> anchored = trot.contacts;
  forward_kinematics(m, data, row(knots_q, 0, m.nq));
  for (BilateralConstraint& c : anchored[0]) c.placement2 = data.oMi[c.body1] * c.placement1;
  anchored[1][0].placement2 = anchored[0][0].placement2;
  anchored[1][1].placement2 = anchored[0][3].placement2;
  forward_kinematics(m, data, row(knots_q, 4, m.nq));
  for (BilateralConstraint& c : anchored[2]) c.placement2 = data.oMi[c.body1] * c.placement1;
  anchored[2][0].placement2 = anchored[1][0].placement2;
  anchored[2][3].placement2 = anchored[1][1].placement2;
  std::vector<double> fx_all, lambda_all, dlambda_all, impulses_all, cones_all, dcones_all;
  for (int k = 0; k < kKnots; ++k) {
    const int p = k < 2 ? 0 : k < 4 ? 1 : 2;
    const int rows = constraint_rows(m, anchored[p]);
    const auto cones = static_cast<Eigen::Index>(anchored[p].size() * 5);
    Vector q_next(m.nq), v_next(m.nv), lambda(rows), impulses(rows), residuals(cones);
    RowMajor fx(nx, nx), fu(nx, nu), dcones_dx(cones, nx), dcones_du(cones, nu);
    std::vector<double> knot_values(3 * m.nv * m.nv + 3 * rows * m.nv);
    const std::span<double> values(knot_values);
    const std::size_t nv2 = m.nv * m.nv, rows_nv = rows * m.nv;
    const KnotDerivatives knot{values.subspan(0, nv2),
                               values.subspan(nv2, nv2),
                               values.subspan(2 * nv2, nv2),
                               values.subspan(3 * nv2, rows_nv),
                               values.subspan(3 * nv2 + rows_nv, rows_nv),
                               values.subspan(3 * nv2 + 2 * rows_nv, rows_nv)};
    step(m, data, row(knots_q, k, m.nq), row(knots_v, k, m.nv), row(knots_u, k, nu),
         {.dt = 0.01,
          .actuated_dofs = actuated,
          .constraints = anchored[p],
          .gains = {100.0, 20.0},
          .touchdown = k == 4,
          .restitution = k == 4 ? 0.2 : 0.0,
          .friction_cone = cone},
         {.q_next = q_next,
          .v_next = v_next,
          .fx = fx,
          .fu = fu,
          .multipliers = {lambda.data(), static_cast<std::size_t>(rows)},
          .impulses = k == 4 ? std::span<double>(impulses.data(), rows) : std::span<double>(),
          .friction_cones = {residuals.data(), static_cast<std::size_t>(cones)},
          .dfriction_cones_dx = {dcones_dx.data(), static_cast<std::size_t>(dcones_dx.size())},
          .dfriction_cones_du = {dcones_du.data(), static_cast<std::size_t>(dcones_du.size())},
          .knot_derivatives = &knot});
    append_matrix(fx_all, fx);
    append(lambda_all, lambda);
    dlambda_all.insert(dlambda_all.end(), knot.dlambda_dq.begin(), knot.dlambda_dq.end());
    if (k == 4) append(impulses_all, impulses);
    append(cones_all, residuals);
    append_matrix(dcones_all, dcones_dx);
  }
  expect_bitwise_equal(linearized.fx(), fx_all, "Linearize fx");
  expect_bitwise_equal(linearized.multipliers(), lambda_all, "Linearize λ");
  expect_bitwise_equal(linearized.dmultipliers_dq(), dlambda_all, "Linearize dλ/dq");
  expect_bitwise_equal(linearized.impulses(), impulses_all, "Linearize impulses");
  expect_bitwise_equal(linearized.friction_cones(), cones_all, "Linearize friction cones");
  expect_bitwise_equal(linearized.dfriction_cones_dx(), dcones_all, "Linearize cones' dx");

  // One phase of the four feet is the four feet as constraints.
  const auto [feet, contacts] = quadruped_feet(m);
  v1::LinearizeRequest one_phase = linearize;
  one_phase.clear_friction_cone();
  one_phase.clear_phases();
  *one_phase.add_phases() = trot.request[0];
  v1::LinearizeRequest constrained = one_phase;
  constrained.clear_phases();
  constrained.mutable_constraints()->Add(feet.begin(), feet.end());
  v1::LinearizeResponse by_phase, by_constraints;
  for (const auto& [call, answer] :
       {std::pair{&one_phase, &by_phase}, {&constrained, &by_constraints}}) {
    status = with_deadline(60, [&, call = call, answer = answer](grpc::ClientContext* c) {
      return server_->dynamics()->Linearize(c, *call, answer);
    });
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  expect_bitwise_equal(by_phase.fx(), {by_constraints.fx().begin(), by_constraints.fx().end()},
                       "one phase: fx");
  expect_bitwise_equal(by_phase.multipliers(),
                       {by_constraints.multipliers().begin(), by_constraints.multipliers().end()},
                       "one phase: λ");
}

// A schedule's touchdown against the Impact RPC at the same state: the quadruped falling onto its
// four feet (the base at 0.5 m/s down, the joints moving), plastic and with restitution 0.5, each
// foot given friction enough to stick. The Impact RPC's unilateral Poisson impact then leaves the
// velocity that Linearize's touchdown knot steps from: the contact velocities −e times those
// before, as impulse_dynamics() solves them (engine/algorithms/impulse_dynamics.hpp). v⁺ is not
// in Linearize's answer; its impulses are, and they are those of impulse_dynamics() bitwise.
TEST_F(RpcEquivalenceTest, TouchdownImpulsesAreTheImpactRpcsJumpWhenTheFeetStick) {
  const LocalModel& local = models_->at("quadruped");
  const Model& m = *local.model;
  const auto [feet, contacts] = quadruped_feet(m);
  Vector q(m.nq), v = Vector::Zero(m.nv);
  q << 0, 0, 0.33, 0, 0, 0, 1, 0, 0.6, -1.2, 0, 0.6, -1.2, 0, 0.6, -1.2, 0, 0.6, -1.2;
  v[2] = -0.5;
  for (int dof = 6; dof < m.nv; ++dof) v[dof] = 0.05 * (dof % 3 - 1);
  Data data(m);
  for (const double restitution : {0.0, 0.5}) {
    SCOPED_TRACE(restitution);
    Vector v_plus(m.nv), impulses(12);
    impulse_dynamics(m, data, q, v, contacts, restitution, {}, v_plus, impulses);

    v1::ImpactRequest impact;
    impact.set_model_id(local.layout.id());
    impact.mutable_q()->Add(q.data(), q.data() + m.nq);
    impact.mutable_v()->Add(v.data(), v.data() + m.nv);
    for (const char* foot : {"FL_foot", "FR_foot", "HL_foot", "HR_foot"}) {
      v1::PointContact& c = *impact.add_contacts();
      c.set_frame(foot);
      c.set_friction(10.0);
    }
    impact.set_restitution(restitution);
    impact.mutable_solver()->set_tolerance(1e-14);
    impact.mutable_solver()->set_max_iterations(10000);
    v1::ImpactResponse answer;
    grpc::Status status = with_deadline(60, [&](grpc::ClientContext* c) {
      return server_->dynamics()->Impact(c, impact, &answer);
    });
    ASSERT_TRUE(status.ok()) << status.error_message();
    for (int c = 0; c < 4; ++c) EXPECT_EQ(answer.modes(c), v1::CONTACT_MODE_STICKING) << c;
    const Vector rpc_v_plus = Eigen::Map<const Vector>(answer.v().data(), m.nv);
    EXPECT_LT((rpc_v_plus - v_plus).cwiseAbs().maxCoeff(), 1e-12 * (1.0 + v.cwiseAbs().maxCoeff()));

    // Linearize at the same knot, a touchdown of the four feet after a flight phase.
    v1::LinearizeRequest linearize;
    linearize.set_model_id(local.layout.id());
    linearize.set_batch_size(2);
    for (int k = 0; k < 2; ++k) {
      linearize.mutable_q()->Add(q.data(), q.data() + m.nq);
      linearize.mutable_v()->Add(v.data(), v.data() + m.nv);
    }
    linearize.mutable_u()->Resize(2 * m.nv, 0.0);
    linearize.set_dt(0.01);
    linearize.add_phases();
    v1::ContactPhase& landing = *linearize.add_phases();
    landing.set_first_knot(1);
    landing.set_restitution(restitution);
    landing.mutable_contacts()->Add(feet.begin(), feet.end());
    v1::LinearizeResponse linearized;
    status = with_deadline(60, [&](grpc::ClientContext* c) {
      return server_->dynamics()->Linearize(c, linearize, &linearized);
    });
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_EQ(linearized.layout().touchdown_knots_size(), 1);
    expect_bitwise_equal(linearized.impulses(), {impulses.data(), impulses.data() + 12},
                         "touchdown impulses");
  }
}

// Rollout's STEP_JACOBIANS_VELOCITY_ROWS answer: the same states as in full, Fx's and Fu's v⁺ rows
// as they are there, and the free-flyer's blocks of J_q and J_w as Linearize gives them at the
// rollout's states and controls. The feet in contact, semi-implicit and explicit Euler.
TEST_F(RpcEquivalenceTest, RolloutVelocityRowsAreThoseOfItsFullJacobians) {
  const LocalModel& local = models_->at("quadruped");
  const Model& m = *local.model;
  constexpr int kRollouts = 3, kKnots = 4;
  const int nx = 2 * m.nv, nu = m.nv - 6;
  const auto q = random_configurations(local.layout, kRollouts, 80);
  const auto v = random_values(kRollouts * m.nv, 81);
  const auto u = random_values(kRollouts * kKnots * nu, 82);
  const auto [feet, contacts] = quadruped_feet(m);
  for (const v1::Integrator integrator :
       {v1::INTEGRATOR_SEMI_IMPLICIT_EULER, v1::INTEGRATOR_EXPLICIT_EULER}) {
    const std::string what = v1::Integrator_Name(integrator);
    v1::RolloutRequest request = rollout_request(local, q, v, u, kRollouts, kKnots);
    request.set_integrator(integrator);
    request.mutable_actuation()->set_kind(v1::ACTUATION_KIND_UNACTUATED_ROOT);
    request.mutable_constraints()->Add(feet.begin(), feet.end());
    request.set_jacobians(true);
    v1::RolloutResponse full, by_rows;
    for (const auto& [layout, answer] : {std::pair{v1::STEP_JACOBIANS_DENSE, &full},
                                         std::pair{v1::STEP_JACOBIANS_VELOCITY_ROWS, &by_rows}}) {
      request.set_jacobian_layout(layout);
      v1::RolloutResponse* const response = answer;
      const grpc::Status status = with_deadline(60, [&](grpc::ClientContext* c) {
        return server_->dynamics()->Rollout(c, request, response);
      });
      ASSERT_TRUE(status.ok()) << what << ": " << status.error_message();
    }
    expect_bitwise_equal(by_rows.q(), {full.q().begin(), full.q().end()}, what + " q");
    expect_bitwise_equal(by_rows.v(), {full.v().begin(), full.v().end()}, what + " v");
    expect_bitwise_equal(by_rows.u(), {full.u().begin(), full.u().end()}, what + " u");
    EXPECT_TRUE(by_rows.fx().empty() && by_rows.fu().empty()) << what;
    std::vector<double> want_dv_dx, want_dv_du;
    for (int step = 0; step < kRollouts * kKnots; ++step) {
      const Eigen::Map<const RowMajor> fx(full.fx().data() + step * nx * nx, nx, nx);
      const Eigen::Map<const RowMajor> fu(full.fu().data() + step * nx * nu, nx, nu);
      append_matrix(want_dv_dx, RowMajor(fx.bottomRows(m.nv)));
      append_matrix(want_dv_du, RowMajor(fu.bottomRows(m.nv)));
    }
    expect_bitwise_equal(by_rows.dv_next_dx(), want_dv_dx, what + " dv_next_dx");
    expect_bitwise_equal(by_rows.dv_next_du(), want_dv_du, what + " dv_next_du");

    // Linearize at the rollout's states x_0 … x_{K-1} and controls.
    v1::LinearizeRequest knots;
    knots.set_model_id(request.model_id());
    knots.set_batch_size(kRollouts * kKnots);
    for (int r = 0; r < kRollouts; ++r) {
      for (int k = 0; k < kKnots; ++k) {
        const int state = r * (kKnots + 1) + k;
        knots.mutable_q()->Add(full.q().begin() + state * m.nq,
                               full.q().begin() + (state + 1) * m.nq);
        knots.mutable_v()->Add(full.v().begin() + state * m.nv,
                               full.v().begin() + (state + 1) * m.nv);
      }
    }
    knots.mutable_u()->CopyFrom(full.u());
    knots.set_dt(0.01);
    knots.set_integrator(integrator);
    *knots.mutable_actuation() = request.actuation();
    knots.mutable_constraints()->CopyFrom(request.constraints());
    knots.set_jacobians(v1::STEP_JACOBIANS_VELOCITY_ROWS);
    v1::LinearizeResponse linearized;
    const grpc::Status status = with_deadline(60, [&](grpc::ClientContext* c) {
      return server_->dynamics()->Linearize(c, knots, &linearized);
    });
    ASSERT_TRUE(status.ok()) << what << ": " << status.error_message();
    ASSERT_EQ(by_rows.integration_blocks_size(), 1) << what;
    EXPECT_EQ(by_rows.integration_blocks(0).first_dof(), 0u) << what;
    EXPECT_EQ(by_rows.integration_blocks(0).dofs(), 6u) << what;
    expect_bitwise_equal(by_rows.integrate_dq(),
                         {linearized.integrate_dq().begin(), linearized.integrate_dq().end()},
                         what + " integrate_dq");
    expect_bitwise_equal(by_rows.integrate_dw(),
                         {linearized.integrate_dw().begin(), linearized.integrate_dw().end()},
                         what + " integrate_dw");
    expect_bitwise_equal(by_rows.dv_next_dx(),
                         {linearized.dv_next_dx().begin(), linearized.dv_next_dx().end()},
                         what + " dv_next_dx against Linearize");
  }
}

// A rollout driven away (controls of 1e300 N·m overflow its velocities) stops there with its
// status, zeros past its last finite state; the call succeeds and the others are whole.
TEST_F(RpcEquivalenceTest, ADivergingRolloutStopsAloneWithItsStatus) {
  const LocalModel& local = models_->at("stanford_arm");
  const Model& m = *local.model;
  constexpr int kRollouts = 3, kKnots = 4;
  const auto q = random_configurations(local.layout, kRollouts, 74);
  const auto v = random_values(kRollouts * m.nv, 75);
  std::vector<double> u = random_values(kRollouts * kKnots * m.nv, 76);
  u[(kKnots + 1) * m.nv] = 1e300;  // rollout 1, step 1
  v1::RolloutRequest request = rollout_request(local, q, v, u, kRollouts, kKnots);
  request.set_jacobians(true);
  v1::RolloutResponse response;
  const grpc::Status status = with_deadline(60, [&](grpc::ClientContext* c) {
    return server_->dynamics()->Rollout(c, request, &response);
  });
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.steps_size(), kRollouts);
  EXPECT_EQ(response.steps(0), static_cast<std::uint32_t>(kKnots));
  EXPECT_EQ(response.steps(2), static_cast<std::uint32_t>(kKnots));
  EXPECT_EQ(response.status(0).code(), 0);
  EXPECT_LT(response.steps(1), static_cast<std::uint32_t>(kKnots));
  EXPECT_EQ(response.status(1).code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(
      response.status(1).message().find("rollout 1: step " + std::to_string(response.steps(1))),
      std::string::npos)
      << response.status(1).message();
  const int states = kKnots + 1;
  for (int k = (static_cast<int>(response.steps(1)) + 1) * m.nq; k < states * m.nq; ++k) {
    EXPECT_EQ(response.q(states * m.nq + k), 0.0) << k;
  }
  // Rollout 2 is the engine's.
  std::vector<int> every_dof(m.nv);
  std::iota(every_dof.begin(), every_dof.end(), 0);
  std::vector<double> want_q(states * m.nq), want_v(states * m.nv), want_u(kKnots * m.nv),
      fx(kKnots * 4 * m.nv * m.nv), fu(kKnots * 2 * m.nv * m.nv);
  Data data(m);
  rollout(m, data, row(q, 2, m.nq), row(v, 2, m.nv), kKnots,
          std::span<const double>(u).subspan(2 * kKnots * m.nv, kKnots * m.nv),
          {.dt = 0.01, .actuated_dofs = every_dof}, {}, {want_q, want_v, want_u, fx, fu, {}});
  const std::vector<double> got(response.q().begin() + 2 * states * m.nq, response.q().end());
  EXPECT_EQ(got, want_q);
}

TEST_F(RpcEquivalenceTest, CoriolisMatrixAndCentroidal) {
  for (const auto& [name, local] : *models_) {
    const Model& m = *local.model;
    Data data(m);
    const auto q = random_configurations(local.layout, kStates, 40);
    const auto v = random_values(kStates * m.nv, 41);
    v1::CoriolisMatrixRequest c_request;
    fill_batch(c_request, local, q, v);
    v1::CoriolisMatrixResponse coriolis;
    grpc::Status status = with_deadline(60, [&](grpc::ClientContext* c) {
      return server_->dynamics()->CoriolisMatrix(c, c_request, &coriolis);
    });
    ASSERT_TRUE(status.ok()) << name << ": " << status.error_message();
    v1::CentroidalRequest g_request;
    fill_batch(g_request, local, q, v);
    v1::CentroidalResponse centroidal;
    status = with_deadline(60, [&](grpc::ClientContext* c) {
      return server_->dynamics()->Centroidal(c, g_request, &centroidal);
    });
    ASSERT_TRUE(status.ok()) << name << ": " << status.error_message();
    std::vector<double> want_c, com, vcom, jcom, hg, ag;
    for (int s = 0; s < kStates; ++s) {
      append_matrix(want_c, coriolis_matrix(m, data, row(q, s, m.nq), row(v, s, m.nv)));
      center_of_mass(m, data, row(q, s, m.nq), row(v, s, m.nv));
      append(com, data.workspace<CentroidalWorkspace>().com);
      append(vcom, data.workspace<CentroidalWorkspace>().vcom);
      append_matrix(jcom, center_of_mass_jacobian(m, data, row(q, s, m.nq)));
      append(hg, centroidal_momentum(m, data, row(q, s, m.nq), row(v, s, m.nv)).to_vector());
      append_matrix(ag, centroidal_momentum_matrix(m, data, row(q, s, m.nq)));
    }
    expect_bitwise_equal(coriolis.coriolis_matrix(), want_c, name + " C");
    expect_bitwise_equal(centroidal.com(), com, name + " com");
    expect_bitwise_equal(centroidal.com_velocity(), vcom, name + " com velocity");
    expect_bitwise_equal(centroidal.com_jacobian(), jcom, name + " com Jacobian");
    expect_bitwise_equal(centroidal.momentum(), hg, name + " momentum");
    expect_bitwise_equal(centroidal.momentum_matrix(), ag, name + " momentum matrix");
  }
}

TEST_F(RpcEquivalenceTest, NonlinearEffectsAndGravity) {
  for (const auto& [name, local] : *models_) {
    const Model& m = *local.model;
    Data data(m);
    const auto q = random_configurations(local.layout, kStates, 10);
    const auto v = random_values(kStates * m.nv, 11);
    v1::NonlinearEffectsRequest nle_request;
    fill_batch(nle_request, local, q, v);
    grpc::ClientContext nle_context;
    nle_context.set_deadline(deadline_in(60));
    v1::NonlinearEffectsResponse nle;
    ASSERT_TRUE(server_->dynamics()->NonlinearEffects(&nle_context, nle_request, &nle).ok());
    v1::GravityRequest g_request;
    fill_batch(g_request, local, q);
    grpc::ClientContext g_context;
    g_context.set_deadline(deadline_in(60));
    v1::GravityResponse g;
    ASSERT_TRUE(server_->dynamics()->Gravity(&g_context, g_request, &g).ok());
    std::vector<double> want_nle, want_g;
    for (int s = 0; s < kStates; ++s) {
      append(want_nle, nonlinear_effects(m, data, row(q, s, m.nq), row(v, s, m.nv)));
      append(want_g, generalized_gravity(m, data, row(q, s, m.nq)));
    }
    expect_bitwise_equal(nle.tau(), want_nle, name + " nle");
    expect_bitwise_equal(g.tau(), want_g, name + " gravity");
  }
}

TEST_F(RpcEquivalenceTest, KinematicsOfNamedFrames) {
  for (const auto& [name, local] : *models_) {
    const Model& m = *local.model;
    Data data(m);
    const auto q = random_configurations(local.layout, kStates, 12);
    const auto v = random_values(kStates * m.nv, 13);
    // The last two frames, in reverse order.
    const std::vector<int> frames = {static_cast<int>(m.frames.size()) - 1,
                                     static_cast<int>(m.frames.size()) - 2};
    for (const auto reference : {v1::REFERENCE_FRAME_LOCAL, v1::REFERENCE_FRAME_WORLD,
                                 v1::REFERENCE_FRAME_LOCAL_WORLD_ALIGNED}) {
      v1::KinematicsRequest request;
      fill_batch(request, local, q, v);
      for (int f : frames) request.add_frames(m.frames[f].name);
      request.set_reference(reference);
      request.set_jacobians(true);
      grpc::ClientContext context;
      context.set_deadline(deadline_in(60));
      v1::KinematicsResponse response;
      const grpc::Status status = server_->dynamics()->Kinematics(&context, request, &response);
      ASSERT_TRUE(status.ok()) << name << ": " << status.error_message();
      const ReferenceFrame r = reference == v1::REFERENCE_FRAME_WORLD ? ReferenceFrame::kWorld
                               : reference == v1::REFERENCE_FRAME_LOCAL
                                   ? ReferenceFrame::kLocal
                                   : ReferenceFrame::kLocalWorldAligned;
      std::vector<double> positions, rotations, velocities, jacobians;
      Eigen::MatrixXd jacobian(6, m.nv);
      for (int s = 0; s < kStates; ++s) {
        forward_kinematics(m, data, row(q, s, m.nq), row(v, s, m.nv));
        for (int f : frames) {
          const Transform placement = frame_placement(m, data, f);
          append(positions, placement.translation);
          const Eigen::Matrix<double, 3, 3, Eigen::RowMajor> rotation = placement.rotation;
          append(rotations, Eigen::Map<const Vector>(rotation.data(), 9));
          append(velocities, frame_velocity(m, data, f, r).to_vector());
          frame_jacobian(m, data, f, r, jacobian);
          const RowMajor jacobian_row_major = jacobian;
          append(jacobians, Eigen::Map<const Vector>(jacobian_row_major.data(), 6 * m.nv));
        }
      }
      ASSERT_EQ(response.frames_size(), 2);
      EXPECT_EQ(response.frames(0), m.frames[frames[0]].name);
      expect_bitwise_equal(response.positions(), positions, name + " positions");
      expect_bitwise_equal(response.rotations(), rotations, name + " rotations");
      expect_bitwise_equal(response.velocities(), velocities, name + " velocities");
      expect_bitwise_equal(response.jacobians(), jacobians, name + " jacobians");
    }
  }
}

// An MJCF body and its joint of one name, the joint 0.37 m above the body's frame: Kinematics
// refuses the bare name, answers each kind's reference with that frame's placement, and names
// every frame by its reference when asked for all of them.
TEST_F(RpcEquivalenceTest, KinematicsTellsFramesOfOneNameApartByKind) {
  const std::string inertial = "<inertial pos='0 0 0' mass='1' diaginertia='0.1 0.1 0.1'/>";
  v1::RegisterModelRequest registration;
  registration.set_mjcf("<mujoco model='shared_name'><worldbody><body name='base'>" + inertial +
                        "<body name='arm' pos='1 0 0'>" + inertial +
                        "<joint name='arm' pos='0 0 0.37' axis='0 1 0'/></body></body>"
                        "</worldbody></mujoco>");
  v1::RegisterModelResponse registered;
  {
    grpc::ClientContext context;
    context.set_deadline(deadline_in(30));
    const grpc::Status status =
        server_->models()->RegisterModel(&context, registration, &registered);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  const v1::Model& layout = registered.model();
  ASSERT_EQ(layout.warnings_size(), 1);
  EXPECT_NE(layout.warnings(0).find("frame name 'arm' is shared by 2 frames"), std::string::npos)
      << layout.warnings(0);

  const auto kinematics = [&](const std::vector<std::string>& frames,
                              v1::KinematicsResponse& response) {
    v1::KinematicsRequest request;
    request.set_model_id(layout.id());
    request.add_q(0.0);
    for (const std::string& frame : frames) request.add_frames(frame);
    grpc::ClientContext context;
    context.set_deadline(deadline_in(30));
    return server_->dynamics()->Kinematics(&context, request, &response);
  };
  v1::KinematicsResponse response;
  const grpc::Status bare = kinematics({"arm"}, response);
  EXPECT_EQ(bare.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(bare.error_message().find("\"joint:arm\", \"body:arm\""), std::string::npos)
      << bare.error_message();

  const grpc::Status by_kind = kinematics({"body:arm", "joint:arm"}, response);
  ASSERT_TRUE(by_kind.ok()) << by_kind.error_message();
  EXPECT_THAT(response.frames(), ::testing::ElementsAre("body:arm", "joint:arm"));
  // The body's origin where the file puts it, the joint's 0.37 m above: exact to rounding.
  EXPECT_THAT(response.positions(),
              ::testing::Pointwise(::testing::DoubleNear(1e-15),
                                   std::vector<double>{1.0, 0.0, 0.0, 1.0, 0.0, 0.37}));

  const grpc::Status every = kinematics({}, response);
  ASSERT_TRUE(every.ok()) << every.error_message();
  EXPECT_THAT(response.frames(), ::testing::ElementsAre("base", "joint:arm", "body:arm"));

  grpc::ClientContext context;
  context.set_deadline(deadline_in(30));
  v1::DeleteModelRequest remove;
  remove.set_model_id(layout.id());
  v1::DeleteModelResponse removed;
  EXPECT_TRUE(server_->models()->DeleteModel(&context, remove, &removed).ok());
}

// The per-call constraints of ConstrainedDynamics below: the quadruped's four feet as point
// contacts; on every other model, a weld of a frame offset from the last body's to a placement in
// the world.
std::vector<v1::Constraint> call_constraints(const Model& m) {
  std::vector<v1::Constraint> out;
  if (m.name == "quadruped") {
    for (const char* foot : {"FL_foot", "FR_foot", "HL_foot", "HR_foot"}) {
      v1::Constraint& c = out.emplace_back();
      c.set_type(v1::CONSTRAINT_TYPE_POINT);
      c.mutable_frame1()->set_frame(foot);
    }
    return out;
  }
  v1::Constraint& c = out.emplace_back();
  c.set_name("tip");
  c.set_type(v1::CONSTRAINT_TYPE_WELD);
  c.mutable_frame1()->set_frame(m.body_names.back());
  c.mutable_frame1()->mutable_placement()->mutable_xyz()->set_x(0.1);
  c.mutable_frame1()->mutable_placement()->mutable_rpy()->set_z(0.3);
  c.mutable_frame2()->mutable_placement()->mutable_xyz()->set_y(0.2);
  return out;
}

// The same constraints in engine form, as the service documents them: frame placements composed
// with the named frame's, frame2 unset = the world (at the world origin here, and where frame 1
// stands for held_where_they_stand() when frame2 is unset), unnamed ones "constraints[i]".
std::vector<BilateralConstraint> engine_constraints(const Model& m,
                                                    const std::vector<v1::Constraint>& in) {
  std::vector<BilateralConstraint> out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    BilateralConstraint c;
    c.name = in[i].name().empty() ? "constraints[" + std::to_string(i) + "]" : in[i].name();
    EXPECT_TRUE(server::to_constraint_type(in[i].type(), c.type));
    const Frame& frame1 = m.frames[m.find_frame(in[i].frame1().frame())];
    c.body1 = frame1.body;
    c.placement1 = frame1.placement * server::to_transform(in[i].frame1().placement());
    c.body2 = 0;
    c.placement2 = server::to_transform(in[i].frame2().placement());
    out.push_back(c);
  }
  return out;
}

// Forward dynamics under the model's loop closures, with and without per-call constraints, on
// every bundled model; then closed-chain inverse dynamics where the constraints fix the passive
// DOFs (the closed chains with their first joint actuated, the quadruped standing on its feet
// with its base passive).
TEST_F(RpcEquivalenceTest, ConstrainedDynamicsForwardAndInverse) {
  const BaumgarteGains gains{25.0, 10.0};
  for (const auto& [name, local] : *models_) {
    const Model& m = *local.model;
    Data data(m);
    const auto q = random_configurations(local.layout, kStates, 50);
    const auto v = random_values(kStates * m.nv, 51);
    const auto a = random_values(kStates * m.nv, 52);
    const auto tau = random_values(kStates * m.nv, 53);
    for (const bool with_call_constraints : {false, true}) {
      const std::vector<v1::Constraint> constraints =
          with_call_constraints ? call_constraints(m) : std::vector<v1::Constraint>{};
      const std::vector<BilateralConstraint> engine = engine_constraints(m, constraints);
      const int rows = constraint_rows(m, engine);
      const bool inverse_applies =
          with_call_constraints ? name == "quadruped" : !m.loop_closures.empty();
      for (const bool inverse : {false, true}) {
        if (inverse && !inverse_applies) continue;
        const std::string what = name + (with_call_constraints ? " with constraints" : "") +
                                 (inverse ? " inverse" : " forward");
        v1::ConstrainedDynamicsRequest request;
        fill_batch(request, local, q, v);
        request.mutable_tau()->Add(tau.begin(), tau.end());
        request.mutable_constraints()->Assign(constraints.begin(), constraints.end());
        request.mutable_gains()->set_position(gains.position);
        request.mutable_gains()->set_velocity(gains.velocity);
        std::vector<DofInput> inputs;
        if (inverse) {
          request.set_mode(v1::CONSTRAINED_DYNAMICS_MODE_INVERSE);
          request.mutable_a()->Add(a.begin(), a.end());
          for (int k = 0; k < m.nv; ++k) {
            const bool actuated = name == "quadruped" ? k >= 6 : k == 0;
            inputs.push_back(actuated ? DofInput::kAcceleration : DofInput::kForce);
            request.add_inputs(actuated ? v1::DOF_INPUT_ACCELERATION : v1::DOF_INPUT_FORCE);
          }
        }
        v1::ConstrainedDynamicsResponse response;
        const grpc::Status status = with_deadline(60, [&](grpc::ClientContext* c) {
          return server_->dynamics()->ConstrainedDynamics(c, request, &response);
        });
        ASSERT_TRUE(status.ok()) << what << ": " << status.error_message();
        ASSERT_EQ(response.rows_size(), static_cast<int>(m.loop_closures.size() + engine.size()))
            << what;
        int offset = 0;
        for (int r = 0; r < response.rows_size(); ++r) {
          const BilateralConstraint& c = r < static_cast<int>(m.loop_closures.size())
                                             ? m.loop_closures[r]
                                             : engine[r - m.loop_closures.size()];
          EXPECT_EQ(response.rows(r).name(), c.name) << what;
          EXPECT_EQ(response.rows(r).offset(), offset) << what;
          EXPECT_EQ(response.rows(r).dimension(), constraint_dimension(c.type)) << what;
          offset += response.rows(r).dimension();
        }
        EXPECT_EQ(offset, rows) << what;
        std::vector<double> want_a, want_multipliers, want_tau;
        Eigen::VectorXd ddq(m.nv), multipliers(rows), tau_out(m.nv);
        for (int s = 0; s < kStates; ++s) {
          // The quadruped's feet have no anchor: each state holds them where they are.
          const std::vector<BilateralConstraint> held =
              held_where_they_stand(m, data, constraints, engine, row(q, s, m.nq));
          if (inverse) {
            closed_chain_inverse_dynamics(m, data, row(q, s, m.nq), row(v, s, m.nv),
                                          row(a, s, m.nv), row(tau, s, m.nv), inputs, held, gains,
                                          ddq, tau_out, multipliers);
            append(want_tau, tau_out);
          } else {
            constrained_dynamics(m, data, row(q, s, m.nq), row(v, s, m.nv), row(tau, s, m.nv), held,
                                 gains, ddq, multipliers);
          }
          append(want_a, ddq);
          append(want_multipliers, multipliers);
        }
        expect_bitwise_equal(response.a(), want_a, what + " a");
        expect_bitwise_equal(response.multipliers(), want_multipliers, what + " multipliers");
        expect_bitwise_equal(response.tau(), want_tau, what + " tau");
      }
    }
  }
}

TEST_F(RpcEquivalenceTest, StanfordArmMatchesThePublishedCrossCheck) {
  // ../shared/seeds/digest-001-004.md §7.1: gravity torques at q.
  const LocalModel& arm = models_->at("stanford_arm");
  v1::GravityRequest request;
  request.set_model_id(arm.layout.id());
  for (double x : {0.3, -0.6, 0.5, 0.8, -0.4, 0.2}) request.add_q(x);
  grpc::ClientContext context;
  context.set_deadline(deadline_in(30));
  v1::GravityResponse response;
  ASSERT_TRUE(server_->dynamics()->Gravity(&context, request, &response).ok());
  const double want[] = {0.0, 9.3980322284, 41.292366150, 0.066536844437, 0.28842086108, 0.0};
  ASSERT_EQ(response.tau_size(), 6);
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(response.tau(i), want[i], 1e-9) << i;
}

TEST_F(RpcEquivalenceTest, EchoReturnsItsPayloadUntouched) {
  v1::EchoRequest request;
  request.set_payload(std::string("\0\x01\xffpayload", 10));
  const auto values = random_values(1000, 14);
  request.mutable_values()->Add(values.begin(), values.end());
  grpc::ClientContext context;
  context.set_deadline(deadline_in(30));
  v1::EchoResponse response;
  ASSERT_TRUE(server_->dynamics()->Echo(&context, request, &response).ok());
  EXPECT_EQ(response.payload(), request.payload());
  expect_bitwise_equal(response.values(), values, "values");
}

TEST_F(RpcEquivalenceTest, EchoAnswersWithResponseValuesZerosWhenAsked) {
  v1::EchoRequest request;
  request.set_payload("model");
  const auto values = random_values(1000, 15);
  request.mutable_values()->Add(values.begin(), values.end());
  request.set_response_values(6);
  grpc::ClientContext context;
  context.set_deadline(deadline_in(30));
  v1::EchoResponse response;
  ASSERT_TRUE(server_->dynamics()->Echo(&context, request, &response).ok());
  EXPECT_EQ(response.payload(), "model");
  expect_bitwise_equal(response.values(), std::vector<double>(6, 0.0), "values");
}

}  // namespace
}  // namespace torqued::testing
