// Cutting one batched DynamicsService request into parts of contiguous states, and joining the
// parts' responses back into the response one call would have given. Generic over the request
// and response messages, by their shape in proto/torqued/v1/dynamics.proto: a request's
// `batch_size` and its repeated double fields hold states (each field batch_size × width, row
// after row), its other fields apply to every state; a response's repeated numeric fields hold
// states in the same order, its strings and messages (frame names, constraint rows) describe the
// whole call.
#pragma once

#include <google/protobuf/message.h>

#include <cstdint>
#include <vector>

namespace torqued::client {

// States [begin, end) of a batch.
struct StateRange {
  std::uint32_t begin;
  std::uint32_t end;
};

// At most `max_parts` parts of at least `min_states` states each, sizes differing by at most one;
// a single part when the batch is too small to split.
std::vector<StateRange> split_states(std::uint32_t states, int max_parts, int min_states);

// Fills parts[k] (messages of the request's type) with the states ranges[k] of `request`; its
// other fields are copied. `request` is left without its state fields. False, and nothing done,
// when a state field's size is not a multiple of batch_size (the server then answers the whole
// request with the field it rejects).
bool split_request(google::protobuf::Message& request, const std::vector<StateRange>& ranges,
                   const std::vector<google::protobuf::Message*>& parts);

// Joins the responses of the parts, in state order, into `whole` (parts are consumed).
void join_responses(const std::vector<google::protobuf::Message*>& parts,
                    google::protobuf::Message* whole);

}  // namespace torqued::client
