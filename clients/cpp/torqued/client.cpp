// torqued's C++ client (see client.hpp).
#include "torqued/client.hpp"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/support/client_interceptor.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <future>
#include <iterator>
#include <random>
#include <stdexcept>
#include <thread>
#include <type_traits>

#include "torqued/batch_split.hpp"
#include "torqued/unary_on_this_thread.hpp"

namespace torqued::client {

// The one allocator tag this build defines (see client.hpp).
namespace abi {
extern const int TORQUED_CLIENT_EIGEN_HEAP = 1;
}  // namespace abi

namespace {

using DoubleArray = google::protobuf::RepeatedField<double>;
using Clock = std::chrono::system_clock;

// The largest page ListModels returns (model.proto): the fewest calls.
constexpr int kListModelsPageSize = 1000;

// Copies a batch into a packed repeated field, row-major.
void put(const MatrixRef& m, DoubleArray* field) {
  field->Resize(static_cast<int>(m.size()), 0.0);
  Eigen::Map<Matrix>(field->mutable_data(), m.rows(), m.cols()) = m;
}

// `m`'s values after those `field` holds, row by row.
void append(const MatrixRef& m, DoubleArray* field) {
  const int at = field->size();
  field->Resize(at + static_cast<int>(m.size()), 0.0);
  Eigen::Map<Matrix>(field->mutable_data() + at, m.rows(), m.cols()) = m;
}

// A flat N × k array as an (N, k) matrix.
Matrix to_matrix(const DoubleArray& values, std::uint32_t states) {
  if (states == 0 || values.empty()) return Matrix(states, 0);
  return Eigen::Map<const Matrix>(values.data(), states, values.size() / states);
}

// A flat N × rows × cols array as N matrices; `rows` 0 means square blocks.
Matrices to_matrices(const DoubleArray& values, std::uint32_t states, Eigen::Index rows = 0) {
  Matrices out;
  if (states == 0 || values.empty()) return out;
  const Eigen::Index per_state = values.size() / states;
  if (rows == 0) rows = std::llround(std::sqrt(static_cast<double>(per_state)));
  const Eigen::Index cols = per_state / rows;
  out.reserve(states);
  for (std::uint32_t s = 0; s < states; ++s) {
    out.emplace_back(Eigen::Map<const Matrix>(values.data() + s * per_state, rows, cols));
  }
  return out;
}

// The step of a Linearize or Rollout request: dt, integrator, actuation, constraints and gains.
template <typename Options, typename Request>
void put_step(const Options& options, Request& request) {
  request.set_dt(options.dt);
  request.set_integrator(options.integrator);
  request.mutable_actuation()->set_kind(options.actuation);
  for (const std::string& joint : options.actuated_joints) {
    request.mutable_actuation()->add_joints(joint);
  }
  request.mutable_constraints()->Add(options.constraints.begin(), options.constraints.end());
  request.mutable_phases()->Add(options.phases.begin(), options.phases.end());
  if (!options.constraints.empty() || !options.phases.empty()) {
    *request.mutable_gains() = options.gains;
  }
  if (options.friction_cone) *request.mutable_friction_cone() = *options.friction_cone;
}

// Rollout `rollout`'s (0 for Linearize) values per knot, as the answer's layout places them; none
// when the call had neither phases nor a cone.
template <typename Response>
std::optional<KnotValues> knot_values(const Response& response, int knots, Eigen::Index nv,
                                      const std::optional<v1::FrictionCone>& cone, int rollout) {
  const v1::KnotLayout& layout = response.layout();
  if (layout.multipliers_at().empty()) return std::nullopt;
  const auto& lambda_at = layout.multipliers_at();
  const auto& cones_at = layout.cones_at();
  const Eigen::Index nu = response.nu();
  const Eigen::Index cone_values = cone ? 1 + (cone->faces() == 0 ? 4 : cone->faces()) : 1;
  KnotValues out;
  // Knot k's rows of `values` (`width` values each), each rollout's after the ones before.
  const auto rows_of = [&](const DoubleArray& values, const auto& offsets, Eigen::Index width,
                           int k) {
    const std::int64_t start = std::int64_t{rollout} * offsets[knots] * width;
    const Eigen::Index rows = static_cast<Eigen::Index>(offsets[k + 1] - offsets[k]);
    return Eigen::Map<const Matrix>(values.data() + start + offsets[k] * width, rows, width);
  };
  for (int k = 0; k < knots; ++k) {
    if (!response.multipliers().empty()) {
      out.multipliers.emplace_back(rows_of(response.multipliers(), lambda_at, 1, k).col(0));
    }
    if constexpr (std::is_same_v<Response, v1::LinearizeResponse>) {
      if (!response.dmultipliers_dq().empty()) {
        out.dmultipliers_dq.emplace_back(rows_of(response.dmultipliers_dq(), lambda_at, nv, k));
        out.dmultipliers_dv.emplace_back(rows_of(response.dmultipliers_dv(), lambda_at, nv, k));
        out.dmultipliers_dtau.emplace_back(rows_of(response.dmultipliers_dtau(), lambda_at, nv, k));
      }
    }
    if (!response.friction_cones().empty()) {
      const auto residuals = rows_of(response.friction_cones(), cones_at, 1, k);
      out.friction_cones.emplace_back(
          Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
              residuals.data(), residuals.rows() / cone_values, cone_values));
    }
    if (!response.dfriction_cones_dx().empty()) {
      out.dfriction_cones_dx.emplace_back(
          rows_of(response.dfriction_cones_dx(), cones_at, 2 * nv, k));
      out.dfriction_cones_du.emplace_back(rows_of(response.dfriction_cones_du(), cones_at, nu, k));
    }
  }
  std::int64_t at = 0;
  for (const std::uint32_t k : layout.touchdown_knots()) {
    at += static_cast<std::int64_t>(lambda_at[k + 1] - lambda_at[k]);
  }
  at *= rollout;
  for (const std::uint32_t k : layout.touchdown_knots()) {
    const auto rows = static_cast<Eigen::Index>(lambda_at[k + 1] - lambda_at[k]);
    out.impulses[static_cast<int>(k)] =
        Eigen::Map<const Eigen::VectorXd>(response.impulses().data() + at, rows);
    at += rows;
  }
  for (const v1::PhaseRows& phase : layout.phases()) {
    out.phase_rows.emplace_back(phase.rows().begin(), phase.rows().end());
  }
  return out;
}

// Fx and Fu of each knot's Euler step from a STEP_JACOBIANS_VELOCITY_ROWS answer: the v⁺ rows
// as they came, the q⁺ rows from them and the blocks of J_q and J_w (StepJacobians in
// dynamics.proto): semi-implicit, ∂q⁺/∂x = J_q [I 0] + dt J_w ∂v⁺/∂x, ∂q⁺/∂u = dt J_w ∂v⁺/∂u;
// explicit, ∂q⁺/∂x = [J_q  dt J_w], ∂q⁺/∂u = 0; J_q and J_w are 1 on 1-DOF joints.
// Linearize's knots and Rollout's steps alike: `knots` steps of nv DOFs.
template <typename Response>
void assemble_euler_step_jacobians(const Response& response, std::uint32_t knots, Eigen::Index nv,
                                   double dt, bool explicit_step, Matrices& fx, Matrices& fu) {
  if (knots == 0) return;
  const Eigen::Index nx = 2 * nv, nu = response.nu();
  Eigen::Index block_values = 0;
  for (const v1::DofBlock& block : response.integration_blocks()) {
    block_values += Eigen::Index{block.dofs()} * block.dofs();
  }
  fx.assign(knots, Matrix(nx, nx));
  fu.assign(knots, Matrix(nx, nu));
  for (std::uint32_t k = 0; k < knots; ++k) {
    const Eigen::Map<const Matrix> dv_dx(response.dv_next_dx().data() + k * nv * nx, nv, nx);
    const Eigen::Map<const Matrix> dv_du(response.dv_next_du().data() + k * nv * nu, nv, nu);
    Matrix& x = fx[k];
    Matrix& c = fu[k];
    x.bottomRows(nv) = dv_dx;
    c.bottomRows(nv) = dv_du;
    if (explicit_step) {
      x.topRows(nv).setZero();
      x.topLeftCorner(nv, nv).diagonal().setOnes();
      x.topRightCorner(nv, nv).diagonal().setConstant(dt);
      c.topRows(nv).setZero();
    } else {
      x.topRows(nv) = dt * dv_dx;
      x.topLeftCorner(nv, nv).diagonal().array() += 1.0;
      c.topRows(nv) = dt * dv_du;
    }
    const double* jq = response.integrate_dq().data() + k * block_values;
    const double* jw = response.integrate_dw().data() + k * block_values;
    for (const v1::DofBlock& block : response.integration_blocks()) {
      const Eigen::Index first = block.first_dof(), size = block.dofs();
      const Eigen::Map<const Matrix> dq(jq, size, size);
      const Matrix dw = dt * Eigen::Map<const Matrix>(jw, size, size);
      jq += size * size;
      jw += size * size;
      if (explicit_step) {
        x.block(first, first, size, size) = dq;
        x.block(first, nv + first, size, size) = dw;
      } else {
        x.middleRows(first, size).noalias() = dw * dv_dx.middleRows(first, size);
        x.block(first, first, size, size) += dq;
        c.middleRows(first, size).noalias() = dw * dv_du.middleRows(first, size);
      }
    }
  }
}

void put_contact_solver(const ContactSolverOptions& in, v1::ContactSolverOptions* out) {
  if (in.tolerance) out->set_tolerance(*in.tolerance);
  if (in.max_iterations) out->set_max_iterations(*in.max_iterations);
  if (in.slip_velocity) out->set_slip_velocity(*in.slip_velocity);
}

void put_contacts(const std::vector<PointContact>& in,
                  google::protobuf::RepeatedPtrField<v1::PointContact>* out) {
  for (const PointContact& c : in) {
    v1::PointContact* contact = out->Add();
    contact->set_frame(c.frame);
    contact->mutable_point()->Add(c.point.data(), c.point.data() + 3);
    contact->mutable_normal()->Add(c.normal.data(), c.normal.data() + 3);
    contact->set_friction(c.friction);
  }
}

// The per-state solver results of ContactDynamics and Impact, after `velocities` and `forces`.
template <typename Response>
ContactResult contact_result(const Response& response, const DoubleArray& velocities,
                             const DoubleArray& forces) {
  const std::uint32_t states = response.batch_size();
  const int contacts = states == 0 ? 0 : response.modes_size() / static_cast<int>(states);
  ContactResult result{
      to_matrix(velocities, states),
      to_matrices(forces, states, contacts),
      {},
      {},
      {response.iterations().begin(), response.iterations().end()},
      Eigen::Map<const Eigen::VectorXd>(response.residual().data(), response.residual_size())};
  for (std::uint32_t s = 0; s < states; ++s) {
    std::vector<v1::ContactMode>& modes = result.modes.emplace_back();
    for (int c = 0; c < contacts; ++c) {
      modes.push_back(static_cast<v1::ContactMode>(response.modes(s * contacts + c)));
    }
    result.status.push_back(static_cast<v1::ContactSolverStatus>(response.status(s)));
  }
  return result;
}

// Backoff waits are spread over [50%, 100%] of the nominal wait.
std::chrono::nanoseconds jittered(std::chrono::nanoseconds wait) {
  thread_local std::mt19937_64 rng(std::random_device{}());
  std::uniform_real_distribution<double> fraction(0.5, 1.0);
  return std::chrono::nanoseconds(static_cast<std::int64_t>(wait.count() * fraction(rng)));
}

}  // namespace

