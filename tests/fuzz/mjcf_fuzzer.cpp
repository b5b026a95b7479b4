// libFuzzer target: MJCF text as a client sends it, through the structural XML check that bounds
// TinyXML's recursion (engine/io/xml_guard.cpp), TinyXML, the MJCF reader (engine/io/mjcf.cpp:
// default classes, orientations, geom inertia, equality constraints) and build_model(), with each
// reading of the base. Whatever the bytes, the only way out besides a model is ModelError
// (TooManyElementsError included).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/io/mjcf.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  torqued::MjcfOptions options;
  options.max_bodies = 1024;  // the server's default --max-bodies
  // The base as the file says, welded or floating: picked by the length, so that every byte of
  // an input (and of the seeds, real MJCF files) is the document.
  if (size % 3 == 1) options.floating_base = false;
  if (size % 3 == 2) options.floating_base = true;
  try {
    torqued::build_model(
        torqued::read_mjcf_string({reinterpret_cast<const char*>(data), size}, options));
  } catch (const torqued::ModelError&) {
  }
  return 0;
}
