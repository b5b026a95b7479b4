// RPC completion bookkeeping (see unary_call.hpp).
#include "server/transport/unary_call.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <sstream>
#include <string_view>
#include <thread>
#include <utility>

#include "engine/model/quoted.hpp"

namespace torqued::server {

UnaryCall::UnaryCall(grpc::CallbackServerContext* context, MethodId method, Metrics& metrics,
                     MemoryBudget* budget)
    : context_(context),
      reactor_(new UnaryReactor),
      method_(method),
      metrics_(&metrics),
      budget_(budget),
      start_(metrics.start()) {
  metrics.rpc_started(method);
}

grpc::Status UnaryCall::reserve(std::size_t bytes, const std::string& what) const {
  if (budget_ == nullptr || reactor_->memory.add(*budget_, bytes)) return grpc::Status::OK;
  return {grpc::StatusCode::RESOURCE_EXHAUSTED, budget_->refusal(what, bytes)};
}

grpc::Status UnaryCall::reserve_in_turn(Reservation& reservation, std::size_t bytes,
                                        const std::string& what) const {
  // Short enough to add nothing noticeable to a wait, long enough to cost no CPU.
  constexpr std::chrono::milliseconds kPoll(5);
  if (budget_ == nullptr) return grpc::Status::OK;
  if (bytes > budget_->capacity()) {
    return {grpc::StatusCode::RESOURCE_EXHAUSTED, budget_->refusal(what, bytes)};
  }
  while (!reservation.add(*budget_, bytes)) {
    if (grpc::Status alive = check_alive(); !alive.ok()) return alive;
    std::this_thread::sleep_for(kPoll);
  }
  return grpc::Status::OK;
}

std::chrono::system_clock::time_point deadline_of(const grpc::ServerContextBase& context) {
  using std::chrono::system_clock;
  const gpr_timespec deadline = gpr_convert_clock_type(context.raw_deadline(), GPR_CLOCK_REALTIME);
  constexpr std::int64_t kLastSecond =
      std::chrono::duration_cast<std::chrono::seconds>(system_clock::duration::max()).count() - 1;
  if (deadline.tv_sec >= kLastSecond) return system_clock::time_point::max();
  return system_clock::time_point(std::chrono::duration_cast<system_clock::duration>(
      std::chrono::seconds(deadline.tv_sec) + std::chrono::nanoseconds(deadline.tv_nsec)));
}

std::string canonical_peer(std::string_view uri) {
  std::string peer(uri);
  for (const auto& [encoded, plain] : {std::pair{"%5B", "["}, std::pair{"%5D", "]"}}) {
    if (const auto at = peer.find(encoded); at != std::string::npos) peer.replace(at, 3, plain);
  }
  constexpr std::string_view kMapped = "ipv6:[::ffff:";
  if (peer.rfind(kMapped, 0) == 0 && peer.find('.') != std::string::npos) {
    const std::size_t close = peer.find(']');
    if (close != std::string::npos) {
      return "ipv4:" + peer.substr(kMapped.size(), close - kMapped.size()) + peer.substr(close + 1);
    }
  }
  return peer;
}

std::string client_address(const grpc::ServerContextBase& context) {
  const std::string peer = canonical_peer(context.peer());
  for (const std::string_view scheme : {"ipv4:", "ipv6:"}) {
    if (peer.rfind(scheme, 0) != 0) continue;
    std::string host = peer.substr(scheme.size(), peer.rfind(':') - scheme.size());
    if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
    return host;
  }
  return peer;
}

grpc::Status check_alive(const grpc::CallbackServerContext& context) {
  if (context.IsCancelled()) return {grpc::StatusCode::CANCELLED, "the call was cancelled"};
  if (std::chrono::system_clock::now() >= deadline_of(context)) {
    return {grpc::StatusCode::DEADLINE_EXCEEDED, "the deadline passed before the work was done"};
  }
  return grpc::Status::OK;
}

CallLimit call_limit(const grpc::CallbackServerContext* context, double max_call_seconds) {
  return {context,
          max_call_seconds > 0
              ? std::chrono::system_clock::now() +
                    std::chrono::duration_cast<std::chrono::system_clock::duration>(
                        std::chrono::duration<double>(max_call_seconds))
              : std::chrono::system_clock::time_point::max(),
          max_call_seconds};
}

bool call_should_stop(const void* state) {
  return !check_alive(*static_cast<const CallLimit*>(state)).ok();
}

grpc::Status check_alive(const CallLimit& limit) {
  if (grpc::Status alive = check_alive(*limit.context); !alive.ok()) return alive;
  if (std::chrono::system_clock::now() >= limit.server_deadline) {
    std::ostringstream message;
    message << "the call ran past the server's limit of " << limit.server_seconds
            << " s of work per call (--max-call-seconds)";
    return {grpc::StatusCode::DEADLINE_EXCEEDED, message.str()};
  }
  return grpc::Status::OK;
}

grpc::Status bounded(const grpc::Status& status) {
  constexpr std::size_t kMaxMessageBytes = 1024;
  std::string message = printable(status.error_message());
  if (message.size() > kMaxMessageBytes) {
    message = std::string(utf8_prefix(message, kMaxMessageBytes)) + "... (message cut at " +
              std::to_string(kMaxMessageBytes) + " bytes)";
  }
  return {status.error_code(), message};
}

grpc::ServerUnaryReactor* UnaryCall::finish(const grpc::Status& full_status) const {
  const grpc::Status status = bounded(full_status);
  metrics_->rpc_handled(method_, status.error_code(), start_);
  if (!status.ok()) {
    spdlog::warn("{} from {}: {} ({})", rpc_method(method_).name, context_->peer(),
                 status_code_name(status.error_code()), status.error_message());
  } else if (spdlog::should_log(spdlog::level::debug)) {
    spdlog::debug("{} from {}: OK", rpc_method(method_).name, context_->peer());
  }
  grpc::ServerUnaryReactor* reactor = reactor_;
  reactor_->finish(status);  // the reactor may be deleted from here on
  return reactor;
}

}  // namespace torqued::server
