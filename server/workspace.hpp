// Workspaces: what a computation on one model needs beside the model itself (the engine's Data,
// the external forces in engine form, the contact and simulation buffers), and the pool that
// keeps them between calls.
//
// A workspace can be large (a 1,000-DOF chain's Data holds about 160 MB), so workspaces live in
// one pool shared by every thread instead of a cache per thread: a thread leases a workspace for
// one chunk of work and gives it back. Idle workspaces are kept up to a byte budget, the least
// recently used evicted first; a deleted model's idle workspaces are freed at once and its leased
// ones when they come back. (Per-thread caches, the design card's first plan, multiply the memory
// by the number of threads — gRPC's threads run small calls too — and no thread can free another
// thread's cache when a model is deleted.)
#pragma once

#include <atomic>
#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/algorithms/interruption.hpp"
#include "engine/algorithms/simulate.hpp"
#include "engine/model/data.hpp"
#include "server/registry.hpp"

namespace torqued::server {

struct ModelWorkspace {
  explicit ModelWorkspace(const Model& model)
      : data(model), forces(model.nbodies(), Force::Zero()) {}

  std::size_t heap_bytes() const;

  Data data;
  std::vector<Force> forces;  // per body, [0] unused and kept zero

  // Rebuilt, larger, only when a call has more contacts (or candidates) than they hold.
  std::unique_ptr<ContactWorkspace> contact;
  std::unique_ptr<SimulationWorkspace> simulation;
};

class WorkspacePool {
 public:
  // Keeps at most `idle_budget_bytes` of idle workspaces.
  explicit WorkspacePool(std::size_t idle_budget_bytes) : idle_budget_(idle_budget_bytes) {}

  // A workspace for `entry`'s model, the caller's alone until release(): an idle one when there
  // is one, else a new one.
  std::unique_ptr<ModelWorkspace> acquire(const RegisteredModel& entry);
  // Gives a workspace back: kept idle (evicting the least recently used beyond the budget), or
  // freed when its model has been deleted meanwhile.
  void release(const RegisteredModel& entry, std::unique_ptr<ModelWorkspace> workspace);
  // Frees the idle workspaces of a model being deleted (entry.deleted is set first).
  void forget(const RegisteredModel& entry);

  std::size_t idle_bytes() const;
  std::size_t idle_count() const;

 private:
  struct Idle {
    std::string id;
    std::unique_ptr<ModelWorkspace> workspace;
    std::size_t bytes;
  };

  void evict_beyond_budget(std::vector<std::unique_ptr<ModelWorkspace>>& freed);

  const std::size_t idle_budget_;
  mutable std::mutex mutex_;
  std::list<Idle> lru_;  // most recently released first
  std::unordered_multimap<std::string, std::list<Idle>::iterator> by_id_;
  std::size_t idle_bytes_ = 0;
};

// What a kernel works with while it runs one chunk of a call: the workspaces it leased (given
// back when the context ends) and the call's interruption for the engine's long loops.
class WorkerContext {
 public:
  WorkerContext(WorkspacePool& pool, Interruption interruption)
      : pool_(pool), interruption_(interruption) {}
  ~WorkerContext();

  WorkerContext(const WorkerContext&) = delete;
  WorkerContext& operator=(const WorkerContext&) = delete;

  // The workspace for `entry`'s model, leased on first use in this context.
  ModelWorkspace& workspace(const RegisteredModel& entry);
  const Interruption& interruption() const { return interruption_; }

 private:
  struct Lease {
    const RegisteredModel* entry;
    std::unique_ptr<ModelWorkspace> workspace;
  };

  WorkspacePool& pool_;
  const Interruption interruption_;
  std::vector<Lease> leases_;
};

}  // namespace torqued::server
