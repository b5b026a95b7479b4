// Registration of every metric family and label child at start-up (Triton's one-constructor
// pattern), and the few recording paths that need more than an inline call.
#include "server/metrics.hpp"

#include <cmath>

namespace torqued::server {
namespace {

const char* const kCodeNames[] = {
    "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
    "DATA_LOSS", "UNAUTHENTICATED"};

// The metrics port's HTTP server (CivetWeb) serves one connection per thread, and prometheus-cpp
// starts 2 threads by default: two clients that connected and sent nothing held both for
// CivetWeb's default 30 s request timeout, and every scrape waited. A scrape takes milliseconds,
// so a client that has not sent its request within 5 s (half of Prometheus's default scrape
// timeout) is cut, and 8 threads leave room for scrapes beside a few stalled clients.
constexpr int kMetricsThreads = 8;
constexpr int kMetricsRequestTimeoutMs = 5000;

// Exponential buckets: start, start·factor, ... (count of them).
prometheus::Histogram::BucketBoundaries exponential(double start, double factor, int count) {
  prometheus::Histogram::BucketBoundaries b;
  for (int i = 0; i < count; ++i) b.push_back(start * std::pow(factor, i));
  return b;
}

}  // namespace

const char* algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::kRnea:
      return "rnea";
    case Algorithm::kLagrangeHomogeneous:
      return "lagrange_homogeneous";
    case Algorithm::kAba:
      return "aba";
    case Algorithm::kForwardDynamicsCrba:
      return "forward_dynamics_crba";
    case Algorithm::kForwardDynamicsFactorization:
      return "forward_dynamics_factorization";
    case Algorithm::kCrba:
      return "crba";
    case Algorithm::kMassMatrixInverse:
      return "mass_matrix_inverse";
    case Algorithm::kLagrangeHomogeneousMassMatrix:
      return "lagrange_homogeneous_mass_matrix";
    case Algorithm::kLagrangeHomogeneousMassMatrixInverse:
      return "lagrange_homogeneous_mass_matrix_inverse";
    case Algorithm::kNonlinearEffects:
      return "nonlinear_effects";
    case Algorithm::kGravity:
      return "gravity";
    case Algorithm::kKinematics:
      return "kinematics";
    case Algorithm::kHybridDynamics:
      return "hybrid_dynamics";
    case Algorithm::kFloatingBaseInverseDynamics:
      return "floating_base_inverse_dynamics";
    case Algorithm::kRneaDerivatives:
      return "rnea_derivatives";
    case Algorithm::kAbaDerivatives:
      return "aba_derivatives";
    case Algorithm::kCoriolisMatrix:
      return "coriolis_matrix";
    case Algorithm::kCentroidal:
      return "centroidal";
    case Algorithm::kConstrainedDynamics:
      return "constrained_dynamics";
    case Algorithm::kClosedChainInverseDynamics:
      return "closed_chain_inverse_dynamics";
    case Algorithm::kContactDynamics:
      return "contact_dynamics";
    case Algorithm::kImpact:
      return "impact";
    case Algorithm::kSimulate:
      return "simulate";
    case Algorithm::kCount:
      break;
  }
  return "";
}

const char* method_name(Method method) {
  switch (method) {
    case Method::kRegisterModel:
      return "RegisterModel";
    case Method::kGetModel:
      return "GetModel";
    case Method::kListModels:
      return "ListModels";
    case Method::kDeleteModel:
      return "DeleteModel";
    case Method::kInverseDynamics:
      return "InverseDynamics";
    case Method::kForwardDynamics:
      return "ForwardDynamics";
    case Method::kMassMatrix:
      return "MassMatrix";
    case Method::kNonlinearEffects:
      return "NonlinearEffects";
    case Method::kGravity:
      return "Gravity";
    case Method::kKinematics:
      return "Kinematics";
    case Method::kHybridDynamics:
      return "HybridDynamics";
    case Method::kFloatingBaseInverseDynamics:
      return "FloatingBaseInverseDynamics";
    case Method::kDerivatives:
      return "Derivatives";
    case Method::kCoriolisMatrix:
      return "CoriolisMatrix";
    case Method::kCentroidal:
      return "Centroidal";
    case Method::kConstrainedDynamics:
      return "ConstrainedDynamics";
    case Method::kEcho:
      return "Echo";
    case Method::kContactDynamics:
      return "ContactDynamics";
    case Method::kImpact:
      return "Impact";
    case Method::kSimulate:
      return "Simulate";
    case Method::kSession:
      return "Session";
    case Method::kCount:
      break;
  }
  return "";
}

const char* status_code_name(grpc::StatusCode code) {
  const int c = static_cast<int>(code);
  return c >= 0 && c < 17 ? kCodeNames[c] : "UNKNOWN";
}

