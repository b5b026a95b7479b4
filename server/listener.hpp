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
//   than --max-resets-per-second on average over 10 s: its backlog goes with it, and its address
//   may not connect again for 10 s (an attacker reconnects at once).
// Closing is a shutdown(2) of the socket, which gRPC sees as the peer's end of the connection. The
// socket belongs to gRPC once handed over, and gRPC closes it when the connection ends, after which
// the descriptor's number may be reused; the listener therefore identifies each connection by its
// descriptor and both of its addresses, checks them before a shutdown, and forgets connections
// whose descriptor no longer matches (checked every second).
#pragma once

#include <grpcpp/server_builder.h>
#include <grpcpp/support/server_interceptor.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "server/metrics.hpp"

namespace torqued::server {

struct ConnectionLimits {
  int max_connections = 512;
  int max_connections_per_peer = 32;
  double max_resets_per_second = 100.0;
};

class Listener {
 public:
  // Binds every address `host` resolves to (":: " or "0.0.0.0": every interface) on `port` (0: a
  // free one, the same for every address). Throws std::runtime_error naming the address when it
  // cannot.
  Listener(const std::string& host, int port, ConnectionLimits limits, Metrics& metrics);
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
  };

  void accept_loop();
  void accept_one(int listener_fd);
  // Drops the connections whose descriptor no longer is theirs (gRPC closed them).
  void forget_ended_connections();
  void forget_ended_locked();
  bool still_open(const Connection& connection) const;
  // Logs a refused connection, at most once a second.
  void log_refusal(const std::string& peer, const std::string& flag);

  const ConnectionLimits limits_;
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
  // Addresses whose connection was closed for its resets, and until when they are refused.
  std::unordered_map<std::string, std::chrono::steady_clock::time_point> penalized_until_;
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
