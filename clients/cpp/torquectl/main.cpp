// torquectl: torqued from the command line. Registers and manages models, checks health, runs
// every dynamics RPC on states read from JSON or CSV, printing JSON or CSV, and solves
// optimal-control problems read as protobuf JSON, printing a summary. `call` sends
// any method of the services by name, its request and response in protobuf JSON, found by the
// descriptors alone: a new RPC is callable here before it has a command. With --local the same
// calls go to a torqued server inside this process (no socket), built from a model file, so its
// output is the server's byte for byte. Exit codes: 0 ok, 1 server or RPC error, 2 usage error,
// 3 input file error.
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "server/app/server.hpp"
#include "server/models/bundled_models.hpp"
#include "torquectl/tables.hpp"
#include "torqued/client.hpp"
#include "torqued/credentials.hpp"

namespace torqued::torquectl {
namespace {

using client::Client;

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct OptionSpec {
  std::string value;  // the value's name; empty for a flag
  std::string help;
};

const std::map<std::string, OptionSpec>& option_specs() {
  static const std::map<std::string, OptionSpec> specs = {
      {"--server",
       {"ADDR",
        "gRPC target: host:port, dns:///host:port or ipv4:a:p,b:p (default $TORQUED_SERVER, "
        "else localhost:50051)"}},
      {"--deadline", {"S", "seconds a call may take, retries included (default 30)"}},
      {"--tls-ca",
       {"FILE",
        "TLS: the CA certificates (PEM) that sign the server's certificate (default "
        "$TORQUED_TLS_CA; without it or --tls-cert, plaintext)"}},
      {"--tls-cert",
       {"FILE",
        "mutual TLS: this client's certificate (PEM; default $TORQUED_TLS_CLIENT_CERT; without "
        "--tls-ca the system's roots check the server)"}},
      {"--tls-key", {"FILE", "the key of --tls-cert (PEM; default $TORQUED_TLS_CLIENT_KEY)"}},
      {"--tls-server-name",
       {"NAME",
        "check the server's certificate against NAME rather than the host of --server (default "
        "$TORQUED_TLS_SERVER_NAME)"}},
      {"--token-file",
       {"FILE",
        "send the token in FILE with every call as \"authorization: Bearer\" (default "
        "$TORQUED_TOKEN_FILE; else the token itself from $TORQUED_TOKEN)"}},
      {"--format", {"json|csv", "output format (default json)"}},
      {"--help", {"", "this text"}},
      {"--json", {"", "print the whole response, every field, as protobuf JSON"}},
      {"--input",
       {"FILE",
        "states as JSON or CSV; call: the request as protobuf JSON (default: standard input)"}},
      {"--local", {"", "compute in this process, from the model FILE given instead of an id"}},
      {"--floating-base", {"", "model files: a free-flyer root joint"}},
      {"--fixed-base",
       {"", "model files: the root welded to the world (MJCF: its free joint, if any, dropped)"}},
      {"--dh",
       {"", "model files: a DH table in protobuf text format (RegisterModelRequest or DhTable)"}},
      {"--model-format",
       {"urdf|mjcf|sdf",
        "model files: the description's format (default: from the extension, .xml MJCF, .sdf "
        "SDF, else URDF)"}},
      {"--name", {"N", "model files: the model's name"}},
      {"--strict", {"", "model files: refuse the model if building it gives any warning"}},
      {"--algorithm", {"ALG", "see above"}},
      {"--inverse", {"", "also M(q)^-1"}},
      {"--frames", {"A,B,...", "frame names (default: every frame)"}},
      {"--reference",
       {"local|local-world-aligned|world", "expression of velocities and Jacobians"}},
      {"--jacobians", {"", "also the frames' Jacobians"}},
      {"--inputs", {"MASK", "one letter per DOF: a (acceleration given) or f (force given)"}},
      {"--of", {"inverse|forward|constrained", "the dynamics to differentiate (default inverse)"}},
      {"--mode", {"forward|inverse", "forward (a from tau) or closed-chain inverse dynamics"}},
      {"--constraints",
       {"C,C,...",
        "constraints after the model's loop closures, each "
        "TYPE:FRAME[:FRAME2][@x/y/z[/roll/pitch/yaw]] "
        "with TYPE weld|point|revolute|prismatic and FRAME2 the world when left out; @ places "
        "frame 2 in FRAME2 or in the world (metres, radians). A world constraint without @ holds "
        "FRAME where it stands (at each state, or the first knot); @0/0/0 is the world origin"}},
      {"--gains", {"KP,KD", "Baumgarte position and velocity gains (default 0,0)"}},
      {"--phases",
       {"P;P;...",
        "a contact schedule instead of --constraints, each phase FIRST_KNOT[/RESTITUTION]=C,C,... "
        "with C as --constraints writes it (nothing after = is a flight phase): each knot is held "
        "by its phase's contacts, a phase that adds one begins with its touchdown's impact; "
        "multipliers, impulses and friction_cones then have a column per contact of any phase "
        "(0, or null for the cones, where a knot's phase does not hold it)"}},
      {"--friction-cone",
       {"MU[,FACES]",
        "also each contact's friction-cone residuals (mu f_n - |f_t|, then FACES faces, 4 by "
        "default), each >= 0 inside the cone"}},
      {"--payload", {"TEXT", "bytes to send"}},
      {"--contacts",
       {"SPEC",
        "contacts \"FRAME[:x,y,z[:nx,ny,nz[:mu]]];...\": a frame or link, the point in it "
        "(default 0,0,0), the unit surface normal in the world (default 0,0,1) and the friction "
        "coefficient (default 0); an empty part takes its default (\"foot::0,0,1:0.8\")"}},
      {"--candidates",
       {"SPEC", "ground contact candidates \"FRAME[:x,y,z];...\" (default: contact-free)"}},
      {"--tolerance", {"X", "solver tolerance (default 1e-10)"}},
      {"--max-iterations", {"N", "solver pivots or sweeps (default 1000; simulate 200 per step)"}},
      {"--slip-velocity", {"X", "m/s above which a contact is sliding (default 1e-6)"}},
      {"--restitution", {"E", "coefficient of restitution in [0, 1] (default 0)"}},
      {"--steps", {"N", "number of steps (required)"}},
      {"--time-step", {"H", "seconds (default 1e-3)"}},
      {"--integrator",
       {"euler|explicit-euler|rk4",
        "semi-implicit Euler (default), explicit Euler or RK4 (simulate: contact-free only)"}},
      {"--dt", {"H", "linearize, rollout: the step, seconds (required)"}},
      {"--actuation",
       {"all|unactuated-root|J,J,...",
        "linearize, rollout: the DOFs u drives: every DOF (default), all but the free-flyer "
        "root's, or the named joints' in that order"}},
      {"--knots", {"K", "rollout: the number of steps, u's K × nu values per rollout (required)"}},
      {"--fx-fu", {"", "rollout: also the Jacobians fx and fu of every step"}},
      {"--continuous-derivatives", {"", "linearize: also da/dq, da/dv and da/dtau per knot"}},
      {"--ground-height", {"Z", "height of the ground plane z = Z, metres (default 0)"}},
      {"--friction", {"MU", "friction coefficient of the ground (default 0)"}},
      {"--contact-margin", {"D", "metres (default 0.01)"}},
      {"--stabilization", {"F", "fraction of a penetration removed per step (default 0.2)"}},
      {"--restitution-velocity", {"V", "m/s below which impacts are inelastic (default 0.01)"}},
  };
  return specs;
}

struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::string> values;
  std::set<std::string> flags;

  bool has(const std::string& flag) const { return flags.count(flag) > 0; }
  std::string value(const std::string& option, const std::string& otherwise) const {
    auto it = values.find(option);
    return it == values.end() ? otherwise : it->second;
  }
};

// What a dynamics sub-command reads and how it calls the client.
struct Dynamics {
  std::function<std::vector<InputField>(const v1::Model&, const Args&)> inputs;
  std::function<Output(Client&, const std::string& id, const v1::Model&, const std::vector<Matrix>&,
                       const Args&)>
      run;
};

struct Command {
  std::string name;
  std::string arguments;
  std::string summary;
  std::vector<std::string> options;
  std::function<int(const Args&)> run;
};

const std::vector<std::string> kGlobalOptions = {"--server",     "--deadline", "--tls-ca",
                                                 "--tls-cert",   "--tls-key",  "--tls-server-name",
                                                 "--token-file", "--format",   "--help"};
const std::vector<std::string> kModelOptions = {"--input",      "--local", "--floating-base",
                                                "--fixed-base", "--dh",    "--model-format",
                                                "--name",       "--strict"};

std::string read_file(const std::string& path) {
  std::ostringstream bytes;
  if (path == "-") {
    bytes << std::cin.rdbuf();
    return bytes.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot be read");
  bytes << in.rdbuf();
  return bytes.str();
}

// A model file as a RegisterModelRequest: read as the server's model repository reads it (URDF,
// or a RegisterModelRequest in text format), or as a DH table with --dh; then the options.
v1::RegisterModelRequest read_model_request(const std::string& path, const Args& args) {
  v1::RegisterModelRequest request;
  if (args.has("--dh")) {
    const std::string text = read_file(path);
    if (!google::protobuf::TextFormat::ParseFromString(text, &request) || !request.has_dh()) {
      request.Clear();
      if (!google::protobuf::TextFormat::ParseFromString(text, request.mutable_dh())) {
        throw InputError(path +
                         ": neither a RegisterModelRequest with a DH table nor a DhTable "
                         "in protobuf text format");
      }
    }
  } else if (std::string error; !server::read_model_file(path, request, error)) {
    throw InputError(error);
  } else if (args.values.count("--model-format")) {
    // The file's text, whatever its extension said, as the format named.
    const std::string format = args.values.at("--model-format");
    if (request.has_dh() || request.has_spec()) {
      throw InputError(path + ": --model-format names a description's format, and this file " +
                       "holds a DH table or a spec");
    }
    std::string text = request.has_mjcf()  ? request.mjcf()
                       : request.has_sdf() ? request.sdf()
                                           : request.urdf();
    if (format == "urdf") {
      request.set_urdf(std::move(text));
    } else if (format == "mjcf") {
      request.set_mjcf(std::move(text));
    } else if (format == "sdf") {
      request.set_sdf(std::move(text));
    } else {
      throw InputError("--model-format: " + format + " is not urdf, mjcf or sdf");
    }
  }
  if (args.has("--floating-base") && args.has("--fixed-base")) {
    throw UsageError("--floating-base and --fixed-base: give one of them");
  }
  // Without either, the request's base is left as the file (or its options) gives it: fixed for
  // URDF and SDF, and for MJCF floating when the root body has a free joint.
  if (args.has("--floating-base")) request.set_base(v1::BASE_TYPE_FLOATING);
  if (args.has("--fixed-base")) request.set_base(v1::BASE_TYPE_FIXED);
  if (args.values.count("--name")) request.set_name(args.values.at("--name"));
  if (args.has("--strict")) request.set_strict(true);
  return request;
}

client::ClientOptions client_options(const Args& args) {
  client::ClientOptions options;
  const char* env = std::getenv("TORQUED_SERVER");
  options.target = args.value("--server", env != nullptr && *env != '\0' ? env : "localhost:50051");
  if (args.values.count("--deadline")) {
    const std::string text = args.values.at("--deadline");
    char* end = nullptr;
    const double seconds = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !(seconds > 0) || !std::isfinite(seconds)) {
      throw UsageError("--deadline: expected a positive number of seconds, got \"" + text + "\"");
    }
    options.deadline = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::duration<double>(seconds));
  }
  try {
    client::apply_credential_files(
        {args.value("--tls-ca", ""), args.value("--tls-cert", ""), args.value("--tls-key", ""),
         args.value("--tls-server-name", ""), args.value("--token-file", "")},
        options);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  } catch (const std::runtime_error& e) {
    throw InputError(e.what());
  }
  return options;
}

