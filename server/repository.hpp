// The model repository: a read-only directory of bundled models loaded at start (design §1),
// e.g. deploy/models/. Two kinds of file:
//   NAME.txtpb          a RegisterModelRequest in protobuf text format (DH tables, specs, or
//                       anything with options);
//   NAME.urdf           a URDF registered with default options, or with the options (name,
//                       base, gravity) of a RegisterModelRequest in NAME.options.txtpb beside it.
#pragma once

#include <string>
#include <vector>

#include "torqued/v1/model.pb.h"

namespace torqued::server {

struct RepositoryEntry {
  std::string path;
  v1::RegisterModelRequest request;
};

// Reads every model file of the directory, sorted by file name. Files that cannot be read or
// parsed are reported in `errors` and skipped.
std::vector<RepositoryEntry> read_repository(const std::string& directory,
                                             std::vector<std::string>& errors);

}  // namespace torqued::server
