// The hostile client's table: bad inputs across every RPC, every model source and the transport,
// one row each, against one server. Every row checks the status it gets (its code, and that the
// message names the field or the limit's flag, echoes at most a bounded part of the input, and
// is printable UTF-8), then that the server still answers a reference InverseDynamics and
// ForwardDynamics with the same bits as before the table, and that its resident memory has not
// grown past kRssGrowthBound. The rows run in one process against one server on purpose: a row
// that leaves the server damaged fails the rows after it too, and the first failure names it.
#include <arpa/inet.h>
#include <fcntl.h>
#include <grpcpp/create_channel_posix.h>
#include <grpcpp/generic/generic_stub.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "tests/server/bitwise.hpp"
#include "tests/server/server_process.hpp"
#include "torqued/v1/control.grpc.pb.h"

namespace torqued::testing {
namespace {

using Dynamics = v1::DynamicsService::Stub;
using Models = v1::ModelService::Stub;
using Control = v1::ControlService::Stub;
using StatusCode = grpc::StatusCode;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// The server's limits, low enough that every one is reached with a few megabytes.
constexpr int kMaxMessageBytes = 4 << 20;
const std::vector<std::string> kServerFlags = {
    "--workers=2",
    "--queue-capacity=4",
    "--max-message-bytes=" + std::to_string(kMaxMessageBytes),
    "--max-model-bytes=3145728",
    "--max-urdf-bytes=2621440",
    "--max-batch-states=10000",
    "--max-bodies=64",
    "--max-dof=40",
    "--max-models=12",
    "--max-kinematics-frames=64",
    "--max-phases=8",
    "--max-ocp-knots=2000",
    "--max-cost-terms=8",
    "--max-ocp-iterations=200",
    "--max-contacts=64",
    "--max-constraint-rows=24",
    "--max-solver-iterations=5000",
    "--max-simulation-steps=20000",
    "--max-session-queued=4",
    "--max-workspace-bytes=262144",
    "--workspace-cache-bytes=8388608"};

// How much the server's resident memory may grow over the whole table. glibc keeps freed memory
// (main.cpp's mallopt) and the heap trimmer gives it back only past 64 MiB free
// (server.hpp: HeapTrimmer{64 << 20}); the workspace pool keeps up to 8 MiB idle
// (--workspace-cache-bytes above); and gRPC holds a few messages of at most 4 MiB per connection
// in flight (request bytes, the decoded request, the response): 64 + 8 + 24 MiB. Rows push far
// more than this through the server (a stream that never reads asks for 928 MB of answers,
// hundreds of idle connections, a 32 MiB compressed message), so a server that kept what a
// hostile client sent would cross it.
constexpr std::int64_t kRssGrowthBound = 96LL << 20;
// What a stream that its client fills and never reads may add to that while it is stuck: its
// receive window. gRPC sizes each stream's window from its bandwidth-delay estimate, which grows
// when ping acks come late on busy CPUs (a stream once took 1,000 writes of 64 kB beside two
// CPU-bound processes). The transport's quota, a quarter of the default budget, bounds the
// windows, and shrinks them as it fills. The server keeps the probe on: without it an 88 kB Echo
// took 210 µs instead of 150, an 880 kB one 520 instead of 400.
constexpr std::int64_t kStuckStreamBound = 256LL << 20;
// Writes of 64 kB past that quota: a stream still taking the last of them has no back-pressure.
constexpr int kStuckStreamWrites = 5000;

// A status message quotes at most this much (server/transport/unary_call.cpp cuts at 1 KB, then
// says so).
constexpr std::size_t kMaxStatusBytes = 1100;

// Bytes that are no protobuf message: field 0x1fffffff with wire type 7, which does not exist.
const std::string kUndecodable = "\xff\xff\xff\xff\x0f\x01\x02";

struct Row {
  std::string name;
  StatusCode code;
  // The message must contain each: the field, the limit's flag, what is wrong.
  std::vector<std::string> names;
  std::function<grpc::Status()> act;
};

void PrintTo(const Row& row, std::ostream* out) { *out << row.name; }

// ---- The server and what the rows share ----

struct Shared {
  std::optional<TempDir> dir;
  std::unique_ptr<ServerProcess> server;
  std::unique_ptr<Dynamics> dynamics;
  std::unique_ptr<Models> models;
  std::unique_ptr<Control> control;
  std::map<std::string, v1::Model> layouts;
  v1::InverseDynamicsRequest reference_id;
  v1::ForwardDynamicsRequest reference_fd;
  v1::InverseDynamicsResponse expected_id;
  v1::ForwardDynamicsResponse expected_fd;
  std::int64_t baseline_rss = 0;
  std::int64_t largest_growth = 0;  // of RSS over the baseline, at any check
};

Shared& shared() {
  static Shared* instance = new Shared();
  return *instance;
}

const v1::Model& layout(const std::string& name) { return shared().layouts.at(name); }
std::string id_of(const std::string& name) { return layout(name).id(); }

// The server's RSS is within the bound of its start. The heap trimmer runs once a second, so a
// spike a row just freed may take that long to go: polls for up to 3 s.
void expect_rss_within_bound(const std::string& when, std::int64_t allowance = 0) {
  if (!kRssIsTheServers) return;
  const pid_t pid = shared().server->pid();
  const std::int64_t bound = kRssGrowthBound + allowance;
  std::int64_t rss = rss_bytes(pid);
  for (int i = 0; i < 30 && rss - shared().baseline_rss > bound; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    rss = rss_bytes(pid);
  }
  shared().largest_growth = std::max(shared().largest_growth, rss - shared().baseline_rss);
  EXPECT_LE(rss - shared().baseline_rss, bound)
      << when << ": RSS " << rss << " bytes, " << shared().baseline_rss << " at the start";
}

// The last `lines` lines of a log.
std::string log_tail(const std::string& log, int lines) {
  std::size_t at = log.size();
  for (int i = 0; i <= lines && at != std::string::npos && at > 0; ++i) {
    at = log.rfind('\n', at - 1);
  }
  return at == std::string::npos || at == 0 ? log : log.substr(at + 1);
}

template <typename Stub>
Stub& stub() {
  if constexpr (std::is_same_v<Stub, Dynamics>) {
    return *shared().dynamics;
  } else if constexpr (std::is_same_v<Stub, Control>) {
    return *shared().control;
  } else {
    return *shared().models;
  }
}

// One call with a 30 s deadline on the shared channel.
template <typename Stub, typename Request, typename Response>
grpc::Status call(grpc::Status (Stub::*rpc)(grpc::ClientContext*, const Request&, Response*),
                  const Request& request, Response* response = nullptr) {
  Response ignored;
  return with_deadline(30, [&](grpc::ClientContext* c) {
    return (stub<Stub>().*rpc)(c, request, response ? response : &ignored);
  });
}

// Registers `request`; a model that registers anyway is deleted again, so that no row leaves a
// model behind.
grpc::Status register_model(const v1::RegisterModelRequest& request) {
  v1::RegisterModelResponse response;
  const grpc::Status status = call(&Models::RegisterModel, request, &response);
  if (status.ok() && response.created()) {
    v1::DeleteModelRequest remove;
    remove.set_model_id(response.model().id());
    call(&Models::DeleteModel, remove);
  }
  return status;
}

std::string delete_model(const std::string& id) {
  v1::DeleteModelRequest remove;
  remove.set_model_id(id);
  return call(&Models::DeleteModel, remove).error_message();
}

// ---- Raw calls: bytes that no generated stub would send ----

// The completion queue's events of one call, awaited one at a time.
// A channel to the shared server on a connection of its own (gRPC shares one between channels
// of the same target and arguments otherwise).
std::shared_ptr<grpc::Channel> own_connection() {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(shared().server->address(), grpc::InsecureChannelCredentials(),
                                   args);
}

class RawCall {
 public:
  enum Op : std::intptr_t { kStart = 1, kWrite, kRead, kWritesDone, kFinish };

  explicit RawCall(const std::shared_ptr<grpc::Channel>& channel) : stub_(channel) {
    context_.set_deadline(deadline_in(120));
  }

  ~RawCall() {
    context_.TryCancel();
    if (stream_ && !outstanding_.count(kFinish) && !finished_) {
      stream_->Finish(&status_, tag(kFinish));
      outstanding_.insert(kFinish);
    }
    while (!outstanding_.empty() && next(30)) {
    }
    queue_.Shutdown();
    void* ignored_tag;
    bool ignored_ok;
    while (queue_.Next(&ignored_tag, &ignored_ok)) {
    }
  }

  // A unary call of `method` with `bytes` as its request.
  grpc::Status unary(const std::string& method, const std::string& bytes) {
    grpc::ByteBuffer request = to_buffer(bytes);
    auto reader = stub_.PrepareUnaryCall(&context_, method, request, &queue_);
    reader->StartCall();
    grpc::ByteBuffer reply;
    reader->Finish(&reply, &status_, tag(kFinish));
    outstanding_.insert(kFinish);
    if (!await(kFinish, 60)) return {StatusCode::UNKNOWN, "no answer within 60 s"};
    finished_ = true;
    return status_;
  }

  // Opens a stream of `method`; false if it could not start.
  bool open(const std::string& method) {
    stream_ = stub_.PrepareCall(&context_, method, &queue_);
    stream_->StartCall(tag(kStart));
    outstanding_.insert(kStart);
    return await(kStart, 30);
  }
  // false if the write failed or did not complete within `seconds` (flow control).
  bool write(const std::string& bytes, double seconds = 10) {
    if (outstanding_.count(kWrite) && !await(kWrite, seconds)) return false;
    write_buffer_ = to_buffer(bytes);
    stream_->Write(write_buffer_, tag(kWrite));
    outstanding_.insert(kWrite);
    return await(kWrite, seconds);
  }
  std::optional<std::string> read(double seconds = 30) {
    stream_->Read(&read_buffer_, tag(kRead));
    outstanding_.insert(kRead);
    if (!await(kRead, seconds)) return std::nullopt;
    std::vector<grpc::Slice> slices;
    std::string bytes;
    if (!read_buffer_.Dump(&slices).ok()) return std::nullopt;
    for (const grpc::Slice& s : slices)
      bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
    return bytes;
  }
  bool writes_done() {
    stream_->WritesDone(tag(kWritesDone));
    outstanding_.insert(kWritesDone);
    return await(kWritesDone, 30);
  }
  grpc::Status finish(double seconds = 60) {
    stream_->Finish(&status_, tag(kFinish));
    outstanding_.insert(kFinish);
    if (!await(kFinish, seconds)) return {StatusCode::UNKNOWN, "the stream did not end"};
    finished_ = true;
    return status_;
  }
  void cancel() { context_.TryCancel(); }
  grpc::ClientContext& context() { return context_; }

 private:
  static void* tag(Op op) { return reinterpret_cast<void*>(op); }
  static grpc::ByteBuffer to_buffer(const std::string& bytes) {
    grpc::Slice slice(bytes);
    return grpc::ByteBuffer(&slice, 1);
  }
  // Takes one event off the queue; false on timeout.
  bool next(double seconds) {
    void* got = nullptr;
    bool ok = false;
    if (queue_.AsyncNext(&got, &ok, deadline_in(seconds)) != grpc::CompletionQueue::GOT_EVENT) {
      return false;
    }
    const auto op = static_cast<Op>(reinterpret_cast<std::intptr_t>(got));
    outstanding_.erase(op);
    results_[op] = ok;
    return true;
  }
  // Waits until `op` completes: its ok, or false on timeout.
  bool await(Op op, double seconds) {
    const auto end = deadline_in(seconds);
    while (outstanding_.count(op)) {
      const double left =
          std::chrono::duration<double>(end - std::chrono::system_clock::now()).count();
      if (left <= 0 || !next(left)) return false;
    }
    return results_[op];
  }