void print(const Output& output, const Args& args) {
  if (args.value("--format", "json") == "csv") {
    write_csv(std::cout, output);
  } else {
    write_json(std::cout, output);
  }
}

// A torqued server inside this process: no socket, no metrics, no repository, a scratch store.
class LocalServer {
 public:
  LocalServer() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "torquectl-local-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    directory_ = pattern;
    spdlog::set_level(spdlog::level::off);
    server::Config config;
    config.data_dir = directory_.string();
    config.model_repository = "";
    config.metrics_port = 0;
    config.workers = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    server_ = std::make_unique<server::Server>(config);
    server_->start(false);
    server_->load_models();
  }
  ~LocalServer() {
    server_->shut_down();
    server_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(directory_, ignored);
  }
  std::shared_ptr<grpc::Channel> channel() { return server_->in_process_channel(); }

 private:
  std::filesystem::path directory_;
  std::unique_ptr<server::Server> server_;
};

int run_dynamics(const Dynamics& dynamics, const Args& args) {
  const std::string model = args.positional.at(0);
  std::unique_ptr<LocalServer> local;
  std::unique_ptr<Client> client;
  std::string id;
  v1::Model layout;
  if (args.has("--local")) {
    const v1::RegisterModelRequest request = read_model_request(model, args);
    local = std::make_unique<LocalServer>();
    client = std::make_unique<Client>(local->channel(), client_options(args));
    layout = client->register_model(request);
    id = layout.id();
  } else {
    client = std::make_unique<Client>(client_options(args));
    id = model;
    layout = client->get_model(id);
  }
  const std::vector<Matrix> inputs =
      read_states(read_file(args.value("--input", "-")), dynamics.inputs(layout, args));
  print(dynamics.run(*client, id, layout, inputs, args), args);
  return 0;
}

// The value of an enumerated option, by name.
template <typename T>
T choice(const Args& args, const std::string& option, const std::map<std::string, T>& choices,
         const std::string& otherwise) {
  const std::string value = args.value(option, otherwise);
  auto it = choices.find(value);
  if (it == choices.end()) {
    std::string names;
    for (const auto& [name, ignored] : choices) names += (names.empty() ? "" : ", ") + name;
    throw UsageError(option + ": \"" + value + "\" is not one of " + names);
  }
  return it->second;
}

InputField field(const std::string& name, const std::vector<std::string>& labels,
                 bool required = true) {
  return {name, labels, required};
}

std::vector<InputField> q_v(const v1::Model& m) {
  return {field("q", coordinate_labels(m, false)), field("v", coordinate_labels(m, true))};
}

std::vector<InputField> q_v_plus(const v1::Model& m, const std::vector<std::string>& names) {
  std::vector<InputField> fields = q_v(m);
  for (const std::string& name : names) fields.push_back(field(name, coordinate_labels(m, true)));
  fields.push_back(field("external_forces", wrench_labels(m), false));
  return fields;
}

const std::vector<std::string> kXyz = {"x", "y", "z"};

// One vector per state over the DOF.
OutputField dof_field(const std::string& name, const v1::Model& m, Matrix values) {
  return {name, {coordinate_labels(m, true)}, std::move(values)};
}

// One nv × nv matrix per state.
OutputField dof_matrix_field(const std::string& name, const v1::Model& m,
                             const client::Matrices& values) {
  return {name, {coordinate_labels(m, true), coordinate_labels(m, true)}, flatten(values)};
}

// A number given by an option; `otherwise` when absent.
std::optional<double> number_option(const Args& args, const std::string& option) {
  if (!args.values.count(option)) return std::nullopt;
  const std::string& text = args.values.at(option);
  char* end = nullptr;
  const double x = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(x)) {
    throw UsageError(option + ": expected a number, got \"" + text + "\"");
  }
  return x;
}

std::optional<std::uint32_t> count_option(const Args& args, const std::string& option) {
  const std::optional<double> x = number_option(args, option);
  if (x && (*x < 0 || *x != std::floor(*x) || *x > 4294967295.0)) {
    throw UsageError(option + ": expected a whole number, got \"" + args.values.at(option) + "\"");
  }
  if (!x) return std::nullopt;
  return static_cast<std::uint32_t>(*x);
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, separator);) parts.push_back(part);
  if (!text.empty() && text.back() == separator) parts.emplace_back();
  return parts;
}

// "x,y,z" of a --contacts or --candidates part; `otherwise` when the part is empty.
Eigen::Vector3d vector_part(const std::string& option, const std::string& text,
                            const Eigen::Vector3d& otherwise) {
  if (text.empty()) return otherwise;
  const std::vector<std::string> numbers = split(text, ',');
  Eigen::Vector3d x;
  for (int i = 0; i < 3; ++i) {
    char* end = nullptr;
    x[i] = i < static_cast<int>(numbers.size()) ? std::strtod(numbers[i].c_str(), &end) : 0.0;
    if (numbers.size() != 3 || numbers[i].empty() || *end != '\0') {
      throw UsageError(option + ": expected three numbers x,y,z, got \"" + text + "\"");
    }
  }
  return x;
}

// The parts of each ';'-separated item of a --contacts or --candidates value.
std::vector<std::vector<std::string>> items(const Args& args, const std::string& option,
                                            std::size_t max_parts) {
  std::vector<std::vector<std::string>> out;
  for (const std::string& item : split(args.value(option, ""), ';')) {
    if (item.empty()) continue;
    std::vector<std::string> parts = split(item, ':');
    if (parts.size() > max_parts || parts[0].empty()) {
      throw UsageError(option + ": \"" + item + "\" is not a valid item (see --help)");
    }
    parts.resize(max_parts);
    out.push_back(std::move(parts));
  }
  return out;
}

std::vector<client::PointContact> contacts_option(const Args& args) {
  std::vector<client::PointContact> contacts;
  for (const std::vector<std::string>& parts : items(args, "--contacts", 4)) {
    client::PointContact c;
    c.frame = parts[0];
    c.point = vector_part("--contacts", parts[1], c.point);
    c.normal = vector_part("--contacts", parts[2], c.normal);
    if (!parts[3].empty()) {
      char* end = nullptr;
      c.friction = std::strtod(parts[3].c_str(), &end);
      if (*end != '\0') throw UsageError("--contacts: \"" + parts[3] + "\" is not a number");
    }
    contacts.push_back(std::move(c));
  }
  if (contacts.empty()) throw UsageError("--contacts: at least one contact is needed");
  return contacts;
}

client::ContactSolverOptions solver_options(const Args& args) {
  return {number_option(args, "--tolerance"), count_option(args, "--max-iterations"),
          number_option(args, "--slip-velocity")};
}

// "0:FRAME", "1:FRAME", ...: the contacts' labels (a frame may hold several contacts).
std::vector<std::string> contact_labels(const std::vector<client::PointContact>& contacts) {
  std::vector<std::string> labels;
  for (std::size_t k = 0; k < contacts.size(); ++k) {
    labels.push_back(std::to_string(k) + ":" + contacts[k].frame);
  }
  return labels;
}

// One number per state.
template <typename Values>
OutputField per_state_field(const std::string& name, const Values& values) {
  const auto states = static_cast<Eigen::Index>(values.size());
  Matrix out(states, 1);
  for (Eigen::Index s = 0; s < states; ++s) out(s, 0) = static_cast<double>(values[s]);
  return {name, {}, std::move(out)};
}

// The results of contact-dynamics and impact: `velocity` (a or v), forces, modes, solver.
Output contact_output(const v1::Model& m, const std::string& velocity, const std::string& forces,
                      const std::vector<client::PointContact>& contacts,
                      const client::ContactResult& r) {
  const std::vector<std::string> labels = contact_labels(contacts);
  Matrix modes(static_cast<Eigen::Index>(r.modes.size()), static_cast<Eigen::Index>(labels.size()));
  for (std::size_t s = 0; s < r.modes.size(); ++s) {
    for (std::size_t c = 0; c < r.modes[s].size(); ++c) {
      modes(static_cast<Eigen::Index>(s), static_cast<Eigen::Index>(c)) = r.modes[s][c];
    }
  }
  return Output{{dof_field(velocity, m, r.velocities),
                 {forces, {labels, kXyz}, flatten(r.forces)},
                 {"modes", {labels}, std::move(modes)},
                 per_state_field("status", r.status),
                 per_state_field("iterations", r.iterations),
                 per_state_field("residual", r.residual)}};
}

