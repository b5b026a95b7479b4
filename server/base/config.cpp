// Parses flags and environment variables into a Config, from one table of options so that the
// parser, the environment names and --help cannot drift apart.
#include "server/base/config.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "server/base/posix_file.hpp"

namespace torqued::server {
namespace {

struct Option {
  const char* flag;  // without the leading "--"
  const char* env;
  const char* help;
  // Parses a value into the config; returns an error message or "".
  std::function<std::string(Config&, const std::string&)> set;
  std::function<std::string(const Config&)> show;
};

template <typename T>
std::string parse_number(const std::string& text, T min, T max, T& out) {
  T value{};
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end) return "'" + text + "' is not a number";
  if (value < min || value > max) {
    std::ostringstream s;
    s << "'" << text << "' is out of range [" << min << ", " << max << "]";
    return s.str();
  }
  out = value;
  return "";
}

// A double as the help and the settings log show it: 1e-06, 600, inf.
std::string shortest(double value) {
  std::ostringstream s;
  s << value;
  return s.str();
}

std::string parse_double(const std::string& text, double min, double max, double& out) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) return "'" + text + "' is not a number";
  if (!(value >= min && value <= max)) return "'" + text + "' is out of range";
  out = value;
  return "";
}

std::string one_of(const std::string& text, std::initializer_list<const char*> choices,
                   std::string& out) {
  for (const char* c : choices) {
    if (text == c) {
      out = text;
      return "";
    }
  }
  std::string message = "'" + text + "' is not one of:";
  for (const char* c : choices) message += std::string(" ") + c;
  return message;
}

template <typename T>
Option number_option(const char* flag, const char* env, const char* help, T Config::*field, T min,
                     T max) {
  return {flag, env, help,
          [=](Config& c, const std::string& v) { return parse_number(v, min, max, c.*field); },
          [=](const Config& c) { return std::to_string(c.*field); }};
}

Option string_option(const char* flag, const char* env, const char* help,
                     std::string Config::*field) {
  return {flag, env, help,
          [=](Config& c, const std::string& v) {
            c.*field = v;
            return std::string();
          },
          [=](const Config& c) { return "\"" + c.*field + "\""; }};
}

