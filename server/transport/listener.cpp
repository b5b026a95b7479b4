// The gRPC port's accept loop (see listener.hpp).
#include "server/transport/listener.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/tcp.h>
#include <malloc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "server/transport/unary_call.hpp"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TORQUED_SANITIZER_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TORQUED_SANITIZER_ALLOCATOR 1
#endif
#endif
#if TORQUED_SANITIZER_ALLOCATOR
#include <sanitizer/allocator_interface.h>
#endif

namespace torqued::server {
namespace {

// A connection may spend 10 s of resets at once, then max_resets_per_second.
constexpr double kResetWindowSeconds = 10.0;
// How long the address of a connection closed for its resets or its flood stays suspect, and how
// often it may open a connection meanwhile.
constexpr auto kSuspicion = std::chrono::seconds(10);
constexpr auto kSuspectConnectionInterval = std::chrono::seconds(1);
constexpr int kBacklog = 1024;
// The memory guard: how often it looks, and what a connection may receive meanwhile once the
// transport holds half its quota (80 MB/s: far more than any header block, less than a loopback
// client can upload). Half, not all: what a flood leaves to free when its connection closes (a
// header block of 100,000s of entries, published whole to a call) costs CPU in proportion, and
// health answered in 0.8-1.1 s instead of 0.5-0.6 s under a CONTINUATION flood with two
// CPU-bound processes beside the server.
constexpr int kGuardMilliseconds = 100;
constexpr std::uint64_t kFloodBytes = 8 << 20;
// A rate alone misses a flood that the server parses more slowly than that: on a slower CPU, or
// with other processes on the same ones, four floods grew the server by 165 MB/s at 2.4 MB per
// connection per 100 ms, and reached 1.7 GB in 8 s. So the guard also looks at the growth: in
// windows of up to kWindowLooks looks, when what the process holds beyond the calls grew by
// kGrowthBytes (past an eighth of the budget) or by more than kNoiseBytes (past the quarter),
// every connection that received more than kNoiseBytes in the window is closed. Growth that the
// connections' bytes cannot account for half of (a model registered) closes none. All of them,
// not only enough to account for the growth: four floods at once, two of them closed, grew the
// process to 216 MB in use, and health answered in 1.2-1.7 s beside two CPU-bound processes.
constexpr int kWindowLooks = 10;
constexpr std::int64_t kGrowthBytes = 8 << 20;
constexpr std::int64_t kNoiseBytes = 1 << 20;
// What a connection admitted while its address is suspect after a flood may receive in one look,
// whatever the process holds (10 MB/s): a server slowed by other processes parses a flood at less
// than kFloodBytes per look, so at that rate each reconnection would be parsed until the process
// held an eighth of its budget again.
constexpr std::uint64_t kSuspectFloodBytes = 1 << 20;

// What the process holds: the bytes its allocator has handed out and not had back (glibc's
// mallinfo2: in use in the arenas, plus mmapped blocks; AddressSanitizer's and ThreadSanitizer's
// own count in their builds). Not the resident size: that includes the freed memory glibc keeps
// for the next request (main.cpp's mallopt; up to 64 MB between trims, server/base/heap_trimmer
// .hpp), so after two 17.6 MB batches the process was past an eighth of its budget with 10 MB in
// use, and a client uploading its third at loopback speed lost its connection. A sanitizer's
// shadow memory and quarantine inflate the resident size several times more. mallinfo2 walks the
// arenas' free lists: 15-40 µs a look here.
std::int64_t process_bytes() {
#if TORQUED_SANITIZER_ALLOCATOR
  return static_cast<std::int64_t>(__sanitizer_get_current_allocated_bytes());
#else
  const struct mallinfo2 heap = mallinfo2();
  return static_cast<std::int64_t>(heap.uordblks + heap.hblkhd);
#endif
}

// TCP's count of the bytes a connection received.
std::uint64_t bytes_received(int fd) {
  tcp_info info{};
  socklen_t length = sizeof(info);
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) != 0) return 0;
  return info.tcpi_bytes_received;
}

std::string errno_text() { return std::strerror(errno); }

