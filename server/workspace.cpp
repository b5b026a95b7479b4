// The workspace pool and the per-chunk worker context (see workspace.hpp).
#include "server/workspace.hpp"

namespace torqued::server {

std::size_t ModelWorkspace::heap_bytes() const {
  return data.heap_bytes() + forces.capacity() * sizeof(Force) +
         (contact ? sizeof(ContactWorkspace) + contact->heap_bytes() : 0) +
         (simulation ? sizeof(SimulationWorkspace) + simulation->heap_bytes() : 0);
}

std::unique_ptr<ModelWorkspace> WorkspacePool::acquire(const RegisteredModel& entry) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = by_id_.find(entry.id); it != by_id_.end()) {
      const auto idle = it->second;
      by_id_.erase(it);
      std::unique_ptr<ModelWorkspace> workspace = std::move(idle->workspace);
      idle_bytes_ -= idle->bytes;
      lru_.erase(idle);
      return workspace;
    }
  }
  return std::make_unique<ModelWorkspace>(*entry.model);
}

void WorkspacePool::release(const RegisteredModel& entry,
                            std::unique_ptr<ModelWorkspace> workspace) {
  if (entry.deleted.load(std::memory_order_acquire)) return;
  const std::size_t bytes = workspace->heap_bytes();
  // Freed outside the lock: a large workspace takes a while to give back.
  std::vector<std::unique_ptr<ModelWorkspace>> freed;
  std::lock_guard lock(mutex_);
  if (bytes > idle_budget_) return;
  lru_.push_front({entry.id, std::move(workspace), bytes});
  by_id_.emplace(entry.id, lru_.begin());
  idle_bytes_ += bytes;
  evict_beyond_budget(freed);
}

void WorkspacePool::evict_beyond_budget(std::vector<std::unique_ptr<ModelWorkspace>>& freed) {
  while (idle_bytes_ > idle_budget_) {
    Idle& oldest = lru_.back();
    const auto range = by_id_.equal_range(oldest.id);
    for (auto it = range.first; it != range.second; ++it) {
      if (it->second == std::prev(lru_.end())) {
        by_id_.erase(it);
        break;
      }
    }
    idle_bytes_ -= oldest.bytes;
    freed.push_back(std::move(oldest.workspace));
    lru_.pop_back();
  }
}

void WorkspacePool::forget(const RegisteredModel& entry) {
  std::vector<std::unique_ptr<ModelWorkspace>> freed;
  std::lock_guard lock(mutex_);
  const auto range = by_id_.equal_range(entry.id);
  for (auto it = range.first; it != range.second; ++it) {
    idle_bytes_ -= it->second->bytes;
    freed.push_back(std::move(it->second->workspace));
    lru_.erase(it->second);
  }
  by_id_.erase(range.first, range.second);
}

std::size_t WorkspacePool::idle_bytes() const {
  std::lock_guard lock(mutex_);
  return idle_bytes_;
}

std::size_t WorkspacePool::idle_count() const {
  std::lock_guard lock(mutex_);
  return lru_.size();
}

WorkerContext::~WorkerContext() {
  for (Lease& lease : leases_) pool_.release(*lease.entry, std::move(lease.workspace));
}

ModelWorkspace& WorkerContext::workspace(const RegisteredModel& entry) {
  for (Lease& lease : leases_) {
    if (lease.entry == &entry) return *lease.workspace;
  }
  leases_.push_back({&entry, pool_.acquire(entry)});
  return *leases_.back().workspace;
}

}  // namespace torqued::server
