// Dynamics kernels: thin loops over the states of a batch around the engine's algorithms.
#include "server/compute.hpp"

#include "engine/algorithms/aba.hpp"
#include "engine/algorithms/crba.hpp"
#include "engine/algorithms/jacobian.hpp"
#include "engine/algorithms/rnea.hpp"

namespace torqued::server {
namespace {

using ConstMap = Eigen::Map<const Eigen::VectorXd>;
using RowMajorMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

ConstMap row(const google::protobuf::RepeatedField<double>& values, int state, int width) {
  return ConstMap(values.data() + static_cast<std::ptrdiff_t>(state) * width, width);
}

// The external forces of one state in engine form (empty span when none were sent).
std::span<const Force> external_forces(const Model& model, ModelWorkspace& ws,
                                       const google::protobuf::RepeatedField<double>& values,
                                       int state) {
  if (values.empty()) return {};
  const int moving = model.nbodies() - 1;
  const double* f = values.data() + static_cast<std::ptrdiff_t>(state) * moving * 6;
  for (int b = 1; b <= moving; ++b, f += 6) {
    ws.forces[b].linear = Vec3(f[0], f[1], f[2]);
    ws.forces[b].angular = Vec3(f[3], f[4], f[5]);
  }
  return ws.forces;
}

void copy_out(const Eigen::VectorXd& x, double* out, int state) {
  Eigen::Map<Eigen::VectorXd>(out + static_cast<std::ptrdiff_t>(state) * x.size(), x.size()) = x;
}

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
  for (int s = begin; s < end; ++s) {
    copy_out(rnea(model, ws.data, row(request.q(), s, model.nq), row(request.v(), s, model.nv),
                  row(request.a(), s, model.nv),
                  external_forces(model, ws, request.external_forces(), s)),
             tau, s);
  }
}

void forward_dynamics(const Model& model, ModelWorkspace& ws,
                      const v1::ForwardDynamicsRequest& request, int begin, int end, double* a) {
  for (int s = begin; s < end; ++s) {
    copy_out(aba(model, ws.data, row(request.q(), s, model.nq), row(request.v(), s, model.nv),
                 row(request.tau(), s, model.nv),
                 external_forces(model, ws, request.external_forces(), s)),
             a, s);
  }
}

void mass_matrix(const Model& model, ModelWorkspace& ws, const v1::MassMatrixRequest& request,
                 int begin, int end, double* mass_matrix, double* inverse) {
  const int nv = model.nv;
  const std::ptrdiff_t size = static_cast<std::ptrdiff_t>(nv) * nv;
  for (int s = begin; s < end; ++s) {
    const Eigen::MatrixXd& m = crba(model, ws.data, row(request.q(), s, model.nq));
    Eigen::Map<RowMajorMatrix>(mass_matrix + s * size, nv, nv) = m;
    if (inverse == nullptr) continue;
    ws.llt.compute(m);
    if (ws.llt.info() != Eigen::Success) {
      throw SingularSystemError("the mass matrix of state " + std::to_string(s) +
                                " is not positive definite (a moving body without inertia?)");
    }
    ws.inverse.setIdentity();
    ws.llt.solveInPlace(ws.inverse);
    Eigen::Map<RowMajorMatrix>(inverse + s * size, nv, nv) = ws.inverse;
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
