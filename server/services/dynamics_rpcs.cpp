// The descriptors behind the table of batched RPCs (see dynamics_rpcs.hpp).
#include "server/services/dynamics_rpcs.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace torqued::server {

std::vector<std::string> algorithm_names() {
  std::vector<std::string> names;
  for_each_batch_rpc([&](auto row) {
    for (const Algorithm& algorithm : decltype(row)::algorithms) {
      if (std::find(names.begin(), names.end(), algorithm.name) == names.end()) {
        names.emplace_back(algorithm.name);
      }
    }
  });
  return names;
}

const google::protobuf::ServiceDescriptor& dynamics_service_descriptor() {
  static const google::protobuf::ServiceDescriptor* service =
      v1::InverseDynamicsRequest::descriptor()->file()->FindServiceByName("DynamicsService");
  return *service;
}

const google::protobuf::MethodDescriptor& method_taking(
    const google::protobuf::Descriptor& request) {
  const google::protobuf::ServiceDescriptor& service = dynamics_service_descriptor();
  for (int m = 0; m < service.method_count(); ++m) {
    if (service.method(m)->input_type() == &request) return *service.method(m);
  }
  throw std::logic_error("no method of " + service.full_name() + " takes " + request.full_name());
}

const google::protobuf::FieldDescriptor& field_of_type(const google::protobuf::Descriptor& owner,
                                                       const google::protobuf::Descriptor& type) {
  for (int f = 0; f < owner.field_count(); ++f) {
    if (owner.field(f)->message_type() == &type) return *owner.field(f);
  }
  throw std::logic_error(owner.full_name() + " has no field of type " + type.full_name());
}

}  // namespace torqued::server
