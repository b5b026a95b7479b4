// The health service and its Watch streams (see health_service.hpp).
#include "server/services/health_service.hpp"

#include "server/services/request_checks.hpp"
#include "server/transport/byte_buffers.hpp"
#include "server/transport/reactor_order.hpp"
#include "server/transport/unary_call.hpp"

namespace torqued::server {

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

// One Watch stream: writes the current status, then every change, until the client leaves or
// the server shuts down.
class HealthService::Watcher : public grpc::ServerWriteReactor<HealthCheckResponse> {
 public:
  // An unknown service stays SERVICE_UNKNOWN whatever the server's status.
  Watcher(HealthService* service, bool known, HealthCheckResponse::ServingStatus status)
      : service_(service), known_(known) {
    std::lock_guard lock(mutex_);
    pending_ = known ? status : HealthCheckResponse::SERVICE_UNKNOWN;
    write_locked();
  }

  // Called with the service's mutex held.
  void update(HealthCheckResponse::ServingStatus status, bool finish) {
    std::lock_guard lock(mutex_);
    if (known_) pending_ = status;
    finish_after_write_ = finish_after_write_ || finish;
    if (!writing_) write_locked();
  }

  void OnWriteDone(bool ok) override {
    order_.in_reaction();
    std::lock_guard lock(mutex_);
    writing_ = false;
    if (!ok) {
      finish_locked(grpc::Status::OK);
      return;
    }
    write_locked();
  }

  void OnCancel() override {
    order_.in_reaction();
    std::lock_guard lock(mutex_);
    finish_locked(grpc::Status::CANCELLED);
  }

  void OnDone() override {
    order_.in_reaction();
    {
      std::lock_guard lock(service_->mutex_);
      service_->watchers_.erase(this);
    }
    delete this;
  }

 private:
  // Writes the pending status if it differs from the last one sent; finishes when asked to and
  // nothing is left to write.
  void write_locked() {
    if (finished_) return;
    if (pending_ != sent_) {
      sent_ = pending_;
      response_.set_status(sent_);
      writing_ = true;
      order_.before_operation();
      StartWrite(&response_);
    } else if (finish_after_write_) {
      finish_locked(grpc::Status::OK);
    }
  }
  void finish_locked(const grpc::Status& status) {
    if (finished_) return;
    finished_ = true;
    order_.before_operation();
    Finish(status);
  }

  HealthService* service_;
  const bool known_;
  std::mutex mutex_;
  HealthCheckResponse response_;
  HealthCheckResponse::ServingStatus pending_ = HealthCheckResponse::UNKNOWN;
  HealthCheckResponse::ServingStatus sent_ = static_cast<HealthCheckResponse::ServingStatus>(-1);
  bool writing_ = false;
  bool finish_after_write_ = false;
  bool finished_ = false;
  ReactorOrder order_;
};

HealthService::HealthService() : status_(HealthCheckResponse::NOT_SERVING) {}

bool HealthService::known(const std::string& service) {
  return service.empty() || service == "torqued.v1.ModelService" ||
         service == "torqued.v1.DynamicsService";
}

void HealthService::set_serving(bool serving) {
  std::lock_guard lock(mutex_);
  if (shut_down_) return;
  status_ = serving ? HealthCheckResponse::SERVING : HealthCheckResponse::NOT_SERVING;
  for (Watcher* w : watchers_) w->update(status_, false);
}

void HealthService::shut_down() {
  std::lock_guard lock(mutex_);
  shut_down_ = true;
  status_ = HealthCheckResponse::NOT_SERVING;
  for (Watcher* w : watchers_) w->update(status_, true);
}

grpc::ServerUnaryReactor* HealthService::Check(grpc::CallbackServerContext* context,
                                               const grpc::ByteBuffer* request_bytes,
                                               grpc::ByteBuffer* response_bytes) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  HealthCheckRequest request;
  grpc::Status status = decode(*request_bytes, "request", request);
  if (status.ok() && !known(request.service())) {
    status = {grpc::StatusCode::NOT_FOUND,
              "service: unknown service " + quote_input(request.service())};
  }
  if (status.ok()) {
    HealthCheckResponse response;
    {
      std::lock_guard lock(mutex_);
      response.set_status(status_);
    }
    status = encode(response, response_bytes);
  }
  reactor->Finish(bounded(status));
  return reactor;
}

grpc::ServerWriteReactor<HealthCheckResponse>* HealthService::Watch(
    grpc::CallbackServerContext*, const HealthCheckRequest* request) {
  std::lock_guard lock(mutex_);
  auto* watcher = new Watcher(this, known(request->service()), status_);
  if (shut_down_) watcher->update(status_, true);
  watchers_.insert(watcher);
  return watcher;
}

}  // namespace torqued::server