Error::Error(grpc::StatusCode code, const std::string& message)
    : std::runtime_error(status_code_name(code) + ": " + message), code_(code), message_(message) {}

std::string status_code_name(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "CODE_" + std::to_string(static_cast<int>(code));
  }
}

namespace {

// Adds "authorization: Bearer <token>" to every call of a channel. An interceptor rather than
// call credentials: gRPC sends call credentials only over TLS, and a token may also travel over
// plaintext to a server behind a TLS-terminating proxy.
class BearerToken final : public grpc::experimental::Interceptor {
 public:
  explicit BearerToken(std::string header) : header_(std::move(header)) {}
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->emplace("authorization", header_);
    }
    methods->Proceed();
  }

 private:
  std::string header_;
};

class BearerTokenFactory final : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit BearerTokenFactory(const std::string& token) : header_("Bearer " + token) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo*) override {
    return new BearerToken(header_);
  }

 private:
  std::string header_;
};

}  // namespace

std::shared_ptr<grpc::Channel> make_channel(const ClientOptions& options) {
  grpc::ChannelArguments args;
  args.SetLoadBalancingPolicyName(options.load_balancing_policy);
  args.SetMaxReceiveMessageSize(options.max_message_bytes);
  args.SetMaxSendMessageSize(options.max_message_bytes);
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (options.tls) {
    credentials = grpc::SslCredentials(
        {options.tls->root_certificates, options.tls->private_key, options.tls->certificate_chain});
    if (!options.tls->server_name_override.empty()) {
      args.SetSslTargetNameOverride(options.tls->server_name_override);
    }
  }
  std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> interceptors;
  if (!options.token.empty()) {
    interceptors.push_back(std::make_unique<BearerTokenFactory>(options.token));
  }
  return grpc::experimental::CreateCustomChannelWithInterceptors(options.target, credentials, args,
                                                                 std::move(interceptors));
}

