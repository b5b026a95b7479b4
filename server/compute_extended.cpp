// Kernels of the hybrid, floating-base, derivative, Coriolis, centroidal and constrained RPCs: thin
// loops over the states of a batch around the engine's algorithms.
#include "server/compute_extended.hpp"

#include "engine/algorithms/aba_derivatives.hpp"
#include "engine/algorithms/centroidal.hpp"
#include "engine/algorithms/closed_chain_inverse_dynamics.hpp"
#include "engine/algorithms/constrained_dynamics.hpp"
#include "engine/algorithms/coriolis_matrix.hpp"
#include "engine/algorithms/floating_base_inverse_dynamics.hpp"
#include "engine/algorithms/rnea_derivatives.hpp"
#include "server/kernel_support.hpp"

namespace torqued::server {

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
                 int begin, int end, const DerivativesOutput& out) {
  const bool forward = request.of() == v1::DERIVATIVES_OF_FORWARD_DYNAMICS;
  for (int s = begin; s < end; ++s) {
    const ConstMap q = row(request.q(), s, model.nq);
    const ConstMap v = row(request.v(), s, model.nv);
    const std::span<const Force> forces = external_forces(model, ws, request.external_forces(), s);
    if (forward) {
      const AbaDerivativesWorkspace& d =
          aba_derivatives(model, ws.data, q, v, row(request.tau(), s, model.nv), forces);
      copy_out_matrix(d.ddq_dq, out.d_dq, s);
      copy_out_matrix(d.ddq_dv, out.d_dv, s);
      copy_out_matrix(d.ddq_dtau, out.d_du, s);
    } else {
      const RneaDerivativesWorkspace& d =
          rnea_derivatives(model, ws.data, q, v, row(request.a(), s, model.nv), forces);
      copy_out_matrix(d.dtau_dq, out.d_dq, s);
      copy_out_matrix(d.dtau_dv, out.d_dv, s);
      copy_out_matrix(ws.data.mass_matrix->M, out.d_du, s);
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
    copy_out(d.centroidal->com, out.com, s);
    copy_out(d.centroidal->vcom, out.com_velocity, s);
    copy_out_matrix(center_of_mass_jacobian(model, d, q), out.com_jacobian, s);
    copy_out(centroidal_momentum(model, d, q, v).to_vector(), out.momentum, s);
    copy_out_matrix(centroidal_momentum_matrix(model, d, q), out.momentum_matrix, s);
  }
}

void constrained_dynamics(const Model& model, ModelWorkspace& ws,
                          const v1::ConstrainedDynamicsRequest& request,
                          std::span<const BilateralConstraint> constraints,
                          const BaumgarteGains& gains, std::span<const DofInput> inputs, int rows,
                          int begin, int end, const ConstrainedDynamicsOutput& out) {
  using Map = Eigen::Map<Eigen::VectorXd>;
  const int nv = model.nv;
  for (int s = begin; s < end; ++s) {
    const ConstMap q = row(request.q(), s, model.nq);
    const ConstMap v = row(request.v(), s, nv);
    const ConstMap tau = row(request.tau(), s, nv);
    Map a(out.a + static_cast<std::ptrdiff_t>(s) * nv, nv);
    Map multipliers(out.multipliers + static_cast<std::ptrdiff_t>(s) * rows, rows);
    if (inputs.empty()) {
      torqued::constrained_dynamics(model, ws.data, q, v, tau, constraints, gains, a, multipliers);
    } else {
      Map tau_out(out.tau + static_cast<std::ptrdiff_t>(s) * nv, nv);
      closed_chain_inverse_dynamics(model, ws.data, q, v, row(request.a(), s, nv), tau, inputs,
                                    constraints, gains, a, tau_out, multipliers);
    }
  }
}

}  // namespace torqued::server
