// The gRPC port's own accept loop. torqued accepts connections itself and hands each one to gRPC
// (grpc::experimental::ExternalConnectionAcceptor, which runs gRPC's TLS and HTTP/2 handshakes on
// it as on a port of its own), because gRPC 1.51 cannot bound what one client does at the
// connection level:
// - it has no limit on connections, in all or per client address: here, a connection past
//   --max-connections or --max-connections-per-peer is closed at once;
// - it has no defence against HTTP/2 rapid reset (CVE-2023-44487; the fix came in 1.56.3 and
//   Debian 12's 1.51.1 does not carry it): a client that opens and resets streams as fast as it
//   can write them makes gRPC create a call for each, faster than they can be run, and their
//   backlog grew by 230 MB/s here. The server counts the calls each connection's client cancels
//   (call_cancelled_by_client(), from every call's end) and closes a connection that cancels more
//   than --max-resets-per-second on average over 10 s: its backlog goes with it. For 10 s, the
//   address's new connections get one second's worth of resets at once, not ten (an attacker
//   reconnects at once).
// - gRPC 1.51 bounds a call's metadata per frame, not per header block: a client that sends one
//   HEADERS frame and then CONTINUATION frames without end makes it keep every header (a
//   "CONTINUATION flood"; two such connections took the server to 3.4 GB in 8 s). No call exists
//   yet to count anything against, so the listener guards the process's memory itself. Every
//   100 ms it compares what the allocator has handed out with what calls and workspaces reserved
//   (memory_budget.hpp): past an eighth of the budget (half gRPC's quota for the transport), the
//   listener closes each connection that received more than 8 MB in the last 100 ms (whatever it
//   sent), and, when that size grows, every connection that received more than 1 MB meanwhile
//   (listener.cpp). For 10 s the address may then open one connection a second, as after resets,
//   and each is closed when it receives more than 1 MB in 100 ms, whatever the process holds.
// Closing is a shutdown(2) of the socket, which gRPC sees as the peer's end of the connection. The
// socket belongs to gRPC once handed over, and gRPC closes it when the connection ends, after which
// the descriptor's number may be reused; the listener therefore identifies each connection by its
// descriptor and both of its addresses, checks them before a shutdown, and forgets connections
// whose descriptor no longer matches (checked every second).
#pragma once

#include <grpcpp/server_builder.h>
#include <grpcpp/support/server_interceptor.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "server/base/memory_budget.hpp"
#include "server/base/metrics.hpp"

namespace torqued::server {

struct ConnectionLimits {
  int max_connections = 512;
  int max_connections_per_peer = 32;
  double max_resets_per_second = 100.0;
  // The process's memory budget (--memory-budget-bytes), for the guard below.
  std::int64_t memory_budget_bytes = 1LL << 30;
};

class Listener {
 public:
  // Binds every address `host` resolves to (":: " or "0.0.0.0": every interface) on `port` (0: a
  // free one, the same for every address). Throws std::runtime_error naming the address when it
  // cannot.
  Listener(const std::string& host, int port, ConnectionLimits limits, const MemoryBudget& calls,
           Metrics& metrics);
  ~Listener();

  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  int port() const { return port_; }

  // Starts accepting, handing connections to `acceptor` (from the builder of the started server).
  void start(std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor);
  // Stops accepting and closes the listening sockets; open connections stay gRPC's.
  void stop();

  // The client of `peer` (gRPC's peer URI of a call, "ipv4:127.0.0.1:5000") cancelled a call:
  // counted against its connection, which is closed when it passes --max-resets-per-second.
  void call_cancelled_by_client(std::string_view peer);

  int open_connections() const;

 private:
  struct Connection {
    int fd;
    std::string peer;   // gRPC's URI of the client's address
    std::string local;  // the address it connected to
    std::string host;   // the client's address without its port, for the per-peer limit
    // Resets allowed now: refilled at max_resets_per_second up to 10 s worth.
    double reset_allowance;
    std::chrono::steady_clock::time_point refilled;
    bool closing = false;
    // Admitted while its address was suspect after a flood: closed when it receives more than
    // 1 MB in one look, whatever the process holds (listener.cpp, kSuspectFloodBytes).
    bool flood_suspect = false;
    // TCP's count of the bytes received, at the memory guard's last look and at the start of its
    // window.
    std::uint64_t received_at_look = 0;
    std::uint64_t received_at_window_start = 0;
  };

  // Binds and listens on `address` (on port_ once it is known); false, with the reason in
  // `failure`, when it cannot.
  bool bind_one(sockaddr_storage address, bool v6_only, std::string& failure);
  void accept_loop();
  void accept_one(int listener_fd);
  // Drops the connections whose descriptor no longer is theirs (gRPC closed them).
  void forget_ended_connections();
  void forget_ended_locked();
  // The memory guard (above), every 100 ms.
  void guard_memory();
  bool still_open(const Connection& connection) const;
  // Logs a refused connection, at most once a second.
  void log_refusal(const std::string& peer, const std::string& flag);

  const ConnectionLimits limits_;
  const MemoryBudget& calls_;
  Metrics& metrics_;
  int port_ = 0;
  std::vector<int> listener_fds_;
  int wake_fd_ = -1;  // an eventfd that ends the accept loop
  // The accept loop's own.
  std::chrono::steady_clock::time_point last_refusal_logged_;
  int refusals_unlogged_ = 0;
  std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor_;
  std::thread thread_;

  mutable std::mutex mutex_;
  std::unordered_map<std::string, Connection> by_peer_;
  std::unordered_map<std::string, int> per_host_;
  // Whether the memory guard looked at the connections' bytes last time; what the process held
  // beyond the calls at the start of its window, and its looks since.
  bool guard_watching_ = false;
  std::int64_t window_start_unreserved_ = 0;
  int window_looks_ = 0;
  // Addresses a connection of which was closed for its resets or its flood. Until `until`, they
  // may open one connection a second, whose calls may reset only a second's worth at once, and
  // which, after a flood, may not receive more than 1 MB in one look even while the process
  // holds little: an attacker reconnecting in a loop would otherwise have every new connection's
  // calls created and cancelled again, or every new connection's header block parsed and freed
  // again (with four floods reconnecting at will, health answered in up to 2.1 s beside two
  // CPU-bound processes; with one connection a second, 0.5-0.9 s). Not refused outright: an
  // address may be shared by honest clients, a NAT's or a health checker's.
  struct Suspicion {
    std::chrono::steady_clock::time_point until;
    bool after_resets = false;
    bool after_flood = false;
    std::chrono::steady_clock::time_point last_admitted;
  };
  std::unordered_map<std::string, Suspicion> suspects_;
};

// Reports each call its client cancelled to the listener, from the end of every call of every
// service: an interceptor is the one place they all pass. A call whose deadline passed is not
// counted: the client did not cancel it. Every service is on the callback API (Server::start
// refuses any other): a synchronous call's IsCancelled(), asked from its interceptor, would run
// the interceptor again, without end.
class CancellationReporter final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit CancellationReporter(Listener& listener) : listener_(listener) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;

 private:
  Listener& listener_;
};

}  // namespace torqued::server