  grpc::GenericStub stub_;
  grpc::ClientContext context_;
  grpc::CompletionQueue queue_;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> stream_;
  grpc::ByteBuffer write_buffer_, read_buffer_;
  grpc::Status status_;
  std::set<Op> outstanding_;
  std::map<Op, bool> results_;
  bool finished_ = false;
};

const std::string kSession = "/torqued.v1.DynamicsService/Session";

grpc::Status raw_unary(const std::string& method, const std::string& bytes) {
  return RawCall(shared().server->channel()).unary(method, bytes);
}

// The status a Session answer carries (OK when it has a response).
grpc::Status answer_status(const std::optional<std::string>& bytes) {
  v1::SessionResponse answer;
  if (!bytes) return {StatusCode::UNKNOWN, "no answer"};
  if (!answer.ParseFromString(*bytes)) return {StatusCode::UNKNOWN, "the answer does not decode"};
  return {static_cast<StatusCode>(answer.status().code()), answer.status().message()};
}

// Sends each message on one Session and returns the first answer's status, after checking that
// every message was answered and the stream ended OK on half-close.
grpc::Status session(const std::vector<std::string>& messages) {
  RawCall stream(shared().server->channel());
  if (!stream.open(kSession)) return {StatusCode::UNKNOWN, "the stream did not open"};
  std::vector<grpc::Status> answers;
  for (const std::string& m : messages) {
    EXPECT_TRUE(stream.write(m));
    answers.push_back(answer_status(stream.read()));
  }
  EXPECT_TRUE(stream.writes_done());
  const grpc::Status end = stream.finish();
  EXPECT_TRUE(end.ok()) << end.error_message();
  return answers.front();
}

v1::SessionRequest echo_message(std::uint64_t sequence) {
  v1::SessionRequest m;
  m.set_sequence(sequence);
  m.mutable_echo()->add_values(1.5);
  return m;
}

// ---- Raw TCP ----

// A TCP connection to 127.0.0.1:`port`, or -1.
int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Reads (and drops) what the peer sends until it closes the connection: true, or false if it is
// still open after `seconds`.
bool closed_by_peer(int fd, double seconds) {
  timeval timeout{0, 100000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  const auto end = deadline_in(seconds);
  char buffer[4096];
  while (std::chrono::system_clock::now() < end) {
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      return true;
    }
  }
  return false;
}

// Connections opened and held until destruction.
struct Connections {
  std::vector<int> fds;
  ~Connections() {
    for (const int fd : fds) ::close(fd);
  }
};

// A channel over a socket this test owns, so that it can cut the connection as a crashed
// client would: no RST_STREAM, no GOAWAY, the socket just goes.
struct OwnedSocketChannel {
  int fd = connect_to(shared().server->port());
  std::shared_ptr<grpc::Channel> channel = grpc::CreateInsecureChannelFromFd("torqued", fd);
  void cut() {
    linger abort{1, 0};  // an abortive close: the server sees a reset
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, sizeof(abort));
    ::shutdown(fd, SHUT_RDWR);
  }
};

// A metrics scrape: it answers, with the server's families.
bool scrape_works() {
  return http_get(shared().server->metrics_port(), "/metrics").find("grpc_server_started_total") !=
         std::string::npos;
}

// ---- Requests ----

int nv(const std::string& model) { return layout(model).nv(); }

void fill(google::protobuf::RepeatedField<double>* field, std::int64_t count, double value = 0.1) {
  for (std::int64_t i = 0; i < count; ++i) field->Add(value);
}

// A request for `states` valid random configurations of `model`.
template <typename Request>
Request on(const std::string& model, int states = 1) {
  Request r;
  r.set_model_id(id_of(model));
  r.set_batch_size(states);
  const std::vector<double> q = random_configurations(layout(model), states, 11);
  r.mutable_q()->Add(q.begin(), q.end());
  return r;
}

v1::InverseDynamicsRequest inverse_dynamics(const std::string& model = "puma560", int states = 1) {
  auto r = on<v1::InverseDynamicsRequest>(model, states);
  fill(r.mutable_v(), states * nv(model));
  fill(r.mutable_a(), states * nv(model), 0.2);
  return r;
}

v1::ForwardDynamicsRequest forward_dynamics(const std::string& model = "puma560", int states = 1) {
  auto r = on<v1::ForwardDynamicsRequest>(model, states);
  fill(r.mutable_v(), states * nv(model));
  fill(r.mutable_tau(), states * nv(model), 0.3);
  return r;
}

v1::ConstrainedDynamicsRequest constrained(const std::string& model = "quadruped") {
  auto r = on<v1::ConstrainedDynamicsRequest>(model);
  fill(r.mutable_v(), nv(model));
  fill(r.mutable_tau(), nv(model));
  return r;
}

v1::Constraint point_constraint(const std::string& frame) {
  v1::Constraint c;
  c.set_type(v1::CONSTRAINT_TYPE_POINT);
  c.mutable_frame1()->set_frame(frame);
  return c;
}

// The Puma 560 (6 DOFs) with `links` welded to the world (Baumgarte gains 0, so that only the
// drift γ, quadratic in v, sets k) and `states` states: state i moves at v = i rad/s on every
// joint. Three welds (18 rows) are consistent at rest only.
template <typename Request>
Request welded_puma(const std::vector<std::string>& links, int states = 1) {
  auto r = on<Request>("puma560", states);
  for (int i = 0; i < states; ++i) fill(r.mutable_v(), 6, static_cast<double>(i));
  for (const std::string& link : links) {
    v1::Constraint* weld = r.add_constraints();
    weld->set_type(v1::CONSTRAINT_TYPE_WELD);
    weld->mutable_frame1()->set_frame(link);
  }
  return r;
}

const std::vector<std::string> kThreeWelds = {"link4", "link5", "link6"};

v1::PointContact contact(const std::string& frame, double friction = 0.8) {
  v1::PointContact c;
  c.set_frame(frame);
  c.set_friction(friction);
  return c;
}

const std::vector<std::string> kFeet = {"FL_foot", "FR_foot", "HL_foot", "HR_foot"};

v1::ContactDynamicsRequest contact_dynamics(int states = 1) {
  auto r = on<v1::ContactDynamicsRequest>("quadruped", states);
  fill(r.mutable_v(), states * nv("quadruped"));
  fill(r.mutable_tau(), states * nv("quadruped"));
  for (const std::string& foot : kFeet) *r.add_contacts() = contact(foot);
  return r;
}

v1::ImpactRequest impact() {
  auto r = on<v1::ImpactRequest>("quadruped");
  fill(r.mutable_v(), nv("quadruped"), -0.5);
  for (const std::string& foot : kFeet) *r.add_contacts() = contact(foot);
  r.set_restitution(0.5);
  return r;
}

// `knots` knots of the quadruped (nv = 18) with every DOF actuated.
v1::LinearizeRequest linearize(int knots = 1) {
  auto r = on<v1::LinearizeRequest>("quadruped", knots);
  fill(r.mutable_v(), knots * nv("quadruped"));
  fill(r.mutable_u(), knots * nv("quadruped"));
  r.set_dt(0.01);
  return r;
}

// `rollouts` rollouts of `knots` steps of the quadruped with every DOF actuated, open loop.
v1::RolloutRequest rollout(int rollouts = 1, int knots = 2) {
  auto r = on<v1::RolloutRequest>("quadruped", rollouts);
  fill(r.mutable_v(), rollouts * nv("quadruped"));
  r.set_knots(knots);
  fill(r.mutable_u(), rollouts * knots * nv("quadruped"));
  r.set_dt(0.01);
  return r;
}

// The same with feedback about a nominal trajectory: the start, held, and gains K_k of 18 × 36.
v1::RolloutRequest closed_loop_rollout(int knots = 2) {
  auto r = rollout(1, knots);
  for (int k = 0; k < knots; ++k) {
    r.mutable_q_nominal()->Add(r.q().begin(), r.q().end());
    r.mutable_v_nominal()->Add(r.v().begin(), r.v().end());
  }
  fill(r.mutable_feedback(), knots * nv("quadruped") * 2 * nv("quadruped"));
  return r;
}

// A phase of a schedule from `first_knot` with point contacts on `feet`.
v1::ContactPhase phase(int first_knot, const std::vector<std::string>& feet) {
  v1::ContactPhase p;
  p.set_first_knot(first_knot);
  for (const std::string& foot : feet) *p.add_contacts() = point_constraint(foot);
  return p;
}

v1::SimulateRequest simulate(int steps = 10) {
  auto r = on<v1::SimulateRequest>("quadruped");
  fill(r.mutable_v(), nv("quadruped"));
  r.set_steps(steps);
  r.set_time_step(1e-3);
  for (const std::string& foot : kFeet) r.add_candidates()->set_frame(foot);
  r.mutable_ground()->set_friction(0.8);
  return r;
}

// A contact problem that takes minutes unless stopped: 2,000 states of 24 frictional contacts
// and a tolerance no iterate meets, so every state runs the solver's 5,000 Gauss-Seidel sweeps.
v1::ContactDynamicsRequest endless_contact_problem() {
  auto r = contact_dynamics(2000);
  for (int k = 4; k < 24; ++k) {
    v1::PointContact c = contact(kFeet[k % 4]);
    for (const double x : {0.01 * (k / 4), 0.0, 0.0}) c.add_point(x);
    *r.add_contacts() = c;
  }
  r.mutable_solver()->set_tolerance(0.0);
  r.mutable_solver()->set_max_iterations(5000);
  return r;
}

// A massive enough link for build_model, in an explicit spec.
v1::LinkSpec link(const std::string& name, double mass = 1.0) {
  v1::LinkSpec l;
  l.set_name(name);
  l.mutable_inertial()->set_mass(mass);
  l.mutable_inertial()->mutable_inertia()->set_ixx(0.01);
  l.mutable_inertial()->mutable_inertia()->set_iyy(0.01);
  l.mutable_inertial()->mutable_inertia()->set_izz(0.01);
  return l;
}

// A chain of `joints` revolute joints l0 - j1 - l1 - ... in an explicit spec.
v1::RegisterModelRequest chain(int joints) {
  v1::RegisterModelRequest r;
  r.set_name("hostile_chain");
  *r.mutable_spec()->add_links() = link("l0");
  std::string parent = "l0";
  for (int i = 1; i <= joints; ++i) {
    const std::string number = std::to_string(i);
    const std::string child = 'l' + number;
    *r.mutable_spec()->add_links() = link(child);
    v1::JointSpec* joint = r.mutable_spec()->add_joints();
    joint->set_name('j' + number);
    joint->set_type(v1::JOINT_TYPE_REVOLUTE);
    joint->set_parent_link(parent);
    joint->set_child_link(child);
    parent = child;
    joint->mutable_origin()->mutable_xyz()->set_x(0.1);
    joint->mutable_axis()->set_z(1.0);
  }
  return r;
}

// A two-link URDF: link `child` (mass `mass`) hangs from `base` on joint `joint` about `axis`.
std::string urdf(const std::string& child = "b", const std::string& mass = "1.0",
                 const std::string& axis = "0 0 1", const std::string& joint = "j") {
  return "<robot name='hostile'><link name='base'/><link name='" + child +
         "'><inertial><mass value='" + mass +
         "'/><inertia ixx='0.01' iyy='0.01' izz='0.01' ixy='0' ixz='0' iyz='0'/></inertial>"
         "</link><joint name='" +
         joint + "' type='revolute'><parent link='base'/><child link='" + child + "'/><axis xyz='" +
         axis + "'/><limit lower='-1' upper='1' effort='1' velocity='1'/></joint></robot>";
}

v1::RegisterModelRequest urdf_request(const std::string& text) {
  v1::RegisterModelRequest r;
  r.set_urdf(text);
  return r;
}

v1::RegisterModelRequest mjcf_request(const std::string& text) {
  v1::RegisterModelRequest r;
  r.set_mjcf(text);
  return r;
}

v1::RegisterModelRequest sdf_request(const std::string& text) {
  v1::RegisterModelRequest r;
  r.set_sdf(text);
  return r;
}

// A two-link standard DH table.
v1::RegisterModelRequest dh(int links = 2) {
  v1::RegisterModelRequest r;
  r.mutable_dh()->set_convention(v1::DH_CONVENTION_STANDARD);
  for (int i = 0; i < links; ++i) {
    v1::DhLink* l = r.mutable_dh()->add_links();
    l->set_name("dh" + std::to_string(i));
    l->set_joint_name("dj" + std::to_string(i));
    l->set_type(v1::JOINT_TYPE_REVOLUTE);
    l->set_a(0.3);
    l->set_mass(1.0);
    l->mutable_inertia()->set_ixx(0.01);
    l->mutable_inertia()->set_iyy(0.01);
    l->mutable_inertia()->set_izz(0.01);
  }
  return r;
}

v1::LoopClosure loop(const std::string& name, const std::string& link1, const std::string& link2,
                     v1::ConstraintType type = v1::CONSTRAINT_TYPE_POINT) {
  v1::LoopClosure l;
  l.set_name(name);
  l.set_type(type);
  l.set_link1(link1);
  l.set_link2(link2);
  return l;
}

v1::RegisterModelRequest chain_with_loops(const std::vector<v1::LoopClosure>& loops) {
  v1::RegisterModelRequest r = chain(3);
  for (const v1::LoopClosure& l : loops) *r.add_loop_closures() = l;
  return r;
}

// A name of 1 MiB: a message may quote 64 bytes of it, never 65 (checked for every row).
const std::string kHugeName(1 << 20, 'n');
const std::string kOverEchoed(65, 'n');
// Control characters a name could use to forge log lines or drive a terminal.
constexpr char kControlBytes[] = "evil\nname\0with\x1b[2Jescapes\r";
const std::string kControlName(kControlBytes, sizeof(kControlBytes) - 1);
// A name one byte over the server's --max-name-bytes (its default, 256).
const std::string kLongName(257, 'n');

// ---- Wire bytes and what the server spends on them ----

std::string varint(std::uint64_t value) {
  std::string bytes;
  for (; value >= 0x80; value >>= 7) bytes += static_cast<char>((value & 0x7f) | 0x80);
  return bytes + static_cast<char>(value);
}

// Field `number` of a message, length-delimited, holding `payload`.
std::string length_delimited(int number, const std::string& payload) {
  return varint(static_cast<std::uint64_t>(number) << 3 | 2) + varint(payload.size()) + payload;
}

// `count` copies of `bytes`.
std::string repeated(const std::string& bytes, std::size_t count) {
  std::string out;
  out.reserve(bytes.size() * count);
  for (std::size_t i = 0; i < count; ++i) out += bytes;
  return out;
}

// As many empty messages of field `number` as fit in `bytes` bytes: each is 2 bytes on the wire
// and a whole message object once decoded.
std::string empty_messages(int number, std::size_t bytes) {
  return repeated(length_delimited(number, ""), bytes / 2);
}

// A RegisterModel request just under the server's --max-model-bytes (3 MiB above).
constexpr std::size_t kModelBytes = 3000000;
const std::string kRegisterModel = "/torqued.v1.ModelService/RegisterModel";

// Runs `act` while sampling the server's resident memory; `growth` is its largest rise over
// the RSS before the call.
grpc::Status with_peak_rss(const std::function<grpc::Status()>& act, std::int64_t& growth) {
  const pid_t pid = shared().server->pid();
  const std::int64_t before = rss_bytes(pid);
  std::atomic<bool> done{false};
  std::atomic<std::int64_t> peak{before};
  std::thread sampler([&] {
    while (!done.load()) {
      peak = std::max(peak.load(), rss_bytes(pid));
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
  });
  const grpc::Status status = act();
  done = true;
  sampler.join();
  growth = peak.load() - before;
  return status;
}

// A registration decoded by the server must not cost it much more than its own bytes: a few MB
// for kModelBytes (gRPC holds the request's bytes, and the count of its rows reads them).
constexpr std::int64_t kDecodeGrowthBound = 12 << 20;

// `bytes` sent as a RegisterModelRequest, with the server's memory growth checked.
grpc::Status register_bytes_within_memory(const std::string& bytes) {
  std::int64_t growth = 0;
  const grpc::Status status =
      with_peak_rss([&] { return raw_unary(kRegisterModel, bytes); }, growth);
  std::cout << "    server RSS grew by at most " << growth / 1024 << " kB for "
            << bytes.size() / 1024 << " kB\n";
  if (kRssIsTheServers) {
    EXPECT_LE(growth, kDecodeGrowthBound);
  }
  return status;
}

// CPU time the server has used, seconds (utime + stime of /proc/PID/stat).
double cpu_seconds(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));  // after the command name
  std::string field;
  for (int i = 3; i < 14; ++i) fields >> field;  // fields 3 to 13
  long long user = 0;
  long long system = 0;
  fields >> user >> system;
  return static_cast<double>(user + system) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// ---- The rows: model sources and ModelService ----

std::vector<Row> model_rows() {
  using C = StatusCode;
  return {
      {"RegisterModelWithoutSource",
       C::INVALID_ARGUMENT,
       {"source"},
       [] { return register_model(v1::RegisterModelRequest()); }},
      {"RegisterModelUnknownBaseType",
       C::INVALID_ARGUMENT,
       {"base", "99"},
       [] {
         auto r = chain(1);
         r.set_base(static_cast<v1::BaseType>(99));
         return register_model(r);
       }},
      {"RegisterModelNanGravity",
       C::INVALID_ARGUMENT,
       {"gravity"},
       [] {
         auto r = chain(1);
         r.mutable_gravity()->set_z(kNaN);
         return register_model(r);
       }},
      {"RegisterModelNameWithTerminalEscapes",
       C::OK,
       {},
       [] {
         auto r = chain(1);
         r.set_name(kControlName);
         v1::RegisterModelResponse registered;
         const grpc::Status status = call(&Models::RegisterModel, r, &registered);
         EXPECT_EQ(delete_model(registered.model().id()), "");
         // The log names the model with its control characters escaped: no forged line.
         const std::string log = shared().server->log();
         EXPECT_EQ(log.find("\x1b[2J"), std::string::npos);
         EXPECT_EQ(log.find("\nname"), std::string::npos);
         EXPECT_NE(log.find("evil\\x0aname"), std::string::npos);
         return status;
       }},
      {"RegisterModelAgainAnswersItsOwnWarnings",
       C::OK,
       {},
       [] {
         // The id leaves out what the reader ignored: the URDF with <dynamics> on its joint and
         // the one without are one model, and each registration answers its own warnings.
         std::string damped = urdf();
         damped.insert(damped.find("</joint>"), "<dynamics damping='0.5'/>");
         v1::RegisterModelResponse plain, with_dynamics, plain_again;
         EXPECT_TRUE(call(&Models::RegisterModel, urdf_request(urdf()), &plain).ok());
         const grpc::Status status =
             call(&Models::RegisterModel, urdf_request(damped), &with_dynamics);
         EXPECT_TRUE(call(&Models::RegisterModel, urdf_request(urdf()), &plain_again).ok());
         EXPECT_EQ(delete_model(plain.model().id()), "");
         EXPECT_TRUE(plain.created());
         EXPECT_FALSE(with_dynamics.created());
         EXPECT_EQ(with_dynamics.model().id(), plain.model().id());
         EXPECT_EQ(plain.model().warnings_size(), 0);
         EXPECT_EQ(plain_again.model().warnings_size(), 0);
         EXPECT_EQ(with_dynamics.model().warnings_size(), 1);
         if (with_dynamics.model().warnings_size() == 1) {
           EXPECT_NE(with_dynamics.model().warnings(0).find("<dynamics damping=\"0.5\""),
                     std::string::npos)
               << with_dynamics.model().warnings(0);
         }
         return status;
       }},
      {"RegisterModelOverModelBytes",
       C::RESOURCE_EXHAUSTED,
       {"request", "--max-model-bytes"},
       [] {
         auto r = chain(1);
         r.set_name(std::string(3500000, 'x'));
         return register_model(r);
       }},
      {"RegisterModelUntilMaxModels",
       C::RESOURCE_EXHAUSTED,
       {"models held", "--max-models"},
       [] {
         grpc::Status refused;
         std::vector<std::string> created;
         for (int joints = 1; joints <= 20 && refused.ok(); ++joints) {
           v1::RegisterModelResponse response;
           refused = call(&Models::RegisterModel, chain(joints), &response);
           if (refused.ok()) created.push_back(response.model().id());
         }
         for (const std::string& id : created) EXPECT_EQ(delete_model(id), "");
         return refused;
       }},
      {"UrdfNotXml",
       C::INVALID_ARGUMENT,
       {"URDF"},
       [] { return register_model(urdf_request("\x01\x02 not <xml at all")); }},
      {"UrdfNestedTooDeep",
       C::INVALID_ARGUMENT,
       {"URDF", "nest"},
       [] {
         std::string deep = "<robot name='deep'>";
         for (int i = 0; i < 100000; ++i) deep += "<a>";
         return register_model(urdf_request(deep));
       }},
      {"UrdfOverUrdfBytes",
       C::RESOURCE_EXHAUSTED,
       {"urdf", "--max-urdf-bytes"},
       [] {
         return register_model(urdf_request(urdf() + "<!--" + std::string(2800000, ' ') + "-->"));
       }},
      {"UrdfTooManyLinks",
       C::RESOURCE_EXHAUSTED,
       {"urdf", "--max-bodies"},
       [] {
         std::string text = "<robot name='wide'>";
         for (int i = 0; i < 100; ++i) text += "<link name='l" + std::to_string(i) + "'/>";
         return register_model(urdf_request(text + "</robot>"));
       }},
      {"MjcfNotXml",
       C::INVALID_ARGUMENT,
       {"MJCF"},
       [] { return register_model(mjcf_request("\x01\x02 not <xml at all")); }},
      {"MjcfNestedTooDeep",
       C::INVALID_ARGUMENT,
       {"MJCF", "nest"},
       [] {
         std::string deep = "<mujoco>";
         for (int i = 0; i < 100000; ++i) deep += "<a>";
         return register_model(mjcf_request(deep));
       }},
      {"MjcfOverUrdfBytes",
       C::RESOURCE_EXHAUSTED,
       {"mjcf bytes", "--max-urdf-bytes"},
       [] {
         return register_model(mjcf_request("<mujoco>" + std::string(2800000, ' ') + "</mujoco>"));
       }},
      {"MjcfTooManyBodies",
       C::RESOURCE_EXHAUSTED,
       {"mjcf", "--max-bodies"},
       [] {
         std::string text = "<mujoco><worldbody>";
         for (int i = 0; i < 100; ++i) text += "<body name='b" + std::to_string(i) + "'/>";
         return register_model(mjcf_request(text + "</worldbody></mujoco>"));
       }},
      {"MjcfInclude",
       C::INVALID_ARGUMENT,
       {"<include>", "arm.xml"},
       [] { return register_model(mjcf_request("<mujoco><include file='arm.xml'/></mujoco>")); }},
      {"MjcfMeshInertia",
       C::INVALID_ARGUMENT,
       {"'hull'", "mesh"},
       [] {
         return register_model(mjcf_request(
             "<mujoco><asset><mesh name='m' file='m.stl'/></asset><worldbody><body name='hull'>"
             "<joint type='hinge'/><geom type='mesh' mesh='m'/></body></worldbody></mujoco>"));
       }},
      {"SdfNotXml",
       C::INVALID_ARGUMENT,
       {"SDF"},
       [] { return register_model(sdf_request("\x01\x02 not <xml at all")); }},
      {"SdfOverUrdfBytes",
       C::RESOURCE_EXHAUSTED,
       {"sdf bytes", "--max-urdf-bytes"},
       [] { return register_model(sdf_request("<sdf>" + std::string(2800000, ' ') + "</sdf>")); }},
      {"SdfTooManyLinks",
       C::RESOURCE_EXHAUSTED,
       {"sdf", "--max-bodies"},
       [] {
         std::string text = "<sdf version='1.9'><model name='wide'>";
         for (int i = 0; i < 100; ++i) text += "<link name='l" + std::to_string(i) + "'/>";
         return register_model(sdf_request(text + "</model></sdf>"));
       }},
      {"SdfInclude",
       C::INVALID_ARGUMENT,
       {"<include>", "model://arm"},
       [] {
         return register_model(sdf_request(
             "<sdf version='1.9'><model name='m'><include><uri>model://arm</uri></include>"
             "</model></sdf>"));
       }},
      // Found by sdf_fuzzer: libsdformat let std::invalid_argument out of this version, which the
      // server answered as INTERNAL, "stoi".
      {"SdfVersionNotANumber",
       C::INVALID_ARGUMENT,
       {"<sdf> version '1.@7'", "MAJOR.MINOR"},
       [] {
         return register_model(
             sdf_request("<sdf version='1.@7'><model name='m'><link name='l'/></model></sdf>"));
       }},
      {"UrdfNanMass",
       C::INVALID_ARGUMENT,
       {"URDF"},
       [] { return register_model(urdf_request(urdf("b", "nan"))); }},
      {"UrdfOverflowingMass",
       C::INVALID_ARGUMENT,
       {"'b'", "mass 1e+308 kg is out of bounds", "1e+12 kg"},
       [] { return register_model(urdf_request(urdf("b", "1e308"))); }},
      {"MjcfOverflowingInertialPosition",
       C::INVALID_ARGUMENT,
       {"'b' inertial", "origin x 1e+300 m is out of bounds", "1e+06 m"},
       [] {
         return register_model(mjcf_request(
             "<mujoco><worldbody><body name='b'><joint name='j' type='hinge'/><inertial "
             "pos='1e300 0 0' mass='1' diaginertia='0.01 0.01 0.01'/></body></worldbody>"
             "</mujoco>"));
       }},
      {"SpecOverflowingInertia",
       C::INVALID_ARGUMENT,
       {"'l1'", "rotational inertia entry 1e+200 kg m^2 is out of bounds"},
       [] {
         auto r = chain(2);
         r.mutable_spec()->mutable_links(1)->mutable_inertial()->mutable_inertia()->set_ixx(1e200);
         return register_model(r);
       }},
      {"DhOverflowingLinkLength",
       C::INVALID_ARGUMENT,
       {"origin", "1e+250 m is out of bounds"},
       [] {
         auto r = dh();
         r.mutable_dh()->mutable_links(1)->set_a(1e250);
         return register_model(r);
       }},
      {"UrdfNegativeMass",
       C::INVALID_ARGUMENT,
       {"'b'", "negative mass"},
       [] { return register_model(urdf_request(urdf("b", "-1"))); }},
      {"UrdfZeroAxis",
       C::INVALID_ARGUMENT,
       {"'j'", "zero axis"},
       [] { return register_model(urdf_request(urdf("b", "1", "0 0 0"))); }},
      {"UrdfUnknownParentLink",
       C::INVALID_ARGUMENT,
       {"URDF"},
       [] {
         std::string text = urdf();
         text.replace(text.find("<parent link='base'/>"), 21, "<parent link='nowhere'/>");
         return register_model(urdf_request(text));
       }},
      {"UrdfHugeLinkName",
       C::RESOURCE_EXHAUSTED,
       {"link name", "1048576 bytes", "--max-name-bytes"},
       [] { return register_model(urdf_request(urdf(kHugeName, "-1"))); }},
      {"UrdfHugeJointName",
       C::RESOURCE_EXHAUSTED,
       {"joint name", "1048576 bytes", "--max-name-bytes"},
       [] { return register_model(urdf_request(urdf("b", "1", "0 0 0", kHugeName))); }},
      {"UrdfRobotNameOverMaxNameBytes",
       C::RESOURCE_EXHAUSTED,
       {"model name", "257 bytes exceed the limit of 256", "--max-name-bytes"},
       [] {
         std::string text = urdf();
         text.replace(text.find("hostile"), 7, kLongName);
         return register_model(urdf_request(text));
       }},
      {"UrdfEmptyLinkName",
       C::INVALID_ARGUMENT,
       {"URDF", "line 1", "<link> with an empty name"},
       [] { return register_model(urdf_request(urdf(""))); }},
      {"UrdfEmptyJointName",
       C::INVALID_ARGUMENT,
       {"URDF", "line 1", "<joint> with an empty name"},
       [] { return register_model(urdf_request(urdf("b", "1", "0 0 1", ""))); }},
      {"UrdfWithoutMovingJoint",
       C::INVALID_ARGUMENT,
       {"no degree of freedom", "no joints"},
       [] {
         return register_model(urdf_request("<robot name='statue'><link name='base'/></robot>"));
       }},
      // Regression: TinyXML compares each attribute of an element with every earlier one; these
      // 200,000 kept a worker busy for two minutes after the call's deadline. Now the document is
      // refused at once, and nothing goes on once it is.
      {"UrdfTwoHundredThousandAttributesOnOneElement",
       C::INVALID_ARGUMENT,
       {"URDF", "line 2", "element <link> has more than 64 attributes"},
       [] {
         std::string text = "<robot name='wide'><link name='base'/>\n<link";
         for (int i = 0; i < 200000; ++i) text += " a" + std::to_string(i) + "=''";
         text += "/></robot>";
         const pid_t pid = shared().server->pid();
         const double before = cpu_seconds(pid);
         const grpc::Status status = register_model(urdf_request(text));
         EXPECT_LT(cpu_seconds(pid) - before, 2.0) << "CPU seconds the server took to refuse it";
         const double cpu = cpu_seconds(pid);
         std::this_thread::sleep_for(std::chrono::seconds(1));
         EXPECT_LT(cpu_seconds(pid) - cpu, 0.5) << "the server is still busy";
         return status;
       }},
      {"SpecUnspecifiedJointType",
       C::INVALID_ARGUMENT,
       {"spec.joints[0]", "type"},
       [] {
         auto r = chain(2);
         r.mutable_spec()->mutable_joints(0)->set_type(v1::JOINT_TYPE_UNSPECIFIED);
         return register_model(r);
       }},
      {"SpecUnknownJointType",
       C::INVALID_ARGUMENT,
       {"spec.joints[1]", "type"},
       [] {
         auto r = chain(2);
         r.mutable_spec()->mutable_joints(1)->set_type(static_cast<v1::JointType>(1234));
         return register_model(r);
       }},
      {"SpecNegativeMass",
       C::INVALID_ARGUMENT,
       {"'l1'", "negative mass"},
       [] {
         auto r = chain(2);
         r.mutable_spec()->mutable_links(1)->mutable_inertial()->set_mass(-1.0);
         return register_model(r);
       }},
      {"SpecNanInertia",
       C::INVALID_ARGUMENT,
       {"spec.links[2].inertial.inertia.iyy is NaN"},
       [] {
         auto r = chain(2);
         r.mutable_spec()->mutable_links(2)->mutable_inertial()->mutable_inertia()->set_iyy(kNaN);
         return register_model(r);
       }},
      {"SpecIndefiniteInertia",
       C::INVALID_ARGUMENT,
       {"'l1'", "positive semi-definite"},
       [] {
         auto r = chain(2);
         r.mutable_spec()->mutable_links(1)->mutable_inertial()->mutable_inertia()->set_izz(-5);
         return register_model(r);
       }},
      {"SpecInfiniteJointOrigin",
       C::INVALID_ARGUMENT,
       {"spec.joints[0].origin.rpy.y is infinite"},
       [] {
         auto r = chain(2);
         r.mutable_spec()->mutable_joints(0)->mutable_origin()->mutable_rpy()->set_y(kInf);
         return register_model(r);
       }},
      {"SpecUnknownParentLink",
       C::INVALID_ARGUMENT,
       {"'j2'", "unknown parent link"},
       [] {
         auto r = chain(2);
         r.mutable_spec()->mutable_joints(1)->set_parent_link("nowhere");
         return register_model(r);
       }},
      {"SpecCycle",
       C::INVALID_ARGUMENT,
       {"cycle"},
       [] {
         auto r = chain(2);
         v1::JointSpec* back = r.mutable_spec()->add_joints();
         *back = r.spec().joints(0);
         back->set_name("j_back");
         back->set_parent_link("l2");
         back->set_child_link("l0");
         return register_model(r);
       }},
      {"SpecDuplicateLinkNames",
       C::INVALID_ARGUMENT,
       {"duplicate link name", "'l1'"},
       [] {
         auto r = chain(2);
         r.mutable_spec()->mutable_links(2)->set_name("l1");
         return register_model(r);
       }},
      {"SpecNoLinks",
       C::INVALID_ARGUMENT,
       {"no links"},
       [] {
         v1::RegisterModelRequest r;
         r.mutable_spec();
         return register_model(r);
       }},
      {"SpecOverMaxBodies",
       C::RESOURCE_EXHAUSTED,
       {"spec.links", "--max-bodies"},
       [] { return register_model(chain(70)); }},
      {"SpecOverMaxDof",
       C::RESOURCE_EXHAUSTED,
       {"degrees of freedom", "--max-dof"},
       [] { return register_model(chain(45)); }},
      {"SpecControlCharactersInName",
       C::INVALID_ARGUMENT,
       {"negative mass"},
       [] {
         auto r = chain(2);
         r.mutable_spec()->mutable_links(1)->set_name(kControlName);
         r.mutable_spec()->mutable_joints(0)->set_child_link(kControlName);
         r.mutable_spec()->mutable_joints(1)->set_parent_link(kControlName);
         r.mutable_spec()->mutable_links(1)->mutable_inertial()->set_mass(-1.0);
         return register_model(r);
       }},
      {"SpecHugeJointName",
       C::INVALID_ARGUMENT,
       {"spec.joints[0]", "type"},
       [] {
         auto r = chain(1);
         r.mutable_spec()->mutable_joints(0)->set_name(kHugeName);
         r.mutable_spec()->mutable_joints(0)->set_type(v1::JOINT_TYPE_UNSPECIFIED);
         return register_model(r);
       }},
      {"SpecHugeLinkNameDuplicated",
       C::RESOURCE_EXHAUSTED,
       {"link name", "--max-name-bytes"},
       [] {
         auto r = chain(1);
         r.mutable_spec()->mutable_links(0)->set_name(kHugeName);
         r.mutable_spec()->mutable_links(1)->set_name(kHugeName);
         return register_model(r);
       }},
      {"DhUnspecifiedConvention",
       C::INVALID_ARGUMENT,
       {"dh.convention"},
       [] {
         auto r = dh();
         r.mutable_dh()->set_convention(v1::DH_CONVENTION_UNSPECIFIED);
         return register_model(r);
       }},
      {"DhSphericalJoint",
       C::INVALID_ARGUMENT,
       {"dh.links[1].type"},
       [] {
         auto r = dh();
         r.mutable_dh()->mutable_links(1)->set_type(v1::JOINT_TYPE_SPHERICAL);
         return register_model(r);
       }},
      {"DhNanParameter",
       C::INVALID_ARGUMENT,
       {"dh.links[0].alpha is NaN"},
       [] {
         auto r = dh();
         r.mutable_dh()->mutable_links(0)->set_alpha(kNaN);
         return register_model(r);
       }},
      {"DhNegativeMass",
       C::INVALID_ARGUMENT,
       {"'dh1'", "negative mass"},
       [] {
         auto r = dh();
         r.mutable_dh()->mutable_links(1)->set_mass(-2.0);
         return register_model(r);
       }},
      {"DhOverMaxBodies",
       C::RESOURCE_EXHAUSTED,
       {"dh.links", "--max-bodies"},
       [] { return register_model(dh(100)); }},
      {"LoopUnspecifiedType",
       C::INVALID_ARGUMENT,
       {"loop_closures[0]", "type"},
       [] {
         return register_model(
             chain_with_loops({loop("closure", "l3", "l0", v1::CONSTRAINT_TYPE_UNSPECIFIED)}));
       }},
      {"LoopUnknownLink",
       C::INVALID_ARGUMENT,
       {"'closure'", "unknown link", "'nowhere'"},
       [] { return register_model(chain_with_loops({loop("closure", "nowhere", "l0")})); }},
      {"LoopLinkToItself",
       C::INVALID_ARGUMENT,
       {"'closure'", "to itself"},
       [] { return register_model(chain_with_loops({loop("closure", "l2", "l2")})); }},
      {"LoopWithoutName",
       C::INVALID_ARGUMENT,
       {"loop closure", "no name"},
       [] { return register_model(chain_with_loops({loop("", "l3", "l0")})); }},
      {"LoopDuplicateName",
       C::INVALID_ARGUMENT,
       {"duplicate loop closure name", "'closure'"},
       [] {
         return register_model(
             chain_with_loops({loop("closure", "l3", "l0"), loop("closure", "l2", "l0")}));
       }},
      {"LoopInSpecHugeName",
       C::INVALID_ARGUMENT,
       {"spec.loop_closures[0]", "type"},
       [] {
         auto r = chain(3);
         *r.mutable_spec()->add_loop_closures() =
             loop(kHugeName, "l3", "l0", v1::CONSTRAINT_TYPE_UNSPECIFIED);
         return register_model(r);
       }},
      // Names: at most --max-name-bytes from every source, none empty (DH rows take their
      // documented defaults when unset).
      {"ModelNameOverMaxNameBytes",
       C::RESOURCE_EXHAUSTED,
       {"model name", "--max-name-bytes"},
       [] {
         auto r = chain(1);
         r.set_name(kLongName);
         return register_model(r);
       }},
      {"SpecLinkNameOverMaxNameBytes",
       C::RESOURCE_EXHAUSTED,
       {"link name", "257 bytes", "--max-name-bytes"},
       [] {
         auto r = chain(1);
         r.mutable_spec()->mutable_links(1)->set_name(kLongName);
         r.mutable_spec()->mutable_joints(0)->set_child_link(kLongName);
         return register_model(r);
       }},
      {"SpecJointNameOverMaxNameBytes",
       C::RESOURCE_EXHAUSTED,
       {"joint name", "--max-name-bytes"},
       [] {
         auto r = chain(2);
         r.mutable_spec()->mutable_joints(1)->set_name(kLongName);
         return register_model(r);
       }},
      {"DhLinkNameOverMaxNameBytes",
       C::RESOURCE_EXHAUSTED,
       {"link name", "--max-name-bytes"},
       [] {
         auto r = dh();
         r.mutable_dh()->mutable_links(1)->set_name(kLongName);
         return register_model(r);
       }},
      {"DhJointNameOverMaxNameBytes",
       C::RESOURCE_EXHAUSTED,
       {"joint name", "--max-name-bytes"},
       [] {
         auto r = dh();
         r.mutable_dh()->mutable_links(0)->set_joint_name(kLongName);
         return register_model(r);
       }},
      {"DhBaseLinkNameOverMaxNameBytes",
       C::RESOURCE_EXHAUSTED,
       {"link name", "--max-name-bytes"},
       [] {
         auto r = dh();
         r.mutable_dh()->set_base_link(kLongName);
         return register_model(r);
       }},
      {"LoopNameOverMaxNameBytes",
       C::RESOURCE_EXHAUSTED,
       {"loop closure name", "--max-name-bytes"},
       [] { return register_model(chain_with_loops({loop(kLongName, "l3", "l0")})); }},
      {"SpecEmptyLinkName",
       C::INVALID_ARGUMENT,
       {"a link has an empty name", "links[1]", "the child of joint 'j1'"},
       [] {
         auto r = chain(2);
         r.mutable_spec()->mutable_links(1)->set_name("");
         r.mutable_spec()->mutable_joints(0)->set_child_link("");
         r.mutable_spec()->mutable_joints(1)->set_parent_link("");
         return register_model(r);
       }},
      {"SpecEmptyJointName",
       C::INVALID_ARGUMENT,
       {"a joint has an empty name", "joints[1]", "from link 'l1' to link 'l2'"},
       [] {
         auto r = chain(2);
         r.mutable_spec()->mutable_joints(1)->set_name("");
         return register_model(r);
       }},
      {"DhUnsetNamesTakeTheirDefaults",
       C::OK,
       {},
       [] {
         auto r = dh();
         for (v1::DhLink& row : *r.mutable_dh()->mutable_links()) {
           row.clear_name();
           row.clear_joint_name();
         }
         v1::RegisterModelResponse registered;
         const grpc::Status status = call(&Models::RegisterModel, r, &registered);
         EXPECT_EQ(registered.model().joints(0).name(), "joint1");
         EXPECT_EQ(registered.model().bodies(2).name(), "link2");
         EXPECT_EQ(delete_model(registered.model().id()), "");
         return status;
       }},
      // Models that cannot move are refused, from every source.
      {"DhEmptyTable",
       C::INVALID_ARGUMENT,
       {"no degree of freedom (nv = 0)", "no joints"},
       [] { return register_model(dh(0)); }},
      {"SpecOnlyFixedJoints",
       C::INVALID_ARGUMENT,
       {"no degree of freedom (nv = 0)", "all its joints are fixed"},
       [] {
         auto r = chain(2);
         for (v1::JointSpec& joint : *r.mutable_spec()->mutable_joints()) {
           joint.set_type(v1::JOINT_TYPE_FIXED);
         }
         return register_model(r);
       }},
      // Every non-finite number is named by its field.
      {"DhInfiniteMass",
       C::INVALID_ARGUMENT,
       {"dh.links[1].mass is infinite"},
       [] {
         auto r = dh();
         r.mutable_dh()->mutable_links(1)->set_mass(kInf);
         return register_model(r);
       }},
      {"DhNanCentreOfMass",
       C::INVALID_ARGUMENT,
       {"dh.links[0].com.y is NaN"},
       [] {
         auto r = dh();
         r.mutable_dh()->mutable_links(0)->mutable_com()->set_y(kNaN);
         return register_model(r);
       }},
      {"DhNanLimit",
       C::INVALID_ARGUMENT,
       {"dh.links[1].limits.upper is NaN"},
       [] {
         auto r = dh();
         r.mutable_dh()->mutable_links(1)->mutable_limits()->set_upper(kNaN);
         return register_model(r);
       }},
      {"SpecInfiniteLimitMeansUnbounded",
       C::OK,
       {},
       [] {
         auto r = chain(1);
         r.mutable_spec()->mutable_joints(0)->mutable_limits()->set_upper(kInf);
         return register_model(r);
       }},
      {"SpecNanAxis",
       C::INVALID_ARGUMENT,
       {"spec.joints[1].axis.x is NaN"},
       [] {
         auto r = chain(2);
         r.mutable_spec()->mutable_joints(1)->mutable_axis()->set_x(kNaN);
         return register_model(r);
       }},
      {"SpecInfinitePitch",
       C::INVALID_ARGUMENT,
       {"spec.joints[0].pitch is infinite"},
       [] {
         auto r = chain(1);
         r.mutable_spec()->mutable_joints(0)->set_pitch(-kInf);
         return register_model(r);
       }},
      {"LoopNanOrigin",
       C::INVALID_ARGUMENT,
       {"loop_closures[1].origin2.xyz.z is NaN"},
       [] {
         auto r = chain_with_loops({loop("a", "l3", "l0"), loop("b", "l2", "l0")});
         r.mutable_loop_closures(1)->mutable_origin2()->mutable_xyz()->set_z(kNaN);
         return register_model(r);
       }},
      {"SpecLoopInfiniteOrigin",
       C::INVALID_ARGUMENT,
       {"spec.loop_closures[0].origin1.rpy.x is infinite"},
       [] {
         auto r = chain(3);
         *r.mutable_spec()->add_loop_closures() = loop("a", "l3", "l0");
         r.mutable_spec()->mutable_loop_closures(0)->mutable_origin1()->mutable_rpy()->set_x(kInf);
         return register_model(r);
       }},
      // Regression: repeated messages decode into an object each (an empty DH row, 2 bytes on the
      // wire, takes over a hundred), so 8 MB of empty rows grew the server by 488 MiB before
      // --max-bodies refused them (173 MiB for these 3 MB). They are counted on the wire, before
      // decoding.
      {"DhMillionsOfEmptyRows",
       C::RESOURCE_EXHAUSTED,
       {"dh.links: 1499996 exceeds the server's limit of 64 (--max-bodies)"},
       [] {
         return register_bytes_within_memory(
             length_delimited(3, "\x08\x01" + empty_messages(2, kModelBytes - 8)));
       }},
      {"SpecMillionsOfEmptyJoints",
       C::RESOURCE_EXHAUSTED,
       {"spec.joints", "--max-bodies"},
       [] {
         return register_bytes_within_memory(
             length_delimited(4, empty_messages(2, kModelBytes - 8)));
       }},
      {"SpecMillionsOfEmptyLinks",
       C::RESOURCE_EXHAUSTED,
       {"spec.links", "--max-bodies"},
       [] {
         return register_bytes_within_memory(
             length_delimited(4, empty_messages(1, kModelBytes - 8)));
       }},
      {"MillionsOfEmptyLoopClosures",
       C::RESOURCE_EXHAUSTED,
       {"loop_closures", "--max-constraint-rows"},
       [] {
         return register_bytes_within_memory(chain(1).SerializeAsString() +
                                             empty_messages(7, kModelBytes - 1000));
       }},
      {"SpecMillionsOfEmptyLoopClosures",
       C::RESOURCE_EXHAUSTED,
       {"loop_closures", "--max-constraint-rows"},
       [] {
         return register_bytes_within_memory(
             length_delimited(4, empty_messages(3, kModelBytes - 8)));
       }},
      {"MillionsOfUnknownFields",
       C::RESOURCE_EXHAUSTED,
       {"unknown", "--max-bodies"},
       [] {
         // Field 100, a varint 0: 3 bytes each.
         return register_bytes_within_memory(chain(1).SerializeAsString() +
                                             repeated(varint(100 << 3) + varint(0), 999000));
       }},
      {"MillionsOfUnknownFieldsInAGroup",
       C::RESOURCE_EXHAUSTED,
       {"unknown", "--max-bodies"},
       [] {
         // Field 101, a group holding field 100, varints 0; then the group's end.
         return register_bytes_within_memory(chain(1).SerializeAsString() + varint(101 << 3 | 3) +
                                             repeated(varint(100 << 3) + varint(0), 999000) +
                                             varint(101 << 3 | 4));
       }},
      {"EmptyRowsThenUndecodableBytes",
       C::RESOURCE_EXHAUSTED,
       {"dh.links", "--max-bodies"},
       [] {
         return register_bytes_within_memory(
             length_delimited(3, empty_messages(2, kModelBytes - 100)) + kUndecodable);
       }},
      {"GetModelUnknownId",
       C::NOT_FOUND,
       {"model_id", "0123"},
       [] {
         v1::GetModelRequest r;
         r.set_model_id("0123456789abcdef0123456789abcdef");
         return call(&Models::GetModel, r);
       }},
      {"GetModelHugeId",
       C::NOT_FOUND,
       {"model_id", "1048576 bytes"},
       [] {
         v1::GetModelRequest r;
         r.set_model_id(kHugeName);
         return call(&Models::GetModel, r);
       }},
      {"GetModelIdWithTerminalEscapes",
       C::NOT_FOUND,
       {"model_id", "evil"},
       [] {
         v1::GetModelRequest r;
         r.set_model_id(kControlName);
         return call(&Models::GetModel, r);
       }},
      {"GetModelIdCutInsideACharacter",
       C::NOT_FOUND,
       {"model_id"},
       [] {
         v1::GetModelRequest r;
         std::string id = "a";
         for (int i = 0; i < 100; ++i) id += "\xc3\xa9";  // é: 64 bytes end inside one
         r.set_model_id(id);
         return call(&Models::GetModel, r);
       }},
      {"GetModelInvalidUtf8",
       C::INVALID_ARGUMENT,
       {"request", "torqued.v1.GetModelRequest"},
       [] {
         // Field 1 (model_id), length 3: bytes that are no UTF-8, which proto3 strings must be.
         return raw_unary("/torqued.v1.ModelService/GetModel", std::string("\x0a\x03\xff\xfe\xfd"));
       }},
      {"DeleteModelUnknownId",
       C::NOT_FOUND,
       {"model_id"},
       [] {
         v1::DeleteModelRequest r;
         r.set_model_id("ffffffffffffffffffffffffffffffff");
         return call(&Models::DeleteModel, r);
       }},
      {"DeleteModelPathTraversal",
       C::NOT_FOUND,
       {"model_id"},
       [] {
         v1::DeleteModelRequest r;
         r.set_model_id("../../../../etc/passwd");
         return call(&Models::DeleteModel, r);
       }},
      {"DeleteModelFromRepository",
       C::FAILED_PRECONDITION,
       {"model_id", "repository"},
       [] {
         v1::DeleteModelRequest r;
         r.set_model_id(id_of("puma560"));
         return call(&Models::DeleteModel, r);
       }},
      {"DeleteModelTwiceThenUseIt",
       C::NOT_FOUND,
       {"model_id"},
       [] {
         v1::RegisterModelResponse registered;
         EXPECT_TRUE(call(&Models::RegisterModel, chain(2), &registered).ok());
         EXPECT_EQ(delete_model(registered.model().id()), "");
         EXPECT_NE(delete_model(registered.model().id()), "");
         auto r = inverse_dynamics();
         r.set_model_id(registered.model().id());
         r.clear_q();
         r.clear_v();
         r.clear_a();
         fill(r.mutable_q(), 2);
         fill(r.mutable_v(), 2);
         fill(r.mutable_a(), 2);
         return call(&Dynamics::InverseDynamics, r);
       }},
      {"HugeModelNameInLaterErrors",
       C::INVALID_ARGUMENT,
       {"frames[0]", "see Model.frames"},
       [] {
         auto r = chain(2);
         r.set_name(std::string(256, 'n'));  // the longest --max-name-bytes allows
         v1::RegisterModelResponse registered;
         EXPECT_TRUE(call(&Models::RegisterModel, r, &registered).ok());
         v1::KinematicsRequest k;
         k.set_model_id(registered.model().id());
         fill(k.mutable_q(), 2);
         k.add_frames("no_such_frame");
         const grpc::Status status = call(&Dynamics::Kinematics, k);
         EXPECT_EQ(delete_model(registered.model().id()), "");
         return status;
       }},
  };
}

// The services whose methods the table covers: the ModelService and the DynamicsService.
const std::vector<const google::protobuf::ServiceDescriptor*>& table_services() {
  static const std::vector<const google::protobuf::ServiceDescriptor*> services = {
      v1::RegisterModelRequest::descriptor()->file()->service(0),
      v1::InverseDynamicsRequest::descriptor()->file()->service(0),
      v1::SolveRequest::descriptor()->file()->service(0)};
  return services;
}

// Bytes that are no message, sent to every unary method of the services, found in their
// descriptors: refused naming the request's type.
std::vector<Row> undecodable_rows() {
  std::vector<Row> rows;
  for (const google::protobuf::ServiceDescriptor* service : table_services()) {
    for (int m = 0; m < service->method_count(); ++m) {
      const google::protobuf::MethodDescriptor& method = *service->method(m);
      if (method.client_streaming() || method.server_streaming()) continue;
      const std::string path = '/' + service->full_name() + '/' + method.name();
      rows.push_back({method.name() + "Undecodable",
                      StatusCode::INVALID_ARGUMENT,
                      {"request", method.input_type()->full_name()},
                      [path] { return raw_unary(path, kUndecodable); }});
    }
  }
  return rows;
}

// ---- The rows: DynamicsService's unary RPCs ----

std::vector<Row> dynamics_rows() {
  using C = StatusCode;
  return {
      {"InverseDynamicsShortQ",
       C::INVALID_ARGUMENT,
       {"q:", "expected 6", "got 5"},
       [] {
         auto r = inverse_dynamics();
         r.mutable_q()->RemoveLast();
         return call(&Dynamics::InverseDynamics, r);
       }},
      {"InverseDynamicsNanV",
       C::INVALID_ARGUMENT,
       {"v[2]", "NaN"},
       [] {
         auto r = inverse_dynamics();
         r.set_v(2, kNaN);
         return call(&Dynamics::InverseDynamics, r);
       }},
      {"InverseDynamicsNegativeBatchSize",
       C::RESOURCE_EXHAUSTED,
       {"batch_size", "4294967295", "--max-batch-states"},
       [] {
         auto r = inverse_dynamics();
         r.set_batch_size(static_cast<std::uint32_t>(-1));
         return call(&Dynamics::InverseDynamics, r);
       }},
      {"InverseDynamicsBatchSizeWithoutStates",
       C::INVALID_ARGUMENT,
       {"q:", "expected 60000"},
       [] {
         auto r = inverse_dynamics();
         r.set_batch_size(10000);
         return call(&Dynamics::InverseDynamics, r);
       }},
      {"InverseDynamicsUnknownModel",
       C::NOT_FOUND,
       {"model_id", "no_such_model"},
       [] {
         auto r = inverse_dynamics();
         r.set_model_id("no_such_model");
         return call(&Dynamics::InverseDynamics, r);
       }},
      {"InverseDynamicsHugeModelId",
       C::NOT_FOUND,
       {"model_id", "1048576 bytes"},
       [] {
         auto r = inverse_dynamics();
         r.set_model_id(kHugeName);
         return call(&Dynamics::InverseDynamics, r);
       }},
      {"InverseDynamicsUnknownAlgorithm",
       C::INVALID_ARGUMENT,
       {"algorithm", "77"},
       [] {
         auto r = inverse_dynamics();
         r.set_algorithm(static_cast<v1::InverseDynamicsAlgorithm>(77));
         return call(&Dynamics::InverseDynamics, r);
       }},
      {"InverseDynamicsExternalForcesWrongSize",
       C::INVALID_ARGUMENT,
       {"external_forces:", "expected 36 values", "got 5"},
       [] {
         auto r = inverse_dynamics();
         fill(r.mutable_external_forces(), 5);
         return call(&Dynamics::InverseDynamics, r);
       }},
      {"InverseDynamicsOverMessageBytes",
       C::RESOURCE_EXHAUSTED,
       {"4194304"},
       [] {
         auto r = inverse_dynamics();
         fill(r.mutable_external_forces(), 600000);
         return call(&Dynamics::InverseDynamics, r);
       }},
      {"ForwardDynamicsSingularModel",
       C::FAILED_PRECONDITION,
       {"singular"},
       [] {
         auto spec = chain(1);
         spec.mutable_spec()->mutable_links(1)->clear_inertial();
         v1::RegisterModelResponse registered;
         EXPECT_TRUE(call(&Models::RegisterModel, spec, &registered).ok());
         auto r = forward_dynamics();
         r.set_model_id(registered.model().id());
         r.clear_q();
         r.clear_v();
         r.clear_tau();
         fill(r.mutable_q(), 1);
         fill(r.mutable_v(), 1);
         fill(r.mutable_tau(), 1);
         r.set_algorithm(v1::FORWARD_DYNAMICS_ALGORITHM_CRBA);
         const grpc::Status status = call(&Dynamics::ForwardDynamics, r);
         EXPECT_EQ(delete_model(registered.model().id()), "");
         return status;
       }},
      {"ForwardDynamicsOverflowingVelocities",
       C::FAILED_PRECONDITION,
       {"not finite", "state 0"},
       [] {
         auto r = forward_dynamics();
         r.clear_v();
         fill(r.mutable_v(), 6, 1e200);
         return call(&Dynamics::ForwardDynamics, r);
       }},
      {"ForwardDynamicsUnknownAlgorithm",
       C::INVALID_ARGUMENT,
       {"algorithm", "9"},
       [] {
         auto r = forward_dynamics();
         r.set_algorithm(static_cast<v1::ForwardDynamicsAlgorithm>(9));
         return call(&Dynamics::ForwardDynamics, r);
       }},
      {"MassMatrixResponseOverMessageBytes",
       C::RESOURCE_EXHAUSTED,
       {"batch_size", "--max-message-bytes"},
       [] { return call(&Dynamics::MassMatrix, on<v1::MassMatrixRequest>("quadruped", 10000)); }},
      {"NonlinearEffectsMissingV",
       C::INVALID_ARGUMENT,
       {"v:", "expected 6", "got 0"},
       [] {
         return call(&Dynamics::NonlinearEffects, on<v1::NonlinearEffectsRequest>("puma560"));
       }},
      {"GravityNonUnitQuaternion",
       C::INVALID_ARGUMENT,
       {"q:", "quaternion", "root_joint"},
       [] {
         auto r = on<v1::GravityRequest>("quadruped");
         r.set_q(6, 3.0);
         return call(&Dynamics::Gravity, r);
       }},
      {"GravityZeroQuaternion",
       C::INVALID_ARGUMENT,
       {"q:", "quaternion", "norm 0"},
       [] {
         auto r = on<v1::GravityRequest>("quadruped");
         for (int i = 3; i < 7; ++i) r.set_q(i, 0.0);
         return call(&Dynamics::Gravity, r);
       }},
      {"KinematicsUnknownFrame",
       C::INVALID_ARGUMENT,
       {"frames[1]", "no_such_frame"},
       [] {
         auto r = on<v1::KinematicsRequest>("puma560");
         r.add_frames("link6");
         r.add_frames("no_such_frame");
         return call(&Dynamics::Kinematics, r);
       }},
      {"KinematicsHugeFrameName",
       C::INVALID_ARGUMENT,
       {"frames[0]", "1048576 bytes"},
       [] {
         auto r = on<v1::KinematicsRequest>("puma560");
         r.add_frames(kHugeName);
         return call(&Dynamics::Kinematics, r);
       }},
      {"KinematicsFrameWithTerminalEscapes",
       C::INVALID_ARGUMENT,
       {"frames[0]", "evil"},
       [] {
         auto r = on<v1::KinematicsRequest>("puma560");
         r.add_frames(kControlName);
         return call(&Dynamics::Kinematics, r);
       }},
      {"KinematicsOverMaxFrames",
       C::RESOURCE_EXHAUSTED,
       {"frames", "--max-kinematics-frames"},
       [] {
         auto r = on<v1::KinematicsRequest>("puma560");
         for (int i = 0; i < 65; ++i) r.add_frames("link6");
         return call(&Dynamics::Kinematics, r);
       }},
      {"KinematicsUnknownReference",
       C::INVALID_ARGUMENT,
       {"reference", "99"},
       [] {
         auto r = on<v1::KinematicsRequest>("puma560");
         r.set_reference(static_cast<v1::ReferenceFrame>(99));
         return call(&Dynamics::Kinematics, r);
       }},
      {"HybridDynamicsInputsWrongSize",
       C::INVALID_ARGUMENT,
       {"inputs:", "expected 6", "got 2"},
       [] {
         auto r = on<v1::HybridDynamicsRequest>("puma560");
         fill(r.mutable_v(), 6);
         fill(r.mutable_a(), 6);
         fill(r.mutable_tau(), 6);
         r.add_inputs(v1::DOF_INPUT_FORCE);
         r.add_inputs(v1::DOF_INPUT_FORCE);
         return call(&Dynamics::HybridDynamics, r);
       }},
      {"HybridDynamicsUnknownInput",
       C::INVALID_ARGUMENT,
       {"inputs[0]", "unknown value 7"},
       [] {
         auto r = on<v1::HybridDynamicsRequest>("puma560");
         fill(r.mutable_v(), 6);
         fill(r.mutable_a(), 6);
         fill(r.mutable_tau(), 6);
         r.add_inputs(static_cast<v1::DofInput>(7));
         for (int i = 1; i < 6; ++i) r.add_inputs(v1::DOF_INPUT_FORCE);
         return call(&Dynamics::HybridDynamics, r);
       }},
      {"FloatingBaseInverseDynamicsOnFixedBase",
       C::FAILED_PRECONDITION,
       {"model_id", "free-flyer"},
       [] {
         auto r = on<v1::FloatingBaseInverseDynamicsRequest>("puma560");
         fill(r.mutable_v(), 6);
         fill(r.mutable_a(), 6);
         return call(&Dynamics::FloatingBaseInverseDynamics, r);
       }},
      {"DerivativesUnknownOf",
       C::INVALID_ARGUMENT,
       {"of:", "4"},
       [] {
         auto r = on<v1::DerivativesRequest>("puma560");
         fill(r.mutable_v(), 6);
         fill(r.mutable_a(), 6);
         r.set_of(static_cast<v1::DerivativesOf>(4));
         return call(&Dynamics::Derivatives, r);
       }},
      {"DerivativesOfForwardDynamicsWithA",
       C::INVALID_ARGUMENT,
       {"a:", "must be empty"},
       [] {
         auto r = on<v1::DerivativesRequest>("puma560");
         fill(r.mutable_v(), 6);
         fill(r.mutable_a(), 6);
         r.set_of(v1::DERIVATIVES_OF_FORWARD_DYNAMICS);
         return call(&Dynamics::Derivatives, r);
       }},
      {"DerivativesOfConstrainedDynamicsUnknownFrame",
       C::INVALID_ARGUMENT,
       {"constraints[0].frame1.frame", "no_such_frame"},
       [] {
         auto r = on<v1::DerivativesRequest>("quadruped");
         fill(r.mutable_v(), nv("quadruped"));
         fill(r.mutable_tau(), nv("quadruped"));
         r.set_of(v1::DERIVATIVES_OF_CONSTRAINED_DYNAMICS);
         *r.add_constraints() = point_constraint("no_such_frame");
         return call(&Dynamics::Derivatives, r);
       }},
      {"DerivativesOfConstrainedDynamicsWithExternalForces",
       C::INVALID_ARGUMENT,
       {"external_forces", "must be empty", "DERIVATIVES_OF_CONSTRAINED_DYNAMICS"},
       [] {
         auto r = on<v1::DerivativesRequest>("quadruped");
         fill(r.mutable_v(), nv("quadruped"));
         fill(r.mutable_tau(), nv("quadruped"));
         fill(r.mutable_external_forces(), 6);
         r.set_of(v1::DERIVATIVES_OF_CONSTRAINED_DYNAMICS);
         *r.add_constraints() = point_constraint("FL_foot");
         return call(&Dynamics::Derivatives, r);
       }},
      {"DerivativesOfForwardDynamicsWithConstraints",
       C::INVALID_ARGUMENT,
       {"constraints", "DERIVATIVES_OF_CONSTRAINED_DYNAMICS"},
       [] {
         auto r = on<v1::DerivativesRequest>("quadruped");
         fill(r.mutable_v(), nv("quadruped"));
         fill(r.mutable_tau(), nv("quadruped"));
         r.set_of(v1::DERIVATIVES_OF_FORWARD_DYNAMICS);
         *r.add_constraints() = point_constraint("FL_foot");
         return call(&Dynamics::Derivatives, r);
       }},
      {"CoriolisMatrixVTooLong",
       C::INVALID_ARGUMENT,
       {"v:", "expected 6", "got 7"},
       [] {
         auto r = on<v1::CoriolisMatrixRequest>("puma560");
         fill(r.mutable_v(), 7);
         return call(&Dynamics::CoriolisMatrix, r);
       }},
      {"CentroidalInfiniteQ",
       C::INVALID_ARGUMENT,
       {"q[4]", "infinite"},
       [] {
         auto r = on<v1::CentroidalRequest>("puma560");
         r.set_q(4, -kInf);
         fill(r.mutable_v(), 6);
         return call(&Dynamics::Centroidal, r);
       }},
      {"ConstrainedDynamicsUnknownFrame",
       C::INVALID_ARGUMENT,
       {"constraints[0].frame1.frame", "no_such_frame"},
       [] {
         auto r = constrained();
         *r.add_constraints() = point_constraint("no_such_frame");
         return call(&Dynamics::ConstrainedDynamics, r);
       }},
      {"ConstrainedDynamicsSameBody",
       C::INVALID_ARGUMENT,
       {"constraints[0]", "same body"},
       [] {
         auto r = constrained();
         v1::Constraint c = point_constraint("FL_foot");
         c.mutable_frame2()->set_frame("FL_shank");
         *r.add_constraints() = c;
         return call(&Dynamics::ConstrainedDynamics, r);
       }},
      {"ConstrainedDynamicsNegativeGain",
       C::INVALID_ARGUMENT,
       {"gains.position"},
       [] {
         auto r = constrained();
         *r.add_constraints() = point_constraint("FL_foot");
         r.mutable_gains()->set_position(-1.0);
         return call(&Dynamics::ConstrainedDynamics, r);
       }},
      {"ConstrainedDynamicsNanGain",
       C::INVALID_ARGUMENT,
       {"gains.velocity"},
       [] {
         auto r = constrained();
         *r.add_constraints() = point_constraint("FL_foot");
         r.mutable_gains()->set_velocity(kNaN);
         return call(&Dynamics::ConstrainedDynamics, r);
       }},
      {"ConstrainedDynamicsOverMaxRows",
       C::RESOURCE_EXHAUSTED,
       {"constraints", "--max-constraint-rows"},
       [] {
         auto r = constrained();
         for (const std::string& foot : kFeet) {
           v1::Constraint weld = point_constraint(foot);
           weld.set_type(v1::CONSTRAINT_TYPE_WELD);
           weld.set_name("weld_" + foot);
           *r.add_constraints() = weld;
           weld.set_name("again_" + foot);
           weld.mutable_frame1()->mutable_placement()->mutable_xyz()->set_x(0.01);
           *r.add_constraints() = weld;
         }
         return call(&Dynamics::ConstrainedDynamics, r);
       }},
      {"ConstrainedDynamicsUnknownMode",
       C::INVALID_ARGUMENT,
       {"mode", "3"},
       [] {
         auto r = constrained();
         r.set_mode(static_cast<v1::ConstrainedDynamicsMode>(3));
         return call(&Dynamics::ConstrainedDynamics, r);
       }},
      {"ConstrainedDynamicsInputsInForwardMode",
       C::INVALID_ARGUMENT,
       {"inputs", "must be empty"},
       [] {
         auto r = constrained();
         r.add_inputs(v1::DOF_INPUT_FORCE);
         return call(&Dynamics::ConstrainedDynamics, r);
       }},
      {"ConstrainedDynamicsDuplicateHugeName",
       C::INVALID_ARGUMENT,
       {"constraints[1]", "already used"},
       [] {
         auto r = constrained();
         v1::Constraint c = point_constraint("FL_foot");
         c.set_name(kHugeName);
         *r.add_constraints() = c;
         *r.add_constraints() = c;
         return call(&Dynamics::ConstrainedDynamics, r);
       }},
      {"ConstrainedDynamicsInconsistentWelds",
       C::FAILED_PRECONDITION,
       {"state 1:", "inconsistent", "--max-constraint-residual"},
       [] {
         auto r = welded_puma<v1::ConstrainedDynamicsRequest>(kThreeWelds, 2);
         fill(r.mutable_tau(), 12);
         return call(&Dynamics::ConstrainedDynamics, r);
       }},
      {"ConstrainedDynamicsRedundantConsistentWeldsAnswer",
       C::OK,
       {},
       [] {
         // link6 welded twice: 12 rows of rank 6, consistent while the arm moves.
         auto r = welded_puma<v1::ConstrainedDynamicsRequest>({"link6", "link6"}, 2);
         fill(r.mutable_tau(), 12);
         return call(&Dynamics::ConstrainedDynamics, r);
       }},
      {"ConstrainedDynamicsInverseInconsistentAccelerations",
       C::FAILED_PRECONDITION,
       {"state 0:", "inconsistent", "--max-constraint-residual"},
       [] {
         // Every DOF's acceleration given on an arm welded to the world: only a = K⁻¹ k holds it.
         auto r = welded_puma<v1::ConstrainedDynamicsRequest>({"link6"});
         r.set_mode(v1::CONSTRAINED_DYNAMICS_MODE_INVERSE);
         for (int i = 0; i < 6; ++i) r.add_inputs(v1::DOF_INPUT_ACCELERATION);
         fill(r.mutable_a(), 6, 1.0);
         fill(r.mutable_tau(), 6);
         return call(&Dynamics::ConstrainedDynamics, r);
       }},
      {"DerivativesOfInconsistentWelds",
       C::FAILED_PRECONDITION,
       {"state 1:", "inconsistent", "--max-constraint-residual"},
       [] {
         auto r = welded_puma<v1::DerivativesRequest>(kThreeWelds, 2);
         r.set_of(v1::DERIVATIVES_OF_CONSTRAINED_DYNAMICS);
         fill(r.mutable_tau(), 12);
         return call(&Dynamics::Derivatives, r);
       }},
      {"LinearizeInconsistentWelds",
       C::FAILED_PRECONDITION,
       {"knot 1:", "inconsistent", "--max-constraint-residual"},
       [] {
         auto r = welded_puma<v1::LinearizeRequest>(kThreeWelds, 2);
         fill(r.mutable_u(), 12);
         r.set_dt(0.01);
         return call(&Dynamics::Linearize, r);
       }},
      {"RolloutInconsistentWeldsEndTheRollout",
       C::OK,
       {},
       [] {
         // Rollout 0 starts at rest, where the welds agree, and moves under the controls; rollout
         // 1 starts moving: its first step is refused, in its status.
         auto r = welded_puma<v1::RolloutRequest>(kThreeWelds, 2);
         r.set_knots(1);
         fill(r.mutable_u(), 12);
         r.set_dt(0.01);
         v1::RolloutResponse response;
         const grpc::Status status = call(&Dynamics::Rollout, r, &response);
         EXPECT_EQ(response.steps_size(), 2);
         EXPECT_EQ(response.status_size(), 2);
         if (response.steps_size() == 2 && response.status_size() == 2) {
           EXPECT_EQ(response.steps(0), 1u);
           EXPECT_EQ(response.status(0).code(), 0);
           EXPECT_EQ(response.steps(1), 0u);
           EXPECT_EQ(response.status(1).code(), grpc::StatusCode::FAILED_PRECONDITION);
           EXPECT_NE(response.status(1).message().find("--max-constraint-residual"),
                     std::string::npos)
               << response.status(1).message();
         }
         return status;
       }},
      {"ContactDynamicsUnknownFrame",
       C::INVALID_ARGUMENT,
       {"contacts[4].frame", "no_such_foot"},
       [] {
         auto r = contact_dynamics();
         *r.add_contacts() = contact("no_such_foot");
         return call(&Dynamics::ContactDynamics, r);
       }},
      {"ContactDynamicsOnFixedBase",
       C::INVALID_ARGUMENT,
       {"contacts[0].frame", "fixed base"},
       [] {
         auto r = on<v1::ContactDynamicsRequest>("puma560");
         fill(r.mutable_v(), 6);
         fill(r.mutable_tau(), 6);
         *r.add_contacts() = contact("base");
         return call(&Dynamics::ContactDynamics, r);
       }},
      {"ContactDynamicsNonUnitNormal",
       C::INVALID_ARGUMENT,
       {"contacts[0].normal", "unit"},
       [] {
         auto r = contact_dynamics();
         for (const double x : {0.0, 0.0, 2.0}) r.mutable_contacts(0)->add_normal(x);
         return call(&Dynamics::ContactDynamics, r);
       }},
      {"ContactDynamicsNegativeFriction",
       C::INVALID_ARGUMENT,
       {"contacts[2].friction"},
       [] {
         auto r = contact_dynamics();
         r.mutable_contacts(2)->set_friction(-0.1);
         return call(&Dynamics::ContactDynamics, r);
       }},
      {"ContactDynamicsNanPoint",
       C::INVALID_ARGUMENT,
       {"contacts[1].point[1]", "NaN"},
       [] {
         auto r = contact_dynamics();
         for (const double x : {0.0, kNaN, 0.0}) r.mutable_contacts(1)->add_point(x);
         return call(&Dynamics::ContactDynamics, r);
       }},
      {"ContactDynamicsOverMaxContacts",
       C::RESOURCE_EXHAUSTED,
       {"contacts", "65", "--max-contacts"},
       [] {
         auto r = contact_dynamics();
         for (int k = 4; k < 65; ++k) *r.add_contacts() = contact(kFeet[k % 4]);
         return call(&Dynamics::ContactDynamics, r);
       }},
      {"ContactDynamicsOverWorkspaceBytes",
       C::RESOURCE_EXHAUSTED,
       {"contacts", "--max-workspace-bytes"},
       [] {
         auto r = contact_dynamics();
         for (int k = 4; k < 60; ++k) *r.add_contacts() = contact(kFeet[k % 4]);
         return call(&Dynamics::ContactDynamics, r);
       }},
      {"ContactDynamicsOverMaxSolverIterations",
       C::RESOURCE_EXHAUSTED,
       {"solver.max_iterations", "--max-solver-iterations"},
       [] {
         auto r = contact_dynamics();
         r.mutable_solver()->set_max_iterations(4000000000u);
         return call(&Dynamics::ContactDynamics, r);
       }},
      {"ContactDynamicsZeroSolverIterations",
       C::INVALID_ARGUMENT,
       {"solver.max_iterations"},
       [] {
         auto r = contact_dynamics();
         r.mutable_solver()->set_max_iterations(0);
         return call(&Dynamics::ContactDynamics, r);
       }},
      {"ContactDynamicsNanTolerance",
       C::INVALID_ARGUMENT,
       {"solver.tolerance", "NaN"},
       [] {
         auto r = contact_dynamics();
         r.mutable_solver()->set_tolerance(kNaN);
         return call(&Dynamics::ContactDynamics, r);
       }},
      {"ImpactRestitutionAboveOne",
       C::INVALID_ARGUMENT,
       {"restitution", "[0, 1]"},
       [] {
         auto r = impact();
         r.set_restitution(2.0);
         return call(&Dynamics::Impact, r);
       }},
      {"ImpactNanRestitution",
       C::INVALID_ARGUMENT,
       {"restitution", "NaN"},
       [] {
         auto r = impact();
         r.set_restitution(kNaN);
         return call(&Dynamics::Impact, r);
       }},
      {"SimulateZeroSteps",
       C::INVALID_ARGUMENT,
       {"steps"},
       [] { return call(&Dynamics::Simulate, simulate(0)); }},
      {"SimulateOverMaxSteps",
       C::RESOURCE_EXHAUSTED,
       {"steps", "--max-simulation-steps"},
       [] { return call(&Dynamics::Simulate, simulate(20001)); }},
      {"SimulateNegativeTimeStep",
       C::INVALID_ARGUMENT,
       {"time_step"},
       [] {
         auto r = simulate();
         r.set_time_step(-1e-3);
         return call(&Dynamics::Simulate, r);
       }},
      {"SimulateRk4WithCandidates",
       C::INVALID_ARGUMENT,
       {"integrator", "INTEGRATOR_RK4"},
       [] {
         auto r = simulate();
         r.set_integrator(v1::INTEGRATOR_RK4);
         return call(&Dynamics::Simulate, r);
       }},
      {"SimulateResponseOverMessageBytes",
       C::RESOURCE_EXHAUSTED,
       {"--max-message-bytes", "fewer steps"},
       [] { return call(&Dynamics::Simulate, simulate(20000)); }},
      {"SimulateTauWrongSize",
       C::INVALID_ARGUMENT,
       {"tau:", "got 7"},
       [] {
         auto r = simulate();
         fill(r.mutable_tau(), 7);
         return call(&Dynamics::Simulate, r);
       }},
      {"SimulateNanGroundRestitution",
       C::INVALID_ARGUMENT,
       {"ground.restitution", "NaN"},
       [] {
         auto r = simulate();
         r.mutable_ground()->set_restitution(kNaN);
         return call(&Dynamics::Simulate, r);
       }},
      {"LinearizeZeroDt",
       C::INVALID_ARGUMENT,
       {"dt: 0 is out of range", "> 0"},
       [] {
         auto r = linearize();
         r.set_dt(0.0);
         return call(&Dynamics::Linearize, r);
       }},
      {"LinearizeNegativeDt",
       C::INVALID_ARGUMENT,
       {"dt: -0.01 is out of range"},
       [] {
         auto r = linearize();
         r.set_dt(-0.01);
         return call(&Dynamics::Linearize, r);
       }},
      {"LinearizeNanDt",
       C::INVALID_ARGUMENT,
       {"dt is NaN"},
       [] {
         auto r = linearize();
         r.set_dt(kNaN);
         return call(&Dynamics::Linearize, r);
       }},
      {"LinearizeUWrongRowCount",
       C::INVALID_ARGUMENT,
       {"u: expected 54 values (batch_size 3 × 18 per state), got 36"},
       [] {
         auto r = linearize(3);
         r.mutable_u()->Truncate(36);
         return call(&Dynamics::Linearize, r);
       }},
      {"LinearizeVWrongRowCount",
       C::INVALID_ARGUMENT,
       {"v: expected 54 values"},
       [] {
         auto r = linearize(3);
         r.mutable_v()->Truncate(18);
         return call(&Dynamics::Linearize, r);
       }},
      {"LinearizeInfiniteU",
       C::INVALID_ARGUMENT,
       {"u[5]", "infinite"},
       [] {
         auto r = linearize();
         r.set_u(5, kInf);
         return call(&Dynamics::Linearize, r);
       }},
      {"LinearizeUnknownIntegrator",
       C::INVALID_ARGUMENT,
       {"integrator", "9"},
       [] {
         auto r = linearize();
         r.set_integrator(static_cast<v1::Integrator>(9));
         return call(&Dynamics::Linearize, r);
       }},
      {"LinearizeUnknownJacobians",
       C::INVALID_ARGUMENT,
       {"jacobians", "7"},
       [] {
         auto r = linearize();
         r.set_jacobians(static_cast<v1::StepJacobians>(7));
         return call(&Dynamics::Linearize, r);
       }},
      {"LinearizeVelocityRowsOfRk4",
       C::INVALID_ARGUMENT,
       {"jacobians", "STEP_JACOBIANS_VELOCITY_ROWS", "Euler"},
       [] {
         auto r = linearize();
         r.set_integrator(v1::INTEGRATOR_RK4);
         r.set_jacobians(v1::STEP_JACOBIANS_VELOCITY_ROWS);
         return call(&Dynamics::Linearize, r);
       }},
      {"LinearizeUnknownJoint",
       C::INVALID_ARGUMENT,
       {"actuation.joints[1]", "no joint", "FL_wrist"},
       [] {
         auto r = linearize();
         r.mutable_actuation()->set_kind(v1::ACTUATION_KIND_JOINTS);
         r.mutable_actuation()->add_joints("FL_knee");
         r.mutable_actuation()->add_joints("FL_wrist");
         return call(&Dynamics::Linearize, r);
       }},
      {"LinearizeJointNamedTwice",
       C::INVALID_ARGUMENT,
       {"actuation.joints[1]", "named twice"},
       [] {
         auto r = linearize();
         r.mutable_actuation()->set_kind(v1::ACTUATION_KIND_JOINTS);
         r.mutable_actuation()->add_joints("FL_knee");
         r.mutable_actuation()->add_joints("FL_knee");
         return call(&Dynamics::Linearize, r);
       }},
      {"LinearizeActuationOfNoJoint",
       C::INVALID_ARGUMENT,
       {"actuation.joints", "nu = 0"},
       [] {
         auto r = linearize();
         r.mutable_actuation()->set_kind(v1::ACTUATION_KIND_JOINTS);
         return call(&Dynamics::Linearize, r);
       }},
      {"LinearizeJointsWithEveryDofActuated",
       C::INVALID_ARGUMENT,
       {"actuation.joints: must be empty with ACTUATION_KIND_ALL"},
       [] {
         auto r = linearize();
         r.mutable_actuation()->add_joints("FL_knee");
         return call(&Dynamics::Linearize, r);
       }},
      {"LinearizeUnactuatedRootOfAFixedBase",
       C::INVALID_ARGUMENT,
       {"ACTUATION_KIND_UNACTUATED_ROOT", "fixed base"},
       [] {
         auto r = on<v1::LinearizeRequest>("puma560");
         fill(r.mutable_v(), nv("puma560"));
         fill(r.mutable_u(), nv("puma560"));
         r.set_dt(0.01);
         r.mutable_actuation()->set_kind(v1::ACTUATION_KIND_UNACTUATED_ROOT);
         return call(&Dynamics::Linearize, r);
       }},
      {"LinearizeUnactuatedRootWithEveryDofsControls",
       C::INVALID_ARGUMENT,
       {"u: expected 12 values (batch_size 1 × 12 per state), got 18"},
       [] {
         auto r = linearize();
         r.mutable_actuation()->set_kind(v1::ACTUATION_KIND_UNACTUATED_ROOT);
         return call(&Dynamics::Linearize, r);
       }},
      {"LinearizeUnknownContactFrame",
       C::INVALID_ARGUMENT,
       {"constraints[1].frame1.frame", "FL_toe"},
       [] {
         auto r = linearize();
         *r.add_constraints() = point_constraint("FL_foot");
         *r.add_constraints() = point_constraint("FL_toe");
         return call(&Dynamics::Linearize, r);
       }},
      {"LinearizeContactsOverMaxRows",
       C::RESOURCE_EXHAUSTED,
       {"constraints", "--max-constraint-rows"},
       [] {
         auto r = linearize();
         for (const std::string& foot : kFeet) {
           v1::Constraint weld = point_constraint(foot);
           weld.set_type(v1::CONSTRAINT_TYPE_WELD);
           weld.set_name("weld_" + foot);
           *r.add_constraints() = weld;
           weld.set_name("again_" + foot);
           *r.add_constraints() = weld;
         }
         return call(&Dynamics::Linearize, r);
       }},
      {"LinearizePhasesAndConstraints",
       C::INVALID_ARGUMENT,
       {"phases", "not both"},
       [] {
         auto r = linearize(4);
         *r.add_constraints() = point_constraint("FL_foot");
         *r.add_phases() = phase(0, {"FL_foot"});
         return call(&Dynamics::Linearize, r);
       }},
      {"LinearizeFirstPhaseAfterKnotZero",
       C::INVALID_ARGUMENT,
       {"phases[0].first_knot", "knot 0"},
       [] {
         auto r = linearize(4);
         *r.add_phases() = phase(1, {"FL_foot"});
         return call(&Dynamics::Linearize, r);
       }},
      {"LinearizePhasesOutOfOrder",
       C::INVALID_ARGUMENT,
       {"phases[2].first_knot", "not after"},
       [] {
         auto r = linearize(4);
         *r.add_phases() = phase(0, {"FL_foot"});
         *r.add_phases() = phase(2, {"FR_foot"});
         *r.add_phases() = phase(1, {"FL_foot"});
         return call(&Dynamics::Linearize, r);
       }},
      {"RolloutPhasePastTheHorizon",
       C::INVALID_ARGUMENT,
       {"phases[1].first_knot", "past the horizon"},
       [] {
         auto r = rollout(1, 3);
         *r.add_phases() = phase(0, {"FL_foot"});
         *r.add_phases() = phase(3, {"FR_foot"});
         return call(&Dynamics::Rollout, r);
       }},
      {"LinearizeTouchdownOnAFrameInContact",
       C::INVALID_ARGUMENT,
       {"phases[1].contacts[1]", "already in contact", "phases[1].contacts[0]"},
       [] {
         auto r = linearize(4);
         *r.add_phases() = phase(0, {"FL_foot"});
         *r.add_phases() = phase(2, {"FL_foot", "FL_foot"});
         r.mutable_phases(1)->mutable_contacts(1)->set_type(v1::CONSTRAINT_TYPE_WELD);
         r.mutable_phases(1)->mutable_contacts(1)->set_name("second");
         return call(&Dynamics::Linearize, r);
       }},
      {"RolloutPhaseUnknownFrame",
       C::INVALID_ARGUMENT,
       {"phases[1].contacts[0].frame1.frame", "FL_toe"},
       [] {
         auto r = rollout(1, 3);
         *r.add_phases() = phase(0, {"FL_foot"});
         *r.add_phases() = phase(1, {"FL_toe"});
         return call(&Dynamics::Rollout, r);
       }},
      {"LinearizePhaseOfARevoluteConstraint",
       C::INVALID_ARGUMENT,
       {"phases[0].contacts[0]", "CONSTRAINT_TYPE_POINT"},
       [] {
         auto r = linearize(2);
         *r.add_phases() = phase(0, {"FL_foot"});
         r.mutable_phases(0)->mutable_contacts(0)->set_type(v1::CONSTRAINT_TYPE_REVOLUTE);
         return call(&Dynamics::Linearize, r);
       }},
      {"LinearizeRestitutionOverOne",
       C::INVALID_ARGUMENT,
       {"phases[1].restitution", "[0, 1]"},
       [] {
         auto r = linearize(4);
         *r.add_phases() = phase(0, {"FL_foot"});
         *r.add_phases() = phase(2, {"FL_foot", "FR_foot"});
         r.mutable_phases(1)->set_restitution(1.5);
         return call(&Dynamics::Linearize, r);
       }},
      {"RolloutOverMaxPhases",
       C::RESOURCE_EXHAUSTED,
       {"phases", "--max-phases"},
       [] {
         auto r = rollout(1, 12);
         for (int k = 0; k < 9; ++k)
           *r.add_phases() = phase(k, {k % 2 == 0 ? "FL_foot" : "FR_foot"});
         return call(&Dynamics::Rollout, r);
       }},
      {"LinearizeNegativeFriction",
       C::INVALID_ARGUMENT,
       {"friction_cone.friction", ">= 0"},
       [] {
         auto r = linearize();
         *r.add_constraints() = point_constraint("FL_foot");
         r.mutable_friction_cone()->set_friction(-0.5);
         return call(&Dynamics::Linearize, r);
       }},
      {"RolloutNanFriction",
       C::INVALID_ARGUMENT,
       {"friction_cone.friction", "NaN"},
       [] {
         auto r = rollout();
         *r.add_phases() = phase(0, {"FL_foot"});
         r.mutable_friction_cone()->set_friction(kNaN);
         return call(&Dynamics::Rollout, r);
       }},
      {"LinearizeConeOfTooFewFaces",
       C::INVALID_ARGUMENT,
       {"friction_cone.faces", "3 to 64"},
       [] {
         auto r = linearize();
         *r.add_constraints() = point_constraint("FL_foot");
         r.mutable_friction_cone()->set_friction(0.5);
         r.mutable_friction_cone()->set_faces(2);
         return call(&Dynamics::Linearize, r);
       }},
      {"LinearizeConeOfARevoluteConstraint",
       C::INVALID_ARGUMENT,
       {"friction_cone", "constraints[0]", "not a point or weld"},
       [] {
         auto r = linearize();
         *r.add_constraints() = point_constraint("FL_foot");
         r.mutable_constraints(0)->set_type(v1::CONSTRAINT_TYPE_REVOLUTE);
         r.mutable_friction_cone()->set_friction(0.5);
         return call(&Dynamics::Linearize, r);
       }},
      {"LinearizeOverMaxBatchStates",
       C::RESOURCE_EXHAUSTED,
       {"--max-batch-states"},
       [] {
         auto r = linearize();
         r.set_batch_size(10001);
         return call(&Dynamics::Linearize, r);
       }},
      {"LinearizeResponseOverMessageBytes",
       C::RESOURCE_EXHAUSTED,
       {"--max-message-bytes"},
       [] { return call(&Dynamics::Linearize, linearize(400)); }},
      {"LinearizeNegativeGain",
       C::INVALID_ARGUMENT,
       {"gains.position"},
       [] {
         auto r = linearize();
         *r.add_constraints() = point_constraint("FL_foot");
         r.mutable_gains()->set_position(kNaN);
         return call(&Dynamics::Linearize, r);
       }},
      {"RolloutZeroKnots",
       C::INVALID_ARGUMENT,
       {"knots: must be at least 1"},
       [] {
         auto r = rollout();
         r.set_knots(0);
         return call(&Dynamics::Rollout, r);
       }},
      {"RolloutNanDt",
       C::INVALID_ARGUMENT,
       {"dt is NaN"},
       [] {
         auto r = rollout();
         r.set_dt(kNaN);
         return call(&Dynamics::Rollout, r);
       }},
      {"RolloutUWrongRowCount",
       C::INVALID_ARGUMENT,
       {"u: expected 108 values (batch_size 2 × 54 per rollout), got 72"},
       [] {
         auto r = rollout(2, 3);
         r.mutable_u()->Truncate(72);
         return call(&Dynamics::Rollout, r);
       }},
      {"RolloutUnknownIntegrator",
       C::INVALID_ARGUMENT,
       {"integrator", "7"},
       [] {
         auto r = rollout();
         r.set_integrator(static_cast<v1::Integrator>(7));
         return call(&Dynamics::Rollout, r);
       }},
      {"RolloutUnknownJacobianLayout",
       C::INVALID_ARGUMENT,
       {"jacobian_layout", "7"},
       [] {
         auto r = rollout();
         r.set_jacobians(true);
         r.set_jacobian_layout(static_cast<v1::StepJacobians>(7));
         return call(&Dynamics::Rollout, r);
       }},
      {"RolloutVelocityRowsOfRk4",
       C::INVALID_ARGUMENT,
       {"jacobian_layout", "STEP_JACOBIANS_VELOCITY_ROWS", "Euler"},
       [] {
         auto r = rollout();
         r.set_integrator(v1::INTEGRATOR_RK4);
         r.set_jacobians(true);
         r.set_jacobian_layout(v1::STEP_JACOBIANS_VELOCITY_ROWS);
         return call(&Dynamics::Rollout, r);
       }},
      {"RolloutVelocityRowsWithoutJacobians",
       C::INVALID_ARGUMENT,
       {"jacobian_layout", "set jacobians"},
       [] {
         auto r = rollout();
         r.set_jacobian_layout(v1::STEP_JACOBIANS_VELOCITY_ROWS);
         return call(&Dynamics::Rollout, r);
       }},
      {"RolloutActuationOfNoJoint",
       C::INVALID_ARGUMENT,
       {"actuation.joints", "nu = 0"},
       [] {
         auto r = rollout();
         r.mutable_actuation()->set_kind(v1::ACTUATION_KIND_JOINTS);
         return call(&Dynamics::Rollout, r);
       }},
      {"RolloutNegativeGain",
       C::INVALID_ARGUMENT,
       {"gains.velocity"},
       [] {
         auto r = rollout();
         *r.add_constraints() = point_constraint("FL_foot");
         r.mutable_gains()->set_velocity(-1.0);
         return call(&Dynamics::Rollout, r);
       }},
      {"RolloutFeedbackWithoutNominal",
       C::INVALID_ARGUMENT,
       {"q_nominal: expected 38 values (knots 2 × 19 per knot), got 0"},
       [] {
         auto r = closed_loop_rollout();
         r.clear_q_nominal();
         return call(&Dynamics::Rollout, r);
       }},
      {"RolloutFeedbackGainsOfTheWrongShape",
       C::INVALID_ARGUMENT,
       {"feedback: expected 1296 values (knots 2 × 648 per knot), got 1295"},
       [] {
         auto r = closed_loop_rollout();
         r.mutable_feedback()->RemoveLast();
         return call(&Dynamics::Rollout, r);
       }},
      {"RolloutNominalOffTheManifold",
       C::INVALID_ARGUMENT,
       {"q_nominal", "quaternion"},
       [] {
         auto r = closed_loop_rollout();
         r.set_q_nominal(19 + 3, 2.0);
         return call(&Dynamics::Rollout, r);
       }},
      {"RolloutUnknownFrame",
       C::INVALID_ARGUMENT,
       {"frames[1]", "no frame named", "FL_toe"},
       [] {
         auto r = rollout();
         r.add_frames("FL_foot");
         r.add_frames("FL_toe");
         return call(&Dynamics::Rollout, r);
       }},
      {"RolloutFrameJacobiansOfNoFrame",
       C::INVALID_ARGUMENT,
       {"frame_jacobians", "frames"},
       [] {
         auto r = rollout();
         r.set_frame_jacobians(true);
         return call(&Dynamics::Rollout, r);
       }},
      {"RolloutStepsOverMaxBatchStates",
       C::RESOURCE_EXHAUSTED,
       {"batch_size × knots", "20002", "--max-batch-states"},
       [] {
         auto r = rollout(2, 1);
         r.set_knots(10001);
         return call(&Dynamics::Rollout, r);
       }},
      {"RolloutResponseOverMessageBytes",
       C::RESOURCE_EXHAUSTED,
       {"--max-message-bytes", "or fewer knots"},
       [] {
         auto r = rollout(1, 400);
         r.set_jacobians(true);
         return call(&Dynamics::Rollout, r);
       }},
      {"EchoResponseOverMessageBytes",
       C::RESOURCE_EXHAUSTED,
       {"response_values", "--max-message-bytes"},
       [] {
         v1::EchoRequest r;
         r.set_response_values(4000000000u);
         return call(&Dynamics::Echo, r);
       }},
      {"EchoPayloadOverMessageBytes",
       C::RESOURCE_EXHAUSTED,
       {"4194304"},
       [] {
         v1::EchoRequest r;
         r.set_payload(std::string(5 << 20, 'p'));
         return call(&Dynamics::Echo, r);
       }},
  };
}

// ---- The rows: ControlService ----

// A valid Solve of the puma reaching a point over `knots` knots.
v1::SolveRequest solve_request(int knots = 10) {
  v1::SolveRequest r;
  r.set_model_id(id_of("puma560"));
  fill(r.mutable_q0(), 6, 0.3);
  fill(r.mutable_v0(), 6, 0.0);
  r.set_knots(static_cast<std::uint32_t>(knots));
  r.set_dt(0.02);
  v1::CostTerm& reach = *r.add_running_costs();
  reach.set_name("reach");
  reach.mutable_residual()->set_type(v1::RESIDUAL_TYPE_FRAME_TRANSLATION);
  reach.mutable_residual()->set_frame("link6");
  fill(reach.mutable_residual()->mutable_reference(), 3, 0.3);
  v1::CostTerm& effort = *r.add_running_costs();
  effort.set_name("effort");
  effort.mutable_residual()->set_type(v1::RESIDUAL_TYPE_CONTROL);
  effort.set_weight(1e-3);
  v1::CostTerm& rest = *r.add_terminal_costs();
  rest.set_name("rest");
  rest.mutable_residual()->set_type(v1::RESIDUAL_TYPE_STATE);
  return r;
}

// The quadruped standing on its four feet from knot 0.
v1::SolveRequest standing_request() {
  v1::SolveRequest r;
  r.set_model_id(id_of("quadruped"));
  const v1::Model& m = layout("quadruped");
  const std::vector<double> q = random_configurations(m, 1, 3);
  r.mutable_q0()->Add(q.begin(), q.end());
  fill(r.mutable_v0(), m.nv(), 0.0);
  r.set_knots(10);
  r.set_dt(0.02);
  r.mutable_actuation()->set_kind(v1::ACTUATION_KIND_UNACTUATED_ROOT);
  v1::ContactPhase& phase = *r.add_phases();
  for (const char* foot : {"FL_foot", "FR_foot", "HL_foot", "HR_foot"}) {
    v1::Constraint& contact = *phase.add_contacts();
    contact.set_type(v1::CONSTRAINT_TYPE_POINT);
    contact.mutable_frame1()->set_frame(foot);
  }
  v1::CostTerm& posture = *r.add_running_costs();
  posture.mutable_residual()->set_type(v1::RESIDUAL_TYPE_STATE);
  return r;
}

// Each row changes a valid request (the puma's reach, or the quadruped standing) in one field.
std::vector<Row> control_rows() {
  using C = StatusCode;
  using Change = std::function<void(v1::SolveRequest&)>;
  using Base = v1::SolveRequest (*)();
  const auto row = [](
                       std::string name, C code, std::vector<std::string> names, Change change,
                       Base base = [] { return solve_request(); }) {
    return Row{"Solve" + std::move(name), code, std::move(names), [change, base] {
                 v1::SolveRequest r = base();
                 change(r);
                 return call(&Control::Solve, r);
               }};
  };
  return {
      row("Answers", C::OK, {}, [](v1::SolveRequest&) {}),
      row(
          "StandingAnswers", C::OK, {}, [](v1::SolveRequest&) {}, standing_request),
      row("UnknownModel", C::NOT_FOUND, {"model_id"},
          [](v1::SolveRequest& r) { r.set_model_id("no-such-model"); }),
      row("InitialStateWrongSize", C::INVALID_ARGUMENT, {"q0", "expected 6"},
          [](v1::SolveRequest& r) { r.mutable_q0()->RemoveLast(); }),
      row("InitialVelocityNaN", C::INVALID_ARGUMENT, {"v0[2]", "NaN"},
          [](v1::SolveRequest& r) { r.set_v0(2, kNaN); }),
      row("NoKnots", C::INVALID_ARGUMENT, {"knots"}, [](v1::SolveRequest& r) { r.set_knots(0); }),
      // A finite angle whose square overflows the terminal state cost (the fuzzer's find).
      row("OverflowingStateFails", C::FAILED_PRECONDITION, {"not finite", "overflow"},
          [](v1::SolveRequest& r) { r.set_q0(0, 1.4e161); }),
      row("TooManyKnots", C::RESOURCE_EXHAUSTED, {"knots", "--max-ocp-knots"},
          [](v1::SolveRequest& r) { r.set_knots(2001); }),
      row("StepNotPositive", C::INVALID_ARGUMENT, {"dt"}, [](v1::SolveRequest& r) { r.set_dt(0); }),
      row("TooManyCostTerms", C::RESOURCE_EXHAUSTED, {"cost terms", "--max-cost-terms"},
          [](v1::SolveRequest& r) {
            for (int i = 0; i < 8; ++i) {
              v1::CostTerm& extra = *r.add_running_costs();
              extra.set_name("extra" + std::to_string(i));
              extra.mutable_residual()->set_type(v1::RESIDUAL_TYPE_CONTROL);
            }
          }),
      row("TooManyIterations", C::RESOURCE_EXHAUSTED,
          {"solver.max_iterations", "--max-ocp-iterations"},
          [](v1::SolveRequest& r) { r.mutable_solver()->set_max_iterations(201); }),
      row("UnknownFrame", C::INVALID_ARGUMENT,
          {"running_costs[0] (\"reach\").residual.frame", "no_link"},
          [](v1::SolveRequest& r) {
            r.mutable_running_costs(0)->mutable_residual()->set_frame("no_link");
          }),
      row("ReferenceWrongSize", C::INVALID_ARGUMENT,
          {"running_costs[0] (\"reach\").residual.reference", "expected 3", "got 2"},
          [](v1::SolveRequest& r) {
            r.mutable_running_costs(0)->mutable_residual()->mutable_reference()->RemoveLast();
          }),
      row("StateReferenceNaN", C::INVALID_ARGUMENT, {"terminal_costs[0]", "reference[4]", "NaN"},
          [](v1::SolveRequest& r) {
            auto* reference = r.mutable_terminal_costs(0)->mutable_residual()->mutable_reference();
            fill(reference, 12, 0.0);
            reference->Set(4, kNaN);
          }),
      row("WeightsWrongSize", C::INVALID_ARGUMENT, {"activation.weights", "expected 12"},
          [](v1::SolveRequest& r) {
            v1::Activation& a = *r.mutable_terminal_costs(0)->mutable_activation();
            a.set_type(v1::ACTIVATION_TYPE_WEIGHTED_QUADRATIC);
            fill(a.mutable_weights(), 11, 1.0);
          }),
      row("NegativeWeight", C::INVALID_ARGUMENT, {"running_costs[1] (\"effort\").weight"},
          [](v1::SolveRequest& r) { r.mutable_running_costs(1)->set_weight(-1.0); }),
      row("BarrierBoundsCrossed", C::INVALID_ARGUMENT, {"activation.lower[1]", "above"},
          [](v1::SolveRequest& r) {
            v1::Activation& a = *r.mutable_running_costs(0)->mutable_activation();
            a.set_type(v1::ACTIVATION_TYPE_QUADRATIC_BARRIER);
            fill(a.mutable_lower(), 3, 0.0);
            fill(a.mutable_upper(), 3, 1.0);
            a.set_lower(1, 2.0);
          }),
      row("SmoothingNotPositive", C::INVALID_ARGUMENT, {"activation.smoothing"},
          [](v1::SolveRequest& r) {
            v1::Activation& a = *r.mutable_running_costs(0)->mutable_activation();
            a.set_type(v1::ACTIVATION_TYPE_SMOOTH_1_NORM);
            a.set_smoothing(0.0);
          }),
      row("ResidualTypeUnset", C::INVALID_ARGUMENT, {"running_costs[1] (\"effort\").residual.type"},
          [](v1::SolveRequest& r) {
            r.mutable_running_costs(1)->mutable_residual()->set_type(v1::RESIDUAL_TYPE_UNSPECIFIED);
          }),
      row("KnotRangeOutsideTheHorizon", C::INVALID_ARGUMENT, {"running_costs[1]", "[4, 12)"},
          [](v1::SolveRequest& r) {
            r.mutable_running_costs(1)->set_first_knot(4);
            r.mutable_running_costs(1)->set_end_knot(12);
          }),
      row("TerminalControlCost", C::INVALID_ARGUMENT,
          {"terminal_costs[1]", "RESIDUAL_TYPE_CONTROL", "terminal knot"},
          [](v1::SolveRequest& r) {
            r.add_terminal_costs()->mutable_residual()->set_type(v1::RESIDUAL_TYPE_CONTROL);
          }),
      row("DuplicateTermName", C::INVALID_ARGUMENT, {"running_costs[1] (\"reach\").name"},
          [](v1::SolveRequest& r) { r.mutable_running_costs(1)->set_name("reach"); }),
      row("ControlBoundsCrossed", C::INVALID_ARGUMENT, {"control_bounds.lower[2]", "above"},
          [](v1::SolveRequest& r) {
            fill(r.mutable_control_bounds()->mutable_lower(), 6, -1.0);
            fill(r.mutable_control_bounds()->mutable_upper(), 6, 1.0);
            r.mutable_control_bounds()->set_lower(2, 2.0);
          }),
      row("ControlBoundsWrongSize", C::INVALID_ARGUMENT, {"control_bounds.upper", "expected 6"},
          [](v1::SolveRequest& r) {
            fill(r.mutable_control_bounds()->mutable_lower(), 6, -1.0);
            fill(r.mutable_control_bounds()->mutable_upper(), 5, 1.0);
          }),
      row("GuessWrongShape", C::INVALID_ARGUMENT, {"guess_q", "expected 66"},
          [](v1::SolveRequest& r) {
            fill(r.mutable_guess_q(), 60, 0.0);
            fill(r.mutable_guess_v(), 66, 0.0);
            fill(r.mutable_guess_u(), 60, 0.0);
          }),
      row("GuessWithoutControls", C::INVALID_ARGUMENT, {"guess_u", "expected 60"},
          [](v1::SolveRequest& r) {
            fill(r.mutable_guess_q(), 66, 0.0);
            fill(r.mutable_guess_v(), 66, 0.0);
          }),
      row("NegativeTimeBudget", C::INVALID_ARGUMENT, {"max_seconds"},
          [](v1::SolveRequest& r) { r.set_max_seconds(-1.0); }),
      row("RegularizationNotPositive", C::INVALID_ARGUMENT, {"solver.initial_regularization"},
          [](v1::SolveRequest& r) { r.mutable_solver()->set_initial_regularization(0.0); }),
      row(
          "PhasesNotFromKnotZero", C::INVALID_ARGUMENT, {"phases[0].first_knot"},
          [](v1::SolveRequest& r) { r.mutable_phases(0)->set_first_knot(3); }, standing_request),
      row(
          "PhasePastTheHorizon", C::INVALID_ARGUMENT, {"phases[1].first_knot", "past"},
          [](v1::SolveRequest& r) { r.add_phases()->set_first_knot(10); }, standing_request),
      row(
          "FrictionNotPositive", C::INVALID_ARGUMENT, {"residual.cone.friction"},
          [](v1::SolveRequest& r) {
            v1::CostTerm& cone = *r.add_running_costs();
            cone.mutable_residual()->set_type(v1::RESIDUAL_TYPE_FRICTION_CONE);
            cone.mutable_residual()->set_frame("FL_foot");
            cone.mutable_residual()->mutable_cone()->set_friction(0.0);
          },
          standing_request),
      row(
          "ContactCostWithoutItsContact", C::INVALID_ARGUMENT,
          {"running_costs[1]", "not in contact at knot 0"},
          [](v1::SolveRequest& r) {
            v1::CostTerm& force = *r.add_running_costs();
            force.mutable_residual()->set_type(v1::RESIDUAL_TYPE_CONTACT_FORCE);
            force.mutable_residual()->set_frame("FL_shank");
          },
          standing_request),
      row("JointLimitsNeedABarrier", C::INVALID_ARGUMENT, {"activation.type", "BARRIER"},
          [](v1::SolveRequest& r) {
            r.mutable_running_costs(1)->mutable_residual()->set_type(
                v1::RESIDUAL_TYPE_JOINT_LIMITS);
          }),
      row(
          "ResponsePastTheMessageSize", C::RESOURCE_EXHAUSTED, {"--max-message-bytes"},
          [](v1::SolveRequest& r) {
            // The quadruped's gains, 12 x 36 per knot: 6.9 MB.
            r.set_knots(2000);
            r.set_feedback(true);
          },
          standing_request),
  };
}

// ---- The rows: calls that end early, overload ----

std::vector<Row> call_rows() {
  using C = StatusCode;
  return {
      {"UnaryCancelledMidCompute",
       C::CANCELLED,
       {},
       [] {
         grpc::ClientContext context;
         context.set_deadline(deadline_in(120));
         std::thread canceller([&] {
           std::this_thread::sleep_for(std::chrono::milliseconds(300));
           context.TryCancel();
         });
         v1::ContactDynamicsResponse response;
         const grpc::Status status =
             shared().dynamics->ContactDynamics(&context, endless_contact_problem(), &response);
         canceller.join();
         return status;
       }},
      {"UnaryDeadlineExpiresMidCompute",
       C::DEADLINE_EXCEEDED,
       {},
       [] {
         grpc::ClientContext context;
         context.set_deadline(deadline_in(0.3));
         v1::ContactDynamicsResponse response;
         return shared().dynamics->ContactDynamics(&context, endless_contact_problem(), &response);
       }},
      {"UnaryDeadlineAlreadyPassed",
       C::DEADLINE_EXCEEDED,
       {},
       [] {
         grpc::ClientContext context;
         context.set_deadline(std::chrono::system_clock::now() - std::chrono::seconds(1));
         v1::InverseDynamicsResponse response;
         return shared().dynamics->InverseDynamics(&context, inverse_dynamics(), &response);
       }},
      {"UnaryClientVanishesMidCompute",
       C::OK,
       {},
       [] {
         OwnedSocketChannel owned;
         grpc::ClientContext context;
         context.set_deadline(deadline_in(60));
         v1::ContactDynamicsResponse response;
         std::atomic<bool> done = false;
         grpc::Status status;
         const v1::ContactDynamicsRequest request = endless_contact_problem();
         v1::DynamicsService::NewStub(owned.channel)
             ->async()
             ->ContactDynamics(&context, &request, &response, [&](grpc::Status s) {
               status = std::move(s);
               done = true;
             });
         std::this_thread::sleep_for(std::chrono::milliseconds(300));
         owned.cut();
         for (int i = 0; i < 600 && !done; ++i) {
           std::this_thread::sleep_for(std::chrono::milliseconds(50));
         }
         EXPECT_TRUE(done);
         EXPECT_FALSE(status.ok());
         return grpc::Status::OK;
       }},
      {"OverloadedQueue",
       C::RESOURCE_EXHAUSTED,
       {"queue", "--queue-capacity"},
       [] {
         // 40 calls at once, each of tens of milliseconds of contact problems, against 2
         // workers and 4 queued tasks.
         auto request = endless_contact_problem();
         request.set_batch_size(2);
         request.mutable_q()->Truncate(2 * layout("quadruped").nq());
         request.mutable_v()->Truncate(2 * nv("quadruped"));
         request.mutable_tau()->Truncate(2 * nv("quadruped"));
         constexpr int kCalls = 40;
         std::vector<grpc::ClientContext> contexts(kCalls);
         std::vector<v1::ContactDynamicsResponse> responses(kCalls);
         std::vector<grpc::Status> statuses(kCalls);
         std::mutex mutex;
         std::condition_variable all_done;
         int done = 0;
         for (int i = 0; i < kCalls; ++i) {
           contexts[i].set_deadline(deadline_in(60));
           shared().dynamics->async()->ContactDynamics(&contexts[i], &request, &responses[i],
                                                       [&, i](grpc::Status s) {
                                                         std::lock_guard lock(mutex);
                                                         statuses[i] = std::move(s);
                                                         if (++done == kCalls)
                                                           all_done.notify_one();
                                                       });
         }
         std::unique_lock lock(mutex);
         EXPECT_TRUE(
             all_done.wait_for(lock, std::chrono::seconds(90), [&] { return done == kCalls; }));
         for (const grpc::Status& s : statuses) {
           if (s.error_code() == C::RESOURCE_EXHAUSTED) return s;
         }
         return grpc::Status::OK;
       }},
      {"HugeMetadata",
       C::RESOURCE_EXHAUSTED,
       {},
       [] {
         // On a connection of its own, as another client's: an oversized header block is an
         // HTTP/2 connection error, and the server closes the connection it came on.
         const auto channel =
             grpc::CreateChannel(shared().server->address(), grpc::InsecureChannelCredentials());
         grpc::ClientContext context;
         context.set_deadline(deadline_in(30));
         context.AddMetadata("x-hostile", std::string(1 << 20, 'm'));
         v1::InverseDynamicsResponse response;
         return v1::DynamicsService::NewStub(channel)->InverseDynamics(&context, inverse_dynamics(),
                                                                       &response);
       }},
      {"CompressionBomb",
       C::UNIMPLEMENTED,
       {"gzip"},
       [] {
         // 32 MiB of zeros compress to 32 kB: the server takes the identity encoding only, since
         // gRPC 1.51 would inflate a message whole before checking its size.
         grpc::ClientContext context;
         context.set_deadline(deadline_in(60));
         context.set_compression_algorithm(GRPC_COMPRESS_GZIP);
         v1::EchoRequest r;
         r.set_payload(std::string(32 << 20, '\0'));
         v1::EchoResponse response;
         return shared().dynamics->Echo(&context, r, &response);
       }},
      {"UnknownMethod",
       C::UNIMPLEMENTED,
       {},
       [] { return raw_unary("/torqued.v1.DynamicsService/Teleport", ""); }},
      {"UnknownService",
       C::UNIMPLEMENTED,
       {},
       [] { return raw_unary("/evil.v1.Backdoor/Open", "payload"); }},
  };
}

// ---- The rows: Session streams ----

std::vector<Row> session_rows() {
  using C = StatusCode;
  return {
      {"SessionUndecodableMessageThenValid",
       C::INVALID_ARGUMENT,
       {"message 1", "torqued.v1.SessionRequest"},
       [] {
         grpc::Status second;
         RawCall stream(shared().server->channel());
         EXPECT_TRUE(stream.open(kSession));
         EXPECT_TRUE(stream.write(kUndecodable));
         const grpc::Status first = answer_status(stream.read());
         EXPECT_TRUE(stream.write(echo_message(2).SerializeAsString()));
         second = answer_status(stream.read());
         EXPECT_TRUE(second.ok()) << second.error_message();
         EXPECT_TRUE(stream.writes_done());
         EXPECT_TRUE(stream.finish().ok());
         return first;
       }},
      {"SessionNoRequestSet",
       C::INVALID_ARGUMENT,
       {"request", "no request set"},
       [] {
         v1::SessionRequest empty;
         empty.set_sequence(1);
         return session({empty.SerializeAsString(), echo_message(2).SerializeAsString()});
       }},
      {"SessionUnknownModel",
       C::NOT_FOUND,
       {"model_id", "missing"},
       [] {
         v1::SessionRequest m;
         m.set_model_id("missing");
         *m.mutable_gravity() = on<v1::GravityRequest>("puma560");
         m.mutable_gravity()->clear_model_id();
         return session({m.SerializeAsString(), echo_message(2).SerializeAsString()});
       }},
      {"SessionHugeModelId",
       C::NOT_FOUND,
       {"model_id", "1048576 bytes"},
       [] {
         v1::SessionRequest m;
         m.set_model_id(kHugeName);
         *m.mutable_gravity() = on<v1::GravityRequest>("puma560");
         m.mutable_gravity()->clear_model_id();
         return session({m.SerializeAsString(), echo_message(2).SerializeAsString()});
       }},
      {"SessionModelIdCutInsideACharacter",
       C::NOT_FOUND,
       {"model_id"},
       [] {
         // The answer's CallStatus.message is a proto3 string: cut inside a character it would
         // not be UTF-8, and the client could not decode the answer.
         v1::SessionRequest m;
         std::string id = "a";
         for (int i = 0; i < 100; ++i) id += "\xc3\xa9";
         m.set_model_id(id);
         *m.mutable_gravity() = on<v1::GravityRequest>("puma560");
         m.mutable_gravity()->clear_model_id();
         return session({m.SerializeAsString(), echo_message(2).SerializeAsString()});
       }},
      {"SessionBadFieldInsideMessage",
       C::INVALID_ARGUMENT,
       {"v:", "expected 6"},
       [] {
         v1::SessionRequest m;
         *m.mutable_inverse_dynamics() = inverse_dynamics();
         m.mutable_inverse_dynamics()->mutable_v()->RemoveLast();
         return session({m.SerializeAsString(), echo_message(2).SerializeAsString()});
       }},
      {"SessionModelDeletedMidStream",
       C::NOT_FOUND,
       {"model_id"},
       [] {
         v1::RegisterModelResponse registered;
         EXPECT_TRUE(call(&Models::RegisterModel, chain(2), &registered).ok());
         v1::SessionRequest m;
         m.set_model_id(registered.model().id());
         fill(m.mutable_gravity()->mutable_q(), 2);
         RawCall stream(shared().server->channel());
         EXPECT_TRUE(stream.open(kSession));
         EXPECT_TRUE(stream.write(m.SerializeAsString()));
         EXPECT_TRUE(answer_status(stream.read()).ok());
         EXPECT_EQ(delete_model(registered.model().id()), "");
         m.clear_model_id();  // the stream's model, now gone
         EXPECT_TRUE(stream.write(m.SerializeAsString()));
         const grpc::Status gone = answer_status(stream.read());
         EXPECT_TRUE(stream.writes_done());
         EXPECT_TRUE(stream.finish().ok());
         return gone;
       }},
      {"SessionMessageOverMessageBytes",
       C::RESOURCE_EXHAUSTED,
       {"4194304"},
       [] {
         RawCall stream(shared().server->channel());
         EXPECT_TRUE(stream.open(kSession));
         v1::SessionRequest m;
         m.mutable_echo()->set_payload(std::string(5 << 20, 'p'));
         stream.write(m.SerializeAsString());
         return stream.finish();
       }},
      {"SessionCancelledMidCompute",
       C::CANCELLED,
       {},
       [] {
         RawCall stream(shared().server->channel());
         EXPECT_TRUE(stream.open(kSession));
         v1::SessionRequest m;
         *m.mutable_contact_dynamics() = endless_contact_problem();
         EXPECT_TRUE(stream.write(m.SerializeAsString()));
         std::this_thread::sleep_for(std::chrono::milliseconds(300));
         stream.cancel();
         return stream.finish();
       }},
      {"SessionClientVanishesMidCompute",
       C::OK,
       {},
       [] {
         OwnedSocketChannel owned;
         RawCall stream(owned.channel);
         EXPECT_TRUE(stream.open(kSession));
         v1::SessionRequest m;
         *m.mutable_contact_dynamics() = endless_contact_problem();
         EXPECT_TRUE(stream.write(m.SerializeAsString()));
         EXPECT_TRUE(stream.write(echo_message(2).SerializeAsString()));
         std::this_thread::sleep_for(std::chrono::milliseconds(300));
         owned.cut();
         EXPECT_FALSE(stream.finish().ok());
         return grpc::Status::OK;
       }},
      {"SessionHalfClosedWithAnswersPending",
       C::OK,
       {},
       [] {
         RawCall stream(shared().server->channel());
         EXPECT_TRUE(stream.open(kSession));
         for (int i = 1; i <= 3; ++i)
           EXPECT_TRUE(stream.write(echo_message(i).SerializeAsString()));
         EXPECT_TRUE(stream.writes_done());
         for (int i = 1; i <= 3; ++i) {
           const grpc::Status answer = answer_status(stream.read());
           EXPECT_TRUE(answer.ok()) << answer.error_message();
         }
         return stream.finish();
       }},
      {"SessionHalfClosedNeverRead",
       C::CANCELLED,
       {},
       [] {
         RawCall stream(shared().server->channel());
         EXPECT_TRUE(stream.open(kSession));
         for (int i = 1; i <= 3; ++i)
           EXPECT_TRUE(stream.write(echo_message(i).SerializeAsString()));
         EXPECT_TRUE(stream.writes_done());
         std::this_thread::sleep_for(std::chrono::milliseconds(200));
         stream.cancel();
         return stream.finish();
       }},
      {"SessionNeverReadsItsAnswers",
       C::CANCELLED,
       {},
       [] {
         // Each message carries 64 kB and asks for 864 kB of answer: 5,000 of them would hold
         // 4.6 GB if the server kept what the client does not read. It stops reading instead
         // (--max-session-queued), and flow control stops the client's writes.
         RawCall stream(shared().server->channel());
         EXPECT_TRUE(stream.open(kSession));
         v1::SessionRequest m;
         m.mutable_echo()->set_payload(std::string(64 << 10, 'p'));
         m.mutable_echo()->set_response_values(100000);
         int written = 0;
         while (written < kStuckStreamWrites && stream.write(m.SerializeAsString(), 1.0)) {
           ++written;
         }
         // Should the writes all go through, what the server answered meanwhile.
         EXPECT_LT(written, kStuckStreamWrites) << "no back-pressure; the server's log ends:\n"
                                                << log_tail(shared().server->log(), 20);
         expect_rss_within_bound("with the stream stuck", kStuckStreamBound);
         stream.cancel();
         return stream.finish();
       }},
      {"SessionManyIdleStreams",
       C::OK,
       {},
       [] {
         // All the streams one connection may have open (--max-concurrent-streams, 100).
         const auto connection = own_connection();
         std::vector<std::unique_ptr<RawCall>> streams;
         for (int i = 0; i < 100; ++i) {
           streams.push_back(std::make_unique<RawCall>(connection));
           EXPECT_TRUE(streams.back()->open(kSession));
         }
         const grpc::Status answered = call(&Dynamics::InverseDynamics, inverse_dynamics());
         EXPECT_TRUE(answered.ok()) << answered.error_message();
         expect_rss_within_bound("with 200 idle streams");
         return grpc::Status::OK;
       }},
  };
}

// ---- The rows: ControlService.Mpc ----

const std::string kMpc = "/torqued.v1.ControlService/Mpc";

// The status an Mpc answer carries (OK when it has a control).
grpc::Status mpc_answer_status(const std::optional<std::string>& bytes) {
  v1::MpcResponse answer;
  if (!bytes) return {StatusCode::UNKNOWN, "no answer"};
  if (!answer.ParseFromString(*bytes)) return {StatusCode::UNKNOWN, "the answer does not decode"};
  if (answer.status().code() == 0 && answer.u0().empty()) {
    return {StatusCode::UNKNOWN, "an OK answer without u0"};
  }
  return {static_cast<StatusCode>(answer.status().code()), answer.status().message()};
}

// The puma's reach stated on a stream.
v1::MpcRequest mpc_start() {
  v1::MpcRequest m;
  m.set_sequence(1);
  *m.mutable_problem() = solve_request();
  return m;
}

// A tick at the reach's start state, `time` seconds in.
v1::MpcRequest mpc_tick(double time) {
  v1::MpcRequest m;
  m.set_sequence(2);
  fill(m.mutable_q(), 6, 0.3);
  fill(m.mutable_v(), 6, 0.0);
  m.set_time(time);
  return m;
}

// Sends each message on one Mpc stream and returns the status of the answer to `bad`, after
// checking that every other message was answered OK (the stream goes on past a bad message) and
// that the stream ended OK on half-close.
grpc::Status mpc(const std::vector<v1::MpcRequest>& messages, std::size_t bad) {
  RawCall stream(shared().server->channel());
  if (!stream.open(kMpc)) return {StatusCode::UNKNOWN, "the stream did not open"};
  grpc::Status answer;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    EXPECT_TRUE(stream.write(messages[i].SerializeAsString()));
    const grpc::Status status = mpc_answer_status(stream.read());
    if (i == bad) {
      answer = status;
    } else {
      EXPECT_TRUE(status.ok()) << "message " << i << ": " << status.error_message();
    }
  }
  EXPECT_TRUE(stream.writes_done());
  const grpc::Status end = stream.finish();
  EXPECT_TRUE(end.ok()) << end.error_message();
  return answer;
}

