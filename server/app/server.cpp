// Server assembly and life cycle (see server.hpp).
#include "server/app/server.hpp"

#include <grpcpp/resource_quota.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <stdexcept>

#include "server/transport/tls_credentials.hpp"

namespace torqued::server {
namespace {

// gRPC's transport bounded as Config says (docs/security.md): its memory (a ResourceQuota of a
// quarter of the budget: connections, streams, the bytes of messages being received; under
// pressure gRPC reads less and cancels streams), the streams a connection may open, the metadata
// of a call, and the identity encoding only, since gRPC 1.51 inflates a compressed message whole
// before any size check (a 2 MB gzip message became 2 GiB) and torqued's clients never compress.
void bound_transport(const Config& config, grpc::ServerBuilder& builder) {
  grpc::ResourceQuota quota("torqued-transport");
  quota.Resize(static_cast<std::size_t>(config.memory_budget_bytes / 4));
  builder.SetResourceQuota(quota);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, config.max_concurrent_streams);
  builder.AddChannelArgument(GRPC_ARG_MAX_METADATA_SIZE,
                             static_cast<int>(config.max_metadata_bytes));
  builder.AddChannelArgument(GRPC_COMPRESSION_CHANNEL_ENABLED_ALGORITHMS_BITSET,
                             1 << GRPC_COMPRESS_NONE);
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                             static_cast<int>(config.handshake_timeout_seconds * 1000));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                             static_cast<int>(std::min(config.idle_connection_seconds * 1000,
                                                       static_cast<double>(INT32_MAX))));
}

// Every algorithm label of the services, for the compute-time metrics.
std::vector<std::string> served_algorithms() {
  std::vector<std::string> names = algorithm_names();
  for (std::string& name : ControlService::algorithm_names()) names.push_back(std::move(name));
  return names;
}

}  // namespace

Server::Server(const Config& config)
    : config_(config),
      credentials_(make_server_credentials(config)),
      access_(config),
      metrics_(config.metrics_port == 0
                   ? Metrics()
                   : Metrics(config.metrics_address, config.metrics_port, served_algorithms())),
      store_(config.data_dir, config.max_model_bytes),
      executor_(config.workers, config.queue_capacity, metrics_.queue_depth(),
                metrics_.busy_workers(), config.max_calls_per_peer),
      sdf_reads_(1, config.queue_capacity, nullptr, nullptr, 1),
      memory_(static_cast<std::size_t>(config.memory_budget_bytes / 2), &metrics_),
      workspaces_(static_cast<std::size_t>(config.workspace_cache_bytes),
                  static_cast<std::size_t>(config.max_workspace_bytes), memory_),
      runner_(executor_, workspaces_, metrics_, config.split_min_states, config.inline_max_states,
              config.max_call_seconds),
      catalog_(store_, model_limits(config), metrics_, workspaces_),
      model_service_(catalog_, runner_, sdf_reads_, metrics_, memory_, access_, ready_,
                     config.max_model_bytes),
      dynamics_service_(catalog_, runner_, metrics_, memory_, access_, request_limits(config),
                        ready_),
      control_service_(catalog_, executor_, workspaces_, metrics_, memory_, access_,
                       request_limits(config), config.max_call_seconds, ready_),
      reflection_(
          {grpc::health::v1::Health::service_full_name(), v1::ModelService::service_full_name(),
           v1::DynamicsService::service_full_name(), v1::ControlService::service_full_name()},
          metrics_, memory_, access_) {
  std::vector<std::string> warnings;
  store_.remove_stale_temporary_files(warnings);
  for (const std::string& w : warnings) spdlog::warn("store: {}", w);
}

Server::~Server() = default;

