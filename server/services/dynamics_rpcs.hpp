// The batched RPCs of torqued.v1.DynamicsService, one row each: every method of the service but
// Echo and Session. A row names the method's request and response types, the engine algorithms
// its plan may choose (each a metric label and the workspaces it binds), and declares its plan,
// which checks a request against its model, sizes the response and describes the work
// (dynamics_plans.cpp, contact_plans.cpp). Everything else follows from the row and from the
// descriptors of proto/:
// - the method it serves: the one of DynamicsService whose request type is the row's;
// - its registration and handler (dynamics_service.cpp): decode, the common checks, the plan, the
//   run, the answer;
// - its place in a Session stream: the SessionRequest and SessionResponse fields of its types;
// - its metrics: rpc_methods() names every method of the service, algorithm_names() every
//   algorithm of the rows.
// The server refuses to start when a method of the service has no row, and
// tests/server/rpc_table_test.cpp holds the descriptor, the rows, the Session, the metrics, the
// bad-input table and the clients to each other. docs/design.md, "Adding a dynamics RPC", lists
// the files a new one touches.
#pragma once

#include <google/protobuf/descriptor.h>
#include <grpcpp/support/status.h>

#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "engine/algorithms/aba.hpp"
#include "engine/algorithms/aba_derivatives.hpp"
#include "engine/algorithms/centroidal.hpp"
#include "engine/algorithms/closed_chain_inverse_dynamics.hpp"
#include "engine/algorithms/constrained_dynamics.hpp"
#include "engine/algorithms/constrained_dynamics_derivatives.hpp"
#include "engine/algorithms/contact_dynamics.hpp"
#include "engine/algorithms/coriolis_matrix.hpp"
#include "engine/algorithms/crba.hpp"
#include "engine/algorithms/discrete_step.hpp"
#include "engine/algorithms/forward_dynamics_crba.hpp"
#include "engine/algorithms/lagrange_homogeneous.hpp"
#include "engine/algorithms/minverse.hpp"
#include "engine/algorithms/rnea_derivatives.hpp"
#include "engine/algorithms/rollout.hpp"
#include "engine/algorithms/simulate.hpp"
#include "server/compute/algorithms.hpp"
#include "server/services/dynamics_plans.hpp"
#include "torqued/v1/dynamics.pb.h"

