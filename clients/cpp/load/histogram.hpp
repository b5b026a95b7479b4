// A lock-free latency histogram for many recording threads: log-linear buckets (exact below
// 128 ns, then 64 buckets per power of two, so any percentile is within 1.6% of the truth),
// recorded with relaxed atomic increments.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>

namespace torqued::load {

class Histogram {
 public:
  void record(std::uint64_t nanoseconds) {
    counts_[index(nanoseconds)].fetch_add(1, std::memory_order_relaxed);
    count_.fetch_add(1, std::memory_order_relaxed);
    sum_.fetch_add(nanoseconds, std::memory_order_relaxed);
    std::uint64_t seen = max_.load(std::memory_order_relaxed);
    while (nanoseconds > seen && !max_.compare_exchange_weak(seen, nanoseconds)) {
    }
  }

  std::uint64_t count() const { return count_.load(); }
  std::uint64_t max() const { return max_.load(); }
  double mean() const { return count_ == 0 ? 0.0 : static_cast<double>(sum_) / count_; }

  // The value below which a fraction `p` (0..1) of the samples lie (the middle of its bucket);
  // 0 when empty.
  double percentile(double p) const {
    const std::uint64_t total = count_.load();
    if (total == 0) return 0.0;
    const auto rank = static_cast<std::uint64_t>(p * static_cast<double>(total - 1)) + 1;
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < kBuckets; ++i) {
      seen += counts_[i].load(std::memory_order_relaxed);
      if (seen >= rank) return std::min(middle(i), static_cast<double>(max_.load()));
    }
    return static_cast<double>(max_.load());
  }

 private:
  static constexpr int kSubBits = 6;  // 64 buckets per power of two
  static constexpr std::size_t kExact = 128;
  static constexpr std::size_t kBuckets = kExact + (64 - 7) * (1 << kSubBits);

  static std::size_t index(std::uint64_t v) {
    if (v < kExact) return static_cast<std::size_t>(v);
    const int top = 63 - std::countl_zero(v);  // >= 7
    const std::uint64_t sub = (v >> (top - kSubBits)) & ((1 << kSubBits) - 1);
    return kExact + static_cast<std::size_t>(top - 7) * (1 << kSubBits) + sub;
  }

  static double middle(std::size_t i) {
    if (i < kExact) return static_cast<double>(i);
    const std::size_t top = 7 + (i - kExact) / (1 << kSubBits);
    const std::size_t sub = (i - kExact) % (1 << kSubBits);
    const double low =
        std::ldexp(static_cast<double>((1 << kSubBits) + sub), static_cast<int>(top) - kSubBits);
    return low + std::ldexp(0.5, static_cast<int>(top) - kSubBits);
  }

  std::array<std::atomic<std::uint64_t>, kBuckets> counts_{};
  std::atomic<std::uint64_t> count_{0};
  std::atomic<std::uint64_t> sum_{0};
  std::atomic<std::uint64_t> max_{0};
};

}  // namespace torqued::load