// --inputs: one letter per DOF, a (acceleration given) or f (force given).
std::vector<v1::DofInput> dof_inputs(const Args& args, const v1::Model& m) {
  const std::string mask = args.value("--inputs", "");
  std::vector<v1::DofInput> inputs;
  for (const char letter : mask) {
    if (letter != 'a' && letter != 'f') {
      throw UsageError("--inputs: letters must be a or f, got \"" + mask + "\"");
    }
    inputs.push_back(letter == 'a' ? v1::DOF_INPUT_ACCELERATION : v1::DOF_INPUT_FORCE);
  }
  if (static_cast<int>(inputs.size()) != m.nv()) {
    throw UsageError("--inputs: expected " + std::to_string(m.nv()) + " letters (nv), got " +
                     std::to_string(inputs.size()));
  }
  return inputs;
}

// --constraints: TYPE:FRAME[:FRAME2][@x/y/z[/roll/pitch/yaw]],...: frame 1 is FRAME itself, frame 2
// FRAME2 (the world when left out) placed by the numbers after @, or where frame 1 stands without
// them.
// `text` in the syntax of --constraints, for `flag`; each constraint named by its own text when
// `named`.
std::vector<v1::Constraint> constraint_list(const std::string& text, const std::string& flag,
                                            bool named) {
  const std::map<std::string, v1::ConstraintType> types = {
      {"weld", v1::CONSTRAINT_TYPE_WELD},
      {"point", v1::CONSTRAINT_TYPE_POINT},
      {"revolute", v1::CONSTRAINT_TYPE_REVOLUTE},
      {"prismatic", v1::CONSTRAINT_TYPE_PRISMATIC}};
  std::vector<v1::Constraint> out;
  std::stringstream list(text);
  for (std::string item; std::getline(list, item, ',');) {
    const std::size_t at = item.find('@');
    const std::vector<std::string> parts = split(item.substr(0, at), ':');
    std::vector<double> placement;
    bool ok = parts.size() >= 2 && parts.size() <= 3 && types.count(parts[0]);
    if (ok && at != std::string::npos) {
      for (const std::string& number : split(item.substr(at + 1), '/')) {
        char* end = nullptr;
        placement.push_back(std::strtod(number.c_str(), &end));
        ok = ok && !number.empty() && *end == '\0';
      }
      ok = ok && (placement.size() == 3 || placement.size() == 6);
    }
    if (!ok) {
      throw UsageError(
          flag + ": \"" + item +
          "\" is not TYPE:FRAME[:FRAME2][@x/y/z[/roll/pitch/yaw]] with TYPE weld, point, "
          "revolute or prismatic");
    }
    v1::Constraint& c = out.emplace_back();
    if (named) c.set_name(item);
    c.set_type(types.at(parts[0]));
    c.mutable_frame1()->set_frame(parts[1]);
    if (parts.size() == 3) c.mutable_frame2()->set_frame(parts[2]);
    if (!placement.empty()) {
      v1::Placement& p = *c.mutable_frame2()->mutable_placement();
      p.mutable_xyz()->set_x(placement[0]);
      p.mutable_xyz()->set_y(placement[1]);
      p.mutable_xyz()->set_z(placement[2]);
      if (placement.size() == 6) {
        p.mutable_rpy()->set_x(placement[3]);
        p.mutable_rpy()->set_y(placement[4]);
        p.mutable_rpy()->set_z(placement[5]);
      }
    }
  }
  return out;
}

std::vector<v1::Constraint> constraints(const Args& args) {
  return constraint_list(args.value("--constraints", ""), "--constraints", false);
}

// --phases FIRST_KNOT[/RESTITUTION]=C,C,...;...: each contact named by its text, so that one
// contact has one name in every phase.
std::vector<v1::ContactPhase> phases(const Args& args) {
  std::vector<v1::ContactPhase> out;
  if (args.values.count("--phases") == 0) return out;
  for (const std::string& item : split(args.value("--phases", ""), ';')) {
    const std::size_t equals = item.find('=');
    const std::vector<std::string> head = split(item.substr(0, equals), '/');
    double values[2] = {0.0, 0.0};
    bool ok = equals != std::string::npos && !head.empty() && head.size() <= 2;
    for (std::size_t i = 0; ok && i < head.size(); ++i) {
      char* end = nullptr;
      values[i] = std::strtod(head[i].c_str(), &end);
      ok = !head[i].empty() && *end == '\0';
    }
    if (!ok || values[0] < 0 || values[0] != std::floor(values[0]) || values[0] > 4e9) {
      throw UsageError("--phases: \"" + item +
                       "\" is not FIRST_KNOT[/RESTITUTION]=C,C,... with FIRST_KNOT a whole number");
    }
    v1::ContactPhase& phase = out.emplace_back();
    phase.set_first_knot(static_cast<std::uint32_t>(values[0]));
    phase.set_restitution(values[1]);
    for (v1::Constraint& c : constraint_list(item.substr(equals + 1), "--phases", true)) {
      *phase.add_contacts() = std::move(c);
    }
  }
  return out;
}

// --friction-cone MU[,FACES].
std::optional<v1::FrictionCone> friction_cone(const Args& args) {
  if (args.values.count("--friction-cone") == 0) return std::nullopt;
  const std::string text = args.value("--friction-cone", "");
  const std::vector<std::string> parts = split(text, ',');
  double values[2] = {0.0, 0.0};
  bool ok = !parts.empty() && parts.size() <= 2;
  for (std::size_t i = 0; ok && i < parts.size(); ++i) {
    char* end = nullptr;
    values[i] = std::strtod(parts[i].c_str(), &end);
    ok = !parts[i].empty() && *end == '\0';
  }
  if (!ok) throw UsageError("--friction-cone: expected MU[,FACES], got \"" + text + "\"");
  v1::FrictionCone cone;
  cone.set_friction(values[0]);
  cone.set_faces(static_cast<std::uint32_t>(std::max(0.0, values[1])));
  return cone;
}

// A scheduled call's values per knot in one column layout: a column per row of every constraint
// any phase holds (by name, in the order first met), knot k's values where its phase has them and
// `missing` elsewhere. `width` values per constraint when given (the cones), else its rows.
Matrix scheduled_columns(const client::KnotValues& knots,
                         const std::vector<v1::ContactPhase>& phases,
                         const std::vector<Eigen::VectorXd>& per_knot, int width, double missing,
                         std::vector<std::string>& labels) {
  // Each constraint's first column, and the suffixes of its columns.
  std::map<std::string, Eigen::Index> first;
  std::vector<std::pair<std::string, int>> order;
  const bool cones = width > 0;
  for (std::size_t p = 0; p < knots.phase_rows.size(); ++p) {
    const std::size_t loops = knots.phase_rows[p].size() - phases[p].contacts_size();
    for (std::size_t i = cones ? loops : 0; i < knots.phase_rows[p].size(); ++i) {
      const v1::ConstraintRows& rows = knots.phase_rows[p][i];
      if (first.count(rows.name())) continue;
      first[rows.name()] = static_cast<Eigen::Index>(labels.size());
      const int columns = cones ? width : rows.dimension();
      for (int c = 0; c < columns; ++c) {
        labels.push_back(rows.name() + ":" +
                         (cones ? (c == 0 ? std::string("cone") : "face" + std::to_string(c - 1))
                                : std::to_string(c)));
      }
    }
  }
  Matrix out = Matrix::Constant(static_cast<Eigen::Index>(per_knot.size()),
                                static_cast<Eigen::Index>(labels.size()), missing);
  std::size_t p = 0;
  for (std::size_t k = 0; k < per_knot.size(); ++k) {
    while (p + 1 < phases.size() && phases[p + 1].first_knot() <= k) ++p;
    if (per_knot[k].size() == 0) continue;
    const std::size_t loops = knots.phase_rows[p].size() - phases[p].contacts_size();
    Eigen::Index at = 0;
    for (std::size_t i = cones ? loops : 0; i < knots.phase_rows[p].size(); ++i) {
      const v1::ConstraintRows& rows = knots.phase_rows[p][i];
      const int columns = cones ? width : rows.dimension();
      out.row(static_cast<Eigen::Index>(k)).segment(first.at(rows.name()), columns) =
          per_knot[k].segment(at, columns).transpose();
      at += columns;
    }
  }
  return out;
}

// The fields of a call with phases or a cone: λ (with phases; when returned), the impulses and
// the cones, one row per knot.
std::vector<OutputField> knot_fields(const client::KnotValues& knots,
                                     const std::vector<v1::ContactPhase>& phases,
                                     const std::optional<v1::FrictionCone>& cone,
                                     std::size_t knot_count) {
  std::vector<OutputField> out;
  if (!phases.empty()) {
    if (!knots.multipliers.empty()) {
      std::vector<std::string> labels;
      Matrix values = scheduled_columns(knots, phases, knots.multipliers, 0, 0.0, labels);
      out.push_back({"multipliers", {labels}, std::move(values)});
    }
    std::vector<Eigen::VectorXd> impulses(knot_count);
    for (const auto& [k, values] : knots.impulses) impulses[static_cast<std::size_t>(k)] = values;
    std::vector<std::string> labels;
    Matrix values = scheduled_columns(knots, phases, impulses, 0, 0.0, labels);
    out.push_back({"impulses", {labels}, std::move(values)});
  }
  if (cone) {
    std::vector<Eigen::VectorXd> residuals;
    for (const Matrix& r : knots.friction_cones) {
      residuals.emplace_back(Eigen::Map<const Eigen::VectorXd>(r.data(), r.size()));
    }
    const int width = 1 + static_cast<int>(cone->faces() == 0 ? 4 : cone->faces());
    std::vector<std::string> labels;
    Matrix values;
    if (phases.empty()) {
      for (Eigen::Index c = 0; c < (residuals.empty() ? 0 : residuals.front().size()) / width;
           ++c) {
        for (int i = 0; i < width; ++i) {
          labels.push_back("constraints[" + std::to_string(c) +
                           "]:" + (i == 0 ? std::string("cone") : "face" + std::to_string(i - 1)));
        }
      }
      values = Matrix(static_cast<Eigen::Index>(residuals.size()),
                      static_cast<Eigen::Index>(labels.size()));
      for (std::size_t k = 0; k < residuals.size(); ++k) {
        values.row(static_cast<Eigen::Index>(k)) = residuals[k].transpose();
      }
    } else {
      values = scheduled_columns(knots, phases, residuals, width,
                                 std::numeric_limits<double>::quiet_NaN(), labels);
    }
    out.push_back({"friction_cones", {labels}, std::move(values)});
  }
  return out;
}

