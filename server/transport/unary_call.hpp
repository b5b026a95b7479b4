// One unary RPC in flight on the callback API: its reactor, its metrics and its logging. Every
// handler ends through UnaryCall::finish, so the grpc_server_* metrics and the per-request log
// lines cannot be forgotten on any path.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

#include "server/base/memory_budget.hpp"
#include "server/base/metrics.hpp"
#include "server/transport/reactor_order.hpp"

namespace torqued::server {

// The call's deadline, time_point::max() when it has none. gRPC's own conversion
// (ServerContextBase::deadline()) overflows system_clock's 64-bit nanoseconds for deadlines more
// than about 292 years after 1970 (grpc-go sends `grpc-timeout: 2562047H` for its longest
// duration) and returns a time in the past; this one saturates, so a far-future deadline is a long
// one.
std::chrono::system_clock::time_point deadline_of(const grpc::ServerContextBase& context);

// gRPC's URI of a call's client ("ipv4:10.0.0.1:5000", "ipv6:[::1]:5000") in one spelling: an
// IPv6 address's brackets plain (gRPC percent-encodes them) and an IPv4-mapped IPv6 address (a
// client of a dual-stack socket) as the IPv4 address it is.
std::string canonical_peer(std::string_view peer);

// The address of a call's client without its port ("10.0.0.1", "::1"; gRPC's peer URI
// otherwise): the calls of one address share its limits.
std::string client_address(const grpc::ServerContextBase& context);

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

// The limit of a call's work starting now, bounded by the server at `max_call_seconds` (0: none).
CallLimit call_limit(const grpc::CallbackServerContext* context, double max_call_seconds);

// check_alive(), and DEADLINE_EXCEEDED naming --max-call-seconds once the server's bound passed.
grpc::Status check_alive(const CallLimit& limit);

// The engine's Interruption test of a call's work: `state` is its CallLimit.
bool call_should_stop(const void* state);

// `status` with its message cut to 1 KB (at a UTF-8 character boundary) and its control
// characters written as \xNN: statuses travel in HTTP/2 trailers, which gRPC bounds, and a
// message that quotes a client's huge input would otherwise turn the answer into a transport
// error; and clients print messages that quote names a client chose, where a newline or a
// terminal escape sequence would forge output.
grpc::Status bounded(const grpc::Status& status);

// The reactor of a unary call. It holds what the call reserved of the memory budget until gRPC
// is done with the call: its answer sent, or its client gone (a client that never reads its
// answer holds the reservation, not more, for as long as its connection lasts).
class UnaryReactor final : public grpc::ServerUnaryReactor {
 public:
  void finish(const grpc::Status& status) {
    order_.before_operation();
    Finish(status);
  }
  void OnDone() override {
    order_.in_reaction();
    delete this;
  }

  Reservation memory;

 private:
  ReactorOrder order_;
};

class UnaryCall {
 public:
  // Counts the call as started. Its large allocations are reserved from `budget` (when given).
  UnaryCall(grpc::CallbackServerContext* context, MethodId method, Metrics& metrics,
            MemoryBudget* budget = nullptr);

  grpc::CallbackServerContext* context() const { return context_; }
  grpc::ServerUnaryReactor* reactor() const { return reactor_; }

  // Reserves `bytes` of the budget for `what` until the call ends; RESOURCE_EXHAUSTED saying so
  // when they do not fit.
  grpc::Status reserve(std::size_t bytes, const std::string& what) const;
  // Reserves `bytes` of the budget into `reservation` (which the caller releases when done),
  // waiting its turn while the budget is taken: it polls every few milliseconds until the bytes
  // fit, or the call's deadline passes, or its client goes away (a drained server cancels it),
  // which end it with that status. Only bytes that could never fit are RESOURCE_EXHAUSTED, at
  // once. For work on a thread of its own: it blocks the thread while it waits.
  grpc::Status reserve_in_turn(Reservation& reservation, std::size_t bytes,
                               const std::string& what) const;
  // Holds `reservation` until the call ends.
  void hold(Reservation&& reservation) const { reactor_->memory.merge(std::move(reservation)); }
  MethodId method() const { return method_; }
  Metrics& metrics() const { return *metrics_; }

  grpc::Status check_alive() const { return server::check_alive(*context_); }

  // Records the outcome, logs it (debug for success, warn for errors) and completes the RPC.
  // Returns the reactor, for handlers that finish inline.
  grpc::ServerUnaryReactor* finish(const grpc::Status& status) const;

 private:
  grpc::CallbackServerContext* context_;
  UnaryReactor* reactor_;
  MethodId method_;
  Metrics* metrics_;
  MemoryBudget* budget_;
  Clock::time_point start_;
};

}  // namespace torqued::server
