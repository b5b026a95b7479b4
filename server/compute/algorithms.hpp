// An engine algorithm as the server runs it: its label in torqued_engine_compute_seconds
// {algorithm}, and the engine workspaces it binds (engine/model/data.hpp), which the server checks
// against --max-workspace-bytes before a call runs. Each RPC's row (server/services/
// dynamics_rpcs.hpp) declares the algorithms its plan may choose.
#pragma once

#include <string_view>

#include "engine/model/data.hpp"

namespace torqued::server {

struct Algorithm {
  std::string_view name;
  WorkspaceSet workspaces;
};

}  // namespace torqued::server
