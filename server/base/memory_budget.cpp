// The calls' and workspaces' memory budget (see memory_budget.hpp).
#include "server/base/memory_budget.hpp"

#include <algorithm>
#include <cassert>

namespace torqued::server {

bool MemoryBudget::reserve_if_fits(std::size_t bytes) {
  std::size_t reserved = reserved_.load(std::memory_order_relaxed);
  do {
    if (bytes > capacity_ || reserved > capacity_ - bytes) return false;
  } while (!reserved_.compare_exchange_weak(reserved, reserved + bytes, std::memory_order_relaxed));
  report();
  return true;
}

bool MemoryBudget::try_reserve(std::size_t bytes) {
  if (reserve_if_fits(bytes)) return true;
  if (!reclaimer_ || bytes > capacity_) return false;
  const std::size_t reserved = reserved_.load(std::memory_order_relaxed);
  reclaimer_(reserved + bytes > capacity_ ? reserved + bytes - capacity_ : bytes);
  return reserve_if_fits(bytes);
}

void MemoryBudget::force_reserve(std::size_t bytes) {
  reserved_.fetch_add(bytes, std::memory_order_relaxed);
  report();
}

void MemoryBudget::release(std::size_t bytes) {
  assert(reserved_.load(std::memory_order_relaxed) >= bytes);
  reserved_.fetch_sub(bytes, std::memory_order_relaxed);
  report();
}

void MemoryBudget::report() const {
  if (metrics_ != nullptr) metrics_->set_memory_reserved(reserved());
}

std::string MemoryBudget::refusal(const std::string& what, std::size_t bytes) const {
  return what + " needs " + std::to_string(bytes) + " bytes, and " +
         std::to_string(capacity_ - std::min(capacity_, reserved())) + " of the " +
         std::to_string(capacity_) +
         " bytes calls may hold are free (half of --memory-budget-bytes); retry later, or send "
         "less per call";
}

bool Reservation::add(MemoryBudget& budget, std::size_t bytes) {
  assert(budget_ == nullptr || budget_ == &budget);
  if (!budget.try_reserve(bytes)) return false;
  budget_ = &budget;
  bytes_ += bytes;
  return true;
}

void Reservation::force_add(MemoryBudget& budget, std::size_t bytes) {
  assert(budget_ == nullptr || budget_ == &budget);
  budget.force_reserve(bytes);
  budget_ = &budget;
  bytes_ += bytes;
}

void Reservation::merge(Reservation&& other) {
  if (other.bytes_ == 0) return;
  assert(budget_ == nullptr || budget_ == other.budget_);
  budget_ = other.budget_;
  bytes_ += std::exchange(other.bytes_, 0);
}

void Reservation::release(std::size_t bytes) {
  bytes = std::min(bytes, bytes_);
  if (bytes == 0) return;
  bytes_ -= bytes;
  budget_->release(bytes);
}

void Reservation::reset() {
  if (bytes_ > 0) budget_->release(std::exchange(bytes_, 0));
}

}  // namespace torqued::server
