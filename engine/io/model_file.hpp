// The text of a model file, for the readers of model formats (URDF, MJCF).
#pragma once

#include <string>
#include <string_view>

namespace torqued {

// The whole file at `path`. Throws ModelError naming the format, the path and the system's reason
// when the file cannot be read.
std::string read_model_file(const std::string& path, std::string_view format);

}  // namespace torqued
