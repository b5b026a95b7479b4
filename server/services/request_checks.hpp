// Input checks of dynamics requests, each failing with INVALID_ARGUMENT (or RESOURCE_EXHAUSTED
// for limits) and a message that names the field, the expected and the received size, or the
// first bad value.
#pragma once

#include <google/protobuf/message.h>
#include <google/protobuf/repeated_field.h>
#include <grpcpp/support/status.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/model/model.hpp"
#include "server/base/status_messages.hpp"
#include "torqued/v1/dynamics.pb.h"

namespace torqued::server {

using DoubleArray = google::protobuf::RepeatedField<double>;

// Every repeated double field of a computed response must be finite: inputs within range can
// still overflow the dynamics (huge velocities squared, a nearly singular mass matrix), and a
// planner must not take inf or NaN for an answer. FAILED_PRECONDITION naming the field and the
// state, of the `states` the response holds.
grpc::Status check_results_finite(const google::protobuf::Message& response, int states);

// batch_size 0 is read as 1; more than `max_states` is RESOURCE_EXHAUSTED.
grpc::Status check_batch_size(std::uint32_t batch_size, int max_states, int& states);

// `values` must hold states × per_state finite numbers ("q: expected 14 values (batch_size 2 ×
// 7 per state), got 13"; "q[5] is NaN"). With `optional`, an empty array is accepted too.
// What an array's rows are, for its messages: batch_size states by default.
struct ArrayRows {
  const char* count = "batch_size";
  const char* unit = "state";
};
grpc::Status check_array(const char* field, const DoubleArray& values, int states, int per_state,
                         bool optional = false, const ArrayRows& rows = {});

// `values` must be empty: the field does not apply to the call, `reason` says why ("tau: must be
// empty with DERIVATIVES_OF_INVERSE_DYNAMICS, got 12 values").
grpc::Status check_empty(const char* field, const DoubleArray& values, const std::string& reason);

// A number in a message, with the 17 digits that tell it apart from its neighbours.
std::string number(double x);

// A scalar must be finite and within [low, high]; `range` says so in the message ("dt: -1 is out
// of range; it must be > 0").
grpc::Status check_range(const std::string& field, double value, double low, double high,
                         const std::string& range);

// An enum field must hold a value its type defines (`is_valid` is the generated *_IsValid).
grpc::Status check_enum(const char* field, int value, bool (*is_valid)(int));

// HybridDynamicsRequest.inputs: one entry per DOF (nv), each DOF_INPUT_ACCELERATION or
// DOF_INPUT_FORCE.
grpc::Status check_dof_inputs(const google::protobuf::RepeatedField<int>& inputs, int nv);

// Every quaternion in q (spherical and free-flyer joints) must have unit norm within 1e-6; `field`
// names q in the message.
grpc::Status check_quaternions(const Model& model, const DoubleArray& q, int states,
                               const char* field = "q");

// The frame of `model` that `reference` (the request's `field`) means, or -1 when it means none
// (the caller says what else the field may name). INVALID_ARGUMENT when it means several, a name
// that a link and a joint share: the message lists them by the references that pick each one
// (Model::frame_reference; docs/api.md, "Frames").
grpc::Status find_frame(const Model& model, const std::string& field, const std::string& reference,
                        int& frame);

// The bytes of a response of `doubles` numbers.
std::int64_t response_bytes(std::int64_t doubles);
// A response of `doubles` numbers must fit in a message of `max_bytes`.
grpc::Status check_response_size(std::int64_t doubles, std::int64_t max_bytes);

}  // namespace torqued::server
