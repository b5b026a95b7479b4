// The services register their methods raw (grpc::ByteBuffer in and out) and decode requests
// themselves. gRPC's typed handlers answer a request that does not decode with UNIMPLEMENTED and
// no message, and a typed stream ends with OK on a message that does not decode, dropping it and
// every message after it; decoding here answers INVALID_ARGUMENT saying what could not be read.
#pragma once

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/proto_buffer_reader.h>
#include <grpcpp/support/proto_buffer_writer.h>

#include <string>

namespace torqued::server {

// A generated Service with the generated WithRawCallbackMethod_* wrappers applied in turn:
// RawMethods<Service, WithRawCallbackMethod_A, WithRawCallbackMethod_B> is
// WithRawCallbackMethod_A<WithRawCallbackMethod_B<Service>>.
template <typename Service, template <typename> class... Wrappers>
struct ApplyRawMethods {
  using type = Service;
};
template <typename Service, template <typename> class First, template <typename> class... Rest>
struct ApplyRawMethods<Service, First, Rest...> {
  using type = First<typename ApplyRawMethods<Service, Rest...>::type>;
};
template <typename Service, template <typename> class... Wrappers>
using RawMethods = typename ApplyRawMethods<Service, Wrappers...>::type;

// Decodes `in` (left unchanged) into `out`; INVALID_ARGUMENT naming `field` and the message type
// when the bytes are not one.
template <typename Message>
grpc::Status decode(const grpc::ByteBuffer& in, const std::string& field, Message& out) {
  grpc::ByteBuffer bytes(in);
  const std::size_t size = bytes.Length();
  if (grpc::SerializationTraits<Message>::Deserialize(&bytes, &out).ok()) {
    return grpc::Status::OK;
  }
  return {grpc::StatusCode::INVALID_ARGUMENT, field + ": the " + std::to_string(size) +
                                                  " bytes received are not a valid " +
                                                  Message::descriptor()->full_name()};
}

// Encodes `message` into `out`, replacing what it held; INTERNAL if protobuf refuses (a message
// over 2 GB).
template <typename Message>
grpc::Status encode(const Message& message, grpc::ByteBuffer* out) {
  out->Clear();  // gRPC's serializer asserts (and aborts) on a buffer that is not empty
  bool own_buffer = false;
  if (grpc::SerializationTraits<Message>::Serialize(message, out, &own_buffer).ok()) {
    return grpc::Status::OK;
  }
  return {grpc::StatusCode::INTERNAL, "the response could not be encoded"};
}

}  // namespace torqued::server