// gRPC's URI of a socket address ("ipv4:10.0.0.1:5000", "ipv6:[::1]:5000"), and the address
// alone.
bool describe(const sockaddr_storage& address, std::string& uri, std::string& host) {
  char text[INET6_ADDRSTRLEN] = {};
  int port = 0;
  if (address.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(address);
    if (inet_ntop(AF_INET, &in.sin_addr, text, sizeof(text)) == nullptr) return false;
    port = ntohs(in.sin_port);
    host = text;
    uri = "ipv4:" + host + ":" + std::to_string(port);
    return true;
  }
  if (address.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(address);
    if (IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr)) {  // an IPv4 client of a dual-stack socket
      sockaddr_storage v4{};
      auto& in = reinterpret_cast<sockaddr_in&>(v4);
      in.sin_family = AF_INET;
      in.sin_port = in6.sin6_port;
      std::memcpy(&in.sin_addr, &in6.sin6_addr.s6_addr[12], 4);
      return describe(v4, uri, host);
    }
    if (inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof(text)) == nullptr) return false;
    port = ntohs(in6.sin6_port);
    host = text;
    uri = "ipv6:[" + host + "]:" + std::to_string(port);
    return true;
  }
  return false;
}

bool socket_addresses(int fd, std::string& peer, std::string& peer_host, std::string& local) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  std::string local_host;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0 ||
      !describe(address, peer, peer_host)) {
    return false;
  }
  length = sizeof(address);
  return getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0 &&
         describe(address, local, local_host);
}

// A limit's flag from its metric label: "max_connections" -> "max-connections".
std::string dashed(std::string flag) {
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

// The wildcard address of `family`, port 0.
sockaddr_storage wildcard(int family) {
  sockaddr_storage address{};
  if (family == AF_INET6) {
    auto& in6 = reinterpret_cast<sockaddr_in6&>(address);
    in6.sin6_family = AF_INET6;
    in6.sin6_addr = in6addr_any;
  } else {
    auto& in = reinterpret_cast<sockaddr_in&>(address);
    in.sin_family = AF_INET;
    in.sin_addr.s_addr = htonl(INADDR_ANY);
  }
  return address;
}

// "[::1]" and "::1" alike.
std::string unbracketed(const std::string& host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    return host.substr(1, host.size() - 2);
  }
  return host;
}

}  // namespace

Listener::Listener(const std::string& host, int port, ConnectionLimits limits,
                   const MemoryBudget& calls, Metrics& metrics)
    : limits_(limits), calls_(calls), metrics_(metrics), port_(port) {
  const std::string name = unbracketed(host);
  const std::string where = host + ":" + std::to_string(port);
  std::string failure;
  if (name.empty() || name == "0.0.0.0" || name == "::") {
    // Every interface, of both families where the machine has IPv6 (as gRPC binds them): one
    // dual-stack socket, IPv4 clients arriving as IPv4-mapped addresses.
    if (!bind_one(wildcard(AF_INET6), false, failure)) bind_one(wildcard(AF_INET), false, failure);
  } else {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* found = nullptr;
    if (const int error = getaddrinfo(name.c_str(), "0", &hints, &found); error != 0) {
      throw std::runtime_error("cannot listen on " + where + ": " + gai_strerror(error));
    }
    for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
      sockaddr_storage address{};
      std::memcpy(&address, a->ai_addr, a->ai_addrlen);
      // Both families are bound separately when the name resolves to both.
      bind_one(address, true, failure);
    }
    freeaddrinfo(found);
  }
  if (listener_fds_.empty()) {
    throw std::runtime_error("cannot listen on " + where + ": " + failure);
  }
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) throw std::runtime_error("cannot make an eventfd: " + errno_text());
}

bool Listener::bind_one(sockaddr_storage address, bool v6_only, std::string& failure) {
  const int fd = ::socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    failure = errno_text();
    return false;
  }
  const int one = 1;
  const int only = v6_only ? 1 : 0;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (address.ss_family == AF_INET6) {
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &only, sizeof(only));
  }
  // Every address on the same port: the configured one, or the one the first address got.
  if (address.ss_family == AF_INET) {
    reinterpret_cast<sockaddr_in&>(address).sin_port = htons(static_cast<uint16_t>(port_));
  } else {
    reinterpret_cast<sockaddr_in6&>(address).sin6_port = htons(static_cast<uint16_t>(port_));
  }
  const socklen_t size = address.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), size) != 0 ||
      ::listen(fd, kBacklog) != 0) {
    failure = errno_text();
    ::close(fd);
    return false;
  }
  if (port_ == 0) {
    socklen_t length = sizeof(address);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
    port_ =
        ntohs(address.ss_family == AF_INET ? reinterpret_cast<sockaddr_in&>(address).sin_port
                                           : reinterpret_cast<sockaddr_in6&>(address).sin6_port);
  }
  listener_fds_.push_back(fd);
  return true;
}

