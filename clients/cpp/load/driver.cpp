// Closed- and open-loop drivers for unary calls, Session streams and Mpc streams (see
// driver.hpp).
#include "clients/cpp/load/driver.hpp"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/support/proto_buffer_reader.h>

#include <atomic>
#include <deque>
#include <thread>
#include <vector>

#include "torqued/v1/control.grpc.pb.h"
#include "torqued/v1/dynamics.grpc.pb.h"

namespace torqued::load {
namespace {

// What every driver shares: admission of new calls (warm-up, then the measured window or count),
// recording of measured calls, and waiting for every call in flight to end.
class Control {
 public:
  Control(const RunSpec& spec, Results& results)
      : spec_(spec),
        results_(results),
        start_(Clock::now()),
        measure_start_(start_ + seconds(spec.warmup)),
        measure_end_(measure_start_ + seconds(spec.duration)) {}

  // Whether a call intended at `at` may start; sets `measured` when it counts in the results.
  bool admit(Clock::time_point at, bool& measured) {
    if (stopped_.load(std::memory_order_relaxed)) return false;
    measured = at >= measure_start_;
    if (!measured) return true;
    if (spec_.requests > 0) {
      if (issued_.fetch_add(1, std::memory_order_relaxed) < spec_.requests) return true;
    } else if (at < measure_end_) {
      return true;
    }
    stopped_.store(true);
    return false;
  }

  void record(Clock::time_point intended, Clock::time_point end, bool measured, int code) {
    if (!measured) return;
    results_.latency.record(static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(end - intended).count()));
    results_.codes[code >= 0 && code < 17 ? code : 2].fetch_add(1, std::memory_order_relaxed);
    std::lock_guard lock(mutex_);
    if (end > last_end_) last_end_ = end;
  }

  bool stopped() const { return stopped_.load(); }
  void stop() { stopped_.store(true); }
  Clock::time_point start() const { return start_; }
  Clock::time_point measure_end() const { return measure_end_; }

  // Something in flight (a slot, a stream, a call) began or ended.
  void begin() {
    std::lock_guard lock(mutex_);
    ++active_;
  }
  void end() {
    std::lock_guard lock(mutex_);
    if (--active_ == 0) idle_.notify_all();
  }
  // Returns once nothing is in flight; fills the results' totals.
  void wait_idle() {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [this] { return active_ == 0; });
    results_.calls = results_.latency.count();
    results_.seconds = std::chrono::duration<double>(last_end_ - measure_start_).count();
  }

 private:
  static Clock::duration seconds(double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  }

  const RunSpec spec_;
  Results& results_;
  const Clock::time_point start_, measure_start_, measure_end_;
  std::atomic<bool> stopped_{false};
  std::atomic<std::int64_t> issued_{0};
  std::mutex mutex_;
  std::condition_variable idle_;
  int active_ = 0;
  Clock::time_point last_end_;
};

// Parses a response as a real client would (a unary call's, or a Session answer with an OK
// status); returns the call's status code, INTERNAL when the response does not parse.
int parse_response(const grpc::Status& status, grpc::ByteBuffer& response,
                   google::protobuf::Message& message) {
  if (status.ok() && !grpc::GenericDeserialize<grpc::ProtoBufferReader, google::protobuf::Message>(
                          &response, &message)
                          .ok()) {
    return grpc::StatusCode::INTERNAL;
  }
  return status.error_code();
}

// What a thread wrote before it started a call, ordered before the call's callback where
// ThreadSanitizer sees it: gRPC's core, which runs the callback on a thread of its own after the
// call, is not instrumented. The callback's captures are pointers, kept in the std::function that
// gRPC moves into its call, so its first read is of what gRPC wrote.
class Handoff {
 public:
  void before_start() { started_.store(true, std::memory_order_release); }
  void in_callback() const { static_cast<void>(started_.load(std::memory_order_acquire)); }

 private:
  std::atomic<bool> started_{false};
};

// One unary call in flight: its context, response and timing.
struct UnaryCall {
  grpc::ClientContext context;
  grpc::ByteBuffer response;
  Clock::time_point intended;
  bool measured = false;
  Handoff handoff;
};

class UnaryDriver {
 public:
  UnaryDriver(const std::shared_ptr<grpc::Channel>& channel, const Workload& workload,
              Control& control)
      : stub_(channel), workload_(workload), control_(control) {}