// A stated problem, a tick changed by `change`, and a good tick after it.
grpc::Status mpc_bad_tick(const std::function<void(v1::MpcRequest&)>& change) {
  v1::MpcRequest bad = mpc_tick(0.02);
  change(bad);
  return mpc({mpc_start(), bad, mpc_tick(0.04)}, 1);
}

// A solve that runs until it is stopped: 2,000 knots, no stopping threshold.
v1::MpcRequest endless_mpc_start() {
  v1::MpcRequest m = mpc_start();
  m.mutable_problem()->set_knots(2000);
  m.mutable_problem()->mutable_solver()->set_max_iterations(200);
  m.mutable_problem()->mutable_solver()->set_stop_threshold(0.0);
  return m;
}

std::vector<Row> mpc_rows() {
  using C = StatusCode;
  using Change = std::function<void(v1::MpcRequest&)>;
  const auto tick_row = [](std::string name, StatusCode code, std::vector<std::string> names,
                           Change change) {
    return Row{"Mpc" + std::move(name), code, std::move(names),
               [change] { return mpc_bad_tick(change); }};
  };
  return {
      {"MpcUndecodableMessageThenValid",
       C::INVALID_ARGUMENT,
       {"message 1", "torqued.v1.MpcRequest"},
       [] {
         RawCall stream(shared().server->channel());
         EXPECT_TRUE(stream.open(kMpc));
         EXPECT_TRUE(stream.write(kUndecodable));
         const grpc::Status first = mpc_answer_status(stream.read());
         EXPECT_TRUE(stream.write(mpc_start().SerializeAsString()));
         const grpc::Status second = mpc_answer_status(stream.read());
         EXPECT_TRUE(second.ok()) << second.error_message();
         EXPECT_TRUE(stream.writes_done());
         EXPECT_TRUE(stream.finish().ok());
         return first;
       }},
      {"MpcFirstMessageWithoutProblem",
       C::INVALID_ARGUMENT,
       {"problem", "first message"},
       [] {
         return mpc({mpc_tick(0.0), mpc_start()}, 0);
       }},
      {"MpcUnknownModel",
       C::NOT_FOUND,
       {"problem.model_id", "missing"},
       [] {
         v1::MpcRequest m = mpc_start();
         m.mutable_problem()->set_model_id("missing");
         return mpc({m, mpc_start()}, 0);
       }},
      {"MpcBadProblemField",
       C::INVALID_ARGUMENT,
       {"problem.q0", "expected 6"},
       [] {
         v1::MpcRequest m = mpc_start();
         m.mutable_problem()->mutable_q0()->RemoveLast();
         return mpc({m, mpc_start()}, 0);
       }},
      tick_row("TickWithoutState", C::INVALID_ARGUMENT, {"q:", "required"},
               [](v1::MpcRequest& m) {
                 m.clear_q();
                 m.clear_v();
               }),
      tick_row("TickStateWrongSize", C::INVALID_ARGUMENT, {"v:", "expected 6"},
               [](v1::MpcRequest& m) { m.mutable_v()->RemoveLast(); }),
      tick_row("TickStateNaN", C::INVALID_ARGUMENT, {"q[2]"},
               [](v1::MpcRequest& m) { m.set_q(2, kNaN); }),
      tick_row("TimeBeforeTheLast", C::INVALID_ARGUMENT, {"time", "before"},
               [](v1::MpcRequest& m) { m.set_time(-1.0); }),
      tick_row("TimeNotFinite", C::INVALID_ARGUMENT, {"time"},
               [](v1::MpcRequest& m) { m.set_time(kInf); }),
      tick_row("UpdateOfNoTerm", C::INVALID_ARGUMENT, {"updates[0].name", "nowhere"},
               [](v1::MpcRequest& m) { m.add_updates()->set_name("nowhere"); }),
      tick_row("UpdateReferenceWrongSize", C::INVALID_ARGUMENT, {"reach", "reference"},
               [](v1::MpcRequest& m) {
                 v1::TermUpdate& update = *m.add_updates();
                 update.set_name("reach");
                 update.add_reference(1.0);
               }),
      tick_row("UpdateWeightNegative", C::INVALID_ARGUMENT, {"effort", "weight"},
               [](v1::MpcRequest& m) {
                 v1::TermUpdate& update = *m.add_updates();
                 update.set_name("effort");
                 update.set_weight(-1.0);
               }),
      tick_row("NewProblemOtherKnots", C::INVALID_ARGUMENT, {"problem.knots"},
               [](v1::MpcRequest& m) { *m.mutable_problem() = solve_request(11); }),
      tick_row("NewProblemOtherControls", C::INVALID_ARGUMENT, {"problem.actuation", "2 controls"},
               [](v1::MpcRequest& m) {
                 *m.mutable_problem() = solve_request();
                 m.mutable_problem()->mutable_actuation()->set_kind(v1::ACTUATION_KIND_JOINTS);
                 m.mutable_problem()->mutable_actuation()->add_joints("joint1");
                 m.mutable_problem()->mutable_actuation()->add_joints("joint2");
                 m.mutable_problem()->clear_control_bounds();
               }),
      tick_row("NewProblemWithAGuess", C::INVALID_ARGUMENT, {"problem.guess_q", "empty"},
               [](v1::MpcRequest& m) {
                 *m.mutable_problem() = solve_request();
                 fill(m.mutable_problem()->mutable_guess_q(), 11 * 6, 0.3);
               }),
      tick_row("ZeroIterations", C::INVALID_ARGUMENT, {"iterations"},
               [](v1::MpcRequest& m) { m.set_iterations(0); }),
      tick_row("IterationsOverTheLimit", C::RESOURCE_EXHAUSTED, {"--max-ocp-iterations"},
               [](v1::MpcRequest& m) { m.set_iterations(201); }),
      tick_row("NegativeTimeBudget", C::INVALID_ARGUMENT, {"max_seconds"},
               [](v1::MpcRequest& m) { m.set_max_seconds(-1.0); }),
      {"MpcMessageOverMessageBytes",
       C::RESOURCE_EXHAUSTED,
       {"4194304"},
       [] {
         RawCall stream(shared().server->channel());
         EXPECT_TRUE(stream.open(kMpc));
         v1::MpcRequest m = mpc_start();
         fill(m.mutable_q(), 600000, 0.3);
         stream.write(m.SerializeAsString());
         return stream.finish();
       }},
      {"MpcCancelledMidSolve",
       C::CANCELLED,
       {},
       [] {
         RawCall stream(shared().server->channel());
         EXPECT_TRUE(stream.open(kMpc));
         EXPECT_TRUE(stream.write(endless_mpc_start().SerializeAsString()));
         std::this_thread::sleep_for(std::chrono::milliseconds(300));
         stream.cancel();
         return stream.finish();
       }},
      {"MpcClientVanishesMidSolve",
       C::OK,
       {},
       [] {
         OwnedSocketChannel owned;
         RawCall stream(owned.channel);
         EXPECT_TRUE(stream.open(kMpc));
         EXPECT_TRUE(stream.write(endless_mpc_start().SerializeAsString()));
         EXPECT_TRUE(stream.write(mpc_tick(0.02).SerializeAsString()));
         std::this_thread::sleep_for(std::chrono::milliseconds(300));
         owned.cut();
         EXPECT_FALSE(stream.finish().ok());
         return grpc::Status::OK;
       }},
      {"MpcHalfClosedWithAnAnswerPending",
       C::OK,
       {},
       [] {
         RawCall stream(shared().server->channel());
         EXPECT_TRUE(stream.open(kMpc));
         EXPECT_TRUE(stream.write(mpc_start().SerializeAsString()));
         EXPECT_TRUE(stream.write(mpc_tick(0.02).SerializeAsString()));
         EXPECT_TRUE(stream.writes_done());
         for (int i = 0; i < 2; ++i) {
           const grpc::Status answer = mpc_answer_status(stream.read());
           EXPECT_TRUE(answer.ok()) << answer.error_message();
         }
         return stream.finish();
       }},
      {"MpcNeverReadsItsAnswers",
       C::CANCELLED,
       {},
       [] {
         // Every answer is the whole plan of a 2,000-knot problem (1.4 MB), never read, and every
         // tick carries 64 kB more in a field the server skips. The stream holds one answer and
         // reads no further once the client's window is full, and flow control stops the
         // client's writes.
         RawCall stream(shared().server->channel());
         EXPECT_TRUE(stream.open(kMpc));
         v1::MpcRequest start = mpc_start();
         start.mutable_problem()->set_knots(2000);
         start.mutable_problem()->mutable_solver()->set_max_iterations(1);
         EXPECT_TRUE(stream.write(start.SerializeAsString()));
         v1::MpcRequest m = mpc_tick(0.0);
         m.set_plan(true);
         m.GetReflection()->MutableUnknownFields(&m)->AddLengthDelimited(
             1000, std::string(64 << 10, 'p'));
         int written = 0;
         while (written < kStuckStreamWrites && stream.write(m.SerializeAsString(), 1.0)) {
           ++written;
         }
         // Should the writes all go through, what the server answered meanwhile.
         EXPECT_LT(written, kStuckStreamWrites) << "no back-pressure; the server's log ends:\n"
                                                << log_tail(shared().server->log(), 20);
         expect_rss_within_bound("with the stream stuck", kStuckStreamBound);
         stream.cancel();
         return stream.finish();
       }},
  };
}

