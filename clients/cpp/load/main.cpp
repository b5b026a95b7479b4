// torqued-load: drives a torqued server with unary calls or Session streams and reports latency
// percentiles, throughput and errors. Requests (random states, seeded) are built before the run;
// --echo sends Echo requests with the same payload instead, answered with as many numbers as the
// real call answers with (one real call, before the run, counts them): the transport floor to
// compare the real call with. --rpc Solve solves optimal-control problems (ControlService): a
// built-in one from random starts, or the one of --solve-request FILE; --rpc Mpc streams such a
// problem, then ticks, each a call: the problem's start measured again, --mpc-shift knots later.
//
//   torqued-load [--target HOST:PORT] [--tls-ca FILE] [--tls-cert FILE --tls-key FILE]
//                [--tls-server-name NAME] [--token-file FILE]
//                (--model ID|NAME | --urdf FILE [--floating-base])
//                [--rpc NAME] [--solve-request FILE] [--batch B] [--session [--pipeline P]]
//                [--mpc-iterations N] [--mpc-shift K] [--echo]
//                [--completion-queue]
//                [--concurrency N | --rate R] [--duration S | --requests N] [--warmup S]
//                [--pool K] [--seed N] [--json FILE]
#include <malloc.h>

#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include "clients/cpp/load/driver.hpp"
#include "clients/cpp/load/workload.hpp"
#include "torqued/credentials.hpp"

