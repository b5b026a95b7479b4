// The RPCs the server counts, checks tokens for and logs, taken from the services' descriptors:
// a method is known once it is in proto/, with no list of methods written by hand. A method's id
// is its place in that list, so that per-method metrics live in arrays.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace torqued::server {

using MethodId = int;

struct RpcMethod {
  std::string service;  // "torqued.v1.DynamicsService"
  std::string name;     // "InverseDynamics"
  bool streaming;       // a stream either way (Session, reflection)
};

// Every method of torqued.v1.ModelService, DynamicsService and ControlService and of gRPC's server
// reflection (v1 and v1alpha), in the order of their files.
const std::vector<RpcMethod>& rpc_methods();

// The id of `service`'s method `name`; throws std::logic_error when there is none (a method a
// service registers must be in proto/).
MethodId method_id(std::string_view service, std::string_view name);

const RpcMethod& rpc_method(MethodId id);

}  // namespace torqued::server
