// Stopping a long computation from outside. The iterative contact solvers (lcp.hpp) and the
// simulation loop (simulate.hpp) run for as many iterations and steps as they are given, and the
// algorithms that grow faster than the model (derivatives, factorizations, M⁻¹) take up to a
// second for one state of the largest models: a caller with a deadline needs them to stop. The
// caller hands over a test (the solvers' options, Data::interruption for the others); those loops
// count their work and poll the test about every kWorkBetweenPolls floating-point operations
// (tens of microseconds), throwing Interrupted when it says stop. The engine itself stays free of
// clocks and threads.
#pragma once

#include <stdexcept>

namespace torqued {

class Interrupted : public std::runtime_error {
 public:
  Interrupted() : std::runtime_error("the computation was interrupted by its caller") {}
};

struct Interruption {
  // True when the computation must stop; null never stops it.
  bool (*requested)(const void* state) = nullptr;
  const void* state = nullptr;
};

// One loop's count of work since it last polled its Interruption.
class InterruptionPoll {
 public:
  // About 50 µs of the solvers' inner loops on the machines measured.
  static constexpr double kWorkBetweenPolls = 1e5;

  explicit InterruptionPoll(const Interruption& interruption) : interruption_(interruption) {}

  // Counts `work` (floating-point operations, roughly) and polls once enough has accumulated.
  // Throws Interrupted.
  void add(double work) {
    if (stop_requested(work)) throw Interrupted();
  }

  // The same without throwing: true when the poll says stop. For code that must not let an
  // exception through (GCC's target_clones functions: an exception thrown in one terminates the
  // process), whose caller then throws.
  bool stop_requested(double work) {
    pending_ += work;
    if (pending_ < kWorkBetweenPolls) return false;
    pending_ = 0.0;
    return interruption_.requested != nullptr && interruption_.requested(interruption_.state);
  }

  // Polls now. Throws Interrupted.
  void poll() {
    pending_ = 0.0;
    if (interruption_.requested != nullptr && interruption_.requested(interruption_.state)) {
      throw Interrupted();
    }
  }

 private:
  const Interruption interruption_;
  double pending_ = 0.0;
};

}  // namespace torqued
