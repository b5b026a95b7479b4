// Batch splitting (see batch_split.hpp). Packed repeated doubles are reached through their wire
// form, the only bulk access protobuf's reflection offers that is not deprecated: the state
// fields are swapped out of the request, serialized once, and each part parses its slice of
// every field (a copy of bytes on little-endian machines).
#include "torqued/batch_split.hpp"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace torqued::client {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::io::CodedInputStream;
using google::protobuf::io::CodedOutputStream;

// The wire type of packed repeated fields.
constexpr std::uint32_t kLengthDelimited = 2;

const FieldDescriptor* batch_size_field(const Message& message) {
  return message.GetDescriptor()->FindFieldByName("batch_size");
}

std::vector<const FieldDescriptor*> fields_where(const Message& message,
                                                 bool (*keep)(const FieldDescriptor*)) {
  std::vector<const FieldDescriptor*> fields;
  const google::protobuf::Descriptor* descriptor = message.GetDescriptor();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    if (keep(descriptor->field(i))) fields.push_back(descriptor->field(i));
  }
  return fields;
}

bool is_state_field(const FieldDescriptor* field) {
  return field->is_repeated() && field->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE;
}

// Strings and messages describe the whole call; numbers are per state.
bool is_whole_call_field(const FieldDescriptor* field) {
  return field->is_repeated() && (field->cpp_type() == FieldDescriptor::CPPTYPE_STRING ||
                                  field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE);
}

// The packed payload of each field number in the wire form of a message holding only packed
// repeated doubles.
std::map<int, std::string_view> packed_payloads(const std::string& wire) {
  std::map<int, std::string_view> payloads;
  CodedInputStream in(reinterpret_cast<const std::uint8_t*>(wire.data()),
                      static_cast<int>(wire.size()));
  in.SetTotalBytesLimit(static_cast<int>(std::min<std::size_t>(wire.size(), INT32_MAX)));
  std::uint32_t tag = 0;
  std::uint32_t length = 0;
  while ((tag = in.ReadTag()) != 0 && in.ReadVarint32(&length)) {
    const std::size_t offset = static_cast<std::size_t>(in.CurrentPosition());
    payloads[static_cast<int>(tag >> 3)] = std::string_view(wire).substr(offset, length);
    in.Skip(static_cast<int>(length));
  }
  return payloads;
}

}  // namespace

std::vector<StateRange> split_states(std::uint32_t states, int max_parts, int min_states) {
  const std::uint32_t by_size = states / static_cast<std::uint32_t>(std::max(min_states, 1));
  const std::uint32_t parts =
      std::clamp<std::uint32_t>(by_size, 1, static_cast<std::uint32_t>(std::max(max_parts, 1)));
  std::vector<StateRange> ranges;
  std::uint32_t begin = 0;
  for (std::uint32_t k = 0; k < parts; ++k) {
    const std::uint32_t size = states / parts + (k < states % parts ? 1 : 0);
    ranges.push_back({begin, begin + size});
    begin += size;
  }
  return ranges;
}

bool split_request(Message& request, const std::vector<StateRange>& ranges,
                   const std::vector<Message*>& parts) {
  const google::protobuf::Reflection* reflection = request.GetReflection();
  const FieldDescriptor* batch_size = batch_size_field(request);
  const std::uint32_t states = reflection->GetUInt32(request, batch_size);
  const std::vector<const FieldDescriptor*> state_fields = fields_where(request, is_state_field);
  for (const FieldDescriptor* field : state_fields) {
    const int size = reflection->FieldSize(request, field);
    if (states == 0 || size % static_cast<int>(states) != 0) return false;
  }
  std::unique_ptr<Message> state_values(request.New());
  reflection->SwapFields(&request, state_values.get(), state_fields);
  const std::string wire = state_values->SerializeAsString();
  const std::map<int, std::string_view> payloads = packed_payloads(wire);
  for (std::size_t k = 0; k < ranges.size(); ++k) {
    Message* part = parts[k];
    part->CopyFrom(request);
    reflection->SetUInt32(part, batch_size, ranges[k].end - ranges[k].begin);
    std::string slices;
    {
      google::protobuf::io::StringOutputStream stream(&slices);
      CodedOutputStream out(&stream);
      for (const auto& [number, payload] : payloads) {
        const std::size_t per_state = payload.size() / states;
        const std::string_view slice = payload.substr(
            ranges[k].begin * per_state, (ranges[k].end - ranges[k].begin) * per_state);
        out.WriteTag(static_cast<std::uint32_t>(number) << 3 | kLengthDelimited);
        out.WriteVarint32(static_cast<std::uint32_t>(slice.size()));
        out.WriteRaw(slice.data(), static_cast<int>(slice.size()));
      }
    }
    part->MergeFromString(slices);
  }
  return true;
}

void join_responses(const std::vector<Message*>& parts, Message* whole) {
  whole->CopyFrom(*parts.front());
  const google::protobuf::Reflection* reflection = whole->GetReflection();
  const FieldDescriptor* batch_size = batch_size_field(*whole);
  std::uint32_t states = reflection->GetUInt32(*whole, batch_size);
  const std::vector<const FieldDescriptor*> whole_call = fields_where(*whole, is_whole_call_field);
  for (std::size_t k = 1; k < parts.size(); ++k) {
    states += reflection->GetUInt32(*parts[k], batch_size);
    // Merging concatenates repeated fields: right for the states, wrong for what every part
    // repeats about the whole call.
    for (const FieldDescriptor* field : whole_call) reflection->ClearField(parts[k], field);
    whole->MergeFrom(*parts[k]);
  }
  reflection->SetUInt32(whole, batch_size, states);
}

}  // namespace torqued::client
