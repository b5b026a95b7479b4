// The server's configuration: every knob as a flag with an environment-variable equivalent
// (flag > environment > default), so the same binary runs from a shell, systemd or Kubernetes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace torqued::server {

struct Config {
  // gRPC listening address and port (0 picks a free port).
  std::string address = "0.0.0.0";
  int port = 50051;
  // Prometheus exposer; port 0 disables metrics entirely.
  std::string metrics_address = "0.0.0.0";
  int metrics_port = 9464;
  // Where registered models are kept, one file per model.
  std::string data_dir = "data";
  // Directory of bundled models loaded at start (read-only); empty disables it.
  std::string model_repository = "deploy/models";
  // Executor: worker threads, queue capacity in tasks, and the batch size from which a request
  // is split into chunks across workers.
  int workers = 0;  // 0: hardware threads
  int queue_capacity = 1024;
  // Measured on 2 workers, PUMA 560 InverseDynamics, median of 400 calls: splitting changes
  // nothing measurable up to 64 states (69-117 µs either way) and saves 6% at 128 states, 25% at
  // 256 and 11% at 1024, so chunks of at least 64 states.
  int split_min_states = 64;
  // Batches of at most this many states run inline on the gRPC thread that received them
  // instead of hopping to a worker (0: never inline).
  int inline_max_states = 16;
  // The process's memory budget (docs/security.md shows how it is shared): a quarter for gRPC's
  // transport (its ResourceQuota: connections, streams, messages being received), half for what
  // calls hold (their requests, responses and engine workspaces, reserved before they are
  // allocated), the rest for the process itself.
  std::int64_t memory_budget_bytes = 1LL << 30;
  // The transport's bounds (HTTP/2 and gRPC), per connection and per peer address.
  int max_connections = 512;
  int max_connections_per_peer = 32;
  int max_concurrent_streams = 100;
  std::int64_t max_metadata_bytes = 16 << 10;
  // Calls one connection may cancel per second (averaged over 10 s) before the server closes it:
  // HTTP/2 rapid reset (CVE-2023-44487).
  double max_resets_per_second = 100.0;
  double handshake_timeout_seconds = 10.0;
  double idle_connection_seconds = 600.0;
  // Calls of one peer address that may hold executor workers at once (0: workers - 1, at least
  // 1), so that one client's long calls leave a worker for the others.
  int max_calls_per_peer = 0;
  // Limits.
  std::int64_t max_message_bytes = 64LL << 20;
  int max_batch_states = 100000;
  std::int64_t max_model_bytes = 8LL << 20;
  std::int64_t max_urdf_bytes = 4LL << 20;
  int max_bodies = 1024;
  // Longest name of a model, link, joint, frame or loop closure. The bundled and shared robots'
  // longest is 38 bytes (talos_reduced); 256 leaves room for generated prefixes (xacro
  // namespaces) and bounds a ListModels summary to about 320 bytes (model.proto).
  int max_name_bytes = 256;
  int max_dof = 1024;
  int max_models = 4096;
  std::int64_t max_store_bytes = 1LL << 30;
  // One model's workspace (the engine's buffers for one thread), and what the pool keeps idle.
  std::int64_t max_workspace_bytes = 256LL << 20;
  std::int64_t workspace_cache_bytes = 256LL << 20;
  int max_constraint_rows = 512;
  // The largest residual of bilateral constraints a constrained solve may leave, relative to the
  // constraint accelerations' scale (ConstraintResidual,
  // engine/algorithms/constraint_jacobian.hpp): consistent sets, redundant ones included, leave
  // rounding, inconsistent ones (three welds on a moving 6-DOF arm) a good part of the scale
  // (docs/operating.md, Closed chains).
  double max_constraint_residual = 1e-6;
  int max_contacts = 256;
  int max_kinematics_frames = 4096;
  // Contact phases of one Linearize or Rollout: each costs its contacts' validation and, per
  // chunk of knots, a copy of them.
  int max_phases = 1024;
  // One ControlService.Solve: its knots (each holds the solver's matrices, about 4 (2 nv)²
  // doubles, until the call ends), cost terms and FDDP iterations.
  int max_ocp_knots = 20000;
  int max_cost_terms = 256;
  int max_ocp_iterations = 1000;
  int max_solver_iterations = 10000;
  int max_simulation_steps = 100000;
  // Session answers waiting to be written before the stream stops reading (back-pressure).
  int max_session_queued = 8;
  // Graceful shutdown: how long in-flight calls may take to finish after SIGTERM / SIGINT.
  double drain_seconds = 30.0;
  // The server's own bound on one call's work (one Session message's), beside its deadline.
  double max_call_seconds = 600.0;
  // Logging: "text" or "json"; spdlog level name.
  std::string log_format = "text";
  std::string log_level = "info";
  // TLS on the gRPC port from PEM files: the certificate chain and its key (both or neither);
  // with the CA certificates of client_ca too, clients must present a certificate they signed
  // (mutual TLS). Empty: plaintext.
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
  // Files holding bearer tokens (access_tokens.hpp): the admin token that RegisterModel and
  // DeleteModel need, and the token every other call needs. Empty: no token needed.
  std::string admin_token_file;
  std::string token_file;
};

// The outcome of parsing the command line: a config, or a message to print and an exit code
// (0 for --help).
struct ParseResult {
  std::optional<Config> config;
  std::string message;
  int exit_code = 0;
};

ParseResult parse_config(const std::vector<std::string>& args);

// Limits that contradict each other: one that can never be reached because another is smaller
// (a registration larger than the largest message, a workspace larger than what calls may hold).
// The server starts with them and logs each as a warning.
std::vector<std::string> contradictions(const Config& config);

// The --help text: every flag, its environment variable and its default.
std::string config_help();

// The content of a file a flag names (a certificate, a key, a token); throws std::runtime_error
// naming the flag and the file, and why it cannot be read, never what it holds.
std::string read_flag_file(const std::string& flag, const std::string& path);

}  // namespace torqued::server
