// ControlService.Mpc: the model-predictive-control stream (see mpc_stream.hpp).
#include "server/services/mpc_stream.hpp"

#include <spdlog/spdlog.h>

#include <chrono>

#include "server/base/wire_counts.hpp"
#include "server/compute/batch_runner.hpp"
#include "server/transport/byte_buffers.hpp"

namespace torqued::server {

MpcReactor::MpcReactor(ControlService& service, grpc::CallbackServerContext* context,
                       const grpc::Status& admission)
    : service_(service), context_(context), start_(service.metrics_.start()) {
  service.metrics_.rpc_started(service.mpc_method_);
  if (!admission.ok()) {
    spdlog::warn("Mpc from {}: {} ({})", context->peer(), status_code_name(admission.error_code()),
                 admission.error_message());
    finished_ = true;
    finish(admission);
    return;
  }
  // Under the service's lock: drain() cannot run before the read has started.
  order_.before_operation();
  StartRead(&read_buffer_);
}

void MpcReactor::OnReadDone(bool ok) {
  order_.in_reaction();
  grpc::Status end;
  {
    std::lock_guard lock(mutex_);
    if (finished_) return;  // a message that arrived after draining ended the stream
    if (ok) {
      working_ = true;
    } else {
      read_closed_ = true;
      if (!should_finish(end)) return;
    }
  }
  if (!ok) return finish(end);
  std::vector<Executor::Task> tasks;
  tasks.emplace_back([this] {
    // The solver's buffers are freed once the answer's write has started (the reactor may be
    // gone from then on: a local, not a member).
    SolveRemains remains;
    answer(compute(remains));
  });
  if (!service_.executor_.try_submit(tasks, client_address(*context_))) {
    answer(queue_full(service_.executor_));
  }
}

void MpcReactor::OnWriteDone(bool ok) {
  order_.in_reaction();
  grpc::Status end;
  bool read = false;
  {
    std::lock_guard lock(mutex_);
    working_ = false;
    message_memory_.reset();
    response_.Clear();
    if (!ok) {
      write_failed_ = true;
      read_closed_ = true;
    }
    read = !should_finish(end);
    starting_read_ = read;
  }
  if (!read) return finish(end);
  order_.before_operation();
  StartRead(&read_buffer_);
  {
    std::lock_guard lock(mutex_);
    starting_read_ = false;
    if (!should_finish(end)) return;
  }
  finish(end);
}

void MpcReactor::OnDone() {
  order_.in_reaction();
  {
    std::lock_guard lock(service_.streams_mutex_);
    service_.streams_.erase(this);
  }
  delete this;
}

void MpcReactor::drain() {
  grpc::Status end;
  {
    std::lock_guard lock(mutex_);
    draining_ = true;
    if (!should_finish(end)) return;
  }
  finish(end);
}

bool MpcReactor::should_finish(grpc::Status& status) {
  if (finished_ || working_ || starting_read_ || !(read_closed_ || draining_)) return false;
  finished_ = true;
  if (context_->IsCancelled() || write_failed_) {
    status = {grpc::StatusCode::CANCELLED, "the stream was cancelled"};
  } else if (!read_closed_) {
    status = {grpc::StatusCode::UNAVAILABLE,
              "the server is shutting down; open a new stream (to another replica)"};
  } else {
    status = grpc::Status::OK;
  }
  return true;
}

void MpcReactor::finish(const grpc::Status& status) {
  service_.metrics_.rpc_handled(service_.mpc_method_, status.error_code(), start_);
  if (spdlog::should_log(spdlog::level::debug)) {
    spdlog::debug("Mpc from {}: {} after {} messages", context_->peer(),
                  status_code_name(status.error_code()), messages_read_);
  }
  order_.before_operation();
  Finish(status);  // the reactor may be deleted from here on
}

grpc::Status MpcReactor::compute(SolveRemains& remains) {
  ++messages_read_;
  const std::string message = "message " + std::to_string(messages_read_);
  if (grpc::Status alive = check_alive(*context_); !alive.ok()) return alive;
  if (const std::size_t bytes = decoded_bytes(read_buffer_, v1::MpcRequest::descriptor());
      !message_memory_.add(service_.budget_, bytes)) {
    return {grpc::StatusCode::RESOURCE_EXHAUSTED, service_.budget_.refusal(message, bytes)};
  }
  if (grpc::Status decoded = decode(read_buffer_, message, request_); !decoded.ok()) {
    return decoded;
  }
  response_.set_sequence(request_.sequence());
  const auto find_model = [this](const std::string& id, const std::string& field,
                                 RegisteredModelPtr& entry) {
    return service_.find_model(id, field, entry);
  };
  const std::chrono::steady_clock::time_point planning_start = std::chrono::steady_clock::now();
  if (grpc::Status s =
          window_.prepare(service_.planning_, find_model, service_.executor_.workers(), request_);
      !s.ok()) {
    return s;
  }
  v1::SolveResponse& solution = *response_.mutable_solution();
  if (grpc::Status s = service_.solve_in_call(*context_, window_.plan(),
                                              std::chrono::steady_clock::now() - planning_start,
                                              solution, remains);
      !s.ok()) {
    response_.clear_solution();
    return s;
  }
  window_.commit(request_, solution, response_);
  return grpc::Status::OK;
}

void MpcReactor::answer(const grpc::Status& full_status) {
  const grpc::Status status = bounded(full_status);
  if (!status.ok()) {
    const std::uint64_t sequence = response_.sequence();
    response_.Clear();
    response_.set_sequence(sequence);
    response_.mutable_status()->set_code(status.error_code());
    response_.mutable_status()->set_message(status.error_message());
    if (status.error_code() != grpc::StatusCode::CANCELLED) {
      spdlog::warn("Mpc message {} from {}: {} ({})", messages_read_, context_->peer(),
                   status_code_name(status.error_code()), status.error_message());
    }
  }
  if (!encode(response_, &write_buffer_).ok()) {
    v1::MpcResponse failed;
    failed.set_sequence(response_.sequence());
    failed.mutable_status()->set_code(grpc::StatusCode::INTERNAL);
    failed.mutable_status()->set_message("the response could not be encoded");
    encode(failed, &write_buffer_);
  }
  // working_ holds Finish off until OnWriteDone.
  order_.before_operation();
  StartWrite(&write_buffer_);
}

}  // namespace torqued::server
