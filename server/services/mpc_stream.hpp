// One open ControlService.Mpc stream: model predictive control over a bidirectional stream. The
// stream holds a problem (a planned SolveRequest) and its last solution; each message is solved
// as one task of the executor (its knots spread over the free workers like Solve's), warm-started
// from the last solution shifted by the knots elapsed since the last message, and answered with
// the first control and its gains (control.proto's MpcRequest and MpcResponse).
//
// Messages are taken one at a time: a message is read, computed and its answer written before the
// next read starts, so a controller's ticks are answered in order and a client that does not read
// its answers holds one of them, not more. A failing message is answered with its status and the
// stream keeps the problem and solution it had.
//
// Lifetime, as session_stream.hpp states it: reads, writes and Finish are decided under the lock
// and started outside it; Finish is never decided while a read decided is not yet started
// (`starting_read_`), and it is the last thing a thread does with the reactor.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "server/services/control_service.hpp"
#include "server/services/mpc_window.hpp"
#include "server/transport/reactor_order.hpp"

namespace torqued::server {

class MpcReactor final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  // Starts reading, or ends the stream at once with `admission` when it is not OK. `service`
  // outlives the stream (the server waits for open streams to end).
  MpcReactor(ControlService& service, grpc::CallbackServerContext* context,
             const grpc::Status& admission);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone() override;

  // Stop reading: answer the message being computed, then end the stream with UNAVAILABLE.
  void drain();

 private:
  // On an executor worker: the message read, solved into response_, the solver's buffers left in
  // `remains`.
  grpc::Status compute(SolveRemains& remains);
  // Encodes response_ (or `status` in its place) and starts writing it.
  void answer(const grpc::Status& status);
  // Under the lock: whether the stream should end now, and with which status.
  bool should_finish(grpc::Status& status);
  void finish(const grpc::Status& status);

  ControlService& service_;
  grpc::CallbackServerContext* const context_;
  const Clock::time_point start_;
  grpc::ByteBuffer read_buffer_;
  grpc::ByteBuffer write_buffer_;
  std::uint64_t messages_read_ = 0;
  v1::MpcRequest request_;
  v1::MpcResponse response_;
  Reservation message_memory_;  // the message's decoding and answer, until it is written
  MpcWindow window_;

  std::mutex mutex_;
  bool working_ = false;  // a message is computed or its answer written
  bool starting_read_ = false;
  bool read_closed_ = false;  // the client half-closed, or the stream broke
  bool write_failed_ = false;
  bool draining_ = false;
  bool finished_ = false;
  ReactorOrder order_;
};

}  // namespace torqued::server
