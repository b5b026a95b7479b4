// The order between a reactor's operations and its reactions, said where ThreadSanitizer sees it.
//
// gRPC runs a reactor's reactions (OnReadDone, OnWriteDone, OnCancel, and OnDone, which deletes
// it) on threads of its own once an operation the reactor started has completed. What orders a
// reaction after everything done before the operation started (the reactor's construction on
// the thread that accepted the call, a message computed on an executor worker) is gRPC's core,
// which is not instrumented: ThreadSanitizer would report those writes as races with the
// reaction. An acq_rel increment before each StartRead, StartWrite and Finish, on the thread that
// calls it, and an acquire at the start of each reaction carry that order in an atomic it sees
// (increments, not stores, so that no starting thread's release is lost to a later one's). What a
// reactor does without that order, such as touching a field while a reaction may run, is still
// reported.
#pragma once

#include <atomic>
#include <cstdint>

namespace torqued::server {

class ReactorOrder {
 public:
  // Just before StartRead, StartWrite or Finish.
  void before_operation() { operations_.fetch_add(1, std::memory_order_acq_rel); }
  // First thing in a reaction.
  void in_reaction() const { static_cast<void>(operations_.load(std::memory_order_acquire)); }

 private:
  std::atomic<std::uint64_t> operations_{0};
};

}  // namespace torqued::server
