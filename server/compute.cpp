// Dynamics kernels: thin loops over the states of a batch around the engine's algorithms.
#include "server/compute.hpp"

#include "engine/algorithms/aba.hpp"
#include "engine/algorithms/crba.hpp"
#include "engine/algorithms/jacobian.hpp"
#include "engine/algorithms/lagrange_homogeneous.hpp"
#include "engine/algorithms/minverse.hpp"
#include "engine/algorithms/rnea.hpp"
#include "server/kernel_support.hpp"

namespace torqued::server {
namespace {

ReferenceFrame to_reference(v1::ReferenceFrame r) {
  switch (r) {
    case v1::REFERENCE_FRAME_LOCAL_WORLD_ALIGNED:
      return ReferenceFrame::kLocalWorldAligned;
    case v1::REFERENCE_FRAME_WORLD:
      return ReferenceFrame::kWorld;
    default:
      return ReferenceFrame::kLocal;
  }
}

}  // namespace

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

}  // namespace torqued::server