Listener::~Listener() {
  stop();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void Listener::start(std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor) {
  acceptor_ = std::move(acceptor);
  thread_ = std::thread([this] { accept_loop(); });
}

void Listener::stop() {
  if (thread_.joinable()) {
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof(one));
    thread_.join();
  }
  for (const int fd : listener_fds_) ::close(fd);
  listener_fds_.clear();
}

void Listener::accept_loop() {
  std::vector<pollfd> polled;
  for (const int fd : listener_fds_) polled.push_back({fd, POLLIN, 0});
  polled.push_back({wake_fd_, POLLIN, 0});
  auto next_sweep = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  auto next_guard = std::chrono::steady_clock::now();
  while (true) {
    for (pollfd& p : polled) p.revents = 0;
    const int ready = ::poll(polled.data(), polled.size(), kGuardMilliseconds);
    if (ready < 0 && errno != EINTR) {
      spdlog::error("the gRPC port's accept loop stopped: poll: {}", errno_text());
      return;
    }
    if (polled.back().revents != 0) return;
    for (std::size_t i = 0; i + 1 < polled.size(); ++i) {
      if (polled[i].revents != 0) accept_one(polled[i].fd);
    }
    // On its own schedule: accepted connections end the poll early, and a look's bytes are
    // what a connection received in kGuardMilliseconds.
    if (std::chrono::steady_clock::now() >= next_guard) {
      guard_memory();
      next_guard = std::chrono::steady_clock::now() + std::chrono::milliseconds(kGuardMilliseconds);
    }
    if (std::chrono::steady_clock::now() >= next_sweep) {
      forget_ended_connections();
      next_sweep = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    }
  }
}

void Listener::accept_one(int listener_fd) {
  // A burst of connections is accepted whole; the poll timeout bounds how stale the sweep is.
  for (int accepted = 0; accepted < kBacklog; ++accepted) {
    const int fd = ::accept4(listener_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        // Out of descriptors or memory: wait for the next poll rather than spin.
        spdlog::warn("accepting a gRPC connection: {}", errno_text());
      }
      return;
    }
    Connection connection{fd,
                          "",
                          "",
                          "",
                          limits_.max_resets_per_second * kResetWindowSeconds,
                          std::chrono::steady_clock::now()};
    if (!socket_addresses(fd, connection.peer, connection.host, connection.local)) {
      ::close(fd);
      continue;
    }
    const char* refusal = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (static_cast<int>(by_peer_.size()) >= limits_.max_connections) forget_ended_locked();
      if (const auto suspect = suspects_.find(connection.host); suspect != suspects_.end()) {
        Suspicion& suspicion = suspect->second;
        if (suspicion.until <= connection.refilled) {
          suspects_.erase(suspect);
        } else if (connection.refilled - suspicion.last_admitted < kSuspectConnectionInterval) {
          refusal = suspicion.after_resets ? "max_resets_per_second" : "memory_budget_bytes";
        } else {
          suspicion.last_admitted = connection.refilled;
          connection.reset_allowance = limits_.max_resets_per_second;
          connection.flood_suspect = suspicion.after_flood;
        }
      }
      if (refusal == nullptr && static_cast<int>(by_peer_.size()) >= limits_.max_connections) {
        refusal = "max_connections";
      } else if (refusal == nullptr &&
                 per_host_[connection.host] >= limits_.max_connections_per_peer) {
        refusal = "max_connections_per_peer";
      } else if (refusal == nullptr) {
        ++per_host_[connection.host];
        by_peer_[connection.peer] = connection;
      }
      metrics_.set_connections_open(static_cast<int>(by_peer_.size()));
    }
    if (refusal != nullptr) {
      metrics_.connection_closed(refusal);
      log_refusal(connection.peer, refusal);
      ::close(fd);
      continue;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    grpc::experimental::ExternalConnectionAcceptor::NewConnectionParameters parameters;
    parameters.listener_fd = listener_fd;
    parameters.fd = fd;
    acceptor_->HandleNewConnection(&parameters);
  }
}