  // Closed loop: each slot starts its next call when the previous one ends.
  void closed_loop(int concurrency) {
    slots_.resize(concurrency);
    for (int s = 0; s < concurrency; ++s) {
      control_.begin();
      slots_[s].message.reset(workload_.response_prototype->New());
      slots_[s].next = static_cast<std::size_t>(s) % workload_.unary_requests.size();
      next_in_slot(slots_[s]);
    }
  }

  // Open loop: calls start at `rate` per second from this thread, each on its own.
  void open_loop(double rate) {
    control_.begin();
    const auto interval = std::chrono::duration<double>(1.0 / rate);
    std::size_t k = 0;
    for (std::int64_t i = 0;; ++i) {
      const Clock::time_point at =
          control_.start() + std::chrono::duration_cast<Clock::duration>(interval * i);
      std::this_thread::sleep_until(at);
      auto call = std::make_unique<UnaryCall>();
      call->intended = at;
      if (!control_.admit(at, call->measured)) break;
      control_.begin();
      UnaryCall* c = call.release();
      c->handoff.before_start();
      stub_.UnaryCall(
          &c->context, workload_.method, {}, &workload_.unary_requests[k], &c->response,
          [this, c](grpc::Status status) {
            c->handoff.in_callback();
            std::unique_ptr<google::protobuf::Message> message(workload_.response_prototype->New());
            finish(*c, status, *message);
            delete c;
            control_.end();
          });
      k = (k + 1) % workload_.unary_requests.size();
    }
    control_.end();
  }

 private:
  struct Slot {
    // Two contexts used in turn, so that a call never destroys the context it completes on.
    std::unique_ptr<UnaryCall> calls[2];
    int current = 0;
    std::size_t next = 0;
    std::unique_ptr<google::protobuf::Message> message;
    Handoff handoff;
  };

  void next_in_slot(Slot& slot) {
    slot.current ^= 1;
    slot.calls[slot.current] = std::make_unique<UnaryCall>();
    UnaryCall& call = *slot.calls[slot.current];
    call.intended = Clock::now();
    if (!control_.admit(call.intended, call.measured)) {
      control_.end();
      return;
    }
    const grpc::ByteBuffer& request = workload_.unary_requests[slot.next];
    slot.next = (slot.next + 1) % workload_.unary_requests.size();
    slot.handoff.before_start();
    stub_.UnaryCall(&call.context, workload_.method, {}, &request, &call.response,
                    [this, &slot](grpc::Status status) {
                      slot.handoff.in_callback();
                      finish(*slot.calls[slot.current], status, *slot.message);
                      next_in_slot(slot);
                    });
  }

  void finish(UnaryCall& call, const grpc::Status& status, google::protobuf::Message& message) {
    control_.record(call.intended, Clock::now(), call.measured,
                    parse_response(status, call.response, message));
  }

  grpc::GenericStub stub_;
  const Workload& workload_;
  Control& control_;
  std::deque<Slot> slots_;
};

// A stream message sent or waiting to be: when it was intended, and whether it counts.
struct Message {
  Clock::time_point intended;
  bool measured = false;
};

// The messages of a Session stream: the pool's requests in turn from `offset`, the first
// carrying the model's id. Every message counts as a call.
class SessionMessages {
 public:
  using Request = v1::SessionRequest;
  using Response = v1::SessionResponse;
  static constexpr bool kFirstIsACall = true;
  static std::string method() {
    return std::string("/") + v1::DynamicsService::service_full_name() + "/Session";
  }

  SessionMessages(const v1::Model& model, const Workload& workload, std::size_t offset)
      : workload_(workload), next_(offset) {
    first_ = workload.session_requests[offset % workload.session_requests.size()];
    first_.set_model_id(model.id());
  }

  // The message to write next; it stays valid until the next call.
  const Request& next() {
    const Request* message = &first_;
    if (sent_first_) message = &workload_.session_requests[next_];
    sent_first_ = true;
    next_ = (next_ + 1) % workload_.session_requests.size();
    return *message;
  }

 private:
  const Workload& workload_;
  Request first_;
  std::size_t next_;
  bool sent_first_ = false;
};

// The messages of an Mpc stream: the pool's problem at `offset`, whose solve is not a call, then
// its ticks, numbered from 1, each Workload::tick_seconds after the one before.
class MpcMessages {
 public:
  using Request = v1::MpcRequest;
  using Response = v1::MpcResponse;
  static constexpr bool kFirstIsACall = false;
  static std::string method() {
    return std::string("/") + v1::ControlService::service_full_name() + "/Mpc";
  }