// ---- The rows: the transport and the metrics port ----

std::vector<Row> transport_rows() {
  using C = StatusCode;
  return {
      {"GarbageBytesOnGrpcPort",
       C::OK,
       {},
       [] {
         const int fd = connect_to(shared().server->port());
         std::string garbage(64 << 10, '\0');
         for (std::size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<char>(i * 131);
         send_all(fd, garbage);
         EXPECT_TRUE(closed_by_peer(fd, 10)) << "the server kept a connection of garbage open";
         ::close(fd);
         return grpc::Status::OK;
       }},
      {"Http11RequestOnGrpcPort",
       C::OK,
       {},
       [] {
         const int fd = connect_to(shared().server->port());
         send_all(fd, "GET /torqued.v1.ModelService/ListModels HTTP/1.1\r\nHost: x\r\n\r\n");
         EXPECT_TRUE(closed_by_peer(fd, 10)) << "the server kept an HTTP/1.1 connection open";
         ::close(fd);
         return grpc::Status::OK;
       }},
      {"IdleConnectionsLeftOpen",
       C::OK,
       {},
       [] {
         Connections idle;
         for (int i = 0; i < 300; ++i) idle.fds.push_back(connect_to(shared().server->port()));
         const grpc::Status answered = call(&Dynamics::InverseDynamics, inverse_dynamics());
         EXPECT_TRUE(answered.ok()) << answered.error_message();
         expect_rss_within_bound("with 300 idle connections");
         return grpc::Status::OK;
       }},
      {"PrefaceOnlyConnectionsLeftOpen",
       C::OK,
       {},
       [] {
         Connections idle;
         for (int i = 0; i < 100; ++i) {
           idle.fds.push_back(connect_to(shared().server->port()));
           send_all(idle.fds.back(), "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
         }
         const grpc::Status answered = call(&Dynamics::InverseDynamics, inverse_dynamics());
         EXPECT_TRUE(answered.ok()) << answered.error_message();
         return grpc::Status::OK;
       }},
      {"MetricsSilentClients",
       C::OK,
       {},
       [] {
         Connections silent;
         for (int i = 0; i < 4; ++i)
           silent.fds.push_back(connect_to(shared().server->metrics_port()));
         for (int i = 0; i < 3; ++i) EXPECT_TRUE(scrape_works()) << "scrape " << i;
         return grpc::Status::OK;
       }},
      {"MetricsTricklingClients",
       C::OK,
       {},
       [] {
         Connections slow;
         for (int i = 0; i < 4; ++i)
           slow.fds.push_back(connect_to(shared().server->metrics_port()));
         std::atomic<bool> stop = false;
         std::thread trickler([&] {
           const std::string request = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ";
           for (std::size_t i = 0; !stop; ++i) {
             for (const int fd : slow.fds)
               send_all(fd, std::string(1, request[i % request.size()]));
             std::this_thread::sleep_for(std::chrono::milliseconds(100));
           }
         });
         for (int i = 0; i < 3; ++i) EXPECT_TRUE(scrape_works()) << "scrape " << i;
         stop = true;
         trickler.join();
         return grpc::Status::OK;
       }},
      {"MetricsGarbageRequest",
       C::OK,
       {},
       [] {
         const int fd = connect_to(shared().server->metrics_port());
         send_all(fd, std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11) +
                          std::string(4096, '\xee') + "\r\n\r\n");
         EXPECT_TRUE(closed_by_peer(fd, 10));
         ::close(fd);
         EXPECT_TRUE(scrape_works());
         return grpc::Status::OK;
       }},
      {"MetricsPathTraversal",
       C::OK,
       {},
       [] {
         for (const char* target : {"/../../../../etc/passwd", "/metrics/../../etc/passwd",
                                    "/%2e%2e/%2e%2e/etc/passwd"}) {
           EXPECT_EQ(http_get(shared().server->metrics_port(), target).find("root:"),
                     std::string::npos)
               << target;
         }
         EXPECT_TRUE(scrape_works());
         return grpc::Status::OK;
       }},
      {"MetricsHugeHeader",
       C::OK,
       {},
       [] {
         const int fd = connect_to(shared().server->metrics_port());
         send_all(fd, "GET /metrics HTTP/1.1\r\nX-Huge: " + std::string(1 << 20, 'h') + "\r\n\r\n");
         EXPECT_TRUE(closed_by_peer(fd, 10));
         ::close(fd);
         EXPECT_TRUE(scrape_works());
         return grpc::Status::OK;
       }},
  };
}

// ---- The rows: the health service ----

std::vector<Row> health_rows() {
  using C = StatusCode;
  return {
      {"HealthCheckHugeServiceName",
       C::NOT_FOUND,
       {"service", "1048576 bytes"},
       [] {
         grpc::health::v1::HealthCheckRequest r;
         r.set_service(kHugeName);
         grpc::health::v1::HealthCheckResponse response;
         return with_deadline(30, [&](grpc::ClientContext* c) {
           return shared().server->health()->Check(c, r, &response);
         });
       }},
      {"HealthCheckUndecodable",
       C::INVALID_ARGUMENT,
       {},
       [] { return raw_unary("/grpc.health.v1.Health/Check", kUndecodable); }},
      // Watch is gRPC's typed server-streaming handler: it ends the stream with UNIMPLEMENTED.
      {"HealthWatchUndecodable",
       C::UNIMPLEMENTED,
       {},
       [] {
         RawCall watch(shared().server->channel());
         EXPECT_TRUE(watch.open("/grpc.health.v1.Health/Watch"));
         watch.write(kUndecodable);
         watch.writes_done();
         return watch.finish(30);
       }},
      {"HealthWatchStreamsNeverRead",
       C::OK,
       {},
       [] {
         std::vector<std::unique_ptr<RawCall>> watches;
         grpc::health::v1::HealthCheckRequest r;
         r.set_service("torqued.v1.DynamicsService");
         const auto connection = own_connection();
         for (int i = 0; i < 100; ++i) {  // as SessionManyIdleStreams
           watches.push_back(std::make_unique<RawCall>(connection));
           EXPECT_TRUE(watches.back()->open("/grpc.health.v1.Health/Watch"));
           EXPECT_TRUE(watches.back()->write(r.SerializeAsString()));
         }
         const grpc::Status answered = call(&Dynamics::InverseDynamics, inverse_dynamics());
         EXPECT_TRUE(answered.ok()) << answered.error_message();
         return grpc::Status::OK;
       }},
  };
}

// ---- Frame names that a link and a joint share ----

// The quadruped with its fixed joint FL_foot_fixed named after its child link, as a quadruped's
// description may name them: "FL_foot" is then the joint's frame and the link's.
v1::RegisterModelRequest quadruped_sharing_a_name() {
  std::ifstream in(repository_dir() + "/quadruped.urdf");
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const std::string fixed_joint = "name=\"FL_foot_fixed\"";
  text.replace(text.find(fixed_joint), fixed_joint.size(), "name=\"FL_foot\"");
  v1::RegisterModelRequest r = urdf_request(text);
  r.set_name("quadruped_sharing_a_name");
  r.set_base(v1::BASE_TYPE_FLOATING);
  return r;
}

// Sends a request made for the quadruped to the quadruped sharing a name (same q and v layout),
// registered for the call and deleted after it.
template <typename Request, typename Response>
grpc::Status on_shared_name(grpc::Status (Dynamics::*rpc)(grpc::ClientContext*, const Request&,
                                                          Response*),
                            Request request) {
  v1::RegisterModelResponse registered;
  const grpc::Status status = call(&Models::RegisterModel, quadruped_sharing_a_name(), &registered);
  if (!status.ok()) return status;
  request.set_model_id(registered.model().id());
  const grpc::Status answer = call(rpc, request);
  EXPECT_EQ(delete_model(registered.model().id()), "");
  return answer;
}

// Every field that names a frame refuses the shared name, listing the frames it could mean.
std::vector<Row> shared_name_rows() {
  using C = StatusCode;
  const std::vector<std::string> candidates = {"\"FL_foot\" names 2 frames", "\"joint:FL_foot\"",
                                               "\"fixed_link:FL_foot\""};
  const auto naming = [&](const std::string& field) {
    std::vector<std::string> names = candidates;
    names.insert(names.begin(), field);
    return names;
  };
  return {
      {"KinematicsFrameNameSharedByALinkAndAJoint", C::INVALID_ARGUMENT, naming("frames[1]"),
       [] {
         auto r = on<v1::KinematicsRequest>("quadruped");
         r.add_frames("joint:FL_foot");
         r.add_frames("FL_foot");
         return on_shared_name(&Dynamics::Kinematics, r);
       }},
      {"RolloutFrameNameSharedByALinkAndAJoint", C::INVALID_ARGUMENT, naming("frames[0]"),
       [] {
         auto r = rollout();
         r.add_frames("FL_foot");
         return on_shared_name(&Dynamics::Rollout, r);
       }},
      {"ConstrainedDynamicsFrameNameSharedByALinkAndAJoint", C::INVALID_ARGUMENT,
       naming("constraints[0].frame1.frame"),
       [] {
         auto r = constrained();
         *r.add_constraints() = point_constraint("FL_foot");
         return on_shared_name(&Dynamics::ConstrainedDynamics, r);
       }},
      {"LinearizeConstraintFrameNameSharedByALinkAndAJoint", C::INVALID_ARGUMENT,
       naming("constraints[0].frame1.frame"),
       [] {
         auto r = linearize();
         *r.add_constraints() = point_constraint("FL_foot");
         return on_shared_name(&Dynamics::Linearize, r);
       }},
      {"ContactDynamicsFrameNameSharedByALinkAndAJoint", C::INVALID_ARGUMENT,
       naming("contacts[0].frame"),
       [] { return on_shared_name(&Dynamics::ContactDynamics, contact_dynamics()); }},
      {"ImpactFrameNameSharedByALinkAndAJoint", C::INVALID_ARGUMENT, naming("contacts[0].frame"),
       [] { return on_shared_name(&Dynamics::Impact, impact()); }},
      {"SimulateCandidateNameSharedByALinkAndAJoint", C::INVALID_ARGUMENT,
       naming("candidates[0].frame"),
       [] { return on_shared_name(&Dynamics::Simulate, simulate()); }},
      {"RegisterModelStrictWithAFrameNameSharedByALinkAndAJoint",
       C::INVALID_ARGUMENT,
       {"strict checking", "frame name 'FL_foot' is shared by 2 frames"},
       [] {
         v1::RegisterModelRequest r = quadruped_sharing_a_name();
         r.set_strict(true);
         return register_model(r);
       }},
  };
}

std::vector<Row> all_rows() {
  std::vector<Row> rows;
  for (auto group : {model_rows, undecodable_rows, dynamics_rows, control_rows, call_rows,
                     session_rows, mpc_rows, health_rows, transport_rows, shared_name_rows}) {
    for (Row& row : group()) rows.push_back(std::move(row));
  }
  return rows;
}

// ---- The table ----

bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto byte = static_cast<unsigned char>(s[i]);
    const int length = byte < 0x80           ? 1
                       : (byte >> 5) == 0x6  ? 2
                       : (byte >> 4) == 0xe  ? 3
                       : (byte >> 3) == 0x1e ? 4
                                             : 0;
    if (length == 0 || i + length > s.size()) return false;
    for (int k = 1; k < length; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return false;
    }
    i += length;
  }
  return true;
}