void Listener::log_refusal(const std::string& peer, const std::string& flag) {
  // One line per second at most: a client that retries in a loop would fill the log.
  const auto now = std::chrono::steady_clock::now();
  ++refusals_unlogged_;
  if (now - last_refusal_logged_ < std::chrono::seconds(1)) return;
  const char* why = flag == "max_connections"            ? "too many connections are open"
                    : flag == "max_connections_per_peer" ? "its address has too many connections"
                    : flag == "max_resets_per_second"
                        ? "a connection of its address was closed for its resets within 10 s, and "
                          "it opened another less than a second ago"
                        : "a connection of its address was closed for its flood within 10 s, and "
                          "it opened another less than a second ago";
  spdlog::warn("refused a connection from {}: {} (--{}); {} refused since the last such line", peer,
               why, dashed(flag), refusals_unlogged_);
  refusals_unlogged_ = 0;
  last_refusal_logged_ = now;
}

bool Listener::still_open(const Connection& connection) const {
  std::string peer, host, local;
  return socket_addresses(connection.fd, peer, host, local) && peer == connection.peer &&
         local == connection.local;
}

void Listener::forget_ended_connections() {
  std::lock_guard lock(mutex_);
  forget_ended_locked();
  metrics_.set_connections_open(static_cast<int>(by_peer_.size()));
}

void Listener::forget_ended_locked() {
  for (auto it = by_peer_.begin(); it != by_peer_.end();) {
    if (still_open(it->second)) {
      ++it;
      continue;
    }
    if (--per_host_[it->second.host] <= 0) per_host_.erase(it->second.host);
    it = by_peer_.erase(it);
  }
}

void Listener::call_cancelled_by_client(std::string_view peer_uri) {
  const std::string peer = canonical_peer(peer_uri);
  std::lock_guard lock(mutex_);
  const auto it = by_peer_.find(peer);
  if (it == by_peer_.end() || it->second.closing) return;
  Connection& connection = it->second;
  const auto now = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(now - connection.refilled).count();
  connection.reset_allowance =
      std::min(limits_.max_resets_per_second * kResetWindowSeconds,
               connection.reset_allowance + seconds * limits_.max_resets_per_second);
  connection.refilled = now;
  connection.reset_allowance -= 1.0;
  if (connection.reset_allowance >= 0.0 || !still_open(connection)) return;
  connection.closing = true;
  ::shutdown(connection.fd, SHUT_RDWR);
  Suspicion& suspicion = suspects_[connection.host];
  suspicion.until = now + kSuspicion;
  suspicion.after_resets = true;
  suspicion.last_admitted = now;
  metrics_.connection_closed("max_resets_per_second");
  spdlog::warn(
      "closed the connection of {}: its client cancelled calls faster than {} per second "
      "(--max-resets-per-second; HTTP/2 rapid reset)",
      connection.peer, limits_.max_resets_per_second);
}