  MpcMessages(const v1::Model&, const Workload& workload, std::size_t offset)
      : workload_(workload), pooled_(offset % workload.mpc_problems.size()) {
    tick_ = workload.mpc_ticks[pooled_];
  }

  const Request& next() {
    if (sequence_++ == 0) return workload_.mpc_problems[pooled_];
    tick_.set_sequence(sequence_ - 1);
    tick_.set_time(static_cast<double>(sequence_ - 1) * workload_.tick_seconds);
    return tick_;
  }

 private:
  const Workload& workload_;
  const std::size_t pooled_;
  Request tick_;
  std::uint64_t sequence_ = 0;
};

// One stream of `Messages` (SessionMessages or MpcMessages), with typed writes and answers
// received as bytes. Messages wait in `pending_` (closed loop: refilled as answers come; open
// loop: pushed by the pacer), are written one at a time, and are matched with their answers in
// order through `in_flight_`. Writes after a broken write are dropped (their messages are
// recorded with the stream's status when it ends). An answer is parsed in OnReadDone, after the
// order `Handoff` gives, not in gRPC's completion of the read: that runs on whichever thread of
// gRPC's the read completed on, ordered after the previous answer's parse only in gRPC's core,
// where ThreadSanitizer does not see it.
template <typename Messages>
class MessageStream final
    : public grpc::ClientBidiReactor<typename Messages::Request, grpc::ByteBuffer> {
 public:
  using Stub = grpc::TemplatedGenericStub<typename Messages::Request, grpc::ByteBuffer>;

  MessageStream(Stub& stub, const v1::Model& model, const Workload& workload, Control& control,
                int pipeline, std::size_t offset)
      : messages_(model, workload, offset), control_(control), closed_loop_(pipeline > 0) {
    control_.begin();
    stub.PrepareBidiStreamingCall(&context_, Messages::method(), {}, this);
    read_order_.before_start();
    this->StartRead(&answer_bytes_);
    this->StartCall();
    Clock::time_point now = Clock::now();
    if (!Messages::kFirstIsACall) pending_.push_back({now, false});
    for (int i = Messages::kFirstIsACall ? 0 : 1; i < pipeline; ++i) {
      bool measured = false;
      if (control_.admit(now, measured)) pending_.push_back({now, measured});
    }
    pump();
  }

  // Open loop: one more message, intended at `at`.
  void push(Clock::time_point at, bool measured) {
    {
      std::lock_guard lock(mutex_);
      pending_.push_back({at, measured});
    }
    pump();
  }

  // No more messages: half-close once every one is answered.
  void close() {
    {
      std::lock_guard lock(mutex_);
      closing_ = true;
    }
    pump();
  }

  void OnWriteDone(bool ok) override {
    {
      std::lock_guard lock(mutex_);
      writing_ = false;
      if (!ok) broken_ = true;
    }
    pump();
  }

  void OnReadDone(bool ok) override {
    read_order_.in_callback();
    if (!ok) return;  // the stream ended; OnDone follows
    const Clock::time_point now = Clock::now();
    const int code =
        parse_response(grpc::Status::OK, answer_bytes_, answer_) == grpc::StatusCode::OK
            ? answer_.status().code()
            : grpc::StatusCode::INTERNAL;
    Message answered;
    {
      std::lock_guard lock(mutex_);
      answered = in_flight_.front();
      in_flight_.pop_front();
    }
    control_.record(answered.intended, now, answered.measured, code);
    if (closed_loop_) {
      bool measured = false;
      if (control_.admit(now, measured)) {
        std::lock_guard lock(mutex_);
        pending_.push_back({now, measured});
      } else {
        std::lock_guard lock(mutex_);
        closing_ = true;
      }
    }
    read_order_.before_start();
    this->StartRead(&answer_bytes_);
    pump();
  }

  void OnDone(const grpc::Status& status) override {
    // Messages the stream never answered count with the stream's status.
    std::lock_guard lock(mutex_);
    for (const auto* queue : {&in_flight_, &pending_}) {
      for (const Message& m : *queue) {
        control_.record(m.intended, Clock::now(), m.measured,
                        status.ok() ? grpc::StatusCode::INTERNAL : status.error_code());
      }
    }
    control_.end();
  }

 private:
  // Starts the next write, or the half-close, if due. A write starts under the lock: gRPC
  // serializes the message in StartWrite, and the next message (an Mpc tick rewritten in place)
  // is made under the lock too, after the write's OnWriteDone. gRPC orders the two only in its
  // core, which ThreadSanitizer does not see (an Mpc run of 40 ticks reported the tick's rewrite
  // racing with its serialization). StartWrite never runs OnWriteDone inline (its reaction is
  // not inlinable), so holding the lock cannot deadlock.
  void pump() {
    bool writes_done = false;
    {
      std::lock_guard lock(mutex_);
      if (writing_ || writes_done_) return;
      if (!pending_.empty() && !broken_) {
        in_flight_.push_back(pending_.front());
        pending_.pop_front();
        writing_ = true;
        this->StartWrite(&messages_.next());
      } else if ((closing_ && in_flight_.empty() && pending_.empty()) || broken_) {
        writes_done_ = true;
        writes_done = true;
      }
    }
    if (writes_done) this->StartWritesDone();
  }

  Messages messages_;
  Control& control_;
  const bool closed_loop_;
  grpc::ClientContext context_;
  grpc::ByteBuffer answer_bytes_;
  typename Messages::Response answer_;
  Handoff read_order_;
  std::mutex mutex_;
  std::deque<Message> pending_, in_flight_;
  bool writing_ = false;
  bool closing_ = false;
  bool writes_done_ = false;
  bool broken_ = false;
};

