// Request validation (see request_checks.hpp).
#include "server/services/request_checks.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <vector>

#include "engine/model/quoted.hpp"

namespace torqued::server {
namespace {

constexpr double kQuaternionTolerance = 1e-6;

// Whether every value is finite. A double is NaN or infinite exactly when its exponent bits are
// all set, and adding one unit of exponent to the masked bits then carries into the sign bit: an
// AND, an ADD and an OR per value, which the compiler vectorizes with SSE2, where an early-exit
// std::isfinite loop runs a compare and a branch per value.
bool all_finite(const double* values, int count) {
  constexpr std::uint64_t kExponent = 0x7ff0000000000000;
  constexpr std::uint64_t kExponentUnit = 0x0010000000000000;
  std::uint64_t carries = 0;
  for (int i = 0; i < count; ++i) {
    std::uint64_t bits;
    std::memcpy(&bits, values + i, sizeof bits);
    carries |= (bits & kExponent) + kExponentUnit;
  }
  return (carries >> 63) == 0;
}

}  // namespace

grpc::Status check_results_finite(const google::protobuf::Message& response, int states) {
  const google::protobuf::Descriptor* descriptor = response.GetDescriptor();
  const google::protobuf::Reflection* reflection = response.GetReflection();
  for (int f = 0; f < descriptor->field_count(); ++f) {
    const google::protobuf::FieldDescriptor* field = descriptor->field(f);
    if (!field->is_repeated() ||
        field->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_DOUBLE) {
      continue;
    }
    // GetRepeatedFieldRef, the recommended accessor, reads one value per virtual call; the
    // deprecated GetRepeatedField gives the contiguous array that the SSE2 scan needs.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    const DoubleArray& array = reflection->GetRepeatedField<double>(response, field);
#pragma GCC diagnostic pop
    if (all_finite(array.data(), array.size())) continue;
    const int per_state = std::max(1, array.size() / std::max(1, states));
    for (int i = 0; i < array.size(); ++i) {
      if (!std::isfinite(array[i])) {
        return {grpc::StatusCode::FAILED_PRECONDITION,
                "state " + std::to_string(i / per_state) + ": the result " + field->name() +
                    " is not finite (inf or NaN): the inputs overflow the dynamics of the model"};
      }
    }
  }
  return grpc::Status::OK;
}

grpc::Status check_batch_size(std::uint32_t batch_size, int max_states, int& states) {
  if (batch_size > static_cast<std::uint32_t>(max_states)) {
    return {grpc::StatusCode::RESOURCE_EXHAUSTED,
            "batch_size: " + std::to_string(batch_size) + " exceeds the server's limit of " +
                std::to_string(max_states) + " states per call (--max-batch-states)"};
  }
  states = batch_size == 0 ? 1 : static_cast<int>(batch_size);
  return grpc::Status::OK;
}

grpc::Status check_array(const char* field, const DoubleArray& values, int states, int per_state,
                         bool optional, const ArrayRows& rows) {
  const std::int64_t expected = static_cast<std::int64_t>(states) * per_state;
  if (values.size() != expected && !(optional && values.empty())) {
    std::ostringstream s;
    s << field << ": expected " << expected << " values (" << rows.count << " " << states << " × "
      << per_state << " per " << rows.unit << ")" << (optional ? " or none" : "") << ", got "
      << values.size();
    return invalid(s.str());
  }
  const double* data = values.data();
  if (all_finite(data, values.size())) return grpc::Status::OK;
  for (int i = 0; i < values.size(); ++i) {
    if (!std::isfinite(data[i])) {
      std::ostringstream s;
      s << field << "[" << i << "] (" << rows.unit << " " << i / per_state << ", element "
        << i % per_state << ") is " << (std::isnan(data[i]) ? "NaN" : "infinite")
        << "; values must be finite";
      return invalid(s.str());
    }
  }
  return grpc::Status::OK;
}

grpc::Status check_empty(const char* field, const DoubleArray& values, const std::string& reason) {
  if (values.empty()) return grpc::Status::OK;
  return invalid(std::string(field) + ": must be empty " + reason + ", got " +
                 std::to_string(values.size()) + " values");
}

std::string number(double x) {
  std::ostringstream out;
  out.precision(17);
  out << x;
  return out.str();
}

grpc::Status check_range(const std::string& field, double value, double low, double high,
                         const std::string& range) {
  if (!std::isfinite(value)) {
    return invalid(field + " is " + (std::isnan(value) ? "NaN" : "infinite") +
                   "; it must be finite");
  }
  if (value < low || value > high) {
    return invalid(field + ": " + number(value) + " is out of range; it must be " + range);
  }
  return grpc::Status::OK;
}

grpc::Status check_enum(const char* field, int value, bool (*is_valid)(int)) {
  if (is_valid(value)) return grpc::Status::OK;
  return invalid(std::string(field) + ": unknown value " + std::to_string(value));
}

grpc::Status check_dof_inputs(const google::protobuf::RepeatedField<int>& inputs, int nv) {
  if (inputs.size() != nv) {
    return invalid("inputs: expected " + std::to_string(nv) + " entries (one per DOF), got " +
                   std::to_string(inputs.size()));
  }
  for (int k = 0; k < nv; ++k) {
    if (inputs[k] != v1::DOF_INPUT_ACCELERATION && inputs[k] != v1::DOF_INPUT_FORCE) {
      return invalid("inputs[" + std::to_string(k) + "]: " +
                     (v1::DofInput_IsValid(inputs[k])
                          ? v1::DofInput_Name(inputs[k])
                          : "unknown value " + std::to_string(inputs[k])) +
                     "; each DOF must be DOF_INPUT_ACCELERATION or DOF_INPUT_FORCE");
    }
  }
  return grpc::Status::OK;
}

grpc::Status check_quaternions(const Model& model, const DoubleArray& q, int states,
                               const char* field) {
  for (int b = 1; b < model.nbodies(); ++b) {
    const Joint& joint = model.joints[b];
    int offset;
    if (joint.type == JointType::kSpherical) {
      offset = joint.idx_q;
    } else if (joint.type == JointType::kFreeFlyer) {
      offset = joint.idx_q + 3;
    } else {
      continue;
    }
    for (int s = 0; s < states; ++s) {
      const double* quat = q.data() + static_cast<std::int64_t>(s) * model.nq + offset;
      const double norm =
          std::sqrt(quat[0] * quat[0] + quat[1] * quat[1] + quat[2] * quat[2] + quat[3] * quat[3]);
      if (std::abs(norm - 1.0) > kQuaternionTolerance) {
        std::ostringstream out;
        out.precision(17);
        out << field << ": the quaternion (x, y, z, w) of joint "
            << quote_input(model.joint_names[b]) << " at " << field << "["
            << static_cast<std::int64_t>(s) * model.nq + offset << "] (state " << s << ") has norm "
            << norm << "; it must be 1 within " << kQuaternionTolerance;
        return invalid(out.str());
      }
    }
  }
  return grpc::Status::OK;
}

grpc::Status find_frame(const Model& model, const std::string& field, const std::string& reference,
                        int& frame) {
  const std::vector<int> meant = model.frames_meant_by(reference);
  frame = meant.size() == 1 ? meant.front() : -1;
  if (meant.size() <= 1) return grpc::Status::OK;
  std::string references;
  for (const int f : meant) {
    references += (references.empty() ? "" : ", ") + quote_input(model.frame_reference(f));
  }
  return invalid(field + ": " + quote_input(reference) + " names " + std::to_string(meant.size()) +
                 " frames of model " + quote_input(model.name) +
                 " (see Model.frames): " + references + "; name one of them by its kind");
}

std::int64_t response_bytes(std::int64_t doubles) {
  // Packed doubles plus a little framing.
  return doubles * 8 + 64;
}

grpc::Status check_response_size(std::int64_t doubles, std::int64_t max_bytes) {
  const std::int64_t bytes = response_bytes(doubles);
  if (bytes > max_bytes) {
    return {grpc::StatusCode::RESOURCE_EXHAUSTED,
            "the response would take " + std::to_string(bytes) +
                " bytes, more than the server's max message size of " + std::to_string(max_bytes) +
                " (--max-message-bytes); send fewer states per call (a smaller batch_size)"};
  }
  return grpc::Status::OK;
}

}  // namespace torqued::server