// --gains KP,KD.
v1::BaumgarteGains gains(const Args& args) {
  const std::string text = args.value("--gains", "0,0");
  const std::size_t comma = text.find(',');
  bool ok = comma != std::string::npos;
  const std::string parts[2] = {text.substr(0, comma), ok ? text.substr(comma + 1) : ""};
  double values[2] = {0.0, 0.0};
  for (int i = 0; i < 2 && ok; ++i) {
    char* end = nullptr;
    values[i] = std::strtod(parts[i].c_str(), &end);
    ok = !parts[i].empty() && *end == '\0';
  }
  if (!ok) throw UsageError("--gains: expected KP,KD (two numbers), got \"" + text + "\"");
  v1::BaumgarteGains out;
  out.set_position(values[0]);
  out.set_velocity(values[1]);
  return out;
}

// λ's labels: "name:k" for the k-th row of each constraint.
std::vector<std::string> multiplier_labels(const std::vector<v1::ConstraintRows>& rows) {
  std::vector<std::string> labels;
  for (const v1::ConstraintRows& constraint : rows) {
    for (int k = 0; k < constraint.dimension(); ++k) {
      labels.push_back(constraint.name() + ":" + std::to_string(k));
    }
  }
  return labels;
}

// λ and its derivatives (rows × nv per state) as output fields, when the call returned them.
void add_multiplier_fields(const v1::Model& m, const std::vector<v1::ConstraintRows>& rows,
                           const Matrix& multipliers, const client::Matrices& dq,
                           const client::Matrices& dv, const client::Matrices& dtau, Output& out) {
  if (multipliers.cols() == 0) return;
  const std::vector<std::string> labels = multiplier_labels(rows);
  const std::vector<std::string> dofs = coordinate_labels(m, true);
  out.fields.push_back({"multipliers", {labels}, multipliers});
  out.fields.push_back({"dmultipliers_dq", {labels, dofs}, flatten(dq)});
  out.fields.push_back({"dmultipliers_dv", {labels, dofs}, flatten(dv)});
  out.fields.push_back({"dmultipliers_dtau", {labels, dofs}, flatten(dtau)});
}

// --reference: local (default), local-world-aligned or world.
v1::ReferenceFrame reference_option(const Args& args) {
  return choice<v1::ReferenceFrame>(
      args, "--reference",
      {{"local", v1::REFERENCE_FRAME_LOCAL},
       {"local-world-aligned", v1::REFERENCE_FRAME_LOCAL_WORLD_ALIGNED},
       {"world", v1::REFERENCE_FRAME_WORLD}},
      "local");
}

// Linearize's options from --dt, --integrator, --actuation, --continuous-derivatives,
// --constraints and --gains.
client::LinearizeOptions linearize_options(const Args& args) {
  client::LinearizeOptions options;
  const std::optional<double> dt = number_option(args, "--dt");
  if (!dt) throw UsageError("--dt: required");
  options.dt = *dt;
  options.integrator = choice<v1::Integrator>(args, "--integrator",
                                              {{"euler", v1::INTEGRATOR_SEMI_IMPLICIT_EULER},
                                               {"explicit-euler", v1::INTEGRATOR_EXPLICIT_EULER},
                                               {"rk4", v1::INTEGRATOR_RK4}},
                                              "euler");
  const std::string actuation = args.value("--actuation", "all");
  if (actuation == "unactuated-root") {
    options.actuation = v1::ACTUATION_KIND_UNACTUATED_ROOT;
  } else if (actuation != "all") {
    options.actuation = v1::ACTUATION_KIND_JOINTS;
    std::stringstream names(actuation);
    for (std::string name; std::getline(names, name, ',');) {
      options.actuated_joints.push_back(name);
    }
  }
  options.continuous_derivatives = args.has("--continuous-derivatives");
  options.constraints = constraints(args);
  options.phases = phases(args);
  options.friction_cone = friction_cone(args);
  options.gains = gains(args);
  return options;
}

// Rollout's options: the step as linearize_options() reads it, and what to return.
client::RolloutOptions rollout_options(const Args& args) {
  const client::LinearizeOptions step = linearize_options(args);
  client::RolloutOptions options;
  options.dt = step.dt;
  options.integrator = step.integrator;
  options.actuation = step.actuation;
  options.actuated_joints = step.actuated_joints;
  options.constraints = step.constraints;
  options.phases = step.phases;
  options.friction_cone = step.friction_cone;
  options.gains = step.gains;
  options.jacobians = args.has("--fx-fu");
  std::stringstream frames(args.value("--frames", ""));
  for (std::string f; std::getline(frames, f, ',');) options.frames.push_back(f);
  options.frame_jacobians = args.has("--jacobians");
  options.reference = reference_option(args);
  return options;
}

// --knots: at least 1.
int knots_option(const Args& args) {
  const std::optional<double> knots = number_option(args, "--knots");
  if (!knots || *knots < 1 || *knots != std::floor(*knots) || *knots > 1e6) {
    throw UsageError("--knots: required, a whole number of steps from 1");
  }
  return static_cast<int>(*knots);
}

// Labels "k:label" for K steps of `labels` each.
std::vector<std::string> per_step_labels(int steps, const std::vector<std::string>& labels) {
  std::vector<std::string> out;
  for (int k = 0; k < steps; ++k) {
    for (const std::string& label : labels) out.push_back(std::to_string(k) + ":" + label);
  }
  return out;
}

// The labels of u's columns under `options`: the velocity labels of the DOFs it drives.
std::vector<std::string> control_labels(const v1::Model& m,
                                        const client::LinearizeOptions& options) {
  const std::vector<std::string> dofs = coordinate_labels(m, true);
  std::vector<std::string> labels;
  auto add = [&](const v1::Joint& joint) {
    labels.insert(labels.end(), dofs.begin() + joint.idx_v(),
                  dofs.begin() + joint.idx_v() + joint.nv());
  };
  if (options.actuation == v1::ACTUATION_KIND_JOINTS) {
    for (const std::string& name : options.actuated_joints) {
      const auto joint = std::find_if(m.joints().begin(), m.joints().end(),
                                      [&](const v1::Joint& j) { return j.name() == name; });
      if (joint == m.joints().end()) {
        throw UsageError("--actuation: model " + m.name() + " has no joint \"" + name + "\"");
      }
      add(*joint);
    }
    return labels;
  }
  for (const v1::Joint& joint : m.joints()) {
    const bool root = joint.type() == v1::JOINT_TYPE_FREE_FLYER && joint.idx_v() == 0;
    if (!(root && options.actuation == v1::ACTUATION_KIND_UNACTUATED_ROOT)) add(joint);
  }
  return labels;
}

