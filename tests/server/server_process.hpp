// Test support: runs the real torqued binary as a child process on free loopback ports with its
// own data directory, and talks to it over gRPC with the generated stubs (over TLS and with a
// token when the server wants them).
#pragma once

#include <grpcpp/grpcpp.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "grpc/health/v1/health.grpc.pb.h"
#include "tests/engine/support/sanitized_build.hpp"
#include "torqued/client.hpp"
#include "torqued/v1/dynamics.grpc.pb.h"
#include "torqued/v1/model.grpc.pb.h"

namespace torqued::testing {

// A fresh directory under the system's temporary directory, removed on destruction. Its name
// carries the test process's pid, and making one removes what test processes that died (a
// crash, an abort, a timeout) left there.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// A loopback TCP port that was free a moment ago (bind to port 0, read it, close).
int free_port();

// HTTP/1.0 GET on loopback; returns the body, or "" on any error.
std::string http_get(int port, const std::string& target);

// The bundled model repository (deploy/models) and the torqued binary of this build.
std::string repository_dir();
std::string torqued_binary();

// A deadline `seconds` from now, for client contexts.
std::chrono::system_clock::time_point deadline_in(double seconds);

// Runs one RPC with a deadline `seconds` from now: `rpc` takes the client context.
template <typename Rpc>
grpc::Status with_deadline(double seconds, Rpc rpc) {
  grpc::ClientContext context;
  context.set_deadline(deadline_in(seconds));
  return rpc(&context);
}

class ServerProcess {
 public:
  struct Options {
    std::filesystem::path data_dir;
    std::string repository = repository_dir();
    bool metrics = false;
    std::vector<std::string> extra_args = {};
    // gRPC port; 0: a free one (for a client that must reach the server before it starts).
    int port = 0;
    // What the test's own channel (channel(), the health probes) brings: TLS (a server started
    // with --tls-cert in extra_args needs it) and a bearer token.
    std::optional<client::TlsOptions> client_tls = std::nullopt;
    std::string client_token = "";
    // gRPC address, any of the loopback range (replicas on one machine); metrics stay on
    // 127.0.0.1.
    std::string address = "127.0.0.1";
  };

  // Starts torqued and waits (up to 60 s) until its health service says SERVING. Retries with
  // new ports if the chosen ones were taken meanwhile. Fails the test (ADD_FAILURE) on error.
  explicit ServerProcess(Options options);
  // Kills the process (SIGKILL) if still running. The kernel kills it too when the test process
  // ends without getting here (a crash, an abort, a timeout).
  ~ServerProcess();

  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  int port() const { return port_; }
  int metrics_port() const { return metrics_port_; }
  std::string address() const { return options_.address + ":" + std::to_string(port_); }
  std::string log() const;

  std::shared_ptr<grpc::Channel> channel() const;
  std::unique_ptr<v1::ModelService::Stub> models() const;
  std::unique_ptr<v1::DynamicsService::Stub> dynamics() const;
  std::unique_ptr<grpc::health::v1::Health::Stub> health() const;
  // The layout of model `id` (GetModel); fails the test (ADD_FAILURE) and returns an empty Model
  // when the server does not answer it.
  v1::Model model_layout(const std::string& id) const;

  // Sends a signal.
  void signal(int signal_number);
  // Waits for the process to exit; returns its wait status, or -1 on timeout.
  int wait_exit(double timeout_seconds);

  // Starts the process without waiting for SERVING (for the health test).
  static std::unique_ptr<ServerProcess> launch(Options options);
  // Waits until the gRPC port accepts connections, then creates the channel; false if the
  // process died or timed out.
  bool wait_listening(double timeout_seconds);
  // Polls health until SERVING or the timeout; false if the process died or timed out.
  bool wait_serving(double timeout_seconds);

 private:
  ServerProcess(Options options, bool wait);
  bool spawn();

  Options options_;
  pid_t pid_ = -1;
  int port_ = 0;
  int metrics_port_ = 0;
  std::filesystem::path log_path_;
  std::shared_ptr<grpc::Channel> channel_;
};

// Calls of `method` that ended OK, from a server's Prometheus text (the server needs metrics).
int handled_ok(const ServerProcess& server, const std::string& method);

// Fills a configuration of `states` states with random angles and unit quaternions.
std::vector<double> random_configurations(const v1::Model& model, int states, unsigned seed);
// `count` random numbers in [-1, 1].
std::vector<double> random_values(std::size_t count, unsigned seed);

// Resident memory of a process, bytes (VmRSS of /proc/PID/status).
std::int64_t rss_bytes(pid_t pid);

// Whether this build, and so the server it tests, runs under AddressSanitizer or
// ThreadSanitizer.
using test_support::kSanitizedBuild;

// Under a sanitizer the server holds freed memory in quarantine and shadows all of it: its RSS
// measures the sanitizer, and bounds on it are not checked.
inline constexpr bool kRssIsTheServers = !kSanitizedBuild;

}  // namespace torqued::testing