class BadInputTest : public ::testing::TestWithParam<Row> {
 protected:
  static void SetUpTestSuite() { start_server(); }

  static void start_server() {
    Shared& s = shared();
    s.server.reset();
    s.dir.emplace();
    s.server = std::make_unique<ServerProcess>(
        ServerProcess::Options{s.dir->path() / "data", repository_dir(), true, kServerFlags});
    ASSERT_TRUE(s.server->running());
    s.dynamics = s.server->dynamics();
    s.models = s.server->models();
    s.control = v1::ControlService::NewStub(s.server->channel());
    v1::ListModelsResponse list;
    ASSERT_TRUE(call(&Models::ListModels, v1::ListModelsRequest(), &list).ok());
    for (const v1::ModelSummary& m : list.models())
      s.layouts[m.name()] = s.server->model_layout(m.id());
    ASSERT_EQ(s.layouts.count("quadruped"), 1u) << s.server->log();
    // The reference: a small batch answered inline and one large enough for the workers, so
    // that a row leaving the workers busy shows too.
    s.reference_id = inverse_dynamics("puma560", 4);
    s.reference_fd = forward_dynamics("quadruped", 200);
    ASSERT_TRUE(call(&Dynamics::InverseDynamics, s.reference_id, &s.expected_id).ok());
    ASSERT_TRUE(call(&Dynamics::ForwardDynamics, s.reference_fd, &s.expected_fd).ok());
    s.baseline_rss = rss_bytes(s.server->pid());
  }