std::map<std::string, Dynamics> dynamics_commands() {
  std::map<std::string, Dynamics> commands;
  commands["inverse-dynamics"] = {
      [](const v1::Model& m, const Args&) { return q_v_plus(m, {"a"}); },
      [](Client& c, const std::string& id, const v1::Model& m, const std::vector<Matrix>& in,
         const Args& args) {
        client::InverseDynamicsOptions options;
        options.external_forces = in[3];
        options.algorithm = choice<v1::InverseDynamicsAlgorithm>(
            args, "--algorithm",
            {{"rnea", v1::INVERSE_DYNAMICS_ALGORITHM_RNEA},
             {"lagrange", v1::INVERSE_DYNAMICS_ALGORITHM_LAGRANGE_HOMOGENEOUS}},
            "rnea");
        return Output{{dof_field("tau", m, c.inverse_dynamics(id, in[0], in[1], in[2], options))}};
      }};
  commands["forward-dynamics"] = {
      [](const v1::Model& m, const Args&) { return q_v_plus(m, {"tau"}); },
      [](Client& c, const std::string& id, const v1::Model& m, const std::vector<Matrix>& in,
         const Args& args) {
        client::ForwardDynamicsOptions options;
        options.external_forces = in[3];
        options.algorithm = choice<v1::ForwardDynamicsAlgorithm>(
            args, "--algorithm",
            {{"aba", v1::FORWARD_DYNAMICS_ALGORITHM_ABA},
             {"crba", v1::FORWARD_DYNAMICS_ALGORITHM_CRBA},
             {"factorization", v1::FORWARD_DYNAMICS_ALGORITHM_FACTORIZATION},
             {"auto", v1::FORWARD_DYNAMICS_ALGORITHM_AUTO}},
            "aba");
        return Output{{dof_field("a", m, c.forward_dynamics(id, in[0], in[1], in[2], options).a)}};
      }};
  commands["mass-matrix"] = {
      [](const v1::Model& m, const Args&) {
        return std::vector<InputField>{field("q", coordinate_labels(m, false))};
      },
      [](Client& c, const std::string& id, const v1::Model& m, const std::vector<Matrix>& in,
         const Args& args) {
        client::MassMatrixOptions options;
        options.inverse = args.has("--inverse");
        options.algorithm = choice<v1::MassMatrixAlgorithm>(
            args, "--algorithm",
            {{"crba", v1::MASS_MATRIX_ALGORITHM_CRBA},
             {"lagrange", v1::MASS_MATRIX_ALGORITHM_LAGRANGE_HOMOGENEOUS}},
            "crba");
        const client::MassMatrixResult r = c.mass_matrix(id, in[0], options);
        Output out{{dof_matrix_field("mass_matrix", m, r.mass_matrix)}};
        if (options.inverse) out.fields.push_back(dof_matrix_field("inverse", m, r.inverse));
        return out;
      }};
  commands["nonlinear-effects"] = {
      [](const v1::Model& m, const Args&) { return q_v(m); },
      [](Client& c, const std::string& id, const v1::Model& m, const std::vector<Matrix>& in,
         const Args&) {
        return Output{{dof_field("tau", m, c.nonlinear_effects(id, in[0], in[1]))}};
      }};
  commands["gravity"] = {
      [](const v1::Model& m, const Args&) {
        return std::vector<InputField>{field("q", coordinate_labels(m, false))};
      },
      [](Client& c, const std::string& id, const v1::Model& m, const std::vector<Matrix>& in,
         const Args&) { return Output{{dof_field("tau", m, c.gravity(id, in[0]))}}; }};
  commands["kinematics"] = {
      [](const v1::Model& m, const Args&) {
        return std::vector<InputField>{field("q", coordinate_labels(m, false)),
                                       field("v", coordinate_labels(m, true), false)};
      },
      [](Client& c, const std::string& id, const v1::Model& m, const std::vector<Matrix>& in,
         const Args& args) {
        client::KinematicsOptions options;
        std::stringstream frames(args.value("--frames", ""));
        for (std::string f; std::getline(frames, f, ',');) options.frames.push_back(f);
        options.reference = reference_option(args);
        options.jacobians = args.has("--jacobians");
        const client::KinematicsResult r = c.kinematics(id, in[0], in[1], options);
        Output out;
        out.lists = {{"frames", r.frames}};
        out.fields.push_back({"positions", {r.frames, kXyz}, flatten(r.positions)});
        Matrix rotations(static_cast<Eigen::Index>(r.rotations.size()),
                         9 * static_cast<Eigen::Index>(r.frames.size()));
        for (std::size_t s = 0; s < r.rotations.size(); ++s) {
          for (std::size_t f = 0; f < r.frames.size(); ++f) {
            Eigen::Map<Eigen::Matrix<double, 3, 3, Eigen::RowMajor>>(
                rotations.row(static_cast<Eigen::Index>(s)).data() + 9 * f) = r.rotations[s][f];
          }
        }
        out.fields.push_back({"rotations", {r.frames, kXyz, kXyz}, std::move(rotations)});
        if (!r.velocities.empty()) {
          out.fields.push_back({"velocities", {r.frames, spatial_labels()}, flatten(r.velocities)});
        }
        if (!r.jacobians.empty()) {
          client::Matrices stacked;
          for (const client::Matrices& per_frame : r.jacobians) {
            Matrix all(6 * static_cast<Eigen::Index>(per_frame.size()), m.nv());
            for (std::size_t f = 0; f < per_frame.size(); ++f) {
              all.middleRows(6 * static_cast<Eigen::Index>(f), 6) = per_frame[f];
            }
            stacked.push_back(std::move(all));
          }
          out.fields.push_back({"jacobians",
                                {r.frames, spatial_labels(), coordinate_labels(m, true)},
                                flatten(stacked)});
        }
        return out;
      }};
  commands["hybrid-dynamics"] = {
      [](const v1::Model& m, const Args&) {
        return q_v_plus(m, {"a", "tau"});
      },
      [](Client& c, const std::string& id, const v1::Model& m, const std::vector<Matrix>& in,
         const Args& args) {
        const client::AccelerationsAndForces r =
            c.hybrid_dynamics(id, in[0], in[1], dof_inputs(args, m), in[2], in[3], in[4]);
        return Output{{dof_field("a", m, r.a), dof_field("tau", m, r.tau)}};
      }};
  commands["constrained-dynamics"] = {
      [](const v1::Model& m, const Args&) {
        std::vector<InputField> fields = q_v(m);
        fields.push_back(field("tau", coordinate_labels(m, true)));
        fields.push_back(field("a", coordinate_labels(m, true), false));
        return fields;
      },
      [](Client& c, const std::string& id, const v1::Model& m, const std::vector<Matrix>& in,
         const Args& args) {
        client::ConstrainedDynamicsOptions options;
        options.mode = choice<v1::ConstrainedDynamicsMode>(
            args, "--mode",
            {{"forward", v1::CONSTRAINED_DYNAMICS_MODE_FORWARD},
             {"inverse", v1::CONSTRAINED_DYNAMICS_MODE_INVERSE}},
            "forward");
        const bool inverse = options.mode == v1::CONSTRAINED_DYNAMICS_MODE_INVERSE;
        if (inverse) {
          options.inputs = dof_inputs(args, m);
          if (in[3].cols() == 0) throw InputError("input: missing field \"a\"");
        }
        options.constraints = constraints(args);
        options.gains = gains(args);
        const client::ConstrainedDynamicsResult r =
            c.constrained_dynamics(id, in[0], in[1], inverse ? in[3] : Matrix(), in[2], options);
        Output out{
            {dof_field("a", m, r.a), {"multipliers", {multiplier_labels(r.rows)}, r.multipliers}}};
        if (inverse) out.fields.push_back(dof_field("tau", m, r.tau));
        return out;
      }};
  commands["floating-base-inverse-dynamics"] = {
      [](const v1::Model& m, const Args&) { return q_v_plus(m, {"a"}); },
      [](Client& c, const std::string& id, const v1::Model& m, const std::vector<Matrix>& in,
         const Args&) {
        const client::AccelerationsAndForces r =
            c.floating_base_inverse_dynamics(id, in[0], in[1], in[2], in[3]);
        return Output{{dof_field("a", m, r.a), dof_field("tau", m, r.tau)}};
      }};
  commands["derivatives"] = {
      [](const v1::Model& m, const Args&) {
        // Which of a and tau is read depends on --of; both are offered and the unused one is
        // optional, so that one input file serves both.
        std::vector<InputField> fields = q_v(m);
        fields.push_back(field("a", coordinate_labels(m, true), false));
        fields.push_back(field("tau", coordinate_labels(m, true), false));
        fields.push_back(field("external_forces", wrench_labels(m), false));
        return fields;
      },
      [](Client& c, const std::string& id, const v1::Model& m, const std::vector<Matrix>& in,
         const Args& args) {
        const v1::DerivativesOf of =
            choice<v1::DerivativesOf>(args, "--of",
                                      {{"inverse", v1::DERIVATIVES_OF_INVERSE_DYNAMICS},
                                       {"forward", v1::DERIVATIVES_OF_FORWARD_DYNAMICS},
                                       {"constrained", v1::DERIVATIVES_OF_CONSTRAINED_DYNAMICS}},
                                      "inverse");
        const bool inverse = of == v1::DERIVATIVES_OF_INVERSE_DYNAMICS;
        const bool constrained = of == v1::DERIVATIVES_OF_CONSTRAINED_DYNAMICS;
        const Matrix& u = inverse ? in[2] : in[3];
        if (u.cols() == 0) {
          throw InputError(std::string("input: missing field \"") + (inverse ? "a" : "tau") + "\"");
        }
        const client::DerivativesResult r =
            c.derivatives(id, of, in[0], in[1], u, in[4],
                          constrained ? constraints(args) : std::vector<v1::Constraint>{},
                          constrained ? gains(args) : v1::BaumgarteGains{});
        Output out{{dof_matrix_field("d_dq", m, r.d_dq), dof_matrix_field("d_dv", m, r.d_dv),
                    dof_matrix_field("d_du", m, r.d_du)}};
        add_multiplier_fields(m, r.rows, r.multipliers, r.dmultipliers_dq, r.dmultipliers_dv,
                              r.dmultipliers_dtau, out);
        return out;
      }};
  commands["coriolis-matrix"] = {[](const v1::Model& m, const Args&) { return q_v(m); },
                                 [](Client& c, const std::string& id, const v1::Model& m,
                                    const std::vector<Matrix>& in, const Args&) {
                                   return Output{{dof_matrix_field(
                                       "coriolis_matrix", m, c.coriolis_matrix(id, in[0], in[1]))}};
                                 }};
  commands["centroidal"] = {
      [](const v1::Model& m, const Args&) { return q_v(m); },
      [](Client& c, const std::string& id, const v1::Model& m, const std::vector<Matrix>& in,
         const Args&) {
        const client::CentroidalResult r = c.centroidal(id, in[0], in[1]);
        const std::vector<std::string> v = coordinate_labels(m, true);
        return Output{{{"com", {kXyz}, r.com},
                       {"com_velocity", {kXyz}, r.com_velocity},
                       {"com_jacobian", {kXyz, v}, flatten(r.com_jacobian)},
                       {"momentum", {spatial_labels()}, r.momentum},
                       {"momentum_matrix", {spatial_labels(), v}, flatten(r.momentum_matrix)}}};
      }};
  commands["contact-dynamics"] = {
      [](const v1::Model& m, const Args&) { return q_v_plus(m, {"tau"}); },
      [](Client& c, const std::string& id, const v1::Model& m, const std::vector<Matrix>& in,
         const Args& args) {
        const std::vector<client::PointContact> contacts = contacts_option(args);
        return contact_output(
            m, "a", "forces", contacts,
            c.contact_dynamics(id, in[0], in[1], in[2], contacts, solver_options(args)));
      }};
  commands["impact"] = {
      [](const v1::Model& m, const Args&) { return q_v(m); },
      [](Client& c, const std::string& id, const v1::Model& m, const std::vector<Matrix>& in,
         const Args& args) {
        const std::vector<client::PointContact> contacts = contacts_option(args);
        return contact_output(
            m, "v", "impulses", contacts,
            c.impact(id, in[0], in[1], contacts, number_option(args, "--restitution").value_or(0.0),
                     solver_options(args)));
      }};
  commands["simulate"] = {
      [](const v1::Model& m, const Args&) {
        std::vector<InputField> fields = q_v(m);
        fields.push_back(field("tau", coordinate_labels(m, true), false));
        return fields;
      },
      [](Client& c, const std::string& id, const v1::Model& m, const std::vector<Matrix>& in,
         const Args& args) {
        client::SimulateOptions options;
        const std::optional<std::uint32_t> steps = count_option(args, "--steps");
        if (!steps) throw UsageError("--steps: required");
        options.steps = *steps;
        options.time_step = number_option(args, "--time-step");
        options.integrator =
            choice<v1::Integrator>(args, "--integrator",
                                   {{"euler", v1::INTEGRATOR_SEMI_IMPLICIT_EULER},
                                    {"explicit-euler", v1::INTEGRATOR_EXPLICIT_EULER},
                                    {"rk4", v1::INTEGRATOR_RK4}},
                                   "euler");
        options.tau = in[2];
        options.ground_height = number_option(args, "--ground-height").value_or(0.0);
        options.ground_friction = number_option(args, "--friction").value_or(0.0);
        options.ground_restitution = number_option(args, "--restitution").value_or(0.0);
        for (const std::vector<std::string>& parts : items(args, "--candidates", 2)) {
          options.candidates.push_back(
              {parts[0], vector_part("--candidates", parts[1], Eigen::Vector3d::Zero())});
        }
        options.contact_margin = number_option(args, "--contact-margin");
        options.stabilization = number_option(args, "--stabilization");
        options.restitution_velocity = number_option(args, "--restitution-velocity");
        options.solver = solver_options(args);
        const client::SimulateResult r = c.simulate(id, in[0], in[1], options);
        std::vector<std::string> step_labels;
        for (std::uint32_t k = 0; k < options.steps; ++k) step_labels.push_back(std::to_string(k));
        return Output{{{"q", {step_labels, coordinate_labels(m, false)}, flatten(r.q)},
                       {"v", {step_labels, coordinate_labels(m, true)}, flatten(r.v)},
                       per_state_field("status", r.status),
                       per_state_field("max_iterations", r.max_iterations),
                       per_state_field("max_residual", r.max_residual),
                       per_state_field("max_contacts", r.max_contacts)}};
      }};
  commands["linearize"] = {
      [](const v1::Model& m, const Args& args) {
        std::vector<InputField> fields = q_v(m);
        fields.push_back(field("u", control_labels(m, linearize_options(args))));
        return fields;
      },
      [](Client& c, const std::string& id, const v1::Model& m, const std::vector<Matrix>& in,
         const Args& args) {
        const client::LinearizeOptions options = linearize_options(args);
        const client::LinearizeResult r = c.linearize(id, in[0], in[1], in[2], options);
        // The tangent coordinates of x = (q, v): "q:" then "v:" before each DOF's label.
        std::vector<std::string> x;
        for (const char* part : {"q:", "v:"}) {
          for (const std::string& dof : coordinate_labels(m, true)) x.push_back(part + dof);
        }
        Output out{{{"q_next", {coordinate_labels(m, false)}, r.q_next},
                    dof_field("v_next", m, r.v_next),
                    {"fx", {x, x}, flatten(r.fx)},
                    {"fu", {x, control_labels(m, options)}, flatten(r.fu)}}};
        if (options.continuous_derivatives) {
          out.fields.push_back(dof_matrix_field("da_dq", m, r.da_dq));
          out.fields.push_back(dof_matrix_field("da_dv", m, r.da_dv));
          out.fields.push_back(dof_matrix_field("da_dtau", m, r.da_dtau));
          add_multiplier_fields(m, r.rows, r.multipliers, r.dmultipliers_dq, r.dmultipliers_dv,
                                r.dmultipliers_dtau, out);
        }
        if (r.knots) {
          for (OutputField& f : knot_fields(*r.knots, options.phases, options.friction_cone,
                                            static_cast<std::size_t>(r.q_next.rows()))) {
            out.fields.push_back(std::move(f));
          }
        }
        return out;
      }};
  commands["rollout"] = {
      [](const v1::Model& m, const Args& args) {
        std::vector<InputField> fields = q_v(m);
        client::LinearizeOptions step = linearize_options(args);
        fields.push_back(field("u", per_step_labels(knots_option(args), control_labels(m, step))));
        return fields;
      },
      [](Client& c, const std::string& id, const v1::Model& m, const std::vector<Matrix>& in,
         const Args& args) {
        const client::RolloutOptions options = rollout_options(args);
        const int knots = knots_option(args);
        client::Matrices u;
        for (Eigen::Index r = 0; r < in[2].rows(); ++r) {
          u.emplace_back(
              Eigen::Map<const Matrix>(in[2].row(r).data(), knots, in[2].cols() / knots));
        }
        const client::RolloutResult result = c.rollout(id, in[0], in[1], u, options);
        std::vector<std::string> states, steps;
        for (int k = 0; k <= knots; ++k) states.push_back(std::to_string(k));
        steps.assign(states.begin(), states.end() - 1);
        // Each rollout's arrays as one output row.
        const auto rows = [&](auto&& of) {
          std::vector<Matrix> per_rollout;
          for (const client::RolloutTrajectory& t : result.rollouts) per_rollout.push_back(of(t));
          return flatten(per_rollout);
        };
        const auto stacked = [](const client::Matrices& blocks) {
          Matrix all(static_cast<Eigen::Index>(blocks.size()),
                     blocks.empty() ? 0 : blocks.front().size());
          for (std::size_t k = 0; k < blocks.size(); ++k) {
            all.row(static_cast<Eigen::Index>(k)) =
                Eigen::Map<const Eigen::RowVectorXd>(blocks[k].data(), blocks[k].size());
          }
          return all;
        };
        const client::LinearizeOptions step = linearize_options(args);
        Output out{
            {{"q", {states, coordinate_labels(m, false)}, rows([](const auto& t) { return t.q; })},
             {"v", {states, coordinate_labels(m, true)}, rows([](const auto& t) { return t.v; })},
             {"u", {steps, control_labels(m, step)}, rows([](const auto& t) { return t.u; })},
             {"steps", {}, rows([](const auto& t) { return Matrix::Constant(1, 1, t.steps); })}}};
        for (const client::RolloutTrajectory& t : result.rollouts) {
          if (!t.error.empty()) std::cerr << "torquectl: " << t.error << "\n";
        }
        if (options.jacobians) {
          std::vector<std::string> x;
          for (const char* part : {"q:", "v:"}) {
            for (const std::string& dof : coordinate_labels(m, true)) x.push_back(part + dof);
          }
          out.fields.push_back(
              {"fx", {steps, x, x}, rows([&](const auto& t) { return stacked(t.fx); })});
          out.fields.push_back({"fu", {steps, x, control_labels(m, step)}, rows([&](const auto& t) {
                                  return stacked(t.fu);
                                })});
        }
        if (!result.rollouts.empty() && result.rollouts.front().multipliers.cols() > 0) {
          out.fields.push_back({"multipliers",
                                {steps, multiplier_labels(result.rows)},
                                rows([](const auto& t) { return t.multipliers; })});
        }
        if (!result.rollouts.empty() && result.rollouts.front().knots) {
          // Each rollout's fields per step, one row per rollout.
          std::vector<std::vector<OutputField>> per_rollout;
          for (const client::RolloutTrajectory& t : result.rollouts) {
            per_rollout.push_back(knot_fields(*t.knots, options.phases, options.friction_cone,
                                              static_cast<std::size_t>(knots)));
          }
          for (std::size_t f = 0; f < per_rollout.front().size(); ++f) {
            std::vector<Matrix> values;
            for (const std::vector<OutputField>& fields : per_rollout) {
              values.push_back(fields[f].values);
            }
            out.fields.push_back({per_rollout.front()[f].name,
                                  {steps, per_rollout.front()[f].dims.front()},
                                  flatten(values)});
          }
        }
        if (!result.frames.empty()) {
          out.lists = {{"frames", result.frames}};
          out.fields.push_back({"frame_positions",
                                {states, result.frames, kXyz},
                                rows([&](const auto& t) { return stacked(t.frame_positions); })});
          if (options.frame_jacobians) {
            out.fields.push_back(
                {"frame_jacobians",
                 {states, result.frames, spatial_labels(), coordinate_labels(m, true)},
                 rows([&](const auto& t) {
                   client::Matrices per_state;
                   for (const client::Matrices& frames : t.frame_jacobians) {
                     per_state.push_back(stacked(frames));
                   }
                   return stacked(per_state);
                 })});
          }
        }
        return out;
      }};
  return commands;
}

