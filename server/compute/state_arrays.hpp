// What the dynamics kernels share: reading one state out of a request's flat arrays, external
// forces in engine form, and writing one state's vector or matrix into a response array.
#pragma once

#include <google/protobuf/repeated_field.h>

#include <span>

#include "server/compute/workspace_pool.hpp"

namespace torqued::server {

using ConstMap = Eigen::Map<const Eigen::VectorXd>;
using RowMajorMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// State `state` of a flat N × width array.
inline ConstMap row(const google::protobuf::RepeatedField<double>& values, int state, int width) {
  return ConstMap(values.data() + static_cast<std::ptrdiff_t>(state) * width, width);
}

// The external forces of one state in engine form (empty span when none were sent).
inline std::span<const Force> external_forces(const Model& model, ModelWorkspace& ws,
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

// Writes a vector as state `state` of a flat N × x.size() array.
inline void copy_out(const Eigen::Ref<const Eigen::VectorXd>& x, double* out, int state) {
  Eigen::Map<Eigen::VectorXd>(out + static_cast<std::ptrdiff_t>(state) * x.size(), x.size()) = x;
}

// Writes a matrix, row-major, as state `state` of a flat N × rows × cols array.
template <typename Matrix>
void copy_out_matrix(const Matrix& x, double* out, int state) {
  const std::ptrdiff_t size = static_cast<std::ptrdiff_t>(x.rows()) * x.cols();
  Eigen::Map<RowMajorMatrix>(out + state * size, x.rows(), x.cols()) = x;
}

}  // namespace torqued::server