const char* method_service(Method method) {
  return static_cast<int>(method) <= static_cast<int>(Method::kDeleteModel)
             ? "torqued.v1.ModelService"
             : "torqued.v1.DynamicsService";
}

Metrics::Metrics() = default;

Metrics::Metrics(const std::string& address, int port)
    : enabled_(true), registry_(std::make_shared<prometheus::Registry>()) {
  auto& started = prometheus::BuildCounter()
                      .Name("grpc_server_started_total")
                      .Help("Total number of RPCs started on the server.")
                      .Register(*registry_);
  auto& handled = prometheus::BuildCounter()
                      .Name("grpc_server_handled_total")
                      .Help("Total number of RPCs completed on the server, regardless of success.")
                      .Register(*registry_);
  auto& handling = prometheus::BuildHistogram()
                       .Name("grpc_server_handling_seconds")
                       .Help("Time from the start of an RPC to its completion, seconds.")
                       .Register(*registry_);
  // 10 µs to ~42 s in steps of 2x: unary calls on a LAN take tens of microseconds.
  const auto rpc_buckets = exponential(10e-6, 2.0, 23);
  for (int m = 0; m < static_cast<int>(Method::kCount); ++m) {
    const prometheus::Labels labels = {
        {"grpc_service", method_service(Method(m))},
        {"grpc_method", method_name(Method(m))},
        {"grpc_type", Method(m) == Method::kSession ? "bidi_stream" : "unary"}};
    methods_[m].started = &started.Add(labels);
    methods_[m].seconds = &handling.Add(labels, rpc_buckets);
    for (int c = 0; c < kCodes; ++c) {
      prometheus::Labels with_code = labels;
      with_code["grpc_code"] = kCodeNames[c];
      methods_[m].handled[c] = &handled.Add(with_code);
    }
  }
  auto& compute = prometheus::BuildHistogram()
                      .Name("torqued_engine_compute_seconds")
                      .Help("Engine time per chunk of a batch (one worker, no queueing), seconds.")
                      .Register(*registry_);
  // 1 µs to ~34 s.
  const auto compute_buckets = exponential(1e-6, 2.0, 26);
  for (int a = 0; a < static_cast<int>(Algorithm::kCount); ++a) {
    algorithms_[a] = &compute.Add({{"algorithm", algorithm_name(Algorithm(a))}}, compute_buckets);
  }
  batch_states_ = &prometheus::BuildHistogram()
                       .Name("torqued_batch_states")
                       .Help("States per dynamics request.")
                       .Register(*registry_)
                       .Add({}, exponential(1.0, 4.0, 10));
  queue_depth_ = &prometheus::BuildGauge()
                      .Name("torqued_executor_queue_depth")
                      .Help("Tasks waiting for an executor worker.")
                      .Register(*registry_)
                      .Add({});
  busy_workers_ = &prometheus::BuildGauge()
                       .Name("torqued_executor_busy_workers")
                       .Help("Executor workers running a task.")
                       .Register(*registry_)
                       .Add({});
  models_registered_ = &prometheus::BuildGauge()
                            .Name("torqued_models_registered")
                            .Help("Models this replica serves (repository and registered).")
                            .Register(*registry_)
                            .Add({});
  connections_open_ = &prometheus::BuildGauge()
                           .Name("torqued_connections_open")
                           .Help("Open connections to the gRPC port.")
                           .Register(*registry_)
                           .Add({});
  connections_closed_ = &prometheus::BuildCounter()
                             .Name("torqued_connections_closed_total")
                             .Help("Connections the server closed, by the limit they passed.")
                             .Register(*registry_);
  memory_reserved_ = &prometheus::BuildGauge()
                          .Name("torqued_memory_reserved_bytes")
                          .Help("Bytes of the memory budget held by calls and workspaces.")
                          .Register(*registry_)
                          .Add({});
  exposer_ = std::make_unique<prometheus::Exposer>(
      std::vector<std::string>{"listening_ports", address + ":" + std::to_string(port),
                               "num_threads", std::to_string(kMetricsThreads), "request_timeout_ms",
                               std::to_string(kMetricsRequestTimeoutMs)});
  exposer_->RegisterCollectable(registry_);
}

Metrics::~Metrics() = default;

int Metrics::port() const {
  if (!exposer_) return 0;
  const auto ports = exposer_->GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

void Metrics::connection_closed(const char* flag) {
  if (enabled_) connections_closed_->Add({{"limit", flag}}).Increment();
}

void Metrics::rpc_handled(Method method, grpc::StatusCode code, Clock::time_point start) {
  if (!enabled_) return;
  MethodMetrics& m = methods_[index(method)];
  const int c = static_cast<int>(code);
  m.handled[c >= 0 && c < kCodes ? c : static_cast<int>(grpc::StatusCode::UNKNOWN)]->Increment();
  m.seconds->Observe(seconds_since(start));
}

}  // namespace torqued::server
