// The real robots of the shared reference material (../shared/models), for the tests that run on
// them when they are checked out.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "engine/io/urdf.hpp"
#include "engine/model/build.hpp"

namespace torqued::test_support {

// ../shared/models/<name>.urdf with a free-flyer, or nothing when the shared models are absent.
inline std::optional<ModelPtr> shared_floating_model(const std::string& name) {
  const std::filesystem::path urdf =
      std::filesystem::path(TORQUED_SHARED_DIR) / "models" / (name + ".urdf");
  if (!std::filesystem::exists(urdf)) return std::nullopt;
  UrdfOptions options;
  options.floating_base = true;
  return build_model(read_urdf_file(urdf.string(), options));
}

}  // namespace torqued::test_support
