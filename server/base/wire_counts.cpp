// Counting a message's fields on the wire (see wire_counts.hpp).
#include "server/base/wire_counts.hpp"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/message.h>
#include <grpcpp/support/proto_buffer_reader.h>

#include <unordered_map>

namespace torqued::server {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

// protobuf's default recursion limit: the decoder refuses messages nested deeper.
constexpr int kMaxWireDepth = 100;

// What one decoded string, bytes or unknown field costs beside its characters: a std::string or an
// UnknownField and its place in its repeated field.
constexpr std::int64_t kStringBytes = 48;
// The place of a message in a repeated field (a pointer, its array growing by doubling).
constexpr std::int64_t kElementBytes = 16;

// Wire types (protobuf's encoding documentation).
enum WireType : std::uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5
};

// The wire type of a field's values. A repeated number may also come packed, length-delimited.
std::uint32_t wire_type_of(const FieldDescriptor& field) {
  switch (field.type()) {
    case FieldDescriptor::TYPE_DOUBLE:
    case FieldDescriptor::TYPE_FIXED64:
    case FieldDescriptor::TYPE_SFIXED64:
      return kFixed64;
    case FieldDescriptor::TYPE_FLOAT:
    case FieldDescriptor::TYPE_FIXED32:
    case FieldDescriptor::TYPE_SFIXED32:
      return kFixed32;
    case FieldDescriptor::TYPE_STRING:
    case FieldDescriptor::TYPE_BYTES:
    case FieldDescriptor::TYPE_MESSAGE:
      return kLengthDelimited;
    case FieldDescriptor::TYPE_GROUP:
      return kStartGroup;
    default:
      return kVarint;
  }
}

bool decodes_as(const FieldDescriptor& field, std::uint32_t wire_type) {
  return wire_type == wire_type_of(field) || (wire_type == kLengthDelimited && field.is_packable());
}

class Counter {
 public:
  explicit Counter(WireCounts& counts) : counts_(counts) {}

  // Counts the fields from `in` up to the end of its current limit or, in a group, up to the
  // group's end tag. `type` is the message's descriptor, null in an unknown group. Returns false
  // where the bytes break off.
  bool count(google::protobuf::io::CodedInputStream& in, const Descriptor* type, int depth) {
    if (depth > kMaxWireDepth) return false;
    for (;;) {
      const std::uint32_t tag = in.ReadTag();
      const std::uint32_t wire_type = tag & 7;
      if (tag == 0 || wire_type == kEndGroup) return true;
      const FieldDescriptor* field =
          type == nullptr ? nullptr : type->FindFieldByNumber(static_cast<int>(tag >> 3));
      if (field == nullptr || !decodes_as(*field, wire_type)) {
        ++counts_.unknown_fields;
        counts_.object_bytes += kStringBytes;
        field = nullptr;
      }
      std::uint32_t length = 0;
      std::uint64_t varint = 0;
      if (field != nullptr && field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        if (!in.ReadVarint32(&length)) return false;
        const auto limit = in.PushLimit(static_cast<int>(length));
        if (field->is_repeated()) ++counts_.elements[field];
        counts_.object_bytes += object_size(field->message_type()) + kElementBytes;
        if (!count(in, field->message_type(), depth + 1)) return false;
        in.PopLimit(limit);
        continue;
      }
      if (field != nullptr && field->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
        counts_.object_bytes += kStringBytes;
      }
      bool read = true;
      switch (wire_type) {
        case kVarint:
          read = in.ReadVarint64(&varint);
          break;
        case kFixed64:
          read = in.Skip(8);
          break;
        case kLengthDelimited:
          read = in.ReadVarint32(&length) && in.Skip(static_cast<int>(length));
          break;
        case kStartGroup:
          read = count(in, nullptr, depth + 1);
          break;
        case kFixed32:
          read = in.Skip(4);
          break;
        default:
          read = false;
      }
      if (!read) return false;
    }
  }

 private:
  // The bytes of an empty message of `type` (its object, as the decoder makes one). The sizes are
  // the program's constants, and looking a prototype up and measuring it by reflection cost more
  // than counting a small request's fields: each thread keeps the sizes it has asked for.
  static std::int64_t object_size(const Descriptor* type) {
    thread_local std::unordered_map<const Descriptor*, std::int64_t> sizes;
    auto [it, inserted] = sizes.try_emplace(type, 0);
    if (inserted) {
      const google::protobuf::Message* prototype =
          google::protobuf::MessageFactory::generated_factory()->GetPrototype(type);
      it->second = prototype != nullptr ? static_cast<std::int64_t>(prototype->SpaceUsedLong())
                                        : kStringBytes;
    }
    return it->second;
  }

  WireCounts& counts_;
};

}  // namespace

WireCounts count_wire_fields(const grpc::ByteBuffer& bytes, const Descriptor* type) {
  grpc::ByteBuffer copy(bytes);  // shares the slices; the reader needs a mutable buffer
  grpc::ProtoBufferReader reader(&copy);
  google::protobuf::io::CodedInputStream in(&reader);
  // The stream's default total limit (INT_MAX) is what the decoder has too.
  WireCounts counts;
  Counter(counts).count(in, type, 0);
  return counts;
}

std::size_t decoded_bytes(const grpc::ByteBuffer& bytes, const Descriptor* type) {
  return bytes.Length() + static_cast<std::size_t>(count_wire_fields(bytes, type).object_bytes);
}

}  // namespace torqued::server
