// What one worker thread keeps per model: the engine Data plus the external forces in engine
// form, all sized once.
#pragma once

#include <vector>

#include "engine/model/data.hpp"

namespace torqued::server {

struct ModelWorkspace {
  explicit ModelWorkspace(const Model& model)
      : data(model), forces(model.nbodies(), Force::Zero()) {}

  Data data;
  std::vector<Force> forces;  // per body, [0] unused and kept zero
};

}  // namespace torqued::server