void Listener::guard_memory() {
  // What the process holds beyond the calls' reservations: gRPC's transport, whose quota is a
  // quarter of the budget, and the process itself.
  const std::int64_t unreserved = process_bytes() - static_cast<std::int64_t>(calls_.reserved());
  const bool past_eighth = unreserved >= limits_.memory_budget_bytes / 8;
  // The growth that gets the connections behind it closed: kGrowthBytes within a window past an
  // eighth, any growth past the quarter, where the transport has used all of its quota.
  const std::int64_t least_growth =
      unreserved < limits_.memory_budget_bytes / 4 ? kGrowthBytes : kNoiseBytes;
  struct Closed {
    std::string peer;
    std::uint64_t bytes;
    const char* when;
    bool flood_suspect;
  };
  std::vector<Closed> closed;
  {
    std::lock_guard lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    const auto close = [&](Connection& connection, std::uint64_t bytes, const char* when) {
      connection.closing = true;
      ::shutdown(connection.fd, SHUT_RDWR);
      Suspicion& suspicion = suspects_[connection.host];
      suspicion.until = now + kSuspicion;
      suspicion.after_flood = true;
      closed.push_back({connection.peer, bytes, when, connection.flood_suspect});
    };
    // The first look past an eighth only counts: a window starts.
    const bool watching = past_eighth && guard_watching_;
    guard_watching_ = past_eighth;
    // Each open connection with what it received in this window.
    std::vector<std::pair<std::uint64_t, Connection*>> receivers;
    std::uint64_t received_in_window = 0;
    for (auto& [peer, connection] : by_peer_) {
      // Below an eighth only a flood's suspects are looked at.
      if (connection.closing || (!past_eighth && !connection.flood_suspect)) continue;
      const std::uint64_t received = bytes_received(connection.fd);
      const std::uint64_t in_look = received - std::min(received, connection.received_at_look);
      connection.received_at_look = received;
      if (((watching && in_look > kFloodBytes) ||
           (connection.flood_suspect && in_look > kSuspectFloodBytes)) &&
          still_open(connection)) {
        close(connection, in_look, "in 100 ms");
        continue;
      }
      if (!watching) continue;
      const std::uint64_t in_window =
          received - std::min(received, connection.received_at_window_start);
      receivers.emplace_back(in_window, &connection);
      received_in_window += in_window;
    }
    // Every connection that received more than kNoiseBytes while the process grew, when theirs
    // account for half the growth.
    const std::int64_t grown = unreserved - window_start_unreserved_;
    if (watching && grown >= least_growth &&
        2 * received_in_window >= static_cast<std::uint64_t>(grown)) {
      for (const auto& [bytes, connection] : receivers) {
        if (bytes >= kNoiseBytes && still_open(*connection)) {
          close(*connection, bytes, "while it grew");
        }
      }
    }
    if (!watching || !closed.empty() || ++window_looks_ >= kWindowLooks) {
      window_start_unreserved_ = unreserved;
      window_looks_ = 0;
      for (auto& [peer, connection] : by_peer_) {
        connection.received_at_window_start = connection.received_at_look;
      }
    }
  }
  for (const Closed& c : closed) {
    metrics_.connection_closed("memory_budget_bytes");
    if (c.flood_suspect) {
      spdlog::warn(
          "closed the connection of {}: it sent {} bytes {}, and a connection of its address was "
          "closed for its flood within 10 s (--memory-budget-bytes)",
          c.peer, c.bytes, c.when);
    } else {
      spdlog::warn(
          "closed the connection of {}: it sent {} bytes {} while the process held {} bytes "
          "beyond its calls, more than an eighth of the memory budget (--memory-budget-bytes)",
          c.peer, c.bytes, c.when, unreserved);
    }
  }
}

int Listener::open_connections() const {
  std::lock_guard lock(mutex_);
  return static_cast<int>(by_peer_.size());
}

namespace {

// Made on the thread that starts the call and run on the one that ends it, which gRPC orders in
// its own (uninstrumented) code: the fields are atomics so that ThreadSanitizer sees the order
// too.
class CancellationInterceptor final : public grpc::experimental::Interceptor {
 public:
  CancellationInterceptor(grpc::experimental::ServerRpcInfo* info, Listener& listener) {
    info_.store(info, std::memory_order_release);
    listener_.store(&listener, std::memory_order_release);
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    // POST_RECV_CLOSE: the call has ended, and whether it was cancelled is known.
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::POST_RECV_CLOSE)) {
      const grpc::ServerContextBase& context =
          *info_.load(std::memory_order_acquire)->server_context();
      if (context.IsCancelled() && std::chrono::system_clock::now() < deadline_of(context)) {
        listener_.load(std::memory_order_acquire)->call_cancelled_by_client(context.peer());
      }
    }
    methods->Proceed();
  }

 private:
  std::atomic<grpc::experimental::ServerRpcInfo*> info_;
  std::atomic<Listener*> listener_;
};

}  // namespace

grpc::experimental::Interceptor* CancellationReporter::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  return new CancellationInterceptor(info, listener_);
}

}  // namespace torqued::server
