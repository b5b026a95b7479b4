// libFuzzer target: SDF text as a client would send it, through the structural XML check and the
// scan that bound libsdformat's work (engine/io/xml_guard.cpp, engine/io/sdf.cpp), libsdformat
// itself (not instrumented: Debian's build) and the mapping to a ModelSpec, then build_model().
// Whatever the bytes, the only way out besides a model is ModelError (TooManyElementsError
// included).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/io/sdf.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view xml(reinterpret_cast<const char*>(data), size);
  torqued::SdfOptions options;
  options.max_links = 1024;  // the server's default --max-bodies
  try {
    torqued::build_model(torqued::read_sdf_string(xml, options));
  } catch (const torqued::ModelError&) {
  }
  return 0;
}
