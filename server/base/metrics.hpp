// Prometheus metrics of the service (prometheus-cpp's registry, served as Prometheus text on its
// own port by MetricsEndpoint, metrics.cpp). Every label combination is created up front, so the
// hot path only touches pre-made counters, gauges and histograms; with metrics off every
// recording call returns at once.
#pragma once

#include <grpcpp/support/status.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/base/rpc_methods.hpp"

namespace torqued::server {

// "OK", "INVALID_ARGUMENT", ... (the grpc_code label).
const char* status_code_name(grpc::StatusCode code);

using Clock = std::chrono::steady_clock;

class MetricsEndpoint;

class Metrics {
 public:
  // Metrics off: nothing is registered or served.
  Metrics();
  // Metrics on, served at http://address:port/metrics: every method of rpc_methods(), and the
  // engine's algorithms by their labels. Throws when the port cannot be bound.
  Metrics(const std::string& address, int port, const std::vector<std::string>& algorithms);
  ~Metrics();

  bool enabled() const { return enabled_; }
  // The port the metrics are served on (0 when off).
  int port() const;

  // Clock::now() when metrics are on, else a zero time point (no clock read).
  Clock::time_point start() const { return enabled_ ? Clock::now() : Clock::time_point(); }

  void rpc_started(MethodId method) {
    if (enabled_) methods_[method].started->Increment();
  }
  void rpc_handled(MethodId method, grpc::StatusCode code, Clock::time_point start);
  // An algorithm's run since `start`, by its label (one of the constructor's).
  void compute(std::string_view algorithm, Clock::time_point start) {
    if (!enabled_) return;
    if (const auto series = algorithms_.find(algorithm); series != algorithms_.end()) {
      series->second->Observe(seconds_since(start));
    }
  }
  void batch_states(int states) {
    if (enabled_) batch_states_->Observe(states);
  }
  void set_models_registered(std::size_t count) {
    if (enabled_) models_registered_->Set(static_cast<double>(count));
  }
  // The gRPC port's connections: open now, and closed by the server because of `flag` (the
  // limit's flag without its dashes: "max_connections", "max_resets_per_second", ...).
  void set_connections_open(int count) {
    if (enabled_) connections_open_->Set(count);
  }
  void connection_closed(const char* flag);
  // Bytes of the memory budget held by calls and workspaces.
  void set_memory_reserved(std::size_t bytes) {
    if (enabled_) memory_reserved_->Set(static_cast<double>(bytes));
  }
  // Gauges the executor updates; null when off.
  prometheus::Gauge* queue_depth() const { return queue_depth_; }
  prometheus::Gauge* busy_workers() const { return busy_workers_; }

 private:
  static constexpr int kCodes = 17;  // grpc::StatusCode values 0..16
  struct MethodMetrics {
    prometheus::Counter* started = nullptr;
    std::array<prometheus::Counter*, kCodes> handled{};
    prometheus::Histogram* seconds = nullptr;
  };
  static double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
  }

  bool enabled_ = false;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<MetricsEndpoint> endpoint_;
  std::vector<MethodMetrics> methods_;
  std::map<std::string, prometheus::Histogram*, std::less<>> algorithms_;
  prometheus::Histogram* batch_states_ = nullptr;
  prometheus::Gauge* queue_depth_ = nullptr;
  prometheus::Gauge* busy_workers_ = nullptr;
  prometheus::Gauge* models_registered_ = nullptr;
  prometheus::Gauge* connections_open_ = nullptr;
  prometheus::Family<prometheus::Counter>* connections_closed_ = nullptr;
  prometheus::Gauge* memory_reserved_ = nullptr;
};

}  // namespace torqued::server
