// The torqued server assembled from its parts: metrics, store, executor, catalog and the gRPC
// services (with health and reflection, behind TLS and tokens when configured), and its life cycle:
// start listening (NOT_SERVING), load the repository and the store (SERVING), drain and stop.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>

#include "server/base/config.hpp"
#include "server/base/heap_trimmer.hpp"
#include "server/base/metrics.hpp"
#include "server/compute/batch_runner.hpp"
#include "server/compute/executor.hpp"
#include "server/compute/workspace_pool.hpp"
#include "server/models/model_catalog.hpp"
#include "server/models/model_store.hpp"
#include "server/services/control_service.hpp"
#include "server/services/dynamics_service.hpp"
#include "server/services/health_service.hpp"
#include "server/services/model_service.hpp"
#include "server/services/reflection_service.hpp"
#include "server/transport/access_tokens.hpp"
#include "server/transport/listener.hpp"

namespace torqued::server {

class Server {
 public:
  // Reads the TLS files and tokens, creates the store directory, the metrics exposer and the
  // executor. Throws std::exception with a readable message when a resource cannot be had (a bad
  // certificate or token file, port in use, unwritable directory).
  explicit Server(const Config& config);
  ~Server();

  // Starts serving gRPC; health reports NOT_SERVING and calls answer UNAVAILABLE until
  // load_models() has run. Throws when the port cannot be bound. With `listen` false no port is
  // opened and calls come only through in_process_channel() (torquectl --local).
  void start(bool listen = true);
  // Loads the model repository and the store, then reports SERVING.
  void load_models();
  // Graceful stop: NOT_SERVING, no new calls, in-flight calls finish (or are cancelled at the
  // drain deadline), workers join.
  void shut_down();

  int port() const { return port_; }
  // A channel to this server inside the process, without a socket; after start().
  std::shared_ptr<grpc::Channel> in_process_channel();

 private:
  // What is encrypted and what needs a token, and a warning when tokens travel in plaintext.
  void log_security() const;

  const Config config_;
  // First, so that bad files stop the start before anything listens.
  const std::shared_ptr<grpc::ServerCredentials> credentials_;
  const AccessControl access_;
  Metrics metrics_;
  ModelStore store_;
  Executor executor_;
  // SDF registrations' lane (model_service.hpp): one thread, since libsdformat reads one document
  // at a time anyway.
  Executor sdf_reads_;
  // Half of --memory-budget-bytes: what calls and workspaces may hold.
  MemoryBudget memory_;
  WorkspacePool workspaces_;
  BatchRunner runner_;
  ModelCatalog catalog_;
  std::atomic<bool> ready_{false};
  HeapTrimmer heap_trimmer_{64 << 20};
  HealthService health_;
  ModelService model_service_;
  DynamicsService dynamics_service_;
  ControlService control_service_;
  ReflectionService reflection_;
  // The gRPC port's accept loop, when the server listens.
  std::unique_ptr<Listener> listener_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace torqued::server
