// Workspaces: what a computation on one model needs beside the model itself (the engine's Data,
// the external forces in engine form, the contact and simulation buffers, the last solve's
// solver), and the pool that keeps them between calls.
//
// A workspace grows as calls bind the engine's workspaces for their algorithms (a 1,000-DOF
// chain's Data holds about 160 MB with every algorithm's bound), so workspaces live in
// one pool shared by every thread instead of a cache per thread: a thread leases a workspace for
// one chunk of work and gives it back. Idle workspaces are kept up to a byte budget, the least
// recently used evicted first; a deleted model's idle workspaces are freed at once and its leased
// ones when they come back. (Per-thread caches, the design card's first plan, multiply the memory
// by the number of threads — gRPC's threads run small calls too — and no thread can free another
// thread's cache when a model is deleted.)
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/algorithms/interruption.hpp"
#include "engine/algorithms/simulate.hpp"
#include "engine/model/data.hpp"
#include "server/base/memory_budget.hpp"
#include "server/base/metrics.hpp"
#include "server/compute/algorithms.hpp"
#include "server/models/model_catalog.hpp"
#include "server/models/served_models.hpp"

namespace torqued::server {

// A workspace a call would need is larger than the server allows (--max-workspace-bytes), or does
// not fit the memory budget.
class WorkspaceLimitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The heap bytes of a new ModelWorkspace for `model` once `needs` are bound, contact and simulation
// buffers aside, without building one: what a call must fit within --max-workspace-bytes before
// anything is allocated for it.
std::size_t workspace_bytes(const Model& model, WorkspaceSet needs);

// Buffers a kind of call keeps in a model's workspace between its calls, beside the engine's:
// the optimal-control solver's (control_solver.cpp).
class CallBuffers {
 public:
  virtual ~CallBuffers() = default;
  // Its own size included.
  virtual std::size_t heap_bytes() const = 0;
};

struct ModelWorkspace {
  explicit ModelWorkspace(const Model& model)
      : data(model), forces(model.nbodies(), Force::Zero()) {}

  std::size_t heap_bytes() const;
  // The same once `needs` is bound in `data`, without binding anything.
  std::size_t heap_bytes_with(const Model& model, WorkspaceSet needs) const;

  Data data;
  std::vector<Force> forces;  // per body, [0] unused and kept zero

  // Rebuilt, larger, only when a call has more contacts (or candidates) than they hold.
  std::unique_ptr<ContactWorkspace> contact;
  std::unique_ptr<SimulationWorkspace> simulation;
  // The last solve's solver, rebound to the next solve's problem; while a solve holds the
  // workspace, the solver's bytes are the call's (the plan reserved them).
  std::unique_ptr<CallBuffers> solver;

  // What the workspace holds of the memory budget, released when it is freed.
  Reservation memory;
};

class WorkspacePool final : public ModelWorkspaces {
 public:
  // Keeps at most `idle_budget_bytes` of idle workspaces; no workspace may pass
  // `max_workspace_bytes` (--max-workspace-bytes) once a call has bound what it needs. Every
  // workspace's bytes are reserved from `budget`, whose reclaimer frees idle workspaces, least
  // recently used first, when a call needs room.
  WorkspacePool(std::size_t idle_budget_bytes, std::size_t max_workspace_bytes,
                MemoryBudget& budget);
  ~WorkspacePool();

  // A workspace for `entry`'s model in which the engine workspaces `needs` can be bound within
  // the limit, the caller's alone until release(): an idle one when there is one (a new one in
  // its place when what earlier calls bound in it leaves no room for `needs`), else a new one.
  // Throws WorkspaceLimitError when even a new one would pass the limit, or when what it needs
  // does not fit the memory budget even without idle workspaces. An idle one for which
  // `preferred` holds, when there is one, is taken before the others (it is called under the
  // pool's lock).
  std::unique_ptr<ModelWorkspace> acquire(
      const RegisteredModel& entry, WorkspaceSet needs,
      const std::function<bool(const ModelWorkspace&)>& preferred = {});
  // Gives a workspace back: kept idle (evicting the least recently used beyond the budget), or
  // freed when its model has been deleted meanwhile.
  void release(const RegisteredModel& entry, std::unique_ptr<ModelWorkspace> workspace);
  // Frees the idle workspaces of a model being deleted (entry.deleted is set first).
  void forget(const RegisteredModel& entry);

  // ModelWorkspaces: a model's first workspace is made at registration and kept idle, so that
  // its first call finds it.
  std::size_t base_bytes(const Model& model) const override;
  void registered(const RegisteredModel& model) override;
  void deleted(const RegisteredModel& model) override { forget(model); }

  std::size_t idle_bytes() const;
  std::size_t idle_count() const;

 private:
  struct Idle {
    std::string id;
    std::unique_ptr<ModelWorkspace> workspace;
    std::size_t bytes;
  };

  // Evicts the least recently used idle workspaces until at most `keep` bytes of them are left.
  void evict_down_to(std::size_t keep, std::vector<std::unique_ptr<ModelWorkspace>>& freed);
  // Reserves `bytes` more for `workspace`, or throws WorkspaceLimitError.
  void reserve(ModelWorkspace& workspace, std::size_t bytes, const RegisteredModel& entry);

  const std::size_t idle_budget_;
  const std::size_t max_workspace_bytes_;
  MemoryBudget& budget_;
  mutable std::mutex mutex_;
  std::list<Idle> lru_;  // most recently released first
  std::unordered_multimap<std::string, std::list<Idle>::iterator> by_id_;
  std::size_t idle_bytes_ = 0;
};

// What a kernel works with while it runs one chunk of a call: the workspaces it leased (given
// back when the context ends), with room for the engine workspaces its algorithm binds, and the
// call's interruption for the engine's long loops.
class WorkerContext {
 public:
  WorkerContext(WorkspacePool& pool, Interruption interruption, WorkspaceSet needs)
      : pool_(pool), interruption_(interruption), needs_(needs) {}
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
  const WorkspaceSet needs_;
  std::vector<Lease> leases_;
};

}  // namespace torqued::server
