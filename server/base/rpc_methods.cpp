// The served RPCs, from the generated descriptors (see rpc_methods.hpp).
#include "server/base/rpc_methods.hpp"

#include <google/protobuf/descriptor.h>

#include <stdexcept>

#include "grpc/reflection/v1/reflection.pb.h"
#include "grpc/reflection/v1alpha/reflection.pb.h"
#include "torqued/v1/control.pb.h"
#include "torqued/v1/dynamics.pb.h"
#include "torqued/v1/model.pb.h"

namespace torqued::server {
namespace {

std::vector<RpcMethod> list_methods() {
  // A message of each file, so that the linker keeps the file's descriptor.
  const google::protobuf::FileDescriptor* files[] = {
      v1::RegisterModelRequest::descriptor()->file(),
      v1::InverseDynamicsRequest::descriptor()->file(), v1::SolveRequest::descriptor()->file(),
      ::grpc::reflection::v1alpha::ServerReflectionRequest::descriptor()->file(),
      ::grpc::reflection::v1::ServerReflectionRequest::descriptor()->file()};
  std::vector<RpcMethod> methods;
  for (const google::protobuf::FileDescriptor* file : files) {
    for (int s = 0; s < file->service_count(); ++s) {
      const google::protobuf::ServiceDescriptor* service = file->service(s);
      for (int m = 0; m < service->method_count(); ++m) {
        const google::protobuf::MethodDescriptor* method = service->method(m);
        methods.push_back({service->full_name(), method->name(),
                           method->client_streaming() || method->server_streaming()});
      }
    }
  }
  return methods;
}

}  // namespace

const std::vector<RpcMethod>& rpc_methods() {
  static const std::vector<RpcMethod> methods = list_methods();
  return methods;
}

MethodId method_id(std::string_view service, std::string_view name) {
  const std::vector<RpcMethod>& methods = rpc_methods();
  for (std::size_t i = 0; i < methods.size(); ++i) {
    if (methods[i].service == service && methods[i].name == name) return static_cast<MethodId>(i);
  }
  throw std::logic_error("no method " + std::string(service) + "/" + std::string(name) +
                         " in proto/");
}

const RpcMethod& rpc_method(MethodId id) { return rpc_methods().at(static_cast<std::size_t>(id)); }

}  // namespace torqued::server
