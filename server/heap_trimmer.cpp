// The heap trimmer's thread (see heap_trimmer.hpp).
#include "server/heap_trimmer.hpp"

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
    // fordblks: bytes in free chunks of every arena (what trimming can give back).
    if (mallinfo2().fordblks > keep_bytes_) malloc_trim(keep_bytes_ / 2);
  }
}

}  // namespace torqued::server
