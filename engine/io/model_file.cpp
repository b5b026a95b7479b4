// Reading a model file whole (see model_file.hpp).
#include "engine/io/model_file.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "engine/model/build.hpp"

namespace torqued {

std::string read_model_file(const std::string& path, std::string_view format) {
  const std::string what = "cannot read " + std::string(format) + " file '" + path + "'";
  std::ifstream file(path, std::ios::binary);
  if (!file) throw ModelError(what + ": " + std::strerror(errno));
  std::ostringstream contents;
  contents << file.rdbuf();
  if (file.bad()) throw ModelError(what);
  return contents.str();
}

}  // namespace torqued
