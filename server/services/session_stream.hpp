// One open DynamicsService.Session stream: a bidirectional reactor that answers each
// SessionRequest with one SessionResponse, in order. Messages are processed one at a time (the
// next read starts when the current message's response is queued), so order holds without
// sequencing; small batches run inline on the gRPC thread that read them, larger ones across the
// executor's workers like unary calls. Responses queue for writing while the next message is read
// and computed; at most kMaxQueuedResponses wait before reading pauses (back-pressure on a client
// that does not read). A failing message is answered with its status and the stream goes on.
//
// Lifetime. gRPC runs OnDone (which deletes the reactor) and then destroys its own stream once
// Finish has completed and every reaction has returned, on whichever thread gets there last.
// Reads, writes and Finish are decided under the lock and started outside it, by reactions and by
// other threads (an executor worker completing a message, the main thread draining). Two rules
// keep every thread off a deleted reactor or stream:
// - Finish is never decided while a read or write that was decided is not yet started
//   (`starting_`): a StartRead issued after Finish could reach a stream gRPC has destroyed. The
//   thread that starts the last such operation decides again, and may then finish.
// - Finish is the last thing a thread does with the reactor.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "server/services/dynamics_rpcs.hpp"
#include "server/services/dynamics_service.hpp"
#include "server/transport/reactor_order.hpp"

namespace torqued::server {

// Messages arrive and leave as bytes (byte_buffers.hpp): a message that does not decode is answered
// with INVALID_ARGUMENT, in its place in the order, and the stream goes on.
class SessionReactor final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  // Starts reading, or ends the stream at once with `admission` when it is not OK (a missing or
  // wrong token: checked once, for the whole stream). `service` outlives the stream (the server
  // waits for open streams to end). At most `max_queued_responses` answers wait to be written
  // before reading pauses.
  SessionReactor(DynamicsService& service, grpc::CallbackServerContext* context,
                 int max_queued_responses, const grpc::Status& admission);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone() override;

  // Stop reading: answer the message being computed, then end the stream with UNAVAILABLE.
  void drain();

 private:
  // What the reactor must start once its lock is released (a StartRead, StartWrite or Finish
  // never runs under the lock).
  struct Actions {
    bool read = false;
    const v1::SessionResponse* write = nullptr;
    bool finish = false;
    grpc::Status status;
  };

  // Computes request_ into `response` and hands it to complete(), now or from a worker.
  void process(std::unique_ptr<v1::SessionResponse> response);
  // One batched request, whose answer goes in `result`, a field of `response`.
  template <typename Request, typename Response>
  void serve(const Request& request, Response* result,
             std::unique_ptr<v1::SessionResponse> response);
  // Queues a computed response and decides what comes next.
  void complete(std::unique_ptr<v1::SessionResponse> response, const grpc::Status& status);
  // Under the lock: the next read, the next write, or the end of the stream.
  void plan_next(Actions& actions);
  // Starts what was decided, then decides again until nothing is left to start; may Finish.
  void apply(Actions actions);
  std::unique_ptr<v1::SessionResponse> take_spare();

  DynamicsService& service_;
  grpc::CallbackServerContext* const context_;
  const Clock::time_point start_;
  const std::size_t max_queued_responses_;
  grpc::ByteBuffer read_buffer_;
  grpc::ByteBuffer write_buffer_;  // the encoding of ready_.front() while it is written
  std::uint64_t messages_read_ = 0;
  v1::SessionRequest request_;
  std::string model_id_;  // the stream's current model (SessionRequest.model_id)

  std::mutex mutex_;
  bool reading_ = false;      // a read is outstanding
  bool computing_ = false;    // request_ is being computed
  bool writing_ = false;      // ready_.front() is being written
  bool read_closed_ = false;  // the client half-closed, or the stream broke
  bool write_failed_ = false;
  bool draining_ = false;
  bool finished_ = false;
  int starting_ = 0;  // reads and writes decided by plan_next() and not yet started
  std::deque<std::unique_ptr<v1::SessionResponse>> ready_;
  // What the message being computed reserved of the memory budget (its decoding and its
  // response), then what each response of ready_ holds until it is written.
  Reservation message_memory_;
  std::deque<Reservation> ready_memory_;
  std::vector<std::unique_ptr<v1::SessionResponse>> spare_;
  ReactorOrder order_;
};

}  // namespace torqued::server
