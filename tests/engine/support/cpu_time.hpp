// CPU time, for the tests that bound how much work something takes: unlike wall-clock time it
// does not grow when other processes share the CPUs.
#pragma once

#include <time.h>

namespace torqued::test_support {

// The CPU seconds the calling thread has used.
inline double thread_cpu_seconds() {
  timespec now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

}  // namespace torqued::test_support
