// The model repository: a read-only directory of bundled models loaded at start (docs/operating.md,
// "Models"), e.g. deploy/models/. The kinds of file:
//   NAME.txtpb          a RegisterModelRequest in protobuf text format (DH tables, specs, or
//                       anything with options);
//   NAME.urdf           a URDF, NAME.xml an MJCF document, NAME.sdf an SDFormat document, each
//                       registered with default options, or with the options (name, base,
//                       gravity) of a RegisterModelRequest in NAME.options.txtpb beside it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "torqued/v1/model.pb.h"

namespace torqued::server {

struct BundledModel {
  std::string path;
  v1::RegisterModelRequest request;
};

// Reads one model file as the repository does: a NAME.txtpb file as a whole RegisterModelRequest,
// a NAME.xml file as MJCF, a NAME.sdf file as SDF and any other file as a URDF, with the options
// of NAME.options.txtpb beside it when there is one.
// False, with `error` naming the file and the problem, when it cannot be read or parsed.
bool read_model_file(const std::filesystem::path& path, v1::RegisterModelRequest& request,
                     std::string& error);

// Reads every model file of the directory, sorted by file name. Files that cannot be read or
// parsed are reported in `errors` and skipped.
std::vector<BundledModel> read_bundled_models(const std::string& directory,
                                              std::vector<std::string>& errors);

}  // namespace torqued::server
