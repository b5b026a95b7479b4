// Dynamics kernels: thin loops over the states of a batch around the engine's algorithms.
#include "server/compute/dynamics_kernels.hpp"

#include "engine/algorithms/aba.hpp"
#include "engine/algorithms/aba_derivatives.hpp"
#include "engine/algorithms/centroidal.hpp"
#include "engine/algorithms/closed_chain_inverse_dynamics.hpp"
#include "engine/algorithms/constrained_dynamics.hpp"
#include "engine/algorithms/constrained_dynamics_derivatives.hpp"
#include "engine/algorithms/coriolis_matrix.hpp"
#include "engine/algorithms/crba.hpp"
#include "engine/algorithms/floating_base_inverse_dynamics.hpp"
#include "engine/algorithms/jacobian.hpp"
#include "engine/algorithms/lagrange_homogeneous.hpp"
#include "engine/algorithms/minverse.hpp"
#include "engine/algorithms/rnea.hpp"
#include "engine/algorithms/rnea_derivatives.hpp"
#include "server/compute/engine_enums.hpp"
#include "server/compute/state_arrays.hpp"

namespace torqued::server {

void inverse_dynamics(const Model& model, ModelWorkspace& ws,
                      const v1::InverseDynamicsRequest& request, int begin, int end, double* tau) {
  const bool lagrange = request.algorithm() == v1::INVERSE_DYNAMICS_ALGORITHM_LAGRANGE_HOMOGENEOUS;
  for (int s = begin; s < end; ++s) {
    const ConstMap q = row(request.q(), s, model.nq);
    const ConstMap v = row(request.v(), s, model.nv);
    const ConstMap a = row(request.a(), s, model.nv);
    copy_out(lagrange ? lagrange_homogeneous(model, ws.data, q, v, a)
                      : rnea(model, ws.data, q, v, a,
                             external_forces(model, ws, request.external_forces(), s)),
             tau, s);
  }
}

void forward_dynamics(const Model& model, ModelWorkspace& ws,
                      const v1::ForwardDynamicsRequest& request, ForwardDynamicsAlgorithm algorithm,
                      int begin, int end, double* a) {
  for (int s = begin; s < end; ++s) {
    const ConstMap q = row(request.q(), s, model.nq);
    const ConstMap v = row(request.v(), s, model.nv);
    const ConstMap tau = row(request.tau(), s, model.nv);
    copy_out(algorithm == ForwardDynamicsAlgorithm::kAba
                 ? aba(model, ws.data, q, v, tau,
                       external_forces(model, ws, request.external_forces(), s))
                 : torqued::forward_dynamics(model, ws.data, q, v, tau, algorithm),
             a, s);
  }
}

void mass_matrix(const Model& model, ModelWorkspace& ws, const v1::MassMatrixRequest& request,
                 int begin, int end, double* mass_matrix, double* inverse) {
  const bool lagrange = request.algorithm() == v1::MASS_MATRIX_ALGORITHM_LAGRANGE_HOMOGENEOUS;
  for (int s = begin; s < end; ++s) {
    const ConstMap q = row(request.q(), s, model.nq);
    copy_out_matrix(
        lagrange ? lagrange_homogeneous_mass_matrix(model, ws.data, q) : crba(model, ws.data, q),
        mass_matrix, s);
    if (inverse != nullptr) copy_out_matrix(minverse(model, ws.data, q), inverse, s);
  }
}

void nonlinear_effects(const Model& model, ModelWorkspace& ws,
                       const v1::NonlinearEffectsRequest& request, int begin, int end,
                       double* tau) {
  for (int s = begin; s < end; ++s) {
    copy_out(torqued::nonlinear_effects(model, ws.data, row(request.q(), s, model.nq),
                                        row(request.v(), s, model.nv)),
             tau, s);
  }
}

void gravity(const Model& model, ModelWorkspace& ws, const v1::GravityRequest& request, int begin,
             int end, double* tau) {
  for (int s = begin; s < end; ++s) {
    copy_out(generalized_gravity(model, ws.data, row(request.q(), s, model.nq)), tau, s);
  }
}

void kinematics(const Model& model, ModelWorkspace& ws, const v1::KinematicsRequest& request,
                const std::vector<int>& frames, int begin, int end, const KinematicsOutput& out) {
  const ReferenceFrame reference = to_reference(request.reference());
  const std::ptrdiff_t nf = static_cast<std::ptrdiff_t>(frames.size());
  const std::ptrdiff_t jacobian_size = 6 * static_cast<std::ptrdiff_t>(model.nv);
  for (int s = begin; s < end; ++s) {
    if (out.velocities != nullptr) {
      forward_kinematics(model, ws.data, row(request.q(), s, model.nq),
                         row(request.v(), s, model.nv));
    } else {
      forward_kinematics(model, ws.data, row(request.q(), s, model.nq));
    }
    for (std::ptrdiff_t k = 0; k < nf; ++k) {
      const std::ptrdiff_t slot = s * nf + k;
      const Transform placement = frame_placement(model, ws.data, frames[k]);
      Eigen::Map<Vec3>(out.positions + 3 * slot) = placement.translation;
      Eigen::Map<Eigen::Matrix<double, 3, 3, Eigen::RowMajor>>(out.rotations + 9 * slot) =
          placement.rotation;
      if (out.velocities != nullptr) {
        Eigen::Map<Vec6>(out.velocities + 6 * slot) =
            frame_velocity(model, ws.data, frames[k], reference).to_vector();
      }
      if (out.jacobians != nullptr) {
        frame_jacobian(model, ws.data, frames[k], reference, ws.data.J);
        Eigen::Map<RowMajorMatrix>(out.jacobians + jacobian_size * slot, 6, model.nv) = ws.data.J;
      }
    }
  }
}

void hybrid_dynamics(const Model& model, ModelWorkspace& ws,
                     const v1::HybridDynamicsRequest& request, std::span<const DofInput> inputs,
                     int begin, int end, double* a, double* tau) {
  for (int s = begin; s < end; ++s) {
    torqued::hybrid_dynamics(model, ws.data, row(request.q(), s, model.nq),
                             row(request.v(), s, model.nv), row(request.a(), s, model.nv),
                             row(request.tau(), s, model.nv), inputs,
                             external_forces(model, ws, request.external_forces(), s));
    copy_out(ws.data.ddq, a, s);
    copy_out(ws.data.tau, tau, s);
  }
}

void floating_base_inverse_dynamics(const Model& model, ModelWorkspace& ws,
                                    const v1::FloatingBaseInverseDynamicsRequest& request,
                                    int begin, int end, double* a, double* tau) {
  for (int s = begin; s < end; ++s) {
    torqued::floating_base_inverse_dynamics(
        model, ws.data, row(request.q(), s, model.nq), row(request.v(), s, model.nv),
        row(request.a(), s, model.nv), external_forces(model, ws, request.external_forces(), s));
    copy_out(ws.data.ddq, a, s);
    copy_out(ws.data.tau, tau, s);
  }
}

void derivatives(const Model& model, ModelWorkspace& ws, const v1::DerivativesRequest& request,
                 const CallConstraints& constraints, const BaumgarteGains& gains, int rows,
                 int begin, int end, const DerivativesOutput& out) {
  const int nv = model.nv;
  AnchoredConstraints anchored(constraints);
  for (int s = begin; s < end; ++s) {
    const ConstMap q = row(request.q(), s, model.nq);
    const ConstMap v = row(request.v(), s, nv);
    switch (request.of()) {
      case v1::DERIVATIVES_OF_CONSTRAINED_DYNAMICS: {
        const ConstrainedDerivativesWorkspace& c = naming_state(s, [&]() -> decltype(auto) {
          return constrained_dynamics_derivatives(model, ws.data, q, v, row(request.tau(), s, nv),
                                                  anchored.at(model, ws.data, q), gains);
        });
        const AbaDerivativesWorkspace& d = ws.data.workspace<AbaDerivativesWorkspace>();
        copy_out_matrix(d.ddq_dq, out.d_dq, s);
        copy_out_matrix(d.ddq_dv, out.d_dv, s);
        copy_out_matrix(d.ddq_dtau, out.d_du, s);
        copy_out(c.lambda.head(rows), out.multipliers, s);
        copy_out_matrix(c.dlambda_dq.topRows(rows), out.dmultipliers_dq, s);
        copy_out_matrix(c.dlambda_dv.topRows(rows), out.dmultipliers_dv, s);
        copy_out_matrix(c.dlambda_dtau.topRows(rows), out.dmultipliers_dtau, s);
        break;
      }
      case v1::DERIVATIVES_OF_FORWARD_DYNAMICS: {
        const AbaDerivativesWorkspace& d =
            aba_derivatives(model, ws.data, q, v, row(request.tau(), s, nv),
                            external_forces(model, ws, request.external_forces(), s));
        copy_out_matrix(d.ddq_dq, out.d_dq, s);
        copy_out_matrix(d.ddq_dv, out.d_dv, s);
        copy_out_matrix(d.ddq_dtau, out.d_du, s);
        break;
      }
      default: {
        const RneaDerivativesWorkspace& d =
            rnea_derivatives(model, ws.data, q, v, row(request.a(), s, nv),
                             external_forces(model, ws, request.external_forces(), s));
        copy_out_matrix(d.dtau_dq, out.d_dq, s);
        copy_out_matrix(d.dtau_dv, out.d_dv, s);
        copy_out_matrix(ws.data.workspace<MassMatrixWorkspace>().M, out.d_du, s);
        break;
      }
    }
  }
}

void coriolis_matrix(const Model& model, ModelWorkspace& ws,
                     const v1::CoriolisMatrixRequest& request, int begin, int end,
                     double* coriolis) {
  for (int s = begin; s < end; ++s) {
    copy_out_matrix(torqued::coriolis_matrix(model, ws.data, row(request.q(), s, model.nq),
                                             row(request.v(), s, model.nv)),
                    coriolis, s);
  }
}

void centroidal(const Model& model, ModelWorkspace& ws, const v1::CentroidalRequest& request,
                int begin, int end, const CentroidalOutput& out) {
  Data& d = ws.data;
  for (int s = begin; s < end; ++s) {
    const ConstMap q = row(request.q(), s, model.nq);
    const ConstMap v = row(request.v(), s, model.nv);
    center_of_mass(model, d, q, v);
    copy_out(d.workspace<CentroidalWorkspace>().com, out.com, s);
    copy_out(d.workspace<CentroidalWorkspace>().vcom, out.com_velocity, s);
    copy_out_matrix(center_of_mass_jacobian(model, d, q), out.com_jacobian, s);
    copy_out(centroidal_momentum(model, d, q, v).to_vector(), out.momentum, s);
    copy_out_matrix(centroidal_momentum_matrix(model, d, q), out.momentum_matrix, s);
  }
}

void constrained_dynamics(const Model& model, ModelWorkspace& ws,
                          const v1::ConstrainedDynamicsRequest& request,
                          const CallConstraints& constraints, const BaumgarteGains& gains,
                          std::span<const DofInput> inputs, int rows, int begin, int end,
                          const ConstrainedDynamicsOutput& out) {
  using Map = Eigen::Map<Eigen::VectorXd>;
  const int nv = model.nv;
  AnchoredConstraints anchored(constraints);
  for (int s = begin; s < end; ++s) {
    const ConstMap q = row(request.q(), s, model.nq);
    const ConstMap v = row(request.v(), s, nv);
    const ConstMap tau = row(request.tau(), s, nv);
    const std::span<const BilateralConstraint> held = anchored.at(model, ws.data, q);
    Map a(out.a + static_cast<std::ptrdiff_t>(s) * nv, nv);
    Map multipliers(out.multipliers + static_cast<std::ptrdiff_t>(s) * rows, rows);
    naming_state(s, [&] {
      if (inputs.empty()) {
        torqued::constrained_dynamics(model, ws.data, q, v, tau, held, gains, a, multipliers);
      } else {
        Map tau_out(out.tau + static_cast<std::ptrdiff_t>(s) * nv, nv);
        closed_chain_inverse_dynamics(model, ws.data, q, v, row(request.a(), s, nv), tau, inputs,
                                      held, gains, a, tau_out, multipliers);
      }
    });
  }
}

}  // namespace torqued::server
