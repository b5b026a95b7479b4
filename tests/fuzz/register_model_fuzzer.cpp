// libFuzzer target: ModelService.RegisterModel's work on a request counted and decoded from bytes as
// the server does (server/transport/byte_buffers.hpp): build_from_request over URDF, DH
// tables and explicit specs with their loop closures, under the server's limits, then what the
// catalog builds for a new model (its layout and first workspace). The limits on bodies and DOFs
// are smaller than the server's defaults so that each input stays fast; the paths are the same.
#include <grpcpp/impl/codegen/proto_utils.h>  // decode()'s SerializationTraits for messages
#include <grpcpp/support/byte_buffer.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "server/models/model_layout.hpp"
#include "server/models/model_from_request.hpp"
#include "server/transport/byte_buffers.hpp"
#include "server/app/server.hpp"
#include "server/compute/workspace_pool.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  grpc::Slice slice(data, size);
  const grpc::ByteBuffer bytes(&slice, 1);
  torqued::server::ModelLimits limits = torqued::server::model_limits(torqued::server::Config{});
  limits.max_bodies = 128;
  limits.max_dof = 128;
  // As the server does: the wire counted before anything is decoded.
  if (!torqued::server::check_encoded_request(bytes, limits).ok()) return 0;
  torqued::v1::RegisterModelRequest request;
  if (!torqued::server::decode(bytes, "request", request).ok()) return 0;
  torqued::server::BuiltModel built;
  if (!torqued::server::build_from_request(request, limits, built).ok()) return 0;
  const torqued::v1::Model layout =
      torqued::server::make_layout(*built.model, built.id, torqued::v1::MODEL_ORIGIN_REGISTERED);
  if (layout.nq() != built.model->nq || layout.nv() != built.model->nv) {
    throw std::logic_error("the layout does not match the model");
  }
  const torqued::server::ModelWorkspace workspace(*built.model);  // the catalog's first one
  return 0;
}