void Server::start(bool listen) {
  grpc::ServerBuilder builder;
  std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor;
  if (listen) {
    listener_ = std::make_unique<Listener>(
        config_.address, config_.port,
        ConnectionLimits{config_.max_connections, config_.max_connections_per_peer,
                         config_.max_resets_per_second, config_.memory_budget_bytes},
        memory_, metrics_);
    port_ = listener_->port();
    acceptor = builder.experimental().AddExternalConnectionAcceptor(
        grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD, credentials_);
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> reporters;
    reporters.push_back(std::make_unique<CancellationReporter>(*listener_));
    builder.experimental().SetInterceptorCreators(std::move(reporters));
  }
  builder.SetMaxReceiveMessageSize(static_cast<int>(config_.max_message_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(config_.max_message_bytes));
  bound_transport(config_, builder);
  for (grpc::Service* service : std::initializer_list<grpc::Service*>{
           &health_, &model_service_, &dynamics_service_, &control_service_, &reflection_.v1(),
           &reflection_.v1alpha()}) {
    // The listener counts the calls clients cancel from an interceptor that asks each call
    // whether it was (listener.hpp): a synchronous call cannot be asked there (its IsCancelled()
    // runs the interceptor again, without end), so every service must be on the callback API.
    if (service->has_synchronous_methods()) {
      throw std::logic_error(
          "a service has synchronous methods: every service must be on gRPC's callback API");
    }
    builder.RegisterService(service);
  }
  server_ = builder.BuildAndStart();
  if (!server_) throw std::runtime_error("cannot start the gRPC server");
  if (listener_) listener_->start(std::move(acceptor));
  spdlog::info("gRPC listening on {}:{} ({} workers, queue {} tasks, max message {} bytes)",
               config_.address, port_, executor_.workers(), executor_.queue_capacity(),
               config_.max_message_bytes);
  log_security();
  if (metrics_.enabled()) {
    spdlog::info("metrics on http://{}:{}/metrics", config_.metrics_address, metrics_.port());
  } else {
    spdlog::info("metrics off");
  }
}

void Server::log_security() const {
  const bool tls = !config_.tls_cert.empty();
  if (!tls) {
    spdlog::info("plaintext gRPC: no TLS (--tls-cert, --tls-key)");
  } else if (config_.tls_client_ca.empty()) {
    spdlog::info("TLS with certificate {}", config_.tls_cert);
  } else {
    spdlog::info("mutual TLS with certificate {}: clients need a certificate signed by {}",
                 config_.tls_cert, config_.tls_client_ca);
  }
  if (!config_.admin_token_file.empty()) {
    spdlog::info("RegisterModel and DeleteModel need the admin token of {}",
                 config_.admin_token_file);
  }
  if (!config_.token_file.empty()) {
    spdlog::info("every call but health needs the token of {} (or the admin token)",
                 config_.token_file);
  }
  spdlog::info("server reflection on (grpc.reflection.v1 and v1alpha){}",
               config_.token_file.empty() ? "" : ": it needs the token too");
  if (access_.any_token() && !tls) {
    spdlog::warn(
        "bearer tokens travel in plaintext: anyone on the network path can read and replay them; "
        "serve TLS (--tls-cert, --tls-key) unless a TLS proxy terminates every connection");
  }
}

std::shared_ptr<grpc::Channel> Server::in_process_channel() {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(config_.max_message_bytes));
  args.SetMaxSendMessageSize(static_cast<int>(config_.max_message_bytes));
  return server_->InProcessChannel(args);
}

void Server::load_models() {
  const auto start = std::chrono::steady_clock::now();
  int repository = 0;
  if (config_.model_repository.empty()) {
    spdlog::info("no model repository");
  } else if (!std::filesystem::is_directory(config_.model_repository)) {
    spdlog::warn("model repository {} is not a directory; none loaded", config_.model_repository);
  } else {
    repository = catalog_.load_repository(config_.model_repository);
  }
  const int stored = catalog_.load_store();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  spdlog::info("loaded {} repository models from {} and {} stored models from {} in {:.3f} s",
               repository, config_.model_repository, stored, store_.directory().string(), seconds);
  ready_.store(true, std::memory_order_release);
  health_.set_serving(true);
  spdlog::info("SERVING");
}

void Server::shut_down() {
  spdlog::info("draining: no new calls, in-flight calls have {} s", config_.drain_seconds);
  health_.shut_down();
  const auto deadline = std::chrono::system_clock::now() +
                        std::chrono::duration_cast<std::chrono::system_clock::duration>(
                            std::chrono::duration<double>(config_.drain_seconds));
  dynamics_service_.drain();
  control_service_.drain();
  reflection_.drain();
  if (listener_) listener_->stop();
  if (server_) server_->Shutdown(deadline);
  sdf_reads_.stop();
  executor_.stop();
  spdlog::info("stopped");
}

}  // namespace torqued::server