  void SetUp() override {
    if (!shared().server || !shared().server->running() || shared().server->wait_exit(0) != -1) {
      ADD_FAILURE() << "the server was gone before this row; restarting it";
      start_server();
    }
  }

  static void TearDownTestSuite() {
    const std::int64_t rss = rss_bytes(shared().server->pid());
    std::cout << "server RSS " << shared().baseline_rss / 1024 << " kB at the start, " << rss / 1024
              << " kB after the table, at most " << shared().largest_growth / 1024
              << " kB above the start at any check (bound " << kRssGrowthBound / 1024 << " kB)\n";
    shared().server.reset();
    shared().dir.reset();
  }
};

TEST_P(BadInputTest, Row) {
  const Row& row = GetParam();
  const grpc::Status status = row.act();
  const std::string& message = status.error_message();
  EXPECT_EQ(status.error_code(), row.code) << message;
  for (const std::string& name : row.names) {
    EXPECT_NE(message.find(name), std::string::npos)
        << "the message \"" << message << "\" lacks \"" << name << "\"";
  }
  EXPECT_LE(message.size(), kMaxStatusBytes);
  EXPECT_TRUE(valid_utf8(message)) << message;
  EXPECT_TRUE(
      std::none_of(message.begin(), message.end(),
                   [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
      << "control characters in: " << message;
  EXPECT_EQ(message.find(kOverEchoed), std::string::npos) << "echoes too much: " << message;

  // The server is unharmed: the same bits as before the table, memory within its bound.
  v1::InverseDynamicsResponse id;
  v1::ForwardDynamicsResponse fd;
  const grpc::Status id_status = call(&Dynamics::InverseDynamics, shared().reference_id, &id);
  const grpc::Status fd_status = call(&Dynamics::ForwardDynamics, shared().reference_fd, &fd);
  ASSERT_TRUE(id_status.ok()) << id_status.error_message() << "\n" << shared().server->log();
  ASSERT_TRUE(fd_status.ok()) << fd_status.error_message();
  const auto& expected_tau = shared().expected_id.tau();
  const auto& expected_a = shared().expected_fd.a();
  expect_bitwise_equal(id.tau(), {expected_tau.begin(), expected_tau.end()}, "reference tau");
  expect_bitwise_equal(fd.a(), {expected_a.begin(), expected_a.end()}, "reference a");
  expect_rss_within_bound("after the row");
}

INSTANTIATE_TEST_SUITE_P(Table, BadInputTest, ::testing::ValuesIn(all_rows()),
                         [](const ::testing::TestParamInfo<Row>& info) { return info.param.name; });

// Every method of the services has rows, named after it (a URDF, DH or spec row registers a
// model): a new RPC without rows fails here.
TEST(BadInputTableTest, EveryMethodOfTheServicesHasRows) {
  const std::vector<Row> rows = all_rows();
  for (const google::protobuf::ServiceDescriptor* service : table_services()) {
    for (int m = 0; m < service->method_count(); ++m) {
      const std::string method = service->method(m)->name();
      const bool covered = std::any_of(
          rows.begin(), rows.end(), [&](const Row& row) { return row.name.rfind(method, 0) == 0; });
      EXPECT_TRUE(covered) << service->full_name() << "/" << method << " has no row";
    }
  }
}

}  // namespace
}  // namespace torqued::testing