// Runs `concurrency` streams of `Messages`: closed loop, or open loop at `rate` messages per
// second from this thread, to the streams in turn.
template <typename Messages>
void run_streams(const std::shared_ptr<grpc::Channel>& channel, const v1::Model& model,
                 const Workload& workload, const RunSpec& spec, Control& control) {
  typename MessageStream<Messages>::Stub stub(channel);
  const bool open_loop = spec.rate > 0.0;
  // Owned here, not by their reactions: the pacer may still push to a stream that broke.
  std::vector<std::unique_ptr<MessageStream<Messages>>> streams;
  for (int s = 0; s < spec.concurrency; ++s) {
    streams.push_back(std::make_unique<MessageStream<Messages>>(stub, model, workload, control,
                                                                open_loop ? 0 : spec.pipeline,
                                                                static_cast<std::size_t>(s)));
  }
  if (open_loop) {
    // The streams live until the pacer closes them.
    const auto interval = std::chrono::duration<double>(1.0 / spec.rate);
    for (std::int64_t i = 0;; ++i) {
      const Clock::time_point at =
          control.start() + std::chrono::duration_cast<Clock::duration>(interval * i);
      std::this_thread::sleep_until(at);
      bool measured = false;
      if (!control.admit(at, measured)) break;
      streams[i % streams.size()]->push(at, measured);
    }
    for (auto& s : streams) s->close();
  }
  control.wait_idle();
}

// Closed loop on the completion-queue API: each call (or stream) in flight has a thread of its
// own that waits on its own completion queue. Waiting there polls the connection, so the thread
// woken by an answer is the one that sends the next request.
class QueueDriver {
 public:
  QueueDriver(const std::shared_ptr<grpc::Channel>& channel, const v1::Model& model,
              const Workload& workload, Control& control)
      : channel_(channel), model_(model), workload_(workload), control_(control) {}

  void unary(std::size_t first) {
    grpc::GenericStub stub(channel_);
    grpc::CompletionQueue queue;
    std::unique_ptr<google::protobuf::Message> message(workload_.response_prototype->New());
    for (std::size_t k = first;; k = (k + 1) % workload_.unary_requests.size()) {
      const Clock::time_point intended = Clock::now();
      bool measured = false;
      if (!control_.admit(intended, measured)) break;
      grpc::ClientContext context;
      grpc::ByteBuffer response;
      grpc::Status status;
      auto call =
          stub.PrepareUnaryCall(&context, workload_.method, workload_.unary_requests[k], &queue);
      call->StartCall();
      call->Finish(&response, &status, this);
      if (!next(queue)) break;
      control_.record(intended, Clock::now(), measured, parse_response(status, response, *message));
    }
    queue.Shutdown();
    drain(queue);
  }

