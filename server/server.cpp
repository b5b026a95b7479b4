// Server assembly and life cycle (see server.hpp).
#include "server/server.hpp"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <stdexcept>

namespace torqued::server {

Server::Server(const Config& config)
    : config_(config),
      metrics_(config.metrics_port == 0 ? Metrics()
                                        : Metrics(config.metrics_address, config.metrics_port)),
      store_(config.data_dir),
      executor_(config.workers, config.queue_capacity, metrics_.queue_depth(),
                metrics_.busy_workers()),
      workspaces_(static_cast<std::size_t>(config.workspace_cache_bytes),
                  static_cast<std::size_t>(config.max_workspace_bytes)),
      runner_(executor_, workspaces_, metrics_, config.split_min_states, config.inline_max_states),
      catalog_(store_,
               ModelLimits{config.max_urdf_bytes, config.max_bodies, config.max_dof,
                           config.max_models, config.max_store_bytes, config.max_workspace_bytes},
               metrics_, workspaces_),
      model_service_(catalog_, runner_, metrics_, ready_, config.max_model_bytes),
      dynamics_service_(
          catalog_, runner_, metrics_,
          RequestLimits{config.max_batch_states, config.max_message_bytes,
                        config.max_workspace_bytes, config.max_constraint_rows, config.max_contacts,
                        config.max_kinematics_frames, config.max_solver_iterations,
                        config.max_simulation_steps, config.max_session_queued},
          ready_) {}

Server::~Server() = default;

void Server::start(bool listen) {
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  const std::string address = config_.address + ":" + std::to_string(config_.port);
  if (listen) builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &port_);
  builder.SetMaxReceiveMessageSize(static_cast<int>(config_.max_message_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(config_.max_message_bytes));
  builder.RegisterService(&health_);
  builder.RegisterService(&model_service_);
  builder.RegisterService(&dynamics_service_);
  server_ = builder.BuildAndStart();
  if (!server_ || (listen && port_ == 0)) {
    throw std::runtime_error("cannot listen on " + address);
  }
  spdlog::info("gRPC listening on {}:{} ({} workers, queue {} tasks, max message {} bytes)",
               config_.address, port_, executor_.workers(), executor_.queue_capacity(),
               config_.max_message_bytes);
  if (metrics_.enabled()) {
    spdlog::info("metrics on http://{}:{}/metrics", config_.metrics_address, metrics_.port());
  } else {
    spdlog::info("metrics off");
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
  if (server_) server_->Shutdown(deadline);
  executor_.stop();
  spdlog::info("stopped");
}

}  // namespace torqued::server
