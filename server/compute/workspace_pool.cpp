// The workspace pool and the per-chunk worker context (see workspace_pool.hpp).
#include "server/compute/workspace_pool.hpp"

#include <algorithm>

#include "server/base/status_messages.hpp"

namespace torqued::server {

std::size_t workspace_bytes(const Model& model, WorkspaceSet needs) {
  return Data::workspace_bytes(model, needs) +
         static_cast<std::size_t>(model.nbodies()) * sizeof(Force);
}

std::size_t ModelWorkspace::heap_bytes() const {
  return data.heap_bytes() + forces.capacity() * sizeof(Force) +
         (contact ? sizeof(ContactWorkspace) + contact->heap_bytes() : 0) +
         (simulation ? sizeof(SimulationWorkspace) + simulation->heap_bytes() : 0) +
         (solver ? solver->heap_bytes() : 0);
}

std::size_t ModelWorkspace::heap_bytes_with(const Model& model, WorkspaceSet needs) const {
  return heap_bytes() + (data.heap_bytes_with(model, needs) - data.heap_bytes());
}

WorkspacePool::WorkspacePool(std::size_t idle_budget_bytes, std::size_t max_workspace_bytes,
                             MemoryBudget& budget)
    : idle_budget_(idle_budget_bytes), max_workspace_bytes_(max_workspace_bytes), budget_(budget) {
  budget_.set_reclaimer([this](std::size_t wanted) {
    std::vector<std::unique_ptr<ModelWorkspace>> freed;
    std::lock_guard lock(mutex_);
    evict_down_to(idle_bytes_ > wanted ? idle_bytes_ - wanted : 0, freed);
  });
}

WorkspacePool::~WorkspacePool() { budget_.set_reclaimer(nullptr); }

void WorkspacePool::reserve(ModelWorkspace& workspace, std::size_t bytes,
                            const RegisteredModel& entry) {
  if (!workspace.memory.add(budget_, bytes)) {
    throw WorkspaceLimitError(
        budget_.refusal("the workspace this call binds for model \"" + entry.id + "\"", bytes));
  }
}

std::unique_ptr<ModelWorkspace> WorkspacePool::acquire(
    const RegisteredModel& entry, WorkspaceSet needs,
    const std::function<bool(const ModelWorkspace&)>& preferred) {
  std::unique_ptr<ModelWorkspace> workspace;
  {
    std::lock_guard lock(mutex_);
    auto [it, end] = by_id_.equal_range(entry.id);
    if (preferred) {
      const auto found = std::find_if(
          it, end, [&](const auto& idle) { return preferred(*idle.second->workspace); });
      if (found != end) it = found;
    }
    if (it != end) {
      const auto idle = it->second;
      by_id_.erase(it);
      workspace = std::move(idle->workspace);
      idle_bytes_ -= idle->bytes;
      lru_.erase(idle);
    }
  }
  if (workspace) {
    const std::size_t bytes = workspace->heap_bytes_with(*entry.model, needs);
    if (bytes <= max_workspace_bytes_) {
      if (bytes > workspace->memory.bytes()) {
        reserve(*workspace, bytes - workspace->memory.bytes(), entry);
      }
      return workspace;
    }
  }
  // What earlier calls bound leaves no room: a new workspace binds only what this call needs.
  workspace.reset();
  const std::size_t bytes = workspace_bytes(*entry.model, needs);
  if (bytes > max_workspace_bytes_) {
    throw WorkspaceLimitError(
        over_limit("the workspace bytes this call binds for model \"" + entry.id + "\"",
                   static_cast<std::int64_t>(bytes),
                   static_cast<std::int64_t>(max_workspace_bytes_), "--max-workspace-bytes")
            .error_message());
  }
  // Reserved before it is built: the reservation is released if the reserve throws.
  Reservation memory;
  if (!memory.add(budget_, bytes)) {
    throw WorkspaceLimitError(
        budget_.refusal("the workspace this call binds for model \"" + entry.id + "\"", bytes));
  }
  auto created = std::make_unique<ModelWorkspace>(*entry.model);
  created->memory = std::move(memory);
  return created;
}

std::size_t WorkspacePool::base_bytes(const Model& model) const {
  return workspace_bytes(model, WorkspaceSet{});
}

void WorkspacePool::registered(const RegisteredModel& model) {
  release(model, std::make_unique<ModelWorkspace>(*model.model));
}

void WorkspacePool::release(const RegisteredModel& entry,
                            std::unique_ptr<ModelWorkspace> workspace) {
  if (entry.deleted.load(std::memory_order_acquire)) return;
  const std::size_t bytes = workspace->heap_bytes();
  // Contact and simulation buffers grow while a call computes: they are allocated already.
  if (bytes > workspace->memory.bytes()) {
    workspace->memory.force_add(budget_, bytes - workspace->memory.bytes());
  }
  // Freed outside the lock: a large workspace takes a while to give back.
  std::vector<std::unique_ptr<ModelWorkspace>> freed;
  std::lock_guard lock(mutex_);
  if (bytes > idle_budget_) return;
  lru_.push_front({entry.id, std::move(workspace), bytes});
  by_id_.emplace(entry.id, lru_.begin());
  idle_bytes_ += bytes;
  evict_down_to(idle_budget_, freed);
}

void WorkspacePool::evict_down_to(std::size_t keep,
                                  std::vector<std::unique_ptr<ModelWorkspace>>& freed) {
  while (idle_bytes_ > keep) {
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
  for (Lease& lease : leases_) {
    lease.workspace->data.interruption = {};  // its state is the call's, which ends here
    pool_.release(*lease.entry, std::move(lease.workspace));
  }
}

ModelWorkspace& WorkerContext::workspace(const RegisteredModel& entry) {
  for (Lease& lease : leases_) {
    if (lease.entry == &entry) return *lease.workspace;
  }
  leases_.push_back({&entry, pool_.acquire(entry, needs_)});
  ModelWorkspace& leased = *leases_.back().workspace;
  leased.data.interruption = interruption_;
  return leased;
}

}  // namespace torqued::server
