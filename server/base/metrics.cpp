// Registration of every metric family and label child at start-up (Triton's one-constructor
// pattern), and the few recording paths that need more than an inline call.
#include "server/base/metrics.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <prometheus/text_serializer.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <vector>

#include "server/base/posix_file.hpp"

namespace torqued::server {
namespace {

const char* const kCodeNames[] = {
    "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
    "DATA_LOSS", "UNAUTHENTICATED"};

// The grpc_type label.
// Exponential buckets: start, start·factor, ... (count of them).
prometheus::Histogram::BucketBoundaries exponential(double start, double factor, int count) {
  prometheus::Histogram::BucketBoundaries b;
  for (int i = 0; i < count; ++i) b.push_back(start * std::pow(factor, i));
  return b;
}

// An HTTP/1.1 response that closes the connection.
std::string http_answer(int code, std::string_view reason, std::string_view body,
                        std::string_view content_type = "text/plain; charset=utf-8") {
  return "HTTP/1.1 " + std::to_string(code) + " " + std::string(reason) +
         "\r\nContent-Type: " + std::string(content_type) +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
         std::string(body);
}

// A listening socket on address:port (any free port for 0); throws std::runtime_error naming
// them when none can be bound.
FileDescriptor listen_on(const std::string& address, int port) {
  const std::string where = address + ":" + std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int error = ::getaddrinfo(address.empty() ? nullptr : address.c_str(),
                                      std::to_string(port).c_str(), &hints, &found);
      error != 0) {
    throw std::runtime_error("metrics: cannot listen on " + where + ": " + ::gai_strerror(error));
  }
  const std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(found, ::freeaddrinfo);
  int error = 0;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    FileDescriptor socket(
        ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol));
    const int on = 1;
    if (socket.get() >= 0 &&
        ::setsockopt(socket.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) == 0 &&
        ::bind(socket.get(), a->ai_addr, a->ai_addrlen) == 0 &&
        ::listen(socket.get(), SOMAXCONN) == 0) {
      return socket;
    }
    error = errno;
  }
  throw std::runtime_error("metrics: cannot listen on " + where + ": " + std::strerror(error));
}

int bound_port(int socket) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (::getsockname(socket, reinterpret_cast<sockaddr*>(&address), &length) != 0) return 0;
  if (address.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port);
  }
  return ntohs(reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
}

bool would_block(int error) { return error == EAGAIN || error == EWOULDBLOCK || error == EINTR; }

}  // namespace

// The metrics port's HTTP server. prometheus-cpp's Exposer serves with CivetWeb (1.15 in Debian
// 12), which gives a connection one of its num_threads threads from accept until its request is
// read, and has no option to read requests without one: as many clients as threads, each sending
// its request a byte at a time, hold every thread until request_timeout_ms cuts them (and then
// reconnect), and scrapes queue behind them. Here one thread polls every connection: a slow
// client holds a socket and a few kilobytes, never the thread, so a scrape is answered as soon as
// its request has come, however many clients stall.
class MetricsEndpoint {
 public:
  MetricsEndpoint(const std::string& address, int port,
                  std::shared_ptr<prometheus::Registry> registry)
      : registry_(std::move(registry)),
        listener_(listen_on(address, port)),
        wake_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
        port_(bound_port(listener_.get())) {
    if (wake_.get() < 0) throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
    thread_ = std::thread([this] { run(); });
  }

  ~MetricsEndpoint() {
    const std::uint64_t one = 1;
    // Cannot fail (only an overflow of the eventfd's counter could); were it to, join would hang.
    if (::write(wake_.get(), &one, sizeof(one)) != sizeof(one)) std::terminate();
    thread_.join();
  }

  int port() const { return port_; }

 private:
  // A scrape takes milliseconds; each connection has this long from accept to be answered and
  // closed (half of Prometheus's default scrape timeout), whatever the client does.
  static constexpr std::chrono::seconds kConnectionTime{5};
  // Connections open at once; a new one past this closes the oldest, most likely a stalled one.
  static constexpr std::size_t kMaxConnections = 64;
  // A request head longer than this is answered 431 (Prometheus sends about 300 bytes).
  static constexpr std::size_t kMaxRequestBytes = 8192;
  // After accept fails for want of file descriptors, the listener rests this long rather than
  // wake the loop again at once.
  static constexpr std::chrono::milliseconds kAcceptPause{100};

  enum class Phase { kReading, kWriting, kDraining };
  struct Connection {
    Connection(FileDescriptor accepted, Clock::time_point until)
        : socket(std::move(accepted)), deadline(until) {}
    FileDescriptor socket;
    Clock::time_point deadline;
    Phase phase = Phase::kReading;
    std::string request;   // the head so far, while reading
    std::string response;  // while writing
    std::size_t sent = 0;
    bool done = false;
  };