const std::vector<Option>& options() {
  static const std::vector<Option> table = {
      string_option("address", "TORQUED_ADDRESS",
                    "gRPC listening address; the default binds every interface (127.0.0.1: this "
                    "host only)",
                    &Config::address),
      number_option("port", "TORQUED_PORT", "gRPC port (0: any free port)", &Config::port, 0,
                    65535),
      string_option("metrics-address", "TORQUED_METRICS_ADDRESS",
                    "Prometheus metrics listening address; the default binds every interface "
                    "(127.0.0.1: this host only)",
                    &Config::metrics_address),
      number_option("metrics-port", "TORQUED_METRICS_PORT",
                    "Prometheus metrics port (0: metrics off)", &Config::metrics_port, 0, 65535),
      string_option("data-dir", "TORQUED_DATA_DIR",
                    "directory of the model store (created if missing)", &Config::data_dir),
      string_option("model-repository", "TORQUED_MODEL_REPOSITORY",
                    "directory of bundled models loaded at start (\"\": none)",
                    &Config::model_repository),
      number_option("workers", "TORQUED_WORKERS", "executor threads (0: hardware threads)",
                    &Config::workers, 0, 1024),
      number_option("queue-capacity", "TORQUED_QUEUE_CAPACITY",
                    "tasks waiting for a worker before calls get RESOURCE_EXHAUSTED",
                    &Config::queue_capacity, 1, 1 << 24),
      number_option("split-min-states", "TORQUED_SPLIT_MIN_STATES",
                    "states per chunk below which a batch is not split across workers",
                    &Config::split_min_states, 1, 1 << 30),
      number_option("inline-max-states", "TORQUED_INLINE_MAX_STATES",
                    "batches of at most this many states run on the gRPC thread, not a worker "
                    "(0: never)",
                    &Config::inline_max_states, 0, 1 << 30),
      number_option("memory-budget-bytes", "TORQUED_MEMORY_BUDGET_BYTES",
                    "memory the process may use: a quarter for gRPC's transport, half for what "
                    "calls hold (requests, responses, engine workspaces), the rest for the "
                    "process itself; a call that does not fit is RESOURCE_EXHAUSTED",
                    &Config::memory_budget_bytes, std::int64_t{64} << 20, std::int64_t{1} << 40),
      number_option("max-connections", "TORQUED_MAX_CONNECTIONS",
                    "open connections to the gRPC port; more are closed at once",
                    &Config::max_connections, 1, 1 << 20),
      number_option("max-connections-per-peer", "TORQUED_MAX_CONNECTIONS_PER_PEER",
                    "open connections from one client address; more are closed at once",
                    &Config::max_connections_per_peer, 1, 1 << 20),
      number_option("max-concurrent-streams", "TORQUED_MAX_CONCURRENT_STREAMS",
                    "HTTP/2 streams (calls) one connection may have open, advertised to clients",
                    &Config::max_concurrent_streams, 1, 1 << 20),
      number_option("max-metadata-bytes", "TORQUED_MAX_METADATA_BYTES",
                    "largest header list (metadata) of a call", &Config::max_metadata_bytes,
                    std::int64_t{8} << 10, std::int64_t{16} << 20),
      {"max-resets-per-second", "TORQUED_MAX_RESETS_PER_SECOND",
       "calls one connection may cancel per second, averaged over 10 s, before the server closes "
       "it (HTTP/2 rapid reset)",
       [](Config& c, const std::string& v) {
         return parse_double(v, 1.0, 1e9, c.max_resets_per_second);
       },
       [](const Config& c) { return std::to_string(c.max_resets_per_second); }},
      {"handshake-timeout-seconds", "TORQUED_HANDSHAKE_TIMEOUT_SECONDS",
       "how long a new connection may take to complete its TLS and HTTP/2 handshake",
       [](Config& c, const std::string& v) {
         return parse_double(v, 0.1, 3600.0, c.handshake_timeout_seconds);
       },
       [](const Config& c) { return std::to_string(c.handshake_timeout_seconds); }},
      {"idle-connection-seconds", "TORQUED_IDLE_CONNECTION_SECONDS",
       "a connection without calls for this long is closed (GOAWAY; clients reconnect)",
       [](Config& c, const std::string& v) {
         return parse_double(v, 1.0, 86400.0 * 365, c.idle_connection_seconds);
       },
       [](const Config& c) { return std::to_string(c.idle_connection_seconds); }},
      number_option("max-calls-per-peer", "TORQUED_MAX_CALLS_PER_PEER",
                    "calls of one client address that may hold workers at once; its others wait "
                    "while other clients' calls run (0: workers - 1, at least 1)",
                    &Config::max_calls_per_peer, 0, 1 << 20),
      number_option("max-message-bytes", "TORQUED_MAX_MESSAGE_BYTES",
                    "largest request or response message", &Config::max_message_bytes,
                    std::int64_t{1} << 16, (std::int64_t{1} << 31) - 1),
      number_option("max-batch-states", "TORQUED_MAX_BATCH_STATES", "largest batch_size",
                    &Config::max_batch_states, 1, 1 << 30),
      number_option("max-model-bytes", "TORQUED_MAX_MODEL_BYTES",
                    "largest RegisterModel request, checked before it is decoded",
                    &Config::max_model_bytes, std::int64_t{1} << 10, std::int64_t{1} << 30),
      number_option("max-urdf-bytes", "TORQUED_MAX_URDF_BYTES", "largest URDF document",
                    &Config::max_urdf_bytes, std::int64_t{1}, std::int64_t{1} << 30),
      number_option("max-bodies", "TORQUED_MAX_BODIES", "most bodies (links) in a model",
                    &Config::max_bodies, 1, 1 << 20),
      number_option("max-name-bytes", "TORQUED_MAX_NAME_BYTES",
                    "longest name of a model, link, joint, frame or loop closure",
                    &Config::max_name_bytes, 1, 16384),
      number_option("max-dof", "TORQUED_MAX_DOF", "most degrees of freedom (nv) in a model",
                    &Config::max_dof, 1, 1 << 20),
      number_option("max-models", "TORQUED_MAX_MODELS",
                    "most models held, the repository's included", &Config::max_models, 1, 1 << 24),
      number_option("max-store-bytes", "TORQUED_MAX_STORE_BYTES",
                    "most bytes of registered models in the data directory",
                    &Config::max_store_bytes, std::int64_t{1} << 10, std::int64_t{1} << 50),
      number_option("max-workspace-bytes", "TORQUED_MAX_WORKSPACE_BYTES",
                    "largest workspace of one model on one thread (engine buffers, contacts)",
                    &Config::max_workspace_bytes, std::int64_t{1} << 16, std::int64_t{1} << 40),
      number_option("workspace-cache-bytes", "TORQUED_WORKSPACE_CACHE_BYTES",
                    "idle workspaces kept for later calls, least recently used dropped first",
                    &Config::workspace_cache_bytes, std::int64_t{0}, std::int64_t{1} << 40),
      number_option("max-constraint-rows", "TORQUED_MAX_CONSTRAINT_ROWS",
                    "most constraint rows (loop closures and constraints) in one "
                    "ConstrainedDynamics call",
                    &Config::max_constraint_rows, 1, 1 << 16),
      {"max-constraint-residual", "TORQUED_MAX_CONSTRAINT_RESIDUAL",
       "largest residual of bilateral constraints, |K a - k| as a fraction of the constraint "
       "accelerations' scale, that a constrained answer may leave (inf: any)",
       [](Config& c, const std::string& v) {
         return parse_double(v, 0.0, std::numeric_limits<double>::infinity(),
                             c.max_constraint_residual);
       },
       [](const Config& c) { return shortest(c.max_constraint_residual); }},
      number_option("max-contacts", "TORQUED_MAX_CONTACTS",
                    "most contacts or contact candidates in one call", &Config::max_contacts, 1,
                    1 << 16),
      number_option("max-phases", "TORQUED_MAX_PHASES",
                    "most contact phases in one Linearize or Rollout call", &Config::max_phases, 1,
                    1 << 20),
      number_option("max-ocp-knots", "TORQUED_MAX_OCP_KNOTS",
                    "most running knots of one optimal-control problem (Solve)",
                    &Config::max_ocp_knots, 1, 1 << 24),
      number_option("max-cost-terms", "TORQUED_MAX_COST_TERMS",
                    "most cost terms, running and terminal, of one optimal-control problem",
                    &Config::max_cost_terms, 1, 1 << 16),
      number_option("max-ocp-iterations", "TORQUED_MAX_OCP_ITERATIONS",
                    "most FDDP iterations one Solve may ask for", &Config::max_ocp_iterations, 1,
                    1 << 20),
      number_option("max-kinematics-frames", "TORQUED_MAX_KINEMATICS_FRAMES",
                    "most frames in one Kinematics call", &Config::max_kinematics_frames, 1,
                    1 << 24),
      number_option("max-solver-iterations", "TORQUED_MAX_SOLVER_ITERATIONS",
                    "most contact solver iterations (Lemke pivots, Gauss-Seidel sweeps) a call "
                    "may ask for",
                    &Config::max_solver_iterations, 1, 1 << 30),
      number_option("max-simulation-steps", "TORQUED_MAX_SIMULATION_STEPS",
                    "most steps of one Simulate trajectory", &Config::max_simulation_steps, 1,
                    1 << 30),
      number_option("max-session-queued", "TORQUED_MAX_SESSION_QUEUED",
                    "Session answers waiting to be written before the stream stops reading",
                    &Config::max_session_queued, 1, 1 << 16),
      {"max-call-seconds", "TORQUED_MAX_CALL_SECONDS",
       "most seconds of work for one call or Session message, whatever its deadline (0: none)",
       [](Config& c, const std::string& v) {
         return parse_double(v, 0.0, 86400.0 * 365, c.max_call_seconds);
       },
       [](const Config& c) { return std::to_string(c.max_call_seconds); }},
      {"drain-seconds", "TORQUED_DRAIN_SECONDS",
       "on SIGTERM/SIGINT, how long in-flight calls may run before they are cancelled",
       [](Config& c, const std::string& v) {
         return parse_double(v, 0.0, 86400.0, c.drain_seconds);
       },
       [](const Config& c) { return std::to_string(c.drain_seconds); }},
      {"log-format", "TORQUED_LOG_FORMAT", "log lines as text or json",
       [](Config& c, const std::string& v) {
         return one_of(v, {"text", "json"}, c.log_format);
       },
       [](const Config& c) { return c.log_format; }},
      {"log-level", "TORQUED_LOG_LEVEL", "trace, debug, info, warn, error or off",
       [](Config& c, const std::string& v) {
         return one_of(v, {"trace", "debug", "info", "warn", "error", "off"}, c.log_level);
       },
       [](const Config& c) { return c.log_level; }},
      string_option("tls-cert", "TORQUED_TLS_CERT",
                    "PEM certificate chain of the gRPC port; with --tls-key the port serves TLS",
                    &Config::tls_cert),
      string_option("tls-key", "TORQUED_TLS_KEY", "PEM private key of --tls-cert (unencrypted)",
                    &Config::tls_key),
      string_option("tls-client-ca", "TORQUED_TLS_CLIENT_CA",
                    "PEM CA certificates: clients must present a certificate one of them signed "
                    "(mutual TLS; needs --tls-cert)",
                    &Config::tls_client_ca),
      string_option("admin-token-file", "TORQUED_ADMIN_TOKEN_FILE",
                    "file holding the bearer token RegisterModel and DeleteModel need",
                    &Config::admin_token_file),
      string_option("token-file", "TORQUED_TOKEN_FILE",
                    "file holding the bearer token every other call needs, reflection's too (the "
                    "admin token serves too; health stays open)",
                    &Config::token_file),
  };
  return table;
}

}  // namespace