Client::Client(ClientOptions options) : Client(make_channel(options), options) {}

Client::Client(std::shared_ptr<grpc::Channel> channel, ClientOptions options)
    : options_(std::move(options)),
      channel_(std::move(channel)),
      models_(v1::ModelService::NewStub(channel_)),
      dynamics_(v1::DynamicsService::NewStub(channel_)),
      control_(v1::ControlService::NewStub(channel_)),
      health_(grpc::health::v1::Health::NewStub(channel_)) {}

Clock::time_point Client::deadline_of(const CallOptions& call) const {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(call.deadline.value_or(options_.deadline));
}

template <typename Rpc>
grpc::Status Client::call_with_retries(Clock::time_point deadline, Rpc rpc) {
  std::chrono::nanoseconds backoff = options_.initial_backoff;
  for (int attempt = 1;; ++attempt) {
    grpc::ClientContext context;
    context.set_deadline(deadline);
    grpc::Status status = rpc(&context);
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE &&
        status.error_code() != grpc::StatusCode::CANCELLED) {
      return status;
    }
    const std::chrono::nanoseconds wait = jittered(backoff);
    if (attempt >= options_.max_attempts || Clock::now() + wait >= deadline) {
      return {status.error_code(), status.error_message() + " (after " + std::to_string(attempt) +
                                       (attempt == 1 ? " attempt)" : " attempts)")};
    }
    // A synchronous client drives a reconnection only while it polls the channel (otherwise
    // gRPC's backup poller notices every 5 s), and waits out gRPC's own reconnection backoff
    // first: reset that backoff and wait on the channel, so that a server that came back is
    // connected by the next attempt.
    grpc::experimental::ChannelResetConnectionBackoff(channel_.get());
    const Clock::time_point next_attempt = Clock::now() + wait;
    channel_->WaitForConnected(next_attempt);
    std::this_thread::sleep_until(next_attempt);
    backoff = std::min(options_.max_backoff, std::chrono::nanoseconds(static_cast<std::int64_t>(
                                                 backoff.count() * options_.backoff_multiplier)));
  }
}

template <typename Rpc>
void Client::call(const CallOptions& call, Rpc rpc) {
  const grpc::Status status = call_with_retries(deadline_of(call), rpc);
  if (!status.ok()) throw Error(status.error_code(), status.error_message());
}

template <typename Rpc>
void Client::call_model(const std::string& model_id, const CallOptions& call, Rpc rpc) {
  const Clock::time_point deadline = deadline_of(call);
  grpc::Status status = call_with_retries(deadline, rpc);
  std::optional<v1::RegisterModelRequest> request;
  if (status.error_code() == grpc::StatusCode::NOT_FOUND && options_.reregister) {
    const std::lock_guard lock(registered_mutex_);
    if (auto it = registered_.find(model_id); it != registered_.end()) request = it->second;
  }
  // Under round_robin a registration and the retry that follows it may land on different
  // replicas (with two, strictly alternating picks would send every retry to the replica that
  // lacks the model), so round r registers r times before retrying: the registrations spread
  // over the picks until every replica the retries reach holds the model.
  for (int round = 1; request && status.error_code() == grpc::StatusCode::NOT_FOUND &&
                      round <= options_.max_attempts;
       ++round) {
    for (int k = 0; k < round && status.error_code() == grpc::StatusCode::NOT_FOUND; ++k) {
      v1::RegisterModelResponse response;
      const grpc::Status registered = call_with_retries(deadline, [&](grpc::ClientContext* c) {
        return models_->RegisterModel(c, *request, &response);
      });
      if (!registered.ok()) status = registered;
    }
    if (status.error_code() == grpc::StatusCode::NOT_FOUND)
      status = call_with_retries(deadline, rpc);
  }
  if (!status.ok()) throw Error(status.error_code(), status.error_message());
}