  void run() {
    std::vector<pollfd> polled;
    for (;;) {
      const Clock::time_point now = Clock::now();
      const bool accepting = now >= accept_resumes_;
      const short listen_events = accepting ? POLLIN : 0;
      polled.assign({{wake_.get(), POLLIN, 0}, {listener_.get(), listen_events, 0}});
      for (const Connection& c : connections_) {
        const short events = c.phase == Phase::kWriting ? POLLOUT : POLLIN;
        polled.push_back({c.socket.get(), events, 0});
      }
      // Connections are kept in the order they were accepted: the first has the first deadline.
      Clock::time_point wake_at = Clock::time_point::max();
      if (!connections_.empty()) wake_at = connections_.front().deadline;
      if (!accepting) wake_at = std::min(wake_at, accept_resumes_);
      int timeout_ms = -1;
      if (wake_at != Clock::time_point::max()) {
        timeout_ms = static_cast<int>(
            std::chrono::ceil<std::chrono::milliseconds>(std::max(wake_at - now, Clock::duration{}))
                .count());
      }
      if (::poll(polled.data(), polled.size(), timeout_ms) < 0) continue;  // EINTR, ENOMEM
      if (polled[0].revents != 0) return;
      const Clock::time_point after = Clock::now();
      for (std::size_t i = 0; i < connections_.size(); ++i) {
        Connection& c = connections_[i];
        c.done = after >= c.deadline || (polled[i + 2].revents != 0 && !advance(c));
      }
      std::erase_if(connections_, [](const Connection& c) { return c.done; });
      if (polled[1].revents != 0) accept_connections(after);
    }
  }

  void accept_connections(Clock::time_point now) {
    for (;;) {
      FileDescriptor socket(
          ::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
      if (socket.get() < 0) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          accept_resumes_ = now + kAcceptPause;
        }
        return;
      }
      if (connections_.size() >= kMaxConnections) connections_.erase(connections_.begin());
      connections_.emplace_back(std::move(socket), now + kConnectionTime);
    }
  }

  // Reads or writes what the socket is ready for; false when the connection is finished.
  bool advance(Connection& c) {
    char buffer[4096];
    if (c.phase != Phase::kWriting) {
      const ssize_t n = ::recv(c.socket.get(), buffer, sizeof(buffer), 0);
      if (n <= 0) return n < 0 && would_block(errno);
      if (c.phase == Phase::kDraining) return true;
      c.request.append(buffer, static_cast<std::size_t>(n));
      std::size_t head_end = c.request.find("\r\n\r\n");
      if (head_end == std::string::npos) head_end = c.request.find("\n\n");
      if (head_end != std::string::npos) {
        c.response = answer(std::string_view(c.request).substr(0, head_end));
      } else if (c.request.size() > kMaxRequestBytes) {
        c.response = http_answer(
            431, "Request Header Fields Too Large",
            "the request head is longer than " + std::to_string(kMaxRequestBytes) + " bytes\n");
      } else {
        return true;
      }
      c.request = std::string();
      c.phase = Phase::kWriting;
    }
    const ssize_t n = ::send(c.socket.get(), c.response.data() + c.sent, c.response.size() - c.sent,
                             MSG_NOSIGNAL);
    if (n < 0) return would_block(errno);
    c.sent += static_cast<std::size_t>(n);
    if (c.sent < c.response.size()) return true;
    // Answered. Closing now, with bytes of the client's unread (a body, a pipelined request),
    // would send a reset that can destroy the answer before the client reads it: half-close
    // instead, and read until the client closes (or the deadline comes).
    ::shutdown(c.socket.get(), SHUT_WR);
    c.response = std::string();
    c.phase = Phase::kDraining;
    return true;
  }

  // The answer to a request whose head (request line and header fields) is `head`: only
  // "GET /metrics" (with any query) is served.
  std::string answer(std::string_view head) const {
    const std::string_view line = head.substr(0, head.find_first_of("\r\n"));
    const std::size_t method_end = line.find(' ');
    const std::size_t target_end =
        method_end == std::string_view::npos ? method_end : line.find(' ', method_end + 1);
    if (target_end == std::string_view::npos ||
        line.substr(target_end + 1).substr(0, 5) != "HTTP/") {
      return http_answer(400, "Bad Request", "not an HTTP request\n");
    }
    const std::string_view target = line.substr(method_end + 1, target_end - method_end - 1);
    if (target.substr(0, target.find('?')) != "/metrics") {
      return http_answer(404, "Not Found", "only /metrics is served\n");
    }
    if (line.substr(0, method_end) != "GET") {
      return http_answer(405, "Method Not Allowed", "only GET is served\n");
    }
    return http_answer(200, "OK", prometheus::TextSerializer().Serialize(registry_->Collect()),
                       "text/plain; version=0.0.4; charset=utf-8");
  }

  const std::shared_ptr<prometheus::Registry> registry_;
  const FileDescriptor listener_;
  const FileDescriptor wake_;  // an eventfd the destructor writes to stop the thread
  const int port_;
  // The thread's own.
  std::vector<Connection> connections_;
  Clock::time_point accept_resumes_;
  std::thread thread_;
};

