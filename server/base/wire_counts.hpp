// What decoding a protobuf message would allocate, counted on its wire bytes before it is decoded.
// A message's encoding can be much smaller than the objects it decodes to: an empty repeated
// message is 2 bytes on the wire and an object of a hundred bytes or more, a field the server does
// not know is kept in an object of its own. So the server counts before it decodes: what a request
// may hold (model_from_request.hpp), and how much of the memory budget its decoding takes
// (decoded_bytes()).
#pragma once

#include <google/protobuf/descriptor.h>
#include <grpcpp/support/byte_buffer.h>

#include <cstddef>
#include <cstdint>
#include <map>

namespace torqued::server {

struct WireCounts {
  // Elements of each repeated field of message type.
  std::map<const google::protobuf::FieldDescriptor*, std::int64_t> elements;
  // Heap bytes of the message objects and strings decoding makes, beside the bytes they copy.
  std::int64_t object_bytes = 0;
  // Fields the decoder keeps as unknown: not in the message's type, or of another wire type.
  std::int64_t unknown_fields = 0;
};

// Counts the fields of `bytes` as a message of `type`, descending into fields of message type and
// into groups as the decoder does. Bytes that are no such message are counted until they break
// off (the decoder refuses them).
WireCounts count_wire_fields(const grpc::ByteBuffer& bytes,
                             const google::protobuf::Descriptor* type);

// An upper estimate of the heap bytes a message of `type` decoded from `bytes` takes: the bytes it
// copies (numbers, strings) and the objects it makes.
std::size_t decoded_bytes(const grpc::ByteBuffer& bytes, const google::protobuf::Descriptor* type);

}  // namespace torqued::server
