// What one worker thread keeps per model: the engine Data plus the external forces in engine
// form, all sized once, and the contact and simulation buffers, made on the first call that needs
// them.
#pragma once

#include <memory>
#include <vector>

#include "engine/algorithms/simulate.hpp"
#include "engine/model/data.hpp"

namespace torqued::server {

struct ModelWorkspace {
  explicit ModelWorkspace(const Model& model)
      : data(model), forces(model.nbodies(), Force::Zero()) {}

  Data data;
  std::vector<Force> forces;  // per body, [0] unused and kept zero

  // Rebuilt, larger, only when a call has more contacts (or candidates) than they hold.
  std::unique_ptr<ContactWorkspace> contact;
  std::unique_ptr<SimulationWorkspace> simulation;
};

}  // namespace torqued::server
