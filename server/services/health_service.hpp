// grpc.health.v1.Health for the whole server ("") and its two services: NOT_SERVING until the
// model repository and the store are loaded, SERVING then, NOT_SERVING again once draining
// starts. Written here rather than using gRPC's default service, which reports SERVING from the
// moment the port opens. Check is raw (byte_buffers.hpp) so that a request that does not decode is
// INVALID_ARGUMENT.
#pragma once

#include <mutex>
#include <set>

#include "grpc/health/v1/health.grpc.pb.h"

namespace torqued::server {

class HealthService final : public grpc::health::v1::Health::WithRawCallbackMethod_Check<
                                grpc::health::v1::Health::CallbackService> {
 public:
  HealthService();
  // gRPC's shutdown waited for every Watch stream's OnDone, in its own uninstrumented code; taking
  // the lock orders the last one's removal before the set's destruction where ThreadSanitizer sees
  // it.
  ~HealthService() override { std::lock_guard lock(mutex_); }

  void set_serving(bool serving);
  // NOT_SERVING for good, and every Watch stream is completed so shutdown is not held up.
  void shut_down();

  grpc::ServerUnaryReactor* Check(grpc::CallbackServerContext* context,
                                  const grpc::ByteBuffer* request,
                                  grpc::ByteBuffer* response) override;
  grpc::ServerWriteReactor<grpc::health::v1::HealthCheckResponse>* Watch(
      grpc::CallbackServerContext* context,
      const grpc::health::v1::HealthCheckRequest* request) override;

  class Watcher;

 private:
  friend class Watcher;
  static bool known(const std::string& service);

  std::mutex mutex_;
  grpc::health::v1::HealthCheckResponse::ServingStatus status_;
  bool shut_down_ = false;
  std::set<Watcher*> watchers_;
};

}  // namespace torqued::server
