// The heap trimmer's thread (see heap_trimmer.hpp).
#include "server/base/heap_trimmer.hpp"

#include <malloc.h>

#include <chrono>

namespace torqued::server {

HeapTrimmer::HeapTrimmer(std::size_t keep_bytes)
    : keep_bytes_(keep_bytes), thread_([this] { run(); }) {}

HeapTrimmer::~HeapTrimmer() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void HeapTrimmer::run() {
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_; })) {
    // fordblks: bytes in free chunks of every arena (what trimming can give back; trimming does
    // not change it, reuse and frees do).
    const std::size_t free_bytes = mallinfo2().fordblks;
    if (free_bytes > keep_bytes_ && free_bytes > free_at_last_trim_ + keep_bytes_ / 8) {
      malloc_trim(keep_bytes_ / 2);
      free_at_last_trim_ = free_bytes;
    } else if (free_bytes < free_at_last_trim_) {
      free_at_last_trim_ = free_bytes;
    }
  }
}

}  // namespace torqued::server