const char* status_code_name(grpc::StatusCode code) {
  const int c = static_cast<int>(code);
  return c >= 0 && c < 17 ? kCodeNames[c] : "UNKNOWN";
}

Metrics::Metrics() = default;

Metrics::Metrics(const std::string& address, int port, const std::vector<std::string>& algorithms)
    : enabled_(true), registry_(std::make_shared<prometheus::Registry>()) {
  auto& started = prometheus::BuildCounter()
                      .Name("grpc_server_started_total")
                      .Help("Total number of RPCs started on the server.")
                      .Register(*registry_);
  auto& handled = prometheus::BuildCounter()
                      .Name("grpc_server_handled_total")
                      .Help("Total number of RPCs completed on the server, regardless of success.")
                      .Register(*registry_);
  auto& handling = prometheus::BuildHistogram()
                       .Name("grpc_server_handling_seconds")
                       .Help("Time from the start of an RPC to its completion, seconds.")
                       .Register(*registry_);
  // 10 µs to ~42 s in steps of 2x: unary calls on a LAN take tens of microseconds.
  const auto rpc_buckets = exponential(10e-6, 2.0, 23);
  for (const RpcMethod& method : rpc_methods()) {
    const prometheus::Labels labels = {{"grpc_service", method.service},
                                       {"grpc_method", method.name},
                                       {"grpc_type", method.streaming ? "bidi_stream" : "unary"}};
    MethodMetrics& m = methods_.emplace_back();
    m.started = &started.Add(labels);
    m.seconds = &handling.Add(labels, rpc_buckets);
    for (int c = 0; c < kCodes; ++c) {
      prometheus::Labels with_code = labels;
      with_code["grpc_code"] = kCodeNames[c];
      m.handled[c] = &handled.Add(with_code);
    }
  }
  auto& compute = prometheus::BuildHistogram()
                      .Name("torqued_engine_compute_seconds")
                      .Help("Engine time per chunk of a batch (one worker, no queueing), seconds.")
                      .Register(*registry_);
  // 1 µs to ~34 s.
  const auto compute_buckets = exponential(1e-6, 2.0, 26);
  for (const std::string& algorithm : algorithms) {
    algorithms_[algorithm] = &compute.Add({{"algorithm", algorithm}}, compute_buckets);
  }
  batch_states_ = &prometheus::BuildHistogram()
                       .Name("torqued_batch_states")
                       .Help("States per dynamics request.")
                       .Register(*registry_)
                       .Add({}, exponential(1.0, 4.0, 10));
  queue_depth_ = &prometheus::BuildGauge()
                      .Name("torqued_executor_queue_depth")
                      .Help("Tasks waiting for an executor worker.")
                      .Register(*registry_)
                      .Add({});
  busy_workers_ = &prometheus::BuildGauge()
                       .Name("torqued_executor_busy_workers")
                       .Help("Executor workers running a task.")
                       .Register(*registry_)
                       .Add({});
  models_registered_ = &prometheus::BuildGauge()
                            .Name("torqued_models_registered")
                            .Help("Models this replica serves (repository and registered).")
                            .Register(*registry_)
                            .Add({});
  connections_open_ = &prometheus::BuildGauge()
                           .Name("torqued_connections_open")
                           .Help("Open connections to the gRPC port.")
                           .Register(*registry_)
                           .Add({});
  connections_closed_ = &prometheus::BuildCounter()
                             .Name("torqued_connections_closed_total")
                             .Help("Connections the server closed, by the limit they passed.")
                             .Register(*registry_);
  memory_reserved_ = &prometheus::BuildGauge()
                          .Name("torqued_memory_reserved_bytes")
                          .Help("Bytes of the memory budget held by calls and workspaces.")
                          .Register(*registry_)
                          .Add({});
  endpoint_ = std::make_unique<MetricsEndpoint>(address, port, registry_);
}

Metrics::~Metrics() = default;

int Metrics::port() const { return endpoint_ ? endpoint_->port() : 0; }

void Metrics::connection_closed(const char* flag) {
  if (enabled_) connections_closed_->Add({{"limit", flag}}).Increment();
}

void Metrics::rpc_handled(MethodId method, grpc::StatusCode code, Clock::time_point start) {
  if (!enabled_) return;
  MethodMetrics& m = methods_[method];
  const int c = static_cast<int>(code);
  m.handled[c >= 0 && c < kCodes ? c : static_cast<int>(grpc::StatusCode::UNKNOWN)]->Increment();
  m.seconds->Observe(seconds_since(start));
}

}  // namespace torqued::server