namespace torqued::load {
namespace {

// The horizon of Solve's built-in problem, from SolveRequest's `example` options: "10 knots of
// 0.01 s".
std::string solve_horizon() {
  const google::protobuf::Descriptor& request = *v1::SolveRequest::descriptor();
  std::ostringstream text;
  text << request.FindFieldByName("knots")->options().GetExtension(v1::example) << " knots of "
       << request.FindFieldByName("dt")->options().GetExtension(v1::example) << " s";
  return text.str();
}

// The options, and --rpc's methods from the service's descriptor.
std::string usage() {
  const std::string indent(23, ' ');
  const std::vector<std::string>& names = known_rpcs();
  std::string rpcs = indent;
  std::size_t column = indent.size();
  for (std::size_t k = 0; k < names.size(); ++k) {
    const std::string item = names[k] + (k + 1 < names.size() ? "," : "");
    if (column > indent.size() && column + 1 + item.size() > 100) {
      rpcs += "\n" + indent;
      column = indent.size();
    } else if (column > indent.size()) {
      rpcs += " ";
      ++column;
    }
    rpcs += item;
    column += item.size();
  }
  return "usage: torqued-load [options]\n"
         "  --target HOST:PORT   server (default localhost:50051)\n"
         "  --tls-ca FILE        TLS, the server checked against these CA certificates (PEM)\n"
         "  --tls-cert FILE      mutual TLS: this client's certificate (PEM), with --tls-key FILE\n"
         "  --tls-server-name N  check the server's certificate against N, not the target's host\n"
         "  --token-file FILE    send this bearer token with every call\n"
         "                       (each defaults as torquectl's: $TORQUED_TLS_CA, ..., "
         "$TORQUED_TOKEN)\n"
         "  --model ID|NAME      a model the server has (id, or name of a repository model)\n"
         "  --urdf FILE          register this URDF and use it (with --floating-base: free-flyer "
         "root)\n"
         "  --rpc NAME           a batched method of DynamicsService (default InverseDynamics), "
         "or\n"
         "                       ControlService's Solve or Mpc:\n" +
         rpcs +
         "\n"
         "                       (ContactDynamics and Impact without contacts, Simulate one step;\n"
         "                       Solve: from a random start to rest at the neutral configuration,\n"
         "                       " +
         solve_horizon() +
         ", unless --solve-request; Mpc: a stream per\n"
         "                       --concurrency stating that problem, then ticks, each a call)\n"
         "  --solve-request FILE --rpc Solve (the default) or Mpc with this problem, a "
         "SolveRequest\n"
         "                       in protobuf JSON; its model_id (an id or a name) is the model "
         "unless\n"
         "                       --model or --urdf says otherwise\n"
         "  --mpc-iterations N   Mpc: FDDP's iterations per tick (default: the server's, 1)\n"
         "  --mpc-shift K        Mpc: each tick's time K knots after the last (default 1); the\n"
         "                       measured state is the problem's start at every tick\n"
         "  --batch B            states per call (default 1; Solve and Mpc: 1)\n"
         "  --session            send the requests as messages of Session streams (not Solve, "
         "Mpc)\n"
         "  --pipeline P         Session, closed loop: messages in flight per stream (default 1)\n"
         "  --completion-queue   closed loop on the completion-queue API, a thread per call or\n"
         "                       stream in flight (fewer thread wake-ups than the callback API)\n"
         "  --echo               send Echo with the same payload instead, answered with as many\n"
         "                       numbers as the real call (the transport floor)\n"
         "  --concurrency N      closed loop: N calls (or N streams) in flight (default 1)\n"
         "  --rate R             open loop: R calls (or messages) per second\n"
         "  --duration S         measure for S seconds (default 10)\n"
         "  --requests N         measure N calls instead\n"
         "  --warmup S           run S seconds before measuring (default 1)\n"
         "  --pool K             distinct prepared requests, used in turn (default 64)\n"
         "  --seed N             random states seed (default 1)\n"
         "  --json FILE          also write the report as JSON\n";
}

const char* const kCodeNames[] = {
    "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
    "DATA_LOSS", "UNAUTHENTICATED"};

struct Options {
  std::string target = "localhost:50051";
  client::CredentialFiles credentials;
  ModelChoice model;
  WorkloadSpec workload;
  RunSpec run;
  std::string json;
  std::string solve_request;  // --solve-request's file
};

using torqued::client::CredentialFiles;
const std::map<std::string, std::string CredentialFiles::*> kCredentialFlags = {
    {"--tls-ca", &CredentialFiles::tls_ca},
    {"--tls-cert", &CredentialFiles::tls_cert},
    {"--tls-key", &CredentialFiles::tls_key},
    {"--tls-server-name", &CredentialFiles::tls_server_name},
    {"--token-file", &CredentialFiles::token_file}};

double number(const std::string& flag, const char* text) {
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  if (*text == '\0' || *end != '\0' || !(value >= 0)) {
    throw std::runtime_error(flag + ": '" + text + "' is not a non-negative number");
  }
  return value;
}

Options parse(int argc, char** argv) {
  Options o;
  bool rpc_given = false;
  for (int i = 1; i < argc; ++i) {
    // --flag value, or --flag=value.
    std::string flag = argv[i];
    std::string inline_value;
    const bool has_inline_value = flag.find('=') != std::string::npos;
    if (has_inline_value) {
      inline_value = flag.substr(flag.find('=') + 1);
      flag = flag.substr(0, flag.find('='));
    }
    auto value = [&]() -> const char* {
      if (has_inline_value) return inline_value.c_str();
      if (i + 1 >= argc) throw std::runtime_error(flag + " needs a value");
      return argv[++i];
    };
    if (flag == "--help" || flag == "-h") {
      std::cout << usage();
      std::exit(0);
    } else if (flag == "--target") {
      o.target = value();
    } else if (auto credential = kCredentialFlags.find(flag);
               credential != kCredentialFlags.end()) {
      o.credentials.*(credential->second) = value();
    } else if (flag == "--model") {
      o.model.model = value();
    } else if (flag == "--urdf") {
      o.model.urdf = value();
    } else if (flag == "--floating-base") {
      o.model.floating_base = true;
    } else if (flag == "--rpc") {
      o.workload.rpc = value();
      rpc_given = true;
    } else if (flag == "--solve-request") {
      o.solve_request = value();
    } else if (flag == "--mpc-iterations") {
      o.workload.mpc_iterations = static_cast<std::uint32_t>(number(flag, value()));
    } else if (flag == "--mpc-shift") {
      o.workload.mpc_shift = static_cast<int>(number(flag, value()));
    } else if (flag == "--batch") {
      o.workload.batch = static_cast<int>(number(flag, value()));
    } else if (flag == "--session") {
      o.run.session = true;
    } else if (flag == "--pipeline") {
      o.run.pipeline = static_cast<int>(number(flag, value()));
    } else if (flag == "--completion-queue") {
      o.run.completion_queue = true;
    } else if (flag == "--echo") {
      o.workload.echo = true;
    } else if (flag == "--concurrency") {
      o.run.concurrency = static_cast<int>(number(flag, value()));
    } else if (flag == "--rate") {
      o.run.rate = number(flag, value());
    } else if (flag == "--duration") {
      o.run.duration = number(flag, value());
    } else if (flag == "--requests") {
      o.run.requests = static_cast<std::int64_t>(number(flag, value()));
    } else if (flag == "--warmup") {
      o.run.warmup = number(flag, value());
    } else if (flag == "--pool") {
      o.workload.pool = static_cast<int>(number(flag, value()));
    } else if (flag == "--seed") {
      o.workload.seed = static_cast<unsigned>(number(flag, value()));
    } else if (flag == "--json") {
      o.json = value();
    } else {
      throw std::runtime_error("unknown option " + flag + " (see --help)");
    }
  }
  if (!o.solve_request.empty()) {
    if (rpc_given && o.workload.rpc != "Solve" && o.workload.rpc != "Mpc") {
      throw std::runtime_error("--solve-request is a problem of --rpc Solve or Mpc, not of --rpc " +
                               o.workload.rpc);
    }
    if (!rpc_given) o.workload.rpc = "Solve";
    o.workload.solve_request = read_solve_request(o.solve_request);
    if (o.model.model.empty() && o.model.urdf.empty()) {
      o.model.model = o.workload.solve_request->model_id();
    }
  } else if (!rpc_given) {
    o.workload.rpc = "InverseDynamics";
  }
  if (o.model.model.empty() == o.model.urdf.empty()) {
    throw std::runtime_error("give one of --model and --urdf (see --help)");
  }
  if (o.workload.rpc == "Mpc" && (o.run.session || o.run.completion_queue || o.run.pipeline > 1)) {
    throw std::runtime_error(
        "--rpc Mpc: its own streams, a tick at a time on the callback API (no --session, "
        "--completion-queue or --pipeline)");
  }
  if (o.run.completion_queue && o.run.rate > 0) {
    throw std::runtime_error("--completion-queue drives a closed loop: it excludes --rate");
  }
  if (o.workload.batch < 1 || o.workload.pool < 1 || o.run.concurrency < 1 || o.run.pipeline < 1) {
    throw std::runtime_error("--batch, --pool, --concurrency and --pipeline must be at least 1");
  }
  return o;
}

// How the calls go: "unary", "session", or "mpc" (ticks of Mpc streams; their Echo is unary).
std::string mode(const Options& o) {
  if (o.workload.rpc == "Mpc" && !o.workload.echo) return "mpc";
  return o.run.session ? "session" : "unary";
}

std::string report_json(const Options& o, const v1::Model& model, const Workload& w,
                        const Results& r) {
  std::ostringstream j;
  j << std::setprecision(10);
  const double rate = r.seconds > 0 ? static_cast<double>(r.calls) / r.seconds : 0.0;
  j << "{\"rpc\": \"" << (o.workload.echo ? "Echo" : o.workload.rpc) << "\", \"payload_of\": \""
    << o.workload.rpc << "\", \"model\": \"" << model.name() << "\", \"model_id\": \"" << model.id()
    << "\", \"batch\": " << o.workload.batch << ", \"mode\": \"" << mode(o) << "\", \"api\": \""
    << (o.run.completion_queue ? "completion_queue" : "callback") << "\", \"loop\": \""
    << (o.run.rate > 0 ? "open" : "closed") << "\", \"concurrency\": " << o.run.concurrency
    << ", \"pipeline\": " << o.run.pipeline << ", \"rate\": " << o.run.rate
    << ", \"request_bytes\": " << w.request_bytes
    << ", \"echo_response_values\": " << o.workload.echo_response_values
    << ", \"calls\": " << r.calls << ", \"seconds\": " << r.seconds
    << ", \"calls_per_second\": " << rate << ", \"states_per_second\": " << rate * o.workload.batch
    << ", \"latency_us\": {";
  const std::pair<const char*, double> points[] = {
      {"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}, {"p99.9", 0.999}};
  for (const auto& [name, p] : points) {
    j << "\"" << name << "\": " << r.latency.percentile(p) / 1e3 << ", ";
  }
  j << "\"max\": " << r.latency.max() / 1e3 << ", \"mean\": " << r.latency.mean() / 1e3
    << "}, \"codes\": {";
  bool first = true;
  for (int c = 0; c < 17; ++c) {
    if (r.codes[c] == 0) continue;
    j << (first ? "" : ", ") << "\"" << kCodeNames[c] << "\": " << r.codes[c];
    first = false;
  }
  j << "}, \"errors\": " << r.calls - r.codes[0] << "}\n";
  return j.str();
}

void report_text(const Options& o, const v1::Model& model, const Workload& w, const Results& r) {
  const double rate = r.seconds > 0 ? static_cast<double>(r.calls) / r.seconds : 0.0;
  std::cout << std::fixed << std::setprecision(1);
  std::cout << (o.workload.echo ? "Echo (payload of " + o.workload.rpc + ")" : o.workload.rpc)
            << " on " << model.name() << ", batch " << o.workload.batch << ", " << mode(o) << ", "
            << (o.run.rate > 0 ? "open loop " + std::to_string(o.run.rate) + "/s"
                               : "closed loop, concurrency " + std::to_string(o.run.concurrency))
            << ", request " << w.request_bytes << " bytes"
            << (o.workload.echo
                    ? ", answered with " + std::to_string(o.workload.echo_response_values) +
                          " numbers as the real call is"
                    : std::string())
            << "\n";
  std::cout << "calls " << r.calls << " in " << std::setprecision(3) << r.seconds
            << " s: " << std::setprecision(1) << rate << " calls/s, " << rate * o.workload.batch
            << " states/s\n";
  std::cout << "latency us: p50 " << r.latency.percentile(0.5) / 1e3 << "  p90 "
            << r.latency.percentile(0.9) / 1e3 << "  p99 " << r.latency.percentile(0.99) / 1e3
            << "  p99.9 " << r.latency.percentile(0.999) / 1e3 << "  max " << r.latency.max() / 1e3
            << "  mean " << r.latency.mean() / 1e3 << "\n";
  std::cout << "errors:";
  bool any = false;
  for (int c = 1; c < 17; ++c) {
    if (r.codes[c] == 0) continue;
    std::cout << " " << kCodeNames[c] << " " << r.codes[c];
    any = true;
  }
  std::cout << (any ? "\n" : " none\n");
}

}  // namespace
}  // namespace torqued::load

int main(int argc, char** argv) {
  using namespace torqued::load;
  // As in the server (server/main.cpp): large messages otherwise go to mmap and back on every
  // call, and the TLB shootdowns of those munmaps interrupt the server's threads on the other
  // core too (perf, 1,000-state calls: a third of the generator's kernel time).
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  try {
    Options options = parse(argc, argv);
    torqued::client::ClientOptions channel_options;
    channel_options.target = options.target;
    channel_options.load_balancing_policy = "pick_first";
    torqued::client::apply_credential_files(options.credentials, channel_options);
    auto channel = torqued::client::make_channel(channel_options);
    const torqued::v1::Model model = resolve_model(channel, options.model);
    if (options.workload.echo) {
      options.workload.echo_response_values =
          real_response_values(channel, model, options.workload);
    }
    const Workload workload = make_workload(model, options.workload);
    if (options.run.session && workload.session_requests.empty()) {
      throw std::runtime_error("--session: no Session message carries " + options.workload.rpc);
    }
    const auto results = run_load(channel, model, workload, options.run);
    report_text(options, model, workload, *results);
    if (!options.json.empty()) {
      std::ofstream out(options.json);
      out << report_json(options, model, workload, *results);
      if (!out) throw std::runtime_error("cannot write " + options.json);
    }
    return results->calls == results->codes[0] ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "torqued-load: " << e.what() << "\n";
    return 2;
  }
}
