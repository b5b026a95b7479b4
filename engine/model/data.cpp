// The per-thread workspace: the shared buffers, the DOF tree, and the workspaces of `set` bound
// and counted from the one list in data.hpp. Each workspace's bytes() counts what its buffers()
// allocates (tests/engine/model/data_test.cpp holds them equal to what binding holds).
#include "engine/model/data.hpp"

#include <type_traits>

namespace torqued {

namespace {

// λ of Featherstone's LᵀDL factorization (RBDA §6.5): the DOFs of a multi-DOF joint form a chain
// (its block of M is dense), whose first DOF hangs from the last DOF of the parent joint.
void set_dof_parents(const Model& model, std::vector<int>& parents) {
  for (int i = 1; i < model.nbodies(); ++i) {
    const Joint& joint = model.joints[i];
    if (joint.nv == 0) continue;
    int ancestor = model.parent[i];
    while (ancestor > 0 && model.joints[ancestor].nv == 0) ancestor = model.parent[ancestor];
    parents[joint.idx_v] =
        ancestor > 0 ? model.joints[ancestor].idx_v + model.joints[ancestor].nv - 1 : -1;
    for (int k = 1; k < joint.nv; ++k) parents[joint.idx_v + k] = joint.idx_v + k - 1;
  }
}

// A body's subtree is bodies i .. subtree_end[i] - 1, so its DOFs run up to the first DOF of the
// body after it; the later DOFs of a multi-DOF joint are below its earlier ones.
void set_dof_subtree_ends(const Model& model, std::vector<int>& ends) {
  for (int i = 1; i < model.nbodies(); ++i) {
    const Joint& joint = model.joints[i];
    const int end = model.subtree_end[i] < model.nbodies()
                        ? model.joints[model.subtree_end[i]].idx_v
                        : model.nv;
    for (int k = 0; k < joint.nv; ++k) ends[joint.idx_v + k] = end;
  }
}

// Calls visit(std::type_identity<W>) for each workspace W of the list.
template <class Visit, class... Ws>
void for_each_workspace(WorkspaceList<Ws...>, Visit&& visit) {
  (visit(std::type_identity<Ws>{}), ...);
}

// The bytes of the workspaces of `set` that are not in `bound`.
std::size_t bytes_to_bind(const Model& model, WorkspaceSet set, WorkspaceSet bound) {
  const Extents extents(model);
  std::size_t bytes = 0;
  for_each_workspace(Workspaces{}, [&]<class W>(std::type_identity<W>) {
    if (set.contains<W>() && !bound.contains<W>()) bytes += W::bytes(extents);
  });
  return bytes;
}

}  // namespace

Data::Data(const Model& model) : nq(model.nq), nv(model.nv), nbodies(model.nbodies()) {
  buffers(*this, Extents(model), buffers::Allocate{});
  set_dof_parents(model, dof_parent);
  set_dof_subtree_ends(model, dof_subtree_end);
}

void Data::bind_missing(const Model& model, WorkspaceSet set) {
  const Extents extents(model);
  for_each_workspace(Workspaces{}, [&]<class W>(std::type_identity<W>) {
    if (set.contains<W>() && !bound_.contains<W>()) std::get<W>(workspaces_).bind(extents);
  });
  bound_ = bound_ | set;
}

std::size_t Data::heap_bytes() const {
  std::size_t bytes = 0;
  buffers(*this, Extents(), buffers::HeapBytes{bytes});
  for_each_workspace(Workspaces{}, [&]<class W>(std::type_identity<W>) {
    if (bound_.contains<W>()) bytes += workspace<W>().heap_bytes();
  });
  return bytes;
}

std::size_t Data::heap_bytes_with(const Model& model, WorkspaceSet set) const {
  return heap_bytes() + bytes_to_bind(model, set, bound_);
}

std::size_t Data::workspace_bytes(const Model& model, WorkspaceSet set) {
  const Extents extents(model);
  std::size_t bytes = 0;
  const Data unbuilt;  // buffers() only names its members here
  buffers(unbuilt, extents, buffers::CountBytes{bytes});
  return bytes + bytes_to_bind(model, set, {});
}

}  // namespace torqued
