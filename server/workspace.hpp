// What one worker thread keeps per model: the engine Data plus the few buffers the service adds
// (external forces in engine form, the mass-matrix factorization), all sized once.
#pragma once

#include <Eigen/Cholesky>
#include <vector>

#include "engine/model/data.hpp"

namespace torqued::server {

struct ModelWorkspace {
  explicit ModelWorkspace(const Model& model)
      : data(model),
        forces(model.nbodies(), Force::Zero()),
        llt(model.nv),
        inverse(model.nv, model.nv) {}

  Data data;
  std::vector<Force> forces;  // per body, [0] unused and kept zero
  Eigen::LLT<Eigen::MatrixXd> llt;
  Eigen::MatrixXd inverse;
};

}  // namespace torqued::server