// Protobuf JSON with the proto's field names; `every_field`: fields at their defaults too.
std::string json_of(const google::protobuf::Message& message, bool every_field = false) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = every_field;
  (void)google::protobuf::util::MessageToJsonString(message, &json, options);
  return json;
}

int run_register(const Args& args) {
  Client client(client_options(args));
  std::cout << client.register_model(read_model_request(args.positional.at(0), args)).id() << "\n";
  return 0;
}

int run_models(const Args& args) {
  Client client(client_options(args));
  const std::vector<v1::ModelSummary> models = client.list_models();
  if (args.value("--format", "json") == "csv") {
    std::cout << "id,name,base,nq,nv,moving_bodies,origin\n";
    for (const v1::ModelSummary& m : models) {
      std::cout << m.id() << "," << m.name() << "," << v1::BaseType_Name(m.base()) << "," << m.nq()
                << "," << m.nv() << "," << m.moving_bodies() << ","
                << v1::ModelOrigin_Name(m.origin()) << "\n";
    }
    return 0;
  }
  v1::ListModelsResponse response;
  response.mutable_models()->Assign(models.begin(), models.end());
  std::cout << json_of(response);
  return 0;
}

int run_get(const Args& args) {
  Client client(client_options(args));
  const v1::Model model = client.get_model(args.positional.at(0));
  if (args.value("--format", "json") == "csv") {
    std::cout << "joint,type,idx_q,nq,idx_v,nv\n";
    for (const v1::Joint& j : model.joints()) {
      std::cout << j.name() << "," << v1::JointType_Name(j.type()) << "," << j.idx_q() << ","
                << j.nq() << "," << j.idx_v() << "," << j.nv() << "\n";
    }
    return 0;
  }
  std::cout << json_of(model);
  return 0;
}

int run_delete(const Args& args) {
  Client client(client_options(args));
  client.delete_model(args.positional.at(0));
  return 0;
}

int run_health(const Args& args) {
  Client client(client_options(args));
  const auto status = client.health();
  std::cout << grpc::health::v1::HealthCheckResponse::ServingStatus_Name(status) << "\n";
  return status == grpc::health::v1::HealthCheckResponse::SERVING ? 0 : 1;
}

int run_echo(const Args& args) {
  Eigen::VectorXd values(static_cast<Eigen::Index>(args.positional.size()));
  for (std::size_t i = 0; i < args.positional.size(); ++i) {
    char* end = nullptr;
    values[static_cast<Eigen::Index>(i)] = std::strtod(args.positional[i].c_str(), &end);
    if (args.positional[i].empty() || *end != '\0') {
      throw UsageError("echo: \"" + args.positional[i] + "\" is not a number");
    }
  }
  Client client(client_options(args));
  const client::EchoResult r = client.echo(args.value("--payload", ""), values);
  std::vector<std::string> indices;
  for (Eigen::Index i = 0; i < r.values.size(); ++i) indices.push_back(std::to_string(i));
  Output out{{{"values", {indices}, r.values.transpose()}}, {{"payload", {r.payload}}}};
  print(out, args);
  return 0;
}

// `message` from protobuf JSON; blank text is the empty message. Throws InputError.
void parse_json(const std::string& text, google::protobuf::Message& message) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return;
  const auto status = google::protobuf::util::JsonStringToMessage(text, &message);
  if (!status.ok()) {
    throw InputError("input: not a " + message.GetDescriptor()->full_name() +
                     " in protobuf JSON: " + status.ToString());
  }
}

