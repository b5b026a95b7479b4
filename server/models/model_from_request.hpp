// Turning a RegisterModelRequest (URDF, DH table or explicit spec, plus name, base, gravity and
// loop closures) into a built engine Model and its id, enforcing the server's size limits on the
// way; and the proto-to-engine conversions that dynamics requests share.
#pragma once

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/status.h>

#include <cstdint>
#include <string>

#include "engine/model/model.hpp"
#include "server/base/config.hpp"
#include "torqued/v1/model.pb.h"

namespace torqued::server {

// The limits a model must keep within, from the flags (config.hpp documents each).
struct ModelLimits {
  std::int64_t max_urdf_bytes;
  int max_bodies;
  // Longest name of the model, a link, a joint (so a frame) or a loop closure.
  int max_name_bytes;
  int max_dof;
  // Rows of the model's loop closures: each worker's workspace holds rows² numbers for them,
  // allocated before any other limit would see it, and ConstrainedDynamics refuses more anyway.
  int max_constraint_rows;
  // Checked by the catalog: models held (repository included), bytes of the model store, and
  // the workspace one model needs on one thread.
  int max_models;
  std::int64_t max_store_bytes;
  std::int64_t max_workspace_bytes;
};

ModelLimits model_limits(const Config& config);

struct BuiltModel {
  ModelPtr model;
  std::string id;
};

// URDF's placement: translation xyz, rotation Rz(yaw) Ry(pitch) Rx(roll).
Transform to_transform(const v1::Placement& placement);

// False for CONSTRAINT_TYPE_UNSPECIFIED and unknown values.
bool to_constraint_type(v1::ConstraintType type, ConstraintType& out);

// RESOURCE_EXHAUSTED when the encoded RegisterModelRequest `bytes` hold more DH rows, spec links
// or spec joints than --max-bodies allows, more loop closures than --max-constraint-rows can take
// (3 rows each at least), or more fields unknown to this server than 8 per allowed body. Counted
// on the wire, before decoding, since decoding makes an object of each: an empty DH row is 2
// bytes on the wire and over a hundred in memory, so 8 MB of them grew the server by 488 MiB
// before build_from_request() could count them. Bytes that are no RegisterModelRequest pass, for
// the decoder to refuse (what the count saw until they broke off is checked all the same).
grpc::Status check_encoded_request(const grpc::ByteBuffer& bytes, const ModelLimits& limits);

// INVALID_ARGUMENT when the source is missing or malformed (the message names the field, joint
// or link at fault), RESOURCE_EXHAUSTED when a limit is passed.
grpc::Status build_from_request(const v1::RegisterModelRequest& request, const ModelLimits& limits,
                                BuiltModel& out);

}  // namespace torqued::server
