// Gives freed heap memory back to the kernel after a spike. main() tells glibc to keep freed
// memory (mallopt), because returning each batched request's buffers costs more than the
// dynamics; but then one large request or a burst of large workspaces would hold its memory for
// the life of the process. Once a second, when more than `keep_bytes` lie free in the heap and
// that amount has grown by an eighth of `keep_bytes` since the last trim, this thread trims the
// heap (malloc_trim): steady traffic reuses its free memory and is left alone, a spike is
// returned within a second, and pages already returned are not returned again every second.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>

namespace torqued::server {

class HeapTrimmer {
 public:
  explicit HeapTrimmer(std::size_t keep_bytes);
  ~HeapTrimmer();

  HeapTrimmer(const HeapTrimmer&) = delete;
  HeapTrimmer& operator=(const HeapTrimmer&) = delete;

 private:
  void run();

  const std::size_t keep_bytes_;
  std::size_t free_at_last_trim_ = 0;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace torqued::server