namespace torqued::server {

// What every row has: its types, and the type of its plan. A plan is given the request's model
// (`entry`) and its `n` states (batch_size and q already checked against the model); it returns
// INVALID_ARGUMENT naming the field that does not fit, or sizes `response`, reserves its memory
// in `memory` and describes the work on the states in `work`.
template <typename RequestT, typename ResponseT>
struct BatchRpc {
  using Request = RequestT;
  using Response = ResponseT;
  using Plan = grpc::Status(const Planning& planning, const RegisteredModelPtr& entry, int n,
                            const Request* request, Response* response, PlannedWork& work,
                            Reservation& memory);
};

struct InverseDynamicsRpc : BatchRpc<v1::InverseDynamicsRequest, v1::InverseDynamicsResponse> {
  static constexpr Algorithm kRnea{"rnea", {}};
  static constexpr Algorithm kLagrangeHomogeneous{"lagrange_homogeneous", kHomogeneousWorkspaces};
  static constexpr Algorithm algorithms[] = {kRnea, kLagrangeHomogeneous};
  static Plan plan;
};

struct ForwardDynamicsRpc : BatchRpc<v1::ForwardDynamicsRequest, v1::ForwardDynamicsResponse> {
  static constexpr Algorithm kAba{"aba", kAbaWorkspaces};
  static constexpr Algorithm kCrba{"forward_dynamics_crba", kForwardDynamicsCrbaWorkspaces};
  static constexpr Algorithm kFactorization{"forward_dynamics_factorization", kAbaWorkspaces};
  static constexpr Algorithm algorithms[] = {kAba, kCrba, kFactorization};
  static Plan plan;
};

struct MassMatrixRpc : BatchRpc<v1::MassMatrixRequest, v1::MassMatrixResponse> {
  static constexpr Algorithm kCrba{"crba", kCrbaWorkspaces};
  static constexpr Algorithm kInverse{"mass_matrix_inverse", kCrbaWorkspaces | kMinverseWorkspaces};
  static constexpr Algorithm kLagrangeHomogeneous{"lagrange_homogeneous_mass_matrix",
                                                  kHomogeneousWorkspaces};
  static constexpr Algorithm kLagrangeHomogeneousInverse{
      "lagrange_homogeneous_mass_matrix_inverse", kHomogeneousWorkspaces | kMinverseWorkspaces};
  static constexpr Algorithm algorithms[] = {kCrba, kInverse, kLagrangeHomogeneous,
                                             kLagrangeHomogeneousInverse};
  static Plan plan;
};

struct NonlinearEffectsRpc : BatchRpc<v1::NonlinearEffectsRequest, v1::NonlinearEffectsResponse> {
  static constexpr Algorithm kNonlinearEffects{"nonlinear_effects", {}};
  static constexpr Algorithm algorithms[] = {kNonlinearEffects};
  static Plan plan;
};

struct GravityRpc : BatchRpc<v1::GravityRequest, v1::GravityResponse> {
  static constexpr Algorithm kGravity{"gravity", {}};
  static constexpr Algorithm algorithms[] = {kGravity};
  static Plan plan;
};

struct KinematicsRpc : BatchRpc<v1::KinematicsRequest, v1::KinematicsResponse> {
  static constexpr Algorithm kKinematics{"kinematics", {}};
  static constexpr Algorithm algorithms[] = {kKinematics};
  static Plan plan;
};

struct HybridDynamicsRpc : BatchRpc<v1::HybridDynamicsRequest, v1::HybridDynamicsResponse> {
  static constexpr Algorithm kHybridDynamics{"hybrid_dynamics", kAbaWorkspaces};
  static constexpr Algorithm algorithms[] = {kHybridDynamics};
  static Plan plan;
};

struct FloatingBaseInverseDynamicsRpc
    : BatchRpc<v1::FloatingBaseInverseDynamicsRequest, v1::FloatingBaseInverseDynamicsResponse> {
  static constexpr Algorithm kFloatingBaseInverseDynamics{"floating_base_inverse_dynamics",
                                                          kAbaWorkspaces};
  static constexpr Algorithm algorithms[] = {kFloatingBaseInverseDynamics};
  static Plan plan;
};

struct DerivativesRpc : BatchRpc<v1::DerivativesRequest, v1::DerivativesResponse> {
  static constexpr Algorithm kRneaDerivatives{"rnea_derivatives", kRneaDerivativesWorkspaces};
  static constexpr Algorithm kAbaDerivatives{"aba_derivatives", kAbaDerivativesWorkspaces};
  static constexpr Algorithm kConstrainedDynamicsDerivatives{
      "constrained_dynamics_derivatives", kConstrainedDynamicsDerivativesWorkspaces};
  static constexpr Algorithm algorithms[] = {kRneaDerivatives, kAbaDerivatives,
                                             kConstrainedDynamicsDerivatives};
  static Plan plan;
};

struct CoriolisMatrixRpc : BatchRpc<v1::CoriolisMatrixRequest, v1::CoriolisMatrixResponse> {
  static constexpr Algorithm kCoriolisMatrix{"coriolis_matrix", kCoriolisWorkspaces};
  static constexpr Algorithm algorithms[] = {kCoriolisMatrix};
  static Plan plan;
};

struct CentroidalRpc : BatchRpc<v1::CentroidalRequest, v1::CentroidalResponse> {
  static constexpr Algorithm kCentroidal{"centroidal", kCentroidalWorkspaces};
  static constexpr Algorithm algorithms[] = {kCentroidal};
  static Plan plan;
};

struct ConstrainedDynamicsRpc
    : BatchRpc<v1::ConstrainedDynamicsRequest, v1::ConstrainedDynamicsResponse> {
  static constexpr Algorithm kConstrainedDynamics{"constrained_dynamics",
                                                  kConstrainedDynamicsWorkspaces};
  static constexpr Algorithm kClosedChainInverseDynamics{"closed_chain_inverse_dynamics",
                                                         kClosedChainInverseDynamicsWorkspaces};
  static constexpr Algorithm algorithms[] = {kConstrainedDynamics, kClosedChainInverseDynamics};
  static Plan plan;
};

struct ContactDynamicsRpc : BatchRpc<v1::ContactDynamicsRequest, v1::ContactDynamicsResponse> {
  static constexpr Algorithm kContactDynamics{"contact_dynamics", kContactWorkspaces};
  static constexpr Algorithm algorithms[] = {kContactDynamics};
  static Plan plan;
};

struct ImpactRpc : BatchRpc<v1::ImpactRequest, v1::ImpactResponse> {
  static constexpr Algorithm kImpact{"impact", kContactWorkspaces};
  static constexpr Algorithm algorithms[] = {kImpact};
  static Plan plan;
};

struct SimulateRpc : BatchRpc<v1::SimulateRequest, v1::SimulateResponse> {
  static constexpr Algorithm kSimulate{"simulate", kSimulateWorkspaces};
  static constexpr Algorithm algorithms[] = {kSimulate};
  static Plan plan;
};

struct LinearizeRpc : BatchRpc<v1::LinearizeRequest, v1::LinearizeResponse> {
  static constexpr Algorithm kEulerStep{"euler_step", kStepWorkspaces};
  static constexpr Algorithm kRungeKuttaStep{"runge_kutta_step", kStepWorkspaces};
  static constexpr Algorithm algorithms[] = {kEulerStep, kRungeKuttaStep};
  static Plan plan;
};

struct RolloutRpc : BatchRpc<v1::RolloutRequest, v1::RolloutResponse> {
  static constexpr Algorithm kRollout{"rollout", kRolloutWorkspaces};
  static constexpr Algorithm algorithms[] = {kRollout};
  static Plan plan;
};

// The table, in the service's order.
using BatchRpcs =
    std::tuple<InverseDynamicsRpc, ForwardDynamicsRpc, MassMatrixRpc, NonlinearEffectsRpc,
               GravityRpc, KinematicsRpc, HybridDynamicsRpc, FloatingBaseInverseDynamicsRpc,
               DerivativesRpc, CoriolisMatrixRpc, CentroidalRpc, ConstrainedDynamicsRpc,
               ContactDynamicsRpc, ImpactRpc, SimulateRpc, LinearizeRpc, RolloutRpc>;

// Calls `visit(row)` for every row, in order.
template <typename Visit>
void for_each_batch_rpc(Visit&& visit) {
  std::apply([&](auto... row) { (visit(row), ...); }, BatchRpcs{});
}

// The row whose request type is `Request`.
template <typename Request, typename Rows = BatchRpcs>
struct RowTaking;
template <typename Request, typename Row, typename... Rest>
struct RowTaking<Request, std::tuple<Row, Rest...>>
    : std::conditional_t<std::is_same_v<typename Row::Request, Request>, std::type_identity<Row>,
                         RowTaking<Request, std::tuple<Rest...>>> {};
template <typename Request>
using BatchRpcTaking = typename RowTaking<Request>::type;

// The labels of every row's algorithms, each once, in the table's order (the metrics' series).
std::vector<std::string> algorithm_names();

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
