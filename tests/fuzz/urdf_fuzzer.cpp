// libFuzzer target: URDF text as a client sends it, through the structural XML check that bounds
// urdfdom's recursion (engine/io/xml_guard.cpp), urdfdom itself and the mapping to a ModelSpec
// (engine/io/urdf.cpp), then build_model(). Whatever the bytes, the only way out besides a model
// is ModelError (TooManyElementsError included).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/io/urdf.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view xml(reinterpret_cast<const char*>(data), size);
  torqued::UrdfOptions options;
  options.max_links = 1024;  // the server's default --max-bodies
  try {
    torqued::build_model(torqued::read_urdf_string(xml, options));
  } catch (const torqued::ModelError&) {
  }
  return 0;
}