template <typename Request, typename Response>
void Client::call_batch(const std::string& model_id, const CallOptions& call, Request& request,
                        Response* response,
                        grpc::Status (v1::DynamicsService::Stub::*method)(grpc::ClientContext*,
                                                                          const Request&,
                                                                          Response*)) {
  const std::vector<StateRange> ranges =
      split_states(request.batch_size(), options_.split_parts, options_.split_min_states);
  std::vector<Request> requests(ranges.size());
  std::vector<google::protobuf::Message*> request_parts;
  for (Request& part : requests) request_parts.push_back(&part);
  if (ranges.size() < 2 || !split_request(request, ranges, request_parts)) {
    call_model(model_id, call, [&](grpc::ClientContext* c) {
      return (dynamics_.get()->*method)(c, request, response);
    });
    return;
  }
  std::vector<Response> responses(ranges.size());
  const auto run_part = [&](std::size_t k) {
    call_model(model_id, call, [&](grpc::ClientContext* c) {
      return (dynamics_.get()->*method)(c, requests[k], &responses[k]);
    });
  };
  std::vector<std::future<void>> others;
  for (std::size_t k = 1; k < ranges.size(); ++k) {
    others.push_back(std::async(std::launch::async, run_part, k));
  }
  // Every part is waited for before anything is thrown (they reference this frame); the error
  // of the earliest failed part is the call's.
  std::exception_ptr error;
  try {
    run_part(0);
  } catch (...) {
    error = std::current_exception();
  }
  for (std::future<void>& part : others) {
    try {
      part.get();
    } catch (...) {
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
  std::vector<google::protobuf::Message*> response_parts;
  for (Response& part : responses) response_parts.push_back(&part);
  join_responses(response_parts, response);
}

v1::Model Client::register_model(const v1::RegisterModelRequest& request, const CallOptions& call) {
  v1::RegisterModelResponse response;
  this->call(call,
             [&](grpc::ClientContext* c) { return models_->RegisterModel(c, request, &response); });
  const std::lock_guard lock(registered_mutex_);
  registered_[response.model().id()] = request;
  return response.model();
}

v1::Model Client::get_model(const std::string& model_id, const CallOptions& call) {
  v1::GetModelRequest request;
  request.set_model_id(model_id);
  v1::Model response;
  call_model(model_id, call,
             [&](grpc::ClientContext* c) { return models_->GetModel(c, request, &response); });
  return response;
}

std::vector<v1::ModelSummary> Client::list_models(const CallOptions& call) {
  const Clock::time_point deadline = deadline_of(call);
  std::vector<v1::ModelSummary> models;
  v1::ListModelsRequest request;
  request.set_page_size(kListModelsPageSize);
  do {
    v1::ListModelsResponse response;
    const grpc::Status status = call_with_retries(deadline, [&](grpc::ClientContext* c) {
      return models_->ListModels(c, request, &response);
    });
    if (!status.ok()) throw Error(status.error_code(), status.error_message());
    models.insert(models.end(), response.models().begin(), response.models().end());
    request.set_page_token(response.next_page_token());
  } while (!request.page_token().empty());
  return models;
}

void Client::delete_model(const std::string& model_id, const CallOptions& call) {
  {
    const std::lock_guard lock(registered_mutex_);
    registered_.erase(model_id);
  }
  v1::DeleteModelRequest request;
  request.set_model_id(model_id);
  v1::DeleteModelResponse response;
  this->call(call,
             [&](grpc::ClientContext* c) { return models_->DeleteModel(c, request, &response); });
}

grpc::health::v1::HealthCheckResponse::ServingStatus Client::health(const std::string& service,
                                                                    const CallOptions& call) {
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  this->call(call, [&](grpc::ClientContext* c) { return health_->Check(c, request, &response); });
  return response.status();
}

Matrix Client::inverse_dynamics(const std::string& model_id, const MatrixRef& q, const MatrixRef& v,
                                const MatrixRef& a, const InverseDynamicsOptions& options,
                                const CallOptions& call) {
  v1::InverseDynamicsRequest request;
  request.set_model_id(model_id);
  request.set_batch_size(static_cast<std::uint32_t>(q.rows()));
  put(q, request.mutable_q());
  put(v, request.mutable_v());
  put(a, request.mutable_a());
  put(options.external_forces, request.mutable_external_forces());
  request.set_algorithm(options.algorithm);
  v1::InverseDynamicsResponse response;
  call_batch(model_id, call, request, &response, &v1::DynamicsService::Stub::InverseDynamics);
  return to_matrix(response.tau(), response.batch_size());
}

ForwardDynamicsResult Client::forward_dynamics(const std::string& model_id, const MatrixRef& q,
                                               const MatrixRef& v, const MatrixRef& tau,
                                               const ForwardDynamicsOptions& options,
                                               const CallOptions& call) {
  v1::ForwardDynamicsRequest request;
  request.set_model_id(model_id);
  request.set_batch_size(static_cast<std::uint32_t>(q.rows()));
  put(q, request.mutable_q());
  put(v, request.mutable_v());
  put(tau, request.mutable_tau());
  put(options.external_forces, request.mutable_external_forces());
  request.set_algorithm(options.algorithm);
  v1::ForwardDynamicsResponse response;
  call_batch(model_id, call, request, &response, &v1::DynamicsService::Stub::ForwardDynamics);
  return {to_matrix(response.a(), response.batch_size()), response.algorithm()};
}

MassMatrixResult Client::mass_matrix(const std::string& model_id, const MatrixRef& q,
                                     const MassMatrixOptions& options, const CallOptions& call) {
  v1::MassMatrixRequest request;
  request.set_model_id(model_id);
  request.set_batch_size(static_cast<std::uint32_t>(q.rows()));
  put(q, request.mutable_q());
  request.set_inverse(options.inverse);
  request.set_algorithm(options.algorithm);
  v1::MassMatrixResponse response;
  call_batch(model_id, call, request, &response, &v1::DynamicsService::Stub::MassMatrix);
  return {to_matrices(response.mass_matrix(), response.batch_size()),
          to_matrices(response.inverse(), response.batch_size())};
}

Matrix Client::nonlinear_effects(const std::string& model_id, const MatrixRef& q,
                                 const MatrixRef& v, const CallOptions& call) {
  v1::NonlinearEffectsRequest request;
  request.set_model_id(model_id);
  request.set_batch_size(static_cast<std::uint32_t>(q.rows()));
  put(q, request.mutable_q());
  put(v, request.mutable_v());
  v1::NonlinearEffectsResponse response;
  call_batch(model_id, call, request, &response, &v1::DynamicsService::Stub::NonlinearEffects);
  return to_matrix(response.tau(), response.batch_size());
}

Matrix Client::gravity(const std::string& model_id, const MatrixRef& q, const CallOptions& call) {
  v1::GravityRequest request;
  request.set_model_id(model_id);
  request.set_batch_size(static_cast<std::uint32_t>(q.rows()));
  put(q, request.mutable_q());
  v1::GravityResponse response;
  call_batch(model_id, call, request, &response, &v1::DynamicsService::Stub::Gravity);
  return to_matrix(response.tau(), response.batch_size());
}

KinematicsResult Client::kinematics(const std::string& model_id, const MatrixRef& q,
                                    const MatrixRef& v, const KinematicsOptions& options,
                                    const CallOptions& call) {
  v1::KinematicsRequest request;
  request.set_model_id(model_id);
  request.set_batch_size(static_cast<std::uint32_t>(q.rows()));
  put(q, request.mutable_q());
  put(v, request.mutable_v());
  for (const std::string& f : options.frames) request.add_frames(f);
  request.set_reference(options.reference);
  request.set_jacobians(options.jacobians);
  v1::KinematicsResponse response;
  call_batch(model_id, call, request, &response, &v1::DynamicsService::Stub::Kinematics);
  const std::uint32_t states = response.batch_size();
  const Eigen::Index frames = response.frames_size();
  KinematicsResult result;
  result.frames.assign(response.frames().begin(), response.frames().end());
  result.positions = to_matrices(response.positions(), states, frames);
  result.velocities = to_matrices(response.velocities(), states, frames);
  using RowMajor3 = Eigen::Matrix<double, 3, 3, Eigen::RowMajor>;
  const Matrices jacobians = to_matrices(response.jacobians(), states, frames * 6);
  for (std::uint32_t s = 0; s < states; ++s) {
    std::vector<Eigen::Matrix3d>& rotations = result.rotations.emplace_back();
    for (Eigen::Index f = 0; f < frames; ++f) {
      rotations.emplace_back(
          Eigen::Map<const RowMajor3>(response.rotations().data() + 9 * (s * frames + f)));
    }
    if (jacobians.empty()) continue;
    Matrices& per_frame = result.jacobians.emplace_back();
    for (Eigen::Index f = 0; f < frames; ++f) {
      per_frame.emplace_back(jacobians[s].middleRows(6 * f, 6));
    }
  }
  return result;
}

AccelerationsAndForces Client::hybrid_dynamics(const std::string& model_id, const MatrixRef& q,
                                               const MatrixRef& v,
                                               const std::vector<v1::DofInput>& inputs,
                                               const MatrixRef& a, const MatrixRef& tau,
                                               const Matrix& external_forces,
                                               const CallOptions& call) {
  v1::HybridDynamicsRequest request;
  request.set_model_id(model_id);
  request.set_batch_size(static_cast<std::uint32_t>(q.rows()));
  put(q, request.mutable_q());
  put(v, request.mutable_v());
  for (const v1::DofInput input : inputs) request.add_inputs(input);
  put(a, request.mutable_a());
  put(tau, request.mutable_tau());
  put(external_forces, request.mutable_external_forces());
  v1::HybridDynamicsResponse response;
  call_batch(model_id, call, request, &response, &v1::DynamicsService::Stub::HybridDynamics);
  return {to_matrix(response.a(), response.batch_size()),
          to_matrix(response.tau(), response.batch_size())};
}

AccelerationsAndForces Client::floating_base_inverse_dynamics(
    const std::string& model_id, const MatrixRef& q, const MatrixRef& v, const MatrixRef& a,
    const Matrix& external_forces, const CallOptions& call) {
  v1::FloatingBaseInverseDynamicsRequest request;
  request.set_model_id(model_id);
  request.set_batch_size(static_cast<std::uint32_t>(q.rows()));
  put(q, request.mutable_q());
  put(v, request.mutable_v());
  put(a, request.mutable_a());
  put(external_forces, request.mutable_external_forces());
  v1::FloatingBaseInverseDynamicsResponse response;
  call_batch(model_id, call, request, &response,
             &v1::DynamicsService::Stub::FloatingBaseInverseDynamics);
  return {to_matrix(response.a(), response.batch_size()),
          to_matrix(response.tau(), response.batch_size())};
}

DerivativesResult Client::derivatives(const std::string& model_id, v1::DerivativesOf of,
                                      const MatrixRef& q, const MatrixRef& v, const MatrixRef& u,
                                      const Matrix& external_forces,
                                      const std::vector<v1::Constraint>& constraints,
                                      const v1::BaumgarteGains& gains, const CallOptions& call) {
  v1::DerivativesRequest request;
  request.set_model_id(model_id);
  request.set_batch_size(static_cast<std::uint32_t>(q.rows()));
  request.set_of(of);
  put(q, request.mutable_q());
  put(v, request.mutable_v());
  put(u, of == v1::DERIVATIVES_OF_INVERSE_DYNAMICS ? request.mutable_a() : request.mutable_tau());
  put(external_forces, request.mutable_external_forces());
  request.mutable_constraints()->Add(constraints.begin(), constraints.end());
  if (gains.position() != 0.0 || gains.velocity() != 0.0) *request.mutable_gains() = gains;
  v1::DerivativesResponse response;
  call_batch(model_id, call, request, &response, &v1::DynamicsService::Stub::Derivatives);
  const std::uint32_t states = response.batch_size();
  const Eigen::Index rows = response.multipliers_size() / std::max<std::uint32_t>(states, 1);
  return {to_matrices(response.d_dq(), states),
          to_matrices(response.d_dv(), states),
          to_matrices(response.d_du(), states),
          to_matrix(response.multipliers(), states),
          to_matrices(response.dmultipliers_dq(), states, rows),
          to_matrices(response.dmultipliers_dv(), states, rows),
          to_matrices(response.dmultipliers_dtau(), states, rows),
          {response.rows().begin(), response.rows().end()}};
}

Matrices Client::coriolis_matrix(const std::string& model_id, const MatrixRef& q,
                                 const MatrixRef& v, const CallOptions& call) {
  v1::CoriolisMatrixRequest request;
  request.set_model_id(model_id);
  request.set_batch_size(static_cast<std::uint32_t>(q.rows()));
  put(q, request.mutable_q());
  put(v, request.mutable_v());
  v1::CoriolisMatrixResponse response;
  call_batch(model_id, call, request, &response, &v1::DynamicsService::Stub::CoriolisMatrix);
  return to_matrices(response.coriolis_matrix(), response.batch_size());
}

CentroidalResult Client::centroidal(const std::string& model_id, const MatrixRef& q,
                                    const MatrixRef& v, const CallOptions& call) {
  v1::CentroidalRequest request;
  request.set_model_id(model_id);
  request.set_batch_size(static_cast<std::uint32_t>(q.rows()));
  put(q, request.mutable_q());
  put(v, request.mutable_v());
  v1::CentroidalResponse response;
  call_batch(model_id, call, request, &response, &v1::DynamicsService::Stub::Centroidal);
  const std::uint32_t states = response.batch_size();
  return {to_matrix(response.com(), states), to_matrix(response.com_velocity(), states),
          to_matrices(response.com_jacobian(), states, 3), to_matrix(response.momentum(), states),
          to_matrices(response.momentum_matrix(), states, 6)};
}

ConstrainedDynamicsResult Client::constrained_dynamics(const std::string& model_id,
                                                       const MatrixRef& q, const MatrixRef& v,
                                                       const MatrixRef& a, const MatrixRef& tau,
                                                       const ConstrainedDynamicsOptions& options,
                                                       const CallOptions& call) {
  v1::ConstrainedDynamicsRequest request;
  request.set_model_id(model_id);
  request.set_batch_size(static_cast<std::uint32_t>(q.rows()));
  put(q, request.mutable_q());
  put(v, request.mutable_v());
  request.set_mode(options.mode);
  put(tau, request.mutable_tau());
  put(a, request.mutable_a());
  for (const v1::DofInput input : options.inputs) request.add_inputs(input);
  request.mutable_constraints()->Assign(options.constraints.begin(), options.constraints.end());
  *request.mutable_gains() = options.gains;
  v1::ConstrainedDynamicsResponse response;
  call_batch(model_id, call, request, &response, &v1::DynamicsService::Stub::ConstrainedDynamics);
  const std::uint32_t states = response.batch_size();
  return {to_matrix(response.a(), states),
          to_matrix(response.multipliers(), states),
          to_matrix(response.tau(), states),
          {response.rows().begin(), response.rows().end()}};
}

EchoResult Client::echo(const std::string& payload, const Eigen::VectorXd& values,
                        const CallOptions& call) {
  v1::EchoRequest request;
  request.set_payload(payload);
  request.mutable_values()->Add(values.data(), values.data() + values.size());
  v1::EchoResponse response;
  this->call(call, [&](grpc::ClientContext* c) { return dynamics_->Echo(c, request, &response); });
  return {response.payload(),
          Eigen::Map<const Eigen::VectorXd>(response.values().data(), response.values().size())};
}

ContactResult Client::contact_dynamics(const std::string& model_id, const MatrixRef& q,
                                       const MatrixRef& v, const MatrixRef& tau,
                                       const std::vector<PointContact>& contacts,
                                       const ContactSolverOptions& solver,
                                       const CallOptions& call) {
  v1::ContactDynamicsRequest request;
  request.set_model_id(model_id);
  request.set_batch_size(static_cast<std::uint32_t>(q.rows()));
  put(q, request.mutable_q());
  put(v, request.mutable_v());
  put(tau, request.mutable_tau());
  put_contacts(contacts, request.mutable_contacts());
  put_contact_solver(solver, request.mutable_solver());
  v1::ContactDynamicsResponse response;
  call_batch(model_id, call, request, &response, &v1::DynamicsService::Stub::ContactDynamics);
  return contact_result(response, response.a(), response.forces());
}

ContactResult Client::impact(const std::string& model_id, const MatrixRef& q, const MatrixRef& v,
                             const std::vector<PointContact>& contacts, double restitution,
                             const ContactSolverOptions& solver, const CallOptions& call) {
  v1::ImpactRequest request;
  request.set_model_id(model_id);
  request.set_batch_size(static_cast<std::uint32_t>(q.rows()));
  put(q, request.mutable_q());
  put(v, request.mutable_v());
  put_contacts(contacts, request.mutable_contacts());
  request.set_restitution(restitution);
  put_contact_solver(solver, request.mutable_solver());
  v1::ImpactResponse response;
  call_batch(model_id, call, request, &response, &v1::DynamicsService::Stub::Impact);
  return contact_result(response, response.v(), response.impulses());
}

SimulateResult Client::simulate(const std::string& model_id, const MatrixRef& q0,
                                const MatrixRef& v0, const SimulateOptions& options,
                                const CallOptions& call) {
  v1::SimulateRequest request;
  request.set_model_id(model_id);
  request.set_batch_size(static_cast<std::uint32_t>(q0.rows()));
  put(q0, request.mutable_q());
  put(v0, request.mutable_v());
  request.set_steps(options.steps);
  if (options.time_step) request.set_time_step(*options.time_step);
  request.set_integrator(options.integrator);
  put(options.tau, request.mutable_tau());
  request.mutable_ground()->set_height(options.ground_height);
  request.mutable_ground()->set_friction(options.ground_friction);
  request.mutable_ground()->set_restitution(options.ground_restitution);
  for (const ContactCandidate& c : options.candidates) {
    v1::ContactCandidate* candidate = request.add_candidates();
    candidate->set_frame(c.frame);
    candidate->mutable_point()->Add(c.point.data(), c.point.data() + 3);
  }
  if (options.contact_margin) request.set_contact_margin(*options.contact_margin);
  if (options.stabilization) request.set_stabilization(*options.stabilization);
  if (options.restitution_velocity) request.set_restitution_velocity(*options.restitution_velocity);
  put_contact_solver(options.solver, request.mutable_solver());
  v1::SimulateResponse response;
  call_batch(model_id, call, request, &response, &v1::DynamicsService::Stub::Simulate);
  const std::uint32_t states = response.batch_size();
  const Eigen::Index steps = response.steps();
  SimulateResult result{to_matrices(response.q(), states, steps),
                        to_matrices(response.v(), states, steps),
                        {},
                        {response.max_iterations().begin(), response.max_iterations().end()},
                        Eigen::Map<const Eigen::VectorXd>(response.max_residual().data(),
                                                          response.max_residual_size()),
                        {response.max_contacts().begin(), response.max_contacts().end()}};
  for (const int s : response.status()) {
    result.status.push_back(static_cast<v1::ContactSolverStatus>(s));
  }
  return result;
}

LinearizeResult Client::linearize(const std::string& model_id, const MatrixRef& q,
                                  const MatrixRef& v, const MatrixRef& u,
                                  const LinearizeOptions& options, const CallOptions& call) {
  v1::LinearizeRequest request;
  request.set_model_id(model_id);
  request.set_batch_size(static_cast<std::uint32_t>(q.rows()));
  put(q, request.mutable_q());
  put(v, request.mutable_v());
  put(u, request.mutable_u());
  put_step(options, request);
  request.set_continuous_derivatives(options.continuous_derivatives);
  // An Euler step's q⁺ rows follow from its v⁺ rows: those come, half the bytes of Fx and Fu.
  const bool velocity_rows = options.integrator != v1::INTEGRATOR_RK4;
  request.set_jacobians(velocity_rows ? v1::STEP_JACOBIANS_VELOCITY_ROWS
                                      : v1::STEP_JACOBIANS_DENSE);
  v1::LinearizeResponse response;
  call_batch(model_id, call, request, &response, &v1::DynamicsService::Stub::Linearize);
  const std::uint32_t knots = response.batch_size();
  const Eigen::Index nx = response.v_next_size() / std::max<std::uint32_t>(knots, 1) * 2;
  // With phases the rows change from knot to knot: λ is in `knots` only.
  const bool scheduled = !options.phases.empty();
  const Eigen::Index rows =
      scheduled ? 0 : response.multipliers_size() / std::max<std::uint32_t>(knots, 1);
  Matrices fx, fu;
  if (velocity_rows) {
    assemble_euler_step_jacobians(response, knots, nx / 2, options.dt,
                                  options.integrator == v1::INTEGRATOR_EXPLICIT_EULER, fx, fu);
  } else {
    fx = to_matrices(response.fx(), knots, nx);
    fu = to_matrices(response.fu(), knots, nx);
  }
  return {to_matrix(response.q_next(), knots),
          to_matrix(response.v_next(), knots),
          std::move(fx),
          std::move(fu),
          to_matrices(response.da_dq(), knots),
          to_matrices(response.da_dv(), knots),
          to_matrices(response.da_dtau(), knots),
          scheduled ? Matrix() : to_matrix(response.multipliers(), knots),
          scheduled ? Matrices() : to_matrices(response.dmultipliers_dq(), knots, rows),
          scheduled ? Matrices() : to_matrices(response.dmultipliers_dv(), knots, rows),
          scheduled ? Matrices() : to_matrices(response.dmultipliers_dtau(), knots, rows),
          {response.rows().begin(), response.rows().end()},
          knot_values(response, static_cast<int>(knots), nx / 2, options.friction_cone, 0)};
}

RolloutResult Client::rollout(const std::string& model_id, const MatrixRef& q0, const MatrixRef& v0,
                              const Matrices& u, const RolloutOptions& options,
                              const CallOptions& call) {
  v1::RolloutRequest request;
  request.set_model_id(model_id);
  request.set_batch_size(static_cast<std::uint32_t>(q0.rows()));
  put(q0, request.mutable_q());
  put(v0, request.mutable_v());
  request.set_knots(u.empty() ? 0 : static_cast<std::uint32_t>(u.front().rows()));
  for (const Matrix& controls : u) append(controls, request.mutable_u());
  put_step(options, request);
  put(options.q_nominal, request.mutable_q_nominal());
  put(options.v_nominal, request.mutable_v_nominal());
  for (const Matrix& gain : options.feedback) append(gain, request.mutable_feedback());
  request.set_jacobians(options.jacobians);
  // As linearize(): an Euler step's Fx and Fu come as their v⁺ rows and are assembled here.
  const bool velocity_rows = options.jacobians && options.integrator != v1::INTEGRATOR_RK4;
  if (velocity_rows) request.set_jacobian_layout(v1::STEP_JACOBIANS_VELOCITY_ROWS);
  for (const std::string& frame : options.frames) request.add_frames(frame);
  request.set_frame_jacobians(options.frame_jacobians);
  request.set_reference(options.reference);
  v1::RolloutResponse response;
  call_batch(model_id, call, request, &response, &v1::DynamicsService::Stub::Rollout);

  RolloutResult out;
  out.frames.assign(response.frames().begin(), response.frames().end());
  out.rows.assign(response.rows().begin(), response.rows().end());
  const auto rollouts = static_cast<int>(response.batch_size());
  const auto knots = static_cast<int>(response.knots());
  const auto nf = static_cast<int>(out.frames.size());
  const int states = knots + 1;
  // Rollout r's share of an array that holds as many values for each.
  const auto part = [&](const DoubleArray& all, int r) {
    DoubleArray values;
    if (all.empty()) return values;
    const int per_rollout = all.size() / rollouts;
    values.Add(all.begin() + r * per_rollout, all.begin() + (r + 1) * per_rollout);
    return values;
  };
  const Eigen::Index nx = 2 * (response.v_size() / std::max(rollouts * states, 1));
  // Every step's Fx and Fu, rollout by rollout, from the v⁺ rows.
  Matrices step_fx, step_fu;
  if (velocity_rows) {
    assemble_euler_step_jacobians(response, static_cast<std::uint32_t>(rollouts * knots), nx / 2,
                                  options.dt, options.integrator == v1::INTEGRATOR_EXPLICIT_EULER,
                                  step_fx, step_fu);
  }
  for (int r = 0; r < rollouts; ++r) {
    RolloutTrajectory t;
    t.steps = static_cast<int>(response.steps(r));
    t.error = response.status(r).message();
    t.q = to_matrix(part(response.q(), r), states);
    t.v = to_matrix(part(response.v(), r), states);
    t.u = to_matrix(part(response.u(), r), knots);
    if (velocity_rows) {
      const auto mine = [&](Matrices& steps) {
        return Matrices(std::make_move_iterator(steps.begin() + r * knots),
                        std::make_move_iterator(steps.begin() + (r + 1) * knots));
      };
      t.fx = mine(step_fx);
      t.fu = mine(step_fu);
      // Zeros past a diverged rollout's steps, as the full Jacobians come.
      for (int k = t.steps; k < knots; ++k) {
        t.fx[k].setZero();
        t.fu[k].setZero();
      }
    } else {
      t.fx = to_matrices(part(response.fx(), r), knots, nx);
      t.fu = to_matrices(part(response.fu(), r), knots, nx);
    }
    if (options.phases.empty()) t.multipliers = to_matrix(part(response.multipliers(), r), knots);
    t.knots = knot_values(response, knots, nx / 2, options.friction_cone, r);
    if (nf > 0) {
      t.frame_positions = to_matrices(part(response.frame_positions(), r), states, nf);
      const DoubleArray rotations = part(response.frame_rotations(), r);
      const DoubleArray jacobians = part(response.frame_jacobians(), r);
      const Eigen::Index jacobian_size = jacobians.size() / (states * nf);
      for (int s = 0; s < states; ++s) {
        std::vector<Eigen::Matrix3d>& at = t.frame_rotations.emplace_back();
        for (int f = 0; f < nf; ++f) {
          at.push_back(Eigen::Map<const Eigen::Matrix<double, 3, 3, Eigen::RowMajor>>(
              rotations.data() + 9 * (s * nf + f)));
        }
        if (jacobians.empty()) continue;
        Matrices& jac = t.frame_jacobians.emplace_back();
        for (int f = 0; f < nf; ++f) {
          jac.emplace_back(Eigen::Map<const Matrix>(jacobians.data() + jacobian_size * (s * nf + f),
                                                    6, jacobian_size / 6));
        }
      }
    }
    out.rollouts.push_back(std::move(t));
  }
  return out;
}

void copy_values(const MatrixRef& values, DoubleArray* field) { put(values, field); }

void warm_start(const SolveResult& solution, v1::SolveRequest& request) {
  put(solution.q, request.mutable_guess_q());
  put(solution.v, request.mutable_guess_v());
  put(solution.u, request.mutable_guess_u());
  const auto starts_at = [](const Matrix& states, const DoubleArray& start) {
    return states.rows() > 0 && states.cols() == start.size() &&
           states.row(0) == Eigen::Map<const Eigen::RowVectorXd>(start.data(), start.size());
  };
  request.set_guess_feasible(solution.feasible && starts_at(solution.q, request.q0()) &&
                             starts_at(solution.v, request.v0()));
}

SolveResult Client::solve(const v1::SolveRequest& request, const CallOptions& call) {
  v1::SolveResponse response;
  call_model(request.model_id(), call,
             [&](grpc::ClientContext* c) { return control_->Solve(c, request, &response); });
  const std::uint32_t knots = response.knots();
  return {to_matrix(response.q(), knots + 1),
          to_matrix(response.v(), knots + 1),
          to_matrix(response.u(), knots),
          to_matrices(response.feedback(), knots, response.nu()),
          response.stop_reason(),
          {response.iterations().begin(), response.iterations().end()},
          response.cost(),
          {response.cost_terms().begin(), response.cost_terms().end()},
          response.max_gap(),
          response.feasible(),
          response.solve_seconds()};
}

const std::vector<const google::protobuf::ServiceDescriptor*>& services() {
  static const std::vector<const google::protobuf::ServiceDescriptor*> all = {
      v1::Model::descriptor()->file()->FindServiceByName("ModelService"),
      v1::SessionRequest::descriptor()->file()->FindServiceByName("DynamicsService"),
      v1::SolveRequest::descriptor()->file()->FindServiceByName("ControlService")};
  return all;
}

const google::protobuf::MethodDescriptor* find_method(const std::string& name) {
  for (const google::protobuf::ServiceDescriptor* service : services()) {
    if (const google::protobuf::MethodDescriptor* method = service->FindMethodByName(name)) {
      return method;
    }
  }
  return nullptr;
}

Session::Session(v1::DynamicsService::Stub& stub, Clock::time_point deadline)
    : context_(std::make_unique<grpc::ClientContext>()) {
  context_->set_deadline(deadline);
  stream_ = stub.Session(context_.get());
}

Session::~Session() {
  if (stream_ == nullptr) return;
  context_->TryCancel();
  (void)stream_->Finish();
}

bool Session::write(const v1::SessionRequest& request) { return stream_->Write(request); }

bool Session::read(v1::SessionResponse* response) { return stream_->Read(response); }

void Session::writes_done() {
  if (writes_done_) return;
  writes_done_ = true;
  (void)stream_->WritesDone();
}

void Session::finish() {
  writes_done();
  // Finish() waits for the status, which the server sends after its last answer: answers left
  // unread would hold the stream's flow-control window shut.
  for (v1::SessionResponse unread; stream_->Read(&unread);) {
  }
  const grpc::Status status = stream_->Finish();
  stream_.reset();
  if (!status.ok()) throw Error(status.error_code(), status.error_message());
}

Session Client::session(const CallOptions& call) { return Session(*dynamics_, deadline_of(call)); }

Mpc::Mpc(v1::ControlService::Stub& stub, Clock::time_point deadline, const v1::MpcRequest& start)
    : context_(std::make_unique<grpc::ClientContext>()) {
  context_->set_deadline(deadline);
  stream_ = stub.Mpc(context_.get());
  try {
    first_ = tick(start);
  } catch (const Error&) {
    // The stream is ended before it is destroyed, as the destructor would.
    if (stream_ != nullptr) {
      context_->TryCancel();
      (void)stream_->Finish();
    }
    throw;
  }
}

Mpc::~Mpc() {
  if (stream_ == nullptr) return;
  context_->TryCancel();
  (void)stream_->Finish();
}

v1::MpcResponse Mpc::tick(v1::MpcRequest request) {
  if (stream_ == nullptr) throw Error(grpc::StatusCode::FAILED_PRECONDITION, "the stream ended");
  request.set_sequence(++sequence_);
  v1::MpcResponse response;
  if (!stream_->Write(request) || !stream_->Read(&response)) {
    const grpc::Status status = stream_->Finish();
    stream_.reset();
    throw Error(status.ok() ? grpc::StatusCode::UNKNOWN : status.error_code(),
                status.ok() ? "the stream ended without an answer" : status.error_message());
  }
  if (response.status().code() != 0) {
    throw Error(static_cast<grpc::StatusCode>(response.status().code()),
                response.status().message());
  }
  return response;
}

void Mpc::finish() {
  if (stream_ == nullptr) return;
  (void)stream_->WritesDone();
  for (v1::MpcResponse unread; stream_->Read(&unread);) {
  }
  const grpc::Status status = stream_->Finish();
  stream_.reset();
  if (!status.ok()) throw Error(status.error_code(), status.error_message());
}

Mpc Client::mpc(const v1::MpcRequest& start, const CallOptions& call) {
  return Mpc(*control_, deadline_of(call), start);
}

void Client::call_method(const google::protobuf::MethodDescriptor& method,
                         const google::protobuf::Message& request,
                         google::protobuf::Message* response, const CallOptions& call) {
  if (method.client_streaming() || method.server_streaming()) {
    throw std::invalid_argument(method.full_name() + " is a streaming method");
  }
  if (request.GetDescriptor() != method.input_type() ||
      response->GetDescriptor() != method.output_type()) {
    throw std::invalid_argument(method.full_name() + " takes " + method.input_type()->full_name() +
                                " and returns " + method.output_type()->full_name());
  }
  const std::string path = "/" + method.service()->full_name() + "/" + method.name();
  grpc::TemplatedGenericStub<google::protobuf::Message, google::protobuf::Message> stub(channel_);
  const auto rpc = [&](grpc::ClientContext* context) {
    return unary_on_this_thread(stub, context, path, request, response);
  };
  const google::protobuf::FieldDescriptor* id = method.input_type()->FindFieldByName("model_id");
  if (id != nullptr && id->type() == google::protobuf::FieldDescriptor::TYPE_STRING &&
      !id->is_repeated()) {
    const std::string model_id = request.GetReflection()->GetString(request, id);
    if (!model_id.empty()) return call_model(model_id, call, rpc);
  }
  this->call(call, rpc);
}

}  // namespace torqued::client