std::string config_help() {
  std::ostringstream s;
  s << "torqued: rigid-body dynamics over gRPC.\n\n"
       "Usage: torqued [--flag=value | --flag value]...\n\n"
       "Every flag can also be set by its environment variable; a flag wins over the\n"
       "environment.\n\n";
  const Config defaults;
  for (const Option& o : options()) {
    s << "  --" << o.flag << " (" << o.env << ")\n      " << o.help
      << " [default: " << o.show(defaults) << "]\n";
  }
  s << "  --help\n      print this text and exit\n";
  return s.str();
}

ParseResult parse_config(const std::vector<std::string>& args) {
  Config config;
  config.workers = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (const Option& o : options()) {
    if (const char* value = std::getenv(o.env)) {
      const std::string error = o.set(config, value);
      if (!error.empty()) return {std::nullopt, std::string(o.env) + ": " + error, 2};
    }
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") return {std::nullopt, config_help(), 0};
    if (arg.rfind("--", 0) != 0) {
      return {std::nullopt, "unexpected argument '" + arg + "' (see --help)", 2};
    }
    const std::size_t eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const Option* option = nullptr;
    for (const Option& o : options()) {
      if (name == o.flag) option = &o;
    }
    if (option == nullptr) return {std::nullopt, "unknown flag --" + name + " (see --help)", 2};
    std::string value;
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return {std::nullopt, "--" + name + " needs a value", 2};
    }
    const std::string error = option->set(config, value);
    if (!error.empty()) return {std::nullopt, "--" + name + ": " + error, 2};
  }
  if (config.workers == 0) {
    config.workers = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  if (config.tls_cert.empty() != config.tls_key.empty()) {
    return {std::nullopt, "--tls-cert and --tls-key go together: give both or neither", 2};
  }
  if (!config.tls_client_ca.empty() && config.tls_cert.empty()) {
    return {std::nullopt, "--tls-client-ca needs --tls-cert and --tls-key (mutual TLS is TLS)", 2};
  }
  return {config, "", 0};
}

