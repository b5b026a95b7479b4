// RPC completion bookkeeping (see call.hpp).
#include "server/call.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <sstream>

#include "engine/model/quoted.hpp"

namespace torqued::server {

Call::Call(grpc::CallbackServerContext* context, Method method, Metrics& metrics)
    : context_(context),
      reactor_(context->DefaultReactor()),
      method_(method),
      metrics_(&metrics),
      start_(metrics.start()) {
  metrics.rpc_started(method);
}

grpc::Status check_alive(const grpc::CallbackServerContext& context) {
  if (context.IsCancelled()) return {grpc::StatusCode::CANCELLED, "the call was cancelled"};
  if (std::chrono::system_clock::now() >= context.deadline()) {
    return {grpc::StatusCode::DEADLINE_EXCEEDED, "the deadline passed before the work was done"};
  }
  return grpc::Status::OK;
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

grpc::ServerUnaryReactor* Call::finish(const grpc::Status& full_status) const {
  const grpc::Status status = bounded(full_status);
  metrics_->rpc_handled(method_, status.error_code(), start_);
  if (!status.ok()) {
    spdlog::warn("{} from {}: {} ({})", method_name(method_), context_->peer(),
                 status_code_name(status.error_code()), status.error_message());
  } else if (spdlog::should_log(spdlog::level::debug)) {
    spdlog::debug("{} from {}: OK", method_name(method_), context_->peer());
  }
  reactor_->Finish(status);
  return reactor_;
}

}  // namespace torqued::server