// A Session's messages: a JSON list of SessionRequests, or one.
std::vector<v1::SessionRequest> parse_session_json(const std::string& text) {
  nlohmann::json items;
  try {
    items = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("input: not JSON: ") + e.what());
  }
  if (!items.is_array()) items = nlohmann::json::array({items});
  std::vector<v1::SessionRequest> messages(items.size());
  for (std::size_t k = 0; k < items.size(); ++k) parse_json(items[k].dump(), messages[k]);
  return messages;
}

// The request's model_id field; throws UsageError when it has none.
const google::protobuf::FieldDescriptor& model_id_field(
    const google::protobuf::Descriptor& request) {
  const google::protobuf::FieldDescriptor* field = request.FindFieldByName("model_id");
  if (field == nullptr || field->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_STRING) {
    throw UsageError("call: " + request.full_name() + " names no model");
  }
  return *field;
}

// The messages one at a time, each answer read before the next message is sent (torquectl is no
// load generator); exit 1 when a message failed.
int run_session(Client& client, std::vector<v1::SessionRequest> messages,
                const std::string& model_id) {
  if (!model_id.empty() && !messages.empty()) messages.front().set_model_id(model_id);
  client::Session session = client.session();
  std::vector<std::string> answers;
  bool failed = false;
  for (const v1::SessionRequest& message : messages) {
    v1::SessionResponse answer;
    if (!session.write(message) || !session.read(&answer)) break;
    if (answer.status().code() != 0) {
      std::cerr << "torquectl: message " << answers.size() << ": "
                << client::status_code_name(static_cast<grpc::StatusCode>(answer.status().code()))
                << ": " << answer.status().message() << "\n";
      failed = true;
    }
    std::string json = json_of(answer, true);
    answers.push_back(json.substr(0, json.find_last_not_of('\n') + 1));
  }
  session.finish();
  std::cout << "[";
  for (std::size_t k = 0; k < answers.size(); ++k) std::cout << (k ? ",\n" : "\n") << answers[k];
  std::cout << "\n]\n";
  return failed ? 1 : 0;
}

int run_call(const Args& args) {
  const std::string& name = args.positional.at(0);
  const google::protobuf::MethodDescriptor* method = client::find_method(name);
  if (method == nullptr) throw UsageError("call: no method \"" + name + "\" (see the list below)");
  const bool session = method->input_type() == v1::SessionRequest::descriptor() &&
                       method->output_type() == v1::SessionResponse::descriptor();
  if ((method->client_streaming() || method->server_streaming()) && !session) {
    throw UsageError("call: " + name + " streams; call takes the unary methods and Session");
  }
  if (args.value("--format", "json") != "json") {
    throw UsageError("call: prints protobuf JSON only");
  }
  google::protobuf::MessageFactory* factory = google::protobuf::MessageFactory::generated_factory();
  const std::string text = read_file(args.value("--input", "-"));
  std::vector<v1::SessionRequest> messages;
  std::unique_ptr<google::protobuf::Message> request;
  if (session) {
    messages = parse_session_json(text);
  } else {
    request.reset(factory->GetPrototype(method->input_type())->New());
    parse_json(text, *request);
  }
  const bool names_a_model = args.positional.size() > 1;
  if (names_a_model) model_id_field(*method->input_type());
  std::unique_ptr<LocalServer> local;
  std::unique_ptr<Client> client;
  std::string model_id;
  if (args.has("--local")) {
    std::optional<v1::RegisterModelRequest> model;
    if (names_a_model) model = read_model_request(args.positional[1], args);
    local = std::make_unique<LocalServer>();
    client = std::make_unique<Client>(local->channel(), client_options(args));
    if (model) model_id = client->register_model(*model).id();
  } else {
    client = std::make_unique<Client>(client_options(args));
    if (names_a_model) model_id = args.positional[1];
  }
  if (session) return run_session(*client, std::move(messages), model_id);
  if (!model_id.empty()) {
    request->GetReflection()->SetString(request.get(), &model_id_field(*method->input_type()),
                                        model_id);
  }
  std::unique_ptr<google::protobuf::Message> response(
      factory->GetPrototype(method->output_type())->New());
  client->call_method(*method, *request, response.get());
  std::cout << json_of(*response, true);
  return 0;
}

// The model `reference` names: the one of that id, else the one of that name, so that a problem
// file names its model portably (ids are content hashes). Throws client::Error NOT_FOUND when
// there is none, and InputError when several models share the name.
v1::ModelSummary find_model(Client& client, const std::string& reference) {
  try {
    const v1::Model model = client.get_model(reference);
    v1::ModelSummary found;
    found.set_id(model.id());
    found.set_name(model.name());
    return found;
  } catch (const client::Error& e) {
    if (e.code() != grpc::StatusCode::NOT_FOUND) throw;
  }
  std::vector<v1::ModelSummary> named;
  for (const v1::ModelSummary& model : client.list_models()) {
    if (model.name() == reference) named.push_back(model);
  }
  if (named.empty()) {
    throw client::Error(grpc::StatusCode::NOT_FOUND,
                        "no model with id or name \"" + reference + "\"");
  }
  if (named.size() > 1) {
    std::string ids;
    for (const v1::ModelSummary& model : named) ids += (ids.empty() ? "" : ", ") + model.id();
    throw InputError("input: model_id \"" + reference + "\": " + std::to_string(named.size()) +
                     " models have this name (" + ids + "); give one's id");
  }
  return named.front();
}

// A number for a person to read: six significant digits (--json has them all).
std::string readable(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.6g", x);
  return buffer;
}

