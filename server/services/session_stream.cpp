// DynamicsService.Session: the bidirectional stream (see session_stream.hpp).
#include "server/services/session_stream.hpp"

#include <spdlog/spdlog.h>

namespace torqued::server {

SessionReactor::SessionReactor(DynamicsService& service, grpc::CallbackServerContext* context,
                               int max_queued_responses, const grpc::Status& admission)
    : service_(service),
      context_(context),
      start_(service.metrics().start()),
      max_queued_responses_(static_cast<std::size_t>(max_queued_responses)) {
  service.metrics().rpc_started(service.session_method_);
  if (!admission.ok()) {
    spdlog::warn("Session from {}: {} ({})", context->peer(),
                 status_code_name(admission.error_code()), admission.error_message());
    Actions refused;
    refused.finish = finished_ = true;
    refused.status = admission;
    apply(refused);
    return;
  }
  reading_ = true;
  order_.before_operation();
  StartRead(&read_buffer_);
}

void SessionReactor::OnReadDone(bool ok) {
  order_.in_reaction();
  std::unique_ptr<v1::SessionResponse> response;
  {
    std::lock_guard lock(mutex_);
    reading_ = false;
    if (finished_) return;  // a message that arrived after draining ended the stream
    if (!ok) {
      read_closed_ = true;
    } else {
      computing_ = true;
      response = take_spare();
    }
  }
  if (response) {
    process(std::move(response));
  } else {
    Actions actions;
    {
      std::lock_guard lock(mutex_);
      plan_next(actions);
    }
    apply(actions);
  }
}

void SessionReactor::OnWriteDone(bool ok) {
  order_.in_reaction();
  Actions actions;
  {
    std::lock_guard lock(mutex_);
    writing_ = false;
    ready_.front()->Clear();
    spare_.push_back(std::move(ready_.front()));
    ready_.pop_front();
    ready_memory_.pop_front();
    if (!ok) {
      // The client is gone: nothing more can be written, what is queued is dropped.
      write_failed_ = true;
      read_closed_ = true;
      while (!ready_.empty()) {
        spare_.push_back(std::move(ready_.front()));
        ready_.pop_front();
      }
      ready_memory_.clear();
    }
    plan_next(actions);
  }
  apply(actions);
}

void SessionReactor::OnDone() {
  order_.in_reaction();
  {
    std::lock_guard lock(service_.sessions_mutex_);
    service_.sessions_.erase(this);
  }
  delete this;
}

void SessionReactor::drain() {
  Actions actions;
  {
    std::lock_guard lock(mutex_);
    draining_ = true;
    plan_next(actions);
  }
  apply(actions);
}

std::unique_ptr<v1::SessionResponse> SessionReactor::take_spare() {
  if (spare_.empty()) return std::make_unique<v1::SessionResponse>();
  std::unique_ptr<v1::SessionResponse> response = std::move(spare_.back());
  spare_.pop_back();
  return response;
}

void SessionReactor::process(std::unique_ptr<v1::SessionResponse> response) {
  ++messages_read_;
  if (const std::size_t bytes = decoded_bytes(read_buffer_, v1::SessionRequest::descriptor());
      !message_memory_.add(service_.budget(), bytes)) {
    return complete(std::move(response), {grpc::StatusCode::RESOURCE_EXHAUSTED,
                                          service_.budget().refusal(
                                              "message " + std::to_string(messages_read_), bytes)});
  }
  if (grpc::Status decoded =
          decode(read_buffer_, "message " + std::to_string(messages_read_), request_);
      !decoded.ok()) {
    spdlog::warn("Session message from {}: {}", context_->peer(), decoded.error_message());
    return complete(std::move(response), decoded);
  }
  if (!request_.model_id().empty()) model_id_ = request_.model_id();
  response->set_sequence(request_.sequence());
  v1::SessionResponse* answer = response.get();
  if (visit_session_request(request_, *answer, [&](auto, const auto& request, auto* result) {
        serve(request, result, std::move(response));
      })) {
    return;
  }
  if (request_.request_case() == v1::SessionRequest::kEcho) {
    const grpc::Status status =
        service_.echo(request_.echo(), response->mutable_echo(), message_memory_);
    return complete(std::move(response), status);
  }
  complete(std::move(response),
           {grpc::StatusCode::INVALID_ARGUMENT,
            "request: no request set in SessionRequest (one of inverse_dynamics, "
            "forward_dynamics, ..., echo)"});
}

template <typename Request, typename Response>
void SessionReactor::serve(const Request& request, Response* result,
                           std::unique_ptr<v1::SessionResponse> response) {
  int states = 0;
  PlannedWork job;
  const grpc::Status status =
      service_.prepare_batch(request.model_id().empty() ? model_id_ : request.model_id(), request,
                             result, states, job, message_memory_);
  if (!status.ok()) {
    spdlog::warn("Session {} message {} from {}: {} ({})",
                 rpc_method(DynamicsService::method_of(*Request::descriptor())).name,
                 response->sequence(), context_->peer(), status_code_name(status.error_code()),
                 status.error_message());
    return complete(std::move(response), status);
  }
  // Owned by the runner's callback until the batch ends; the callback always runs.
  v1::SessionResponse* pending = response.release();
  service_.runner().run(
      context_, states, job.algorithm, std::move(job.kernel),
      [this, pending, result, states](grpc::Status s) {
        if (s.ok()) s = check_results_finite(*result, states);
        complete(std::unique_ptr<v1::SessionResponse>(pending), s);
      },
      job.cost);
}

void SessionReactor::complete(std::unique_ptr<v1::SessionResponse> response,
                              const grpc::Status& full_status) {
  const grpc::Status status = bounded(full_status);
  if (!status.ok()) {
    response->clear_response();
    v1::CallStatus* s = response->mutable_status();
    s->set_code(status.error_code());
    s->set_message(status.error_message());
  }
  Actions actions;
  {
    std::lock_guard lock(mutex_);
    computing_ = false;
    if (write_failed_) {
      response->Clear();
      spare_.push_back(std::move(response));
      message_memory_.reset();
    } else {
      ready_.push_back(std::move(response));
      ready_memory_.push_back(std::move(message_memory_));
    }
    plan_next(actions);
  }
  apply(actions);
}

void SessionReactor::plan_next(Actions& actions) {
  if (finished_) return;
  if (!writing_ && !ready_.empty()) {
    writing_ = true;
    actions.write = ready_.front().get();
    ++starting_;
  }
  if (!reading_ && !computing_ && !read_closed_ && !draining_ &&
      ready_.size() < max_queued_responses_) {
    reading_ = true;
    actions.read = true;
    ++starting_;
  }
  if (starting_ == 0 && !computing_ && !writing_ && ready_.empty() && (read_closed_ || draining_)) {
    finished_ = true;
    actions.finish = true;
    if (context_->IsCancelled() || write_failed_) {
      actions.status = {grpc::StatusCode::CANCELLED, "the stream was cancelled"};
    } else if (!read_closed_) {
      actions.status = {grpc::StatusCode::UNAVAILABLE,
                        "the server is shutting down; open a new stream (to another replica)"};
    }
  }
}

void SessionReactor::apply(Actions actions) {
  for (;;) {
    if (actions.write != nullptr) {
      // Only this thread touches write_buffer_ until OnWriteDone: writing_ was set under the lock.
      if (!encode(*actions.write, &write_buffer_).ok()) {
        v1::SessionResponse failed;
        failed.set_sequence(actions.write->sequence());
        failed.mutable_status()->set_code(grpc::StatusCode::INTERNAL);
        failed.mutable_status()->set_message("the response could not be encoded");
        encode(failed, &write_buffer_);
      }
      order_.before_operation();
      StartWrite(&write_buffer_);
    }
    if (actions.read) {
      order_.before_operation();
      StartRead(&read_buffer_);
    }
    if (actions.finish) {
      service_.metrics().rpc_handled(service_.session_method_, actions.status.error_code(), start_);
      if (spdlog::should_log(spdlog::level::debug)) {
        spdlog::debug("Session from {}: {}", context_->peer(),
                      status_code_name(actions.status.error_code()));
      }
      order_.before_operation();
      Finish(actions.status);  // the reactor may be deleted from here on
      return;
    }
    const int started = (actions.write != nullptr ? 1 : 0) + (actions.read ? 1 : 0);
    if (started == 0) return;
    actions = Actions();
    {
      std::lock_guard lock(mutex_);
      starting_ -= started;
      plan_next(actions);
    }
  }
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* DynamicsService::open_session(
    grpc::CallbackServerContext* context) {
  std::lock_guard lock(sessions_mutex_);
  auto* session = new SessionReactor(*this, context, limits_.max_session_queued,
                                     access_.check(*context, session_method_));
  sessions_.insert(session);
  if (draining_) session->drain();
  return session;
}

void DynamicsService::drain() {
  std::lock_guard lock(sessions_mutex_);
  draining_ = true;
  for (SessionReactor* session : sessions_) session->drain();
}

}  // namespace torqued::server
