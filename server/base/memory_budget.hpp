// The memory that calls and engine workspaces may hold at once: half of --memory-budget-bytes
// (config.hpp says how the rest is shared). Everything large a call allocates is reserved here
// before it is allocated (its decoded request, its response and the response's encoding, the
// workspaces it binds) and released when the call ends (when gRPC has sent its answer, or given up
// on a client that does not read it); a call that does not fit is RESOURCE_EXHAUSTED. Idle
// workspaces are a cache: they hold reservations too, and are freed first when a call needs room.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <string>
#include <utility>

#include "server/base/metrics.hpp"

namespace torqued::server {

class MemoryBudget {
 public:
  explicit MemoryBudget(std::size_t capacity, Metrics* metrics = nullptr)
      : capacity_(capacity), metrics_(metrics) {}

  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // Frees idle memory (the workspace pool's idle workspaces, whose reservations go back through
  // release()) when a reservation does not fit; `wanted` is how many bytes are missing. Called
  // without any lock of the budget's.
  void set_reclaimer(std::function<void(std::size_t wanted)> reclaimer) {
    reclaimer_ = std::move(reclaimer);
  }

  // Reserves `bytes` when they fit, after the reclaimer has freed what it can if they did not.
  bool try_reserve(std::size_t bytes);
  // Reserves memory that is already allocated (a workspace that grew while it computed), past
  // the capacity if need be.
  void force_reserve(std::size_t bytes);
  void release(std::size_t bytes);

  std::size_t capacity() const { return capacity_; }
  std::size_t reserved() const { return reserved_.load(std::memory_order_relaxed); }

  // RESOURCE_EXHAUSTED for `what` needing `bytes` that do not fit, naming the flag.
  std::string refusal(const std::string& what, std::size_t bytes) const;

 private:
  bool reserve_if_fits(std::size_t bytes);
  void report() const;

  const std::size_t capacity_;
  Metrics* const metrics_;
  std::atomic<std::size_t> reserved_{0};
  std::function<void(std::size_t)> reclaimer_;
};

// Bytes reserved for one holder (a call, a workspace), released when it ends.
class Reservation {
 public:
  Reservation() = default;
  ~Reservation() { reset(); }
  Reservation(Reservation&& other) noexcept
      : budget_(other.budget_), bytes_(std::exchange(other.bytes_, 0)) {}
  Reservation& operator=(Reservation&& other) noexcept {
    if (this != &other) {
      reset();
      budget_ = other.budget_;
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }

  // Adds `bytes` to the reservation; false, and nothing added, when they do not fit.
  bool add(MemoryBudget& budget, std::size_t bytes);
  // Adds `bytes` already allocated, whether they fit or not.
  void force_add(MemoryBudget& budget, std::size_t bytes);
  // Takes over `other`'s bytes (of the same budget).
  void merge(Reservation&& other);
  // Gives back `bytes` of the reservation (all of it when it holds fewer).
  void release(std::size_t bytes);
  void reset();
  std::size_t bytes() const { return bytes_; }

 private:
  MemoryBudget* budget_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace torqued::server
