// One unary RPC in flight on the callback API: its reactor, its metrics and its logging. Every
// handler ends through Call::finish, so the grpc_server_* metrics and the per-request log lines
// cannot be forgotten on any path.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>

#include "server/metrics.hpp"

namespace torqued::server {

// CANCELLED or DEADLINE_EXCEEDED when the work of a call (or of a stream's message) should not
// start (or go on); else OK.
grpc::Status check_alive(const grpc::CallbackServerContext& context);

// A call's work and when it must stop: the client's deadline, or the server's own bound on one
// call's work (--max-call-seconds), whichever comes first.
struct CallLimit {
  const grpc::CallbackServerContext* context;
  std::chrono::system_clock::time_point server_deadline;
  double server_seconds;  // for the message: the bound in seconds
};

// check_alive(), and DEADLINE_EXCEEDED naming --max-call-seconds once the server's bound passed.
grpc::Status check_alive(const CallLimit& limit);

// `status` with its message cut to 1 KB (at a UTF-8 character boundary) and its control
// characters written as \xNN: statuses travel in HTTP/2 trailers, which gRPC bounds, and a
// message that quotes a client's huge input would otherwise turn the answer into a transport
// error; and clients print messages that quote names a client chose, where a newline or a
// terminal escape sequence would forge output.
grpc::Status bounded(const grpc::Status& status);

class Call {
 public:
  // Counts the call as started.
  Call(grpc::CallbackServerContext* context, Method method, Metrics& metrics);

  grpc::CallbackServerContext* context() const { return context_; }
  grpc::ServerUnaryReactor* reactor() const { return reactor_; }
  Method method() const { return method_; }
  Metrics& metrics() const { return *metrics_; }

  grpc::Status check_alive() const { return server::check_alive(*context_); }

  // Records the outcome, logs it (debug for success, warn for errors) and completes the RPC.
  // Returns the reactor, for handlers that finish inline.
  grpc::ServerUnaryReactor* finish(const grpc::Status& status) const;

 private:
  grpc::CallbackServerContext* context_;
  grpc::ServerUnaryReactor* reactor_;
  Method method_;
  Metrics* metrics_;
  Clock::time_point start_;
};

}  // namespace torqued::server
