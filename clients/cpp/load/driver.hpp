// The load drivers of torqued-load on gRPC's callback API (or, closed loop only, on its
// completion-queue API): unary calls, Session streams or Mpc streams (the workload's
// mpc_problems: a problem, then ticks, each a call), in a closed loop (a fixed number of calls,
// or stream messages, in flight) or an open loop (calls started at a fixed rate whatever the
// answers, latency measured from the intended start so that a slow server cannot hide its
// queueing).
#pragma once

#include <grpcpp/grpcpp.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>

#include "clients/cpp/load/histogram.hpp"
#include "clients/cpp/load/workload.hpp"

namespace torqued::load {

using Clock = std::chrono::steady_clock;

struct RunSpec {
  int concurrency = 1;     // calls in flight (closed loop), or streams
  int pipeline = 1;        // Session, closed loop: messages in flight per stream
  double rate = 0.0;       // > 0: open loop, calls (or messages) per second
  double duration = 10.0;  // seconds measured, unless requests > 0
  std::int64_t requests = 0;
  double warmup = 1.0;  // seconds run before measuring, excluded from the results
  bool session = false;
  // Closed loop on the completion-queue API instead of the callback API: one thread per call or
  // stream in flight, polling its own queue, so the thread the answer wakes sends the next
  // request itself (one wake-up per answer, where the callback API hands each event from its
  // poller to a callback thread).
  bool completion_queue = false;
};

struct Results {
  Histogram latency;                                   // nanoseconds, measured calls only
  std::array<std::atomic<std::uint64_t>, 17> codes{};  // by grpc::StatusCode
  std::uint64_t calls = 0;                             // measured calls answered
  double seconds = 0.0;                                // the measured window
};

// Runs the load described by `spec` and returns what it measured.
std::unique_ptr<Results> run_load(const std::shared_ptr<grpc::Channel>& channel,
                                  const v1::Model& model, const Workload& workload,
                                  const RunSpec& spec);

}  // namespace torqued::load
