// Input checks of dynamics requests, each failing with INVALID_ARGUMENT (or RESOURCE_EXHAUSTED
// for limits) and a message that names the field, the expected and the received size, or the
// first bad value.
#pragma once

#include <google/protobuf/repeated_field.h>
#include <grpcpp/support/status.h>

#include <cstdint>

#include "engine/model/model.hpp"

namespace torqued::server {

using DoubleArray = google::protobuf::RepeatedField<double>;

// batch_size 0 is read as 1; more than `max_states` is RESOURCE_EXHAUSTED.
grpc::Status check_batch_size(std::uint32_t batch_size, int max_states, int& states);

// `values` must hold states × per_state finite numbers ("q: expected 14 values (batch_size 2 ×
// 7 per state), got 13"; "q[5] is NaN"). With `optional`, an empty array is accepted too.
grpc::Status check_array(const char* field, const DoubleArray& values, int states, int per_state,
                         bool optional = false);

// Every quaternion in q (spherical and free-flyer joints) must have unit norm within 1e-6.
grpc::Status check_quaternions(const Model& model, const DoubleArray& q, int states);

// A response of `doubles` numbers must fit in a message of `max_bytes`.
grpc::Status check_response_size(std::int64_t doubles, std::int64_t max_bytes);

}  // namespace torqued::server
