// The batched RPCs of torqued.v1.DynamicsService, one row each: every method of the service but
// Echo and Session. A row is the method's request and response types; everything else follows
// from it and from the descriptors of proto/:
// - the method it serves: the one of DynamicsService whose request type is the row's;
// - its registration and handler (dynamics_service.cpp): decode, the common checks, its plan
//   (dynamics_plans.hpp, chosen by overload on the request type), the run, the answer;
// - its place in a Session stream: the SessionRequest and SessionResponse fields of its types;
// - its metrics: rpc_methods() names every method of the service.
// The server refuses to start when a method of the service has no row, and
// tests/server/rpc_table_test.cpp holds the descriptor, the rows, the Session, the metrics, the
// bad-input table and the clients to each other.
#pragma once

#include <google/protobuf/descriptor.h>

#include <tuple>

#include "torqued/v1/dynamics.pb.h"

namespace torqued::server {

template <typename RequestT, typename ResponseT>
struct BatchRpc {
  using Request = RequestT;
  using Response = ResponseT;
};

using BatchRpcs = std::tuple<
    BatchRpc<v1::InverseDynamicsRequest, v1::InverseDynamicsResponse>,
    BatchRpc<v1::ForwardDynamicsRequest, v1::ForwardDynamicsResponse>,
    BatchRpc<v1::MassMatrixRequest, v1::MassMatrixResponse>,
    BatchRpc<v1::NonlinearEffectsRequest, v1::NonlinearEffectsResponse>,
    BatchRpc<v1::GravityRequest, v1::GravityResponse>,
    BatchRpc<v1::KinematicsRequest, v1::KinematicsResponse>,
    BatchRpc<v1::HybridDynamicsRequest, v1::HybridDynamicsResponse>,
    BatchRpc<v1::FloatingBaseInverseDynamicsRequest, v1::FloatingBaseInverseDynamicsResponse>,
    BatchRpc<v1::DerivativesRequest, v1::DerivativesResponse>,
    BatchRpc<v1::CoriolisMatrixRequest, v1::CoriolisMatrixResponse>,
    BatchRpc<v1::CentroidalRequest, v1::CentroidalResponse>,
    BatchRpc<v1::ConstrainedDynamicsRequest, v1::ConstrainedDynamicsResponse>,
    BatchRpc<v1::ContactDynamicsRequest, v1::ContactDynamicsResponse>,
    BatchRpc<v1::ImpactRequest, v1::ImpactResponse>,
    BatchRpc<v1::SimulateRequest, v1::SimulateResponse>>;

// Calls `visit(row)` for every row, in order.
template <typename Visit>
void for_each_batch_rpc(Visit&& visit) {
  std::apply([&](auto... row) { (visit(row), ...); }, BatchRpcs{});
}

// torqued.v1.DynamicsService's descriptor.
const google::protobuf::ServiceDescriptor& dynamics_service_descriptor();

// The method of DynamicsService whose request is of type `request`; throws std::logic_error when
// there is none.
const google::protobuf::MethodDescriptor& method_taking(
    const google::protobuf::Descriptor& request);

// The field of `owner` (SessionRequest or SessionResponse) of message type `type`; throws
// std::logic_error when there is none.
const google::protobuf::FieldDescriptor& field_of_type(const google::protobuf::Descriptor& owner,
                                                       const google::protobuf::Descriptor& type);

// Hands the batched request that a Session message carries to `serve(row, request, response)`,
// `response` the field of `answer` its kind of answer goes in; false when it carries none (Echo,
// or no request set). The one dispatch of Session messages, shared with the request fuzzer.
template <typename Serve>
bool visit_session_request(const v1::SessionRequest& message, v1::SessionResponse& answer,
                           Serve&& serve) {
  bool found = false;
  for_each_batch_rpc([&](auto row) {
    using Row = decltype(row);
    static const google::protobuf::FieldDescriptor& request_field =
        field_of_type(*v1::SessionRequest::descriptor(), *Row::Request::descriptor());
    static const google::protobuf::FieldDescriptor& response_field =
        field_of_type(*v1::SessionResponse::descriptor(), *Row::Response::descriptor());
    if (found || message.request_case() != request_field.number()) return;
    found = true;
    serve(row,
          static_cast<const typename Row::Request&>(
              message.GetReflection()->GetMessage(message, &request_field)),
          static_cast<typename Row::Response*>(
              answer.GetReflection()->MutableMessage(&answer, &response_field)));
  });
  return found;
}

}  // namespace torqued::server