std::vector<std::string> contradictions(const Config& c) {
  std::vector<std::string> found;
  const auto larger = [&](const char* flag, std::int64_t value, const char* bound_flag,
                          std::int64_t bound, const char* consequence) {
    if (value <= bound) return;
    found.push_back("--" + std::string(flag) + " (" + std::to_string(value) + ") is larger than " +
                    bound_flag + " (" + std::to_string(bound) + "): " + consequence);
  };
  // What calls and workspaces may hold: half of the budget (memory_budget.hpp).
  const std::int64_t calls = c.memory_budget_bytes / 2;
  larger("max-urdf-bytes", c.max_urdf_bytes, "--max-model-bytes", c.max_model_bytes,
         "a URDF that large cannot be registered");
  larger("max-model-bytes", c.max_model_bytes, "--max-message-bytes", c.max_message_bytes,
         "a registration that large is refused as a message first");
  larger("max-model-bytes", c.max_model_bytes, "--max-store-bytes", c.max_store_bytes,
         "a registration that large cannot be stored");
  if (3 * c.max_message_bytes > calls) {
    found.push_back("3 times --max-message-bytes (" + std::to_string(3 * c.max_message_bytes) +
                    ") is larger than half of --memory-budget-bytes (" + std::to_string(calls) +
                    "): a call with the largest request and response (the request, the response "
                    "and its encoding) would not fit the memory budget");
  }
  larger("max-workspace-bytes", c.max_workspace_bytes, "half of --memory-budget-bytes", calls,
         "a workspace that large would not fit the memory budget");
  larger("workspace-cache-bytes", c.workspace_cache_bytes, "half of --memory-budget-bytes", calls,
         "idle workspaces are evicted before the cache is full whenever calls need the memory");
  larger("max-connections-per-peer", c.max_connections_per_peer, "--max-connections",
         c.max_connections, "one client can hold every connection");
  larger("max-calls-per-peer", c.max_calls_per_peer, "--workers", c.workers,
         "one client's calls can hold every worker");
  larger("inline-max-states", c.inline_max_states, "--max-batch-states", c.max_batch_states,
         "every batch runs on the gRPC thread that received it");
  return found;
}