  // Up to `pipeline` messages in flight on one stream: at most one write and one read are
  // outstanding at a time (gRPC's rule), and both are started before waiting.
  void session(int pipeline, std::size_t first) {
    auto stub = v1::DynamicsService::NewStub(channel_);
    grpc::CompletionQueue queue;
    grpc::ClientContext context;
    auto stream = stub->PrepareAsyncSession(&context, &queue);
    stream->StartCall(&start_tag_);
    std::deque<Message> in_flight;
    v1::SessionRequest request = workload_.session_requests[first];
    request.set_model_id(model_.id());
    v1::SessionResponse response;
    std::size_t k = first;
    bool sent_first = false, writing = false, reading = false, admitting = true;
    bool broken = !next(queue);
    while (!broken) {
      if (admitting && !writing && static_cast<int>(in_flight.size()) < pipeline) {
        Message m{Clock::now(), false};
        if (control_.admit(m.intended, m.measured)) {
          stream->Write(sent_first ? workload_.session_requests[k] : request, &write_tag_);
          sent_first = true;
          k = (k + 1) % workload_.session_requests.size();
          in_flight.push_back(m);
          writing = true;
        } else {
          admitting = false;
        }
      }
      if (!reading && !in_flight.empty()) {
        stream->Read(&response, &read_tag_);
        reading = true;
      }
      if (!writing && !reading) break;
      void* tag = nullptr;
      bool ok = false;
      if (!queue.Next(&tag, &ok) || !ok) {
        broken = true;
      } else if (tag == &write_tag_) {
        writing = false;
      } else {
        reading = false;
        control_.record(in_flight.front().intended, Clock::now(), in_flight.front().measured,
                        response.status().code());
        in_flight.pop_front();
      }
    }
    grpc::Status status;
    if (!broken) {
      stream->WritesDone(&write_tag_);
      broken = !next(queue);
    }
    if (broken) context.TryCancel();
    stream->Finish(&status, &finish_tag_);
    queue.Shutdown();
    drain(queue);
    // Messages the stream never answered count with the stream's status.
    for (const Message& m : in_flight) {
      control_.record(m.intended, Clock::now(), m.measured,
                      status.ok() ? grpc::StatusCode::INTERNAL : status.error_code());
    }
  }

 private:
  // Waits for the one operation outstanding; false when it failed.
  static bool next(grpc::CompletionQueue& queue) {
    void* tag = nullptr;
    bool ok = false;
    return queue.Next(&tag, &ok) && ok;
  }
  static void drain(grpc::CompletionQueue& queue) {
    void* tag = nullptr;
    bool ok = false;
    while (queue.Next(&tag, &ok)) {
    }
  }

  const std::shared_ptr<grpc::Channel>& channel_;
  const v1::Model& model_;
  const Workload& workload_;
  Control& control_;
  // Their addresses tell a stream's completions apart (never written).
  char start_tag_ = 0, write_tag_ = 0, read_tag_ = 0, finish_tag_ = 0;
};

}  // namespace

std::unique_ptr<Results> run_load(const std::shared_ptr<grpc::Channel>& channel,
                                  const v1::Model& model, const Workload& workload,
                                  const RunSpec& spec) {
  auto results = std::make_unique<Results>();
  Control control(spec, *results);
  const bool open_loop = spec.rate > 0.0;
  std::thread timer;
  if (spec.requests == 0) {
    timer = std::thread([&control] {
      std::this_thread::sleep_until(control.measure_end());
      control.stop();
    });
  }
  if (spec.completion_queue) {
    QueueDriver driver(channel, model, workload, control);
    std::vector<std::thread> threads;
    for (int s = 0; s < spec.concurrency; ++s) {
      control.begin();
      threads.emplace_back([&, s] {
        if (spec.session) {
          driver.session(spec.pipeline,
                         static_cast<std::size_t>(s) % workload.session_requests.size());
        } else {
          driver.unary(static_cast<std::size_t>(s) % workload.unary_requests.size());
        }
        control.end();
      });
    }
    for (std::thread& t : threads) t.join();
    control.wait_idle();
  } else if (!workload.mpc_problems.empty()) {
    run_streams<MpcMessages>(channel, model, workload, spec, control);
  } else if (spec.session) {
    run_streams<SessionMessages>(channel, model, workload, spec, control);
  } else {
    UnaryDriver driver(channel, workload, control);
    if (open_loop) {
      driver.open_loop(spec.rate);
    } else {
      driver.closed_loop(spec.concurrency);
    }
    control.wait_idle();
  }
  if (timer.joinable()) timer.join();
  return results;
}

}  // namespace torqued::load