// STOP_REASON_ITERATION_LIMIT as "iteration limit".
std::string stop_reason_words(v1::StopReason reason) {
  std::string words = v1::StopReason_Name(reason).substr(std::string("STOP_REASON_").size());
  for (char& c : words) {
    c = c == '_' ? ' ' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return words;
}

// solve's summary: the solve, then each cost term's part with the knots it covers.
void print_solve_summary(const v1::ModelSummary& model, const v1::SolveRequest& request,
                         const v1::SolveResponse& response) {
  write_text_table(std::cout, {{"model", model.name() + " (" + model.id() + ")"},
                               {"knots", std::to_string(response.knots()) + " x " +
                                             readable(request.dt()) + " s"},
                               {"stop reason", stop_reason_words(response.stop_reason())},
                               {"iterations", std::to_string(response.iterations_size())},
                               {"cost", readable(response.cost())},
                               {"max gap", readable(response.max_gap())},
                               {"feasible", response.feasible() ? "yes" : "no"},
                               {"solve time", readable(response.solve_seconds()) + " s"}});
  std::vector<std::vector<std::string>> terms = {{"cost term", "knots", "cost", "share"}};
  for (int i = 0; i < response.cost_terms_size(); ++i) {
    const v1::CostValue& term = response.cost_terms(i);
    std::string knots = "terminal";
    if (i < request.running_costs_size()) {
      const v1::CostTerm& running = request.running_costs(i);
      knots = "[" + std::to_string(running.first_knot()) + ", " +
              std::to_string(running.has_end_knot() ? running.end_knot() : request.knots()) + ")";
    }
    const double share = response.cost() > 0 ? 100 * term.value() / response.cost() : 0.0;
    char percent[16];
    std::snprintf(percent, sizeof(percent), "%.1f%%", share);
    terms.push_back({term.name(), knots, readable(term.value()), percent});
  }
  std::cout << "\n";
  write_text_table(std::cout, terms);
}

int run_solve(const Args& args) {
  const std::string format = args.value("--format", "");
  if (format == "csv") {
    throw UsageError(
        "--format csv: solve prints a summary, or with --json the response in protobuf JSON");
  }
  v1::SolveRequest request;
  parse_json(read_file(args.positional.empty() ? "-" : args.positional[0]), request);
  if (request.model_id().empty()) {
    throw InputError("input: model_id: empty; name the model by its id or its name");
  }
  Client client(client_options(args));
  const v1::ModelSummary model = find_model(client, request.model_id());
  request.set_model_id(model.id());
  v1::SolveResponse response;
  client.call_method(*client::find_method("Solve"), request, &response);
  if (args.has("--json") || format == "json") {
    std::cout << json_of(response, true);
  } else {
    print_solve_summary(model, request, response);
  }
  return 0;
}

// call's help: what it does, and the methods it takes, from the services' descriptors.
std::string call_summary() {
  std::ostringstream out;
  out << "Calls a method of the services by name. Reads its request as protobuf JSON (the\n"
         "proto's field names: {\"model_id\": \"...\", \"batch_size\": 2, \"q\": [...]}; empty\n"
         "input is the empty request) and prints its response as protobuf JSON, every field\n"
         "included. ID sets the request's model_id; with --local, FILE is a model file registered\n"
         "in this process, and its id does. Session takes a JSON list of SessionRequests (ID sets\n"
         "the first one's model_id), sends them one at a time and prints the list of their\n"
         "SessionResponses (exit 1 when one failed).\n\nmethods:";
  for (const google::protobuf::ServiceDescriptor* service : client::services()) {
    out << "\n  " << service->full_name() << ":";
    std::size_t column = 80;  // a new line first
    for (int m = 0; m < service->method_count(); ++m) {
      const std::string& name = service->method(m)->name();
      if (column + 1 + name.size() > 80) {
        out << "\n   ";
        column = 3;
      }
      out << " " << name;
      column += 1 + name.size();
    }
  }
  return out.str();
}

std::vector<Command> commands() {
  const std::vector<std::string> file_options = {"--floating-base", "--fixed-base", "--dh",
                                                 "--model-format",  "--name",       "--strict"};
  std::vector<Command> list = {
      {"register", "FILE",
       "Registers a model (URDF, MJCF, SDF, or a RegisterModelRequest in text format) and "
       "prints its id.",
       file_options, run_register},
      {"models", "", "Lists the server's models.", {}, run_models},
      {"get", "ID", "Prints a model's layout.", {}, run_get},
      {"delete", "ID", "Deletes a registered model.", {}, run_delete},
      {"health", "", "Prints the server's health (exit 1 unless SERVING).", {}, run_health},
      {"echo",
       "[NUMBER...]",
       "Sends numbers (and --payload) and prints what comes back.",
       {"--payload"},
       run_echo},
      {"call", "METHOD [ID|FILE]", call_summary(), kModelOptions, run_call},
      {"solve",
       "[FILE]",
       "Solves an optimal-control problem on the server (ControlService.Solve). Reads a\n"
       "SolveRequest in protobuf JSON (control.proto's field names) from FILE, or standard\n"
       "input when FILE is - or left out; its model_id is a model's id or its name. Prints\n"
       "the stop reason, iterations, cost, largest gap and the server's solve time, then each\n"
       "cost term's part; with --json (or --format json) the whole response instead.\n"
       "clients/cpp/examples/puma560_reach.json reaches a point with the bundled arm.\n"
       "A solve still running near the deadline (--deadline) answers its best iterate so far.",
       {"--json"},
       run_solve},
  };
  const std::map<std::string, std::pair<std::string, std::vector<std::string>>> dynamics_help = {
      {"inverse-dynamics",
       {"tau from q, v, a [, external_forces]; --algorithm rnea|lagrange", {"--algorithm"}}},
      {"forward-dynamics",
       {"a from q, v, tau [, external_forces]; --algorithm "
        "aba|crba|factorization|auto",
        {"--algorithm"}}},
      {"mass-matrix",
       {"M(q) (and M^-1 with --inverse) from q; --algorithm crba|lagrange",
        {"--algorithm", "--inverse"}}},
      {"nonlinear-effects", {"C(q, v) v + g(q) from q, v", {}}},
      {"gravity", {"g(q) from q", {}}},
      {"kinematics",
       {"frame positions, rotations [, velocities, Jacobians] from q [, v]",
        {"--frames", "--reference", "--jacobians"}}},
      {"hybrid-dynamics",
       {"a and tau from q, v, a, tau [, external_forces] and --inputs", {"--inputs"}}},
      {"constrained-dynamics",
       {"a and multipliers (and tau with --mode inverse) from q, v, tau [, a] under the model's "
        "loop closures and --constraints",
        {"--mode", "--inputs", "--constraints", "--gains"}}},
      {"floating-base-inverse-dynamics",
       {"base acceleration and tau from q, v, a "
        "[, external_forces]",
        {}}},
      {"derivatives",
       {"d_dq, d_dv, d_du of inverse (q, v, a), forward (q, v, tau) or constrained (q, v, tau, "
        "the model's loop closures and --constraints: also the multipliers and their "
        "derivatives) dynamics",
        {"--of", "--constraints", "--gains"}}},
      {"coriolis-matrix", {"C(q, v) from q, v", {}}},
      {"centroidal",
       {"centre of mass, its velocity and Jacobian, centroidal momentum and its "
        "matrix from q, v",
        {}}},
      {"contact-dynamics",
       {"a, contact forces (world frame), modes (0 separating, 1 sticking, 2 sliding) and the "
        "solver's status (0 solved, 1 no solution, 2 iteration limit), iterations and residual "
        "from q, v, tau and --contacts",
        {"--contacts", "--tolerance", "--max-iterations", "--slip-velocity"}}},
      {"impact",
       {"post-impact v, impulses (world frame), modes and solver results (as contact-dynamics) "
        "from q, pre-impact v, --contacts and --restitution",
        {"--contacts", "--restitution", "--tolerance", "--max-iterations"}}},
      {"simulate",
       {"q and v after each of --steps steps, from each state's q, v [, tau held for every "
        "step], against the ground plane when --candidates are given; plus the solver's worst "
        "status, max_iterations, max_residual and max_contacts per trajectory",
        {"--steps", "--time-step", "--integrator", "--candidates", "--ground-height", "--friction",
         "--restitution", "--contact-margin", "--stabilization", "--restitution-velocity",
         "--tolerance", "--max-iterations"}}},
      {"linearize",
       {"a trajectory optimizer's step at each knot (q, v, u): q_next, v_next and the Jacobians "
        "fx (2nv x 2nv) and fu (2nv x nu) in the tangent space, from --dt, held by the model's "
        "loop closures and --constraints (rigid contacts) or the --phases of a contact schedule",
        {"--dt", "--integrator", "--actuation", "--continuous-derivatives", "--constraints",
         "--phases", "--friction-cone", "--gains"}}},
      {"rollout",
       {"a shooting solver's forward pass from each row's q, v: the states q, v after each of "
        "--knots steps of --dt under the row's controls u (--knots × nu values), open loop, held "
        "by the model's loop closures and --constraints or --phases; with --fx-fu the steps' "
        "Jacobians, with --frames the frames' placements at every state (call Rollout for "
        "feedback)",
        {"--knots", "--dt", "--integrator", "--actuation", "--constraints", "--phases",
         "--friction-cone", "--gains", "--fx-fu", "--frames", "--jacobians", "--reference"}}},
  };
  for (const auto& [name, spec] : dynamics_commands()) {
    std::vector<std::string> options = kModelOptions;
    const auto& help = dynamics_help.at(name);
    options.insert(options.end(), help.second.begin(), help.second.end());
    list.push_back({name, "ID|FILE", help.first, options,
                    [d = spec](const Args& args) { return run_dynamics(d, args); }});
  }
  return list;
}

std::string command_help(const Command& c) {
  std::ostringstream out;
  out << "usage: torquectl " << c.name << (c.arguments.empty() ? "" : " " + c.arguments)
      << " [options]\n\n"
      << c.summary << "\n\noptions:\n";
  std::vector<std::string> options = c.options;
  options.insert(options.end(), kGlobalOptions.begin(), kGlobalOptions.end());
  for (const std::string& o : options) {
    const OptionSpec& spec = option_specs().at(o);
    const std::string left = o + (spec.value.empty() ? "" : " " + spec.value);
    out << "  " << left << std::string(left.size() < 20 ? 20 - left.size() : 1, ' ') << spec.help
        << "\n";
  }
  return out.str();
}

std::string general_help(const std::vector<Command>& list) {
  std::ostringstream out;
  out << "usage: torquectl COMMAND [ARGS] [options]   (torquectl COMMAND --help for details)\n\n"
         "Dynamics commands take a model id, or with --local a model FILE computed in this\n"
         "process, and read states (JSON or CSV) from --input or standard input. call sends any\n"
         "method's request in protobuf JSON (torquectl call --help lists the methods); solve\n"
         "sends an optimal-control problem in protobuf JSON and prints a summary.\n\n"
         "commands:\n";
  for (const Command& c : list) out << "  " << c.name << " " << c.arguments << "\n";
  out << "\nEvery command takes --server ADDR ($TORQUED_SERVER), --deadline S, TLS and mutual TLS\n"
         "(--tls-ca FILE, --tls-cert FILE --tls-key FILE, --tls-server-name NAME, or\n"
         "$TORQUED_TLS_CA, $TORQUED_TLS_CLIENT_CERT, $TORQUED_TLS_CLIENT_KEY,\n"
         "$TORQUED_TLS_SERVER_NAME) and a bearer token (--token-file FILE, $TORQUED_TOKEN_FILE,\n"
         "or $TORQUED_TOKEN).\n";
  out << "\nexit codes: 0 ok, 1 server or RPC error, 2 usage error, 3 input file error\n";
  return out.str();
}

// Splits the command line; throws UsageError for an option the command does not take.
Args parse(const Command& c, const std::vector<std::string>& words) {
  std::set<std::string> allowed(c.options.begin(), c.options.end());
  allowed.insert(kGlobalOptions.begin(), kGlobalOptions.end());
  Args args;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w.rfind("--", 0) != 0 || w == "--") {
      args.positional.push_back(w);
      continue;
    }
    const std::size_t equals = w.find('=');
    const std::string name = w.substr(0, equals);
    if (!allowed.count(name)) throw UsageError(c.name + ": unknown option " + name);
    if (option_specs().at(name).value.empty()) {
      if (equals != std::string::npos) throw UsageError(name + " takes no value");
      args.flags.insert(name);
    } else if (equals != std::string::npos) {
      args.values[name] = w.substr(equals + 1);
    } else if (i + 1 < words.size()) {
      args.values[name] = words[++i];
    } else {
      throw UsageError(name + " needs a value");
    }
  }
  const std::string format = args.value("--format", "json");
  if (format != "json" && format != "csv") {
    throw UsageError("--format: expected json or csv, got \"" + format + "\"");
  }
  return args;
}

// The fewest and the most positional arguments a command takes: its words, of which those in
// brackets are optional ("[NUMBER...]": any number of them).
std::pair<std::size_t, std::size_t> argument_range(const Command& c) {
  std::size_t required = 0, optional = 0;
  std::istringstream words(c.arguments);
  for (std::string word; words >> word;) {
    if (word.front() != '[') {
      ++required;
    } else if (word.find("...") != std::string::npos) {
      return {required, std::numeric_limits<std::size_t>::max()};
    } else {
      ++optional;
    }
  }
  return {required, required + optional};
}

int run(int argc, char** argv) {
  const std::vector<Command> list = commands();
  if (argc < 2) {
    std::cerr << general_help(list);
    return 2;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    std::cout << general_help(list);
    return 0;
  }
  auto it =
      std::find_if(list.begin(), list.end(), [&](const Command& c) { return c.name == name; });
  if (it == list.end()) {
    std::cerr << "torquectl: unknown command \"" << name << "\"\n\n" << general_help(list);
    return 2;
  }
  try {
    const Args args = parse(*it, std::vector<std::string>(argv + 2, argv + argc));
    if (args.has("--help")) {
      std::cout << command_help(*it);
      return 0;
    }
    const auto [fewest, most] = argument_range(*it);
    if (args.positional.size() < fewest || args.positional.size() > most) {
      throw UsageError(it->name + ": expected " +
                       (it->arguments.empty() ? "no arguments" : it->arguments) + ", got " +
                       std::to_string(args.positional.size()) + " arguments");
    }
    return it->run(args);
  } catch (const UsageError& e) {
    std::cerr << "torquectl: " << e.what() << "\n\n" << command_help(*it);
    return 2;
  } catch (const InputError& e) {
    std::cerr << "torquectl: " << e.what() << "\n";
    return 3;
  } catch (const client::Error& e) {
    std::cerr << "torquectl: " << client::status_code_name(e.code()) << ": " << e.message() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "torquectl: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace
}  // namespace torqued::torquectl

int main(int argc, char** argv) { return torqued::torquectl::run(argc, argv); }