std::string read_flag_file(const std::string& flag, const std::string& path) {
  // Certificates, keys and tokens are a few kilobytes; the bound stops a huge file named by
  // mistake from filling the memory.
  constexpr std::size_t kMaxBytes = 1 << 20;
  const auto failure = [&](const std::string& why) {
    return std::runtime_error("--" + flag + " " + path + ": cannot be read (" + why + ")");
  };
  // Only a regular file is opened: opening a FIFO blocks until a writer comes, and opening a
  // device can act on it (a tape rewinds, a watchdog arms). stat (which follows symbolic links,
  // as Kubernetes' secret volumes need) says so before the open; O_NONBLOCK and fstat catch what
  // may have been put in the file's place meanwhile.
  const auto check_regular = [&](const struct stat& status) {
    if (S_ISDIR(status.st_mode)) throw failure(std::strerror(EISDIR));
    if (!S_ISREG(status.st_mode)) {
      throw failure(std::string(file_kind(status.st_mode)) + ", not a regular file");
    }
  };
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0) throw failure(std::strerror(errno));
  check_regular(status);
  const FileDescriptor file(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (file.get() < 0 || ::fstat(file.get(), &status) != 0) throw failure(std::strerror(errno));
  check_regular(status);
  std::string content;
  if (const int error = read_at_most(file.get(), kMaxBytes, content); error != 0) {
    throw failure(std::strerror(error));
  }
  if (content.size() > kMaxBytes) throw failure("larger than 1 MiB");
  return content;
}

}  // namespace torqued::server
