// DynamicsService's registration and handlers (see dynamics_service.hpp).
#include "server/services/dynamics_service.hpp"

#include <grpcpp/impl/codegen/server_callback_handlers.h>

#include <stdexcept>
#include <vector>

#include "server/services/dynamics_rpcs.hpp"
#include "server/services/session_stream.hpp"

namespace torqued::server {
namespace {

using UnaryHandler = grpc::internal::CallbackUnaryHandler<grpc::ByteBuffer, grpc::ByteBuffer>;
using BidiHandler = grpc::internal::CallbackBidiHandler<grpc::ByteBuffer, grpc::ByteBuffer>;

}  // namespace

MethodId DynamicsService::method_of(const google::protobuf::Descriptor& request) {
  return method_id(dynamics_service_descriptor().full_name(), method_taking(request).name());
}

DynamicsService::DynamicsService(const ModelCatalog& catalog, BatchRunner& runner, Metrics& metrics,
                                 MemoryBudget& budget, const AccessControl& access,
                                 const RequestLimits& limits, const std::atomic<bool>& ready)
    : catalog_(catalog),
      runner_(runner),
      metrics_(metrics),
      budget_(budget),
      access_(access),
      limits_(limits),
      ready_(ready),
      echo_method_(method_of(*v1::EchoRequest::descriptor())),
      session_method_(method_of(*v1::SessionRequest::descriptor())) {
  const google::protobuf::ServiceDescriptor& service = dynamics_service_descriptor();
  std::vector<bool> served(static_cast<std::size_t>(service.method_count()), false);
  for_each_batch_rpc([&](auto row) {
    using Row = decltype(row);
    const google::protobuf::MethodDescriptor& method = method_taking(*Row::Request::descriptor());
    const MethodId id = method_of(*Row::Request::descriptor());
    MarkMethodRawCallback(
        method.index(),
        new UnaryHandler([this, id](grpc::CallbackServerContext* context,
                                    const grpc::ByteBuffer* request, grpc::ByteBuffer* response) {
          return serve_batch<typename Row::Request, typename Row::Response>(context, id, request,
                                                                            response);
        }));
    served[static_cast<std::size_t>(method.index())] = true;
  });
  const int echo = method_taking(*v1::EchoRequest::descriptor()).index();
  MarkMethodRawCallback(
      echo, new UnaryHandler([this](grpc::CallbackServerContext* context,
                                    const grpc::ByteBuffer* request, grpc::ByteBuffer* response) {
        return serve_echo(context, request, response);
      }));
  served[static_cast<std::size_t>(echo)] = true;
  const int session = method_taking(*v1::SessionRequest::descriptor()).index();
  MarkMethodRawCallback(session, new BidiHandler([this](grpc::CallbackServerContext* context) {
                          return open_session(context);
                        }));
  served[static_cast<std::size_t>(session)] = true;
  for (int m = 0; m < service.method_count(); ++m) {
    if (!served[static_cast<std::size_t>(m)]) {
      throw std::logic_error(service.method(m)->full_name() +
                             " has no row in server/services/dynamics_rpcs.hpp");
    }
  }
}

grpc::Status DynamicsService::check_workspace(const RegisteredModel& entry,
                                              Algorithm algorithm) const {
  const auto bytes = static_cast<std::int64_t>(workspace_bytes(*entry.model, algorithm.workspaces));
  if (bytes > limits_.max_workspace_bytes) {
    return over_limit("the workspace bytes of " + std::string(algorithm.name) + " for this model",
                      bytes, limits_.max_workspace_bytes, "--max-workspace-bytes");
  }
  return grpc::Status::OK;
}

grpc::Status DynamicsService::prepare(const std::string& model_id, std::uint32_t batch_size,
                                      const DoubleArray& q, RegisteredModelPtr& model,
                                      int& states) const {
  if (!ready_.load(std::memory_order_acquire)) {
    return {grpc::StatusCode::UNAVAILABLE, "the server is still loading its models; retry shortly"};
  }
  model = catalog_.find(model_id);
  if (!model) {
    return {grpc::StatusCode::NOT_FOUND,
            "model_id: no model " + quote_input(model_id) + " on this server (register it first)"};
  }
  if (grpc::Status s = check_batch_size(batch_size, limits_.max_batch_states, states); !s.ok()) {
    return s;
  }
  if (grpc::Status s = check_array("q", q, states, model->model->nq); !s.ok()) return s;
  return check_quaternions(*model->model, q, states);
}

grpc::ServerUnaryReactor* DynamicsService::serve_echo(grpc::CallbackServerContext* context,
                                                      const grpc::ByteBuffer* request_bytes,
                                                      grpc::ByteBuffer* response_bytes) {
  const UnaryCall call(context, echo_method_, metrics_, &budget_);
  v1::EchoRequest request;
  grpc::Status status = access_.check(*context, echo_method_);
  if (status.ok()) {
    status = call.reserve(decoded_bytes(*request_bytes, v1::EchoRequest::descriptor()),
                          "the decoded request");
  }
  if (status.ok()) status = decode(*request_bytes, "request", request);
  if (!status.ok()) return call.finish(status);
  v1::EchoResponse response;
  Reservation response_memory;
  status = echo(request, &response, response_memory);
  call.hold(std::move(response_memory));
  return call.finish(status.ok() ? encode(response, response_bytes) : status);
}

grpc::Status DynamicsService::echo(const v1::EchoRequest& request, v1::EchoResponse* response,
                                   Reservation& memory) const {
  const std::int64_t values =
      request.response_values() == 0 ? request.values_size() : request.response_values();
  const std::int64_t bytes =
      response_bytes(values) + static_cast<std::int64_t>(request.payload().size());
  if (bytes > limits_.max_message_bytes) {
    return {grpc::StatusCode::RESOURCE_EXHAUSTED,
            "response_values: " + std::to_string(values) + " values make a response of " +
                std::to_string(bytes) + " bytes, more than the server's max message size of " +
                std::to_string(limits_.max_message_bytes) + " (--max-message-bytes)"};
  }
  // The response, then its encoding while gRPC sends it.
  const auto reserved = 2 * static_cast<std::size_t>(bytes);
  if (!memory.add(budget_, reserved)) {
    return {grpc::StatusCode::RESOURCE_EXHAUSTED, budget_.refusal("the response", reserved)};
  }
  response->set_payload(request.payload());
  if (request.response_values() == 0) {
    *response->mutable_values() = request.values();
  } else {
    response->mutable_values()->Resize(static_cast<int>(request.response_values()), 0.0);
  }
  return grpc::Status::OK;
}

}  // namespace torqued::server
