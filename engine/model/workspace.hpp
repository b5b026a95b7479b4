// The buffers of a workspace, declared once. A workspace W lists its buffers with their sizes in
//   static void buffers(auto& self, const Extents& n, auto&& buffer)
// calling buffer(self.member, sizes...) for each, and everything else is derived from that list by
// the visitor it is given: binding (zeros, or the initial value given after the sizes), the bytes
// binding would allocate for a model without building anything, and the bytes held once bound.
// The sizes a buffer takes:
//   buffer(vector, count)  buffer(vector, count, value)  buffer(vector, count, rows, cols)
//   buffer(matrix, size)   buffer(matrix, rows, cols)
// where a vector holds fixed-size values (zeros unless `value` is given), or `count` dynamic
// matrices of rows x cols, and a matrix is a dynamic Eigen matrix or vector.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cstddef>
#include <vector>

#include "engine/model/heap_bytes.hpp"
#include "engine/model/model.hpp"

namespace torqued {

// The sizes of a model that buffers are given in.
struct Extents {
  // No sizes: for visitors that read the buffers themselves (heap bytes).
  Extents() = default;
  // Room for `reserved_rows` constraint rows, or the loop closures' if they have more.
  explicit Extents(const Model& model, int reserved_rows = 0)
      : bodies(model.nbodies()),
        positions(model.nq),
        dofs(model.nv),
        frames(static_cast<int>(model.frames.size())),
        depths(*std::max_element(model.depth.begin(), model.depth.end()) + 1),
        constraint_rows(reserved_rows) {
    int loop_rows = 0;
    for (const BilateralConstraint& loop : model.loop_closures) {
      loop_rows += constraint_dimension(loop.type);
    }
    constraint_rows = std::max(constraint_rows, loop_rows);
  }

  int bodies = 0;
  int positions = 0;  // nq
  int dofs = 0;
  int frames = 0;
  int depths = 0;           // tree depths, the root's included
  int constraint_rows = 0;  // rows of bilateral constraints
};

namespace buffers {

// Sizes each buffer and sets its entries.
struct Allocate {
  template <class T>
  void operator()(std::vector<T>& buffer, int count) const {
    buffer.assign(count, T::Zero());
  }
  template <class T>
  void operator()(std::vector<T>& buffer, int count, const T& value) const {
    buffer.assign(count, value);
  }
  template <class T>
  void operator()(std::vector<T>& buffer, int count, int rows, int cols) const {
    buffer.assign(count, T::Zero(rows, cols));
  }
  // Built from Zero() and moved in, so that the zeros come with the allocation (calloc).
  template <class D>
  void operator()(Eigen::PlainObjectBase<D>& buffer, int size) const {
    buffer.derived() = D(D::Zero(size));
  }
  template <class D>
  void operator()(Eigen::PlainObjectBase<D>& buffer, int rows, int cols) const {
    buffer.derived() = D(D::Zero(rows, cols));
  }
};

// Adds up the bytes Allocate would allocate.
struct CountBytes {
  std::size_t& total;

  template <class T>
  void operator()(const std::vector<T>&, int count) const {
    total += count * sizeof(T);
  }
  template <class T>
  void operator()(const std::vector<T>&, int count, const T&) const {
    total += count * sizeof(T);
  }
  template <class T>
  void operator()(const std::vector<T>&, int count, int rows, int cols) const {
    total += count * (sizeof(T) + std::size_t(rows) * cols * sizeof(typename T::Scalar));
  }
  template <class D>
  void operator()(const Eigen::PlainObjectBase<D>&, int size) const {
    total += size * sizeof(typename D::Scalar);
  }
  template <class D>
  void operator()(const Eigen::PlainObjectBase<D>&, int rows, int cols) const {
    total += std::size_t(rows) * cols * sizeof(typename D::Scalar);
  }
};

// Adds up the bytes the buffers hold.
struct HeapBytes {
  std::size_t& total;

  template <class Buffer, class... Sizes>
  void operator()(const Buffer& buffer, const Sizes&...) const {
    total += heap_bytes(buffer);
  }
};

}  // namespace buffers

// The base of every workspace W (CRTP), from W::buffers: bound to a model's sizes, its bytes for
// a model without being built, and the bytes it holds.
template <class W>
struct Workspace {
  void bind(const Model& model) { bind(Extents(model)); }
  void bind(const Extents& n) { W::buffers(static_cast<W&>(*this), n, buffers::Allocate{}); }

  static std::size_t bytes(const Model& model) { return bytes(Extents(model)); }
  static std::size_t bytes(const Extents& n) {
    std::size_t total = 0;
    const W unbound;  // buffers() only names its members here
    W::buffers(unbound, n, buffers::CountBytes{total});
    return total;
  }

  std::size_t heap_bytes() const {
    std::size_t total = 0;
    W::buffers(static_cast<const W&>(*this), Extents(), buffers::HeapBytes{total});
    return total;
  }
};

// The base of a workspace whose buffers grow with the constraint rows (Extents::constraint_rows,
// initially the model's loop closures'): a call on m rows reserves them and uses the leading m.
template <class W>
struct RowsWorkspace : Workspace<W> {
  void bind(const Model& model) { bind(Extents(model)); }
  void bind(const Extents& n) {
    Workspace<W>::bind(n);
    reserved_rows = n.constraint_rows;
  }

  using Workspace<W>::bytes;
  // Its bytes once reserve_rows(model, rows) has run.
  static std::size_t bytes(const Model& model, int rows) { return bytes(Extents(model, rows)); }
  // Room for `rows` constraint rows (no-op when there is): only a call with more rows than any
  // before allocates.
  void reserve_rows(const Model& model, int rows) {
    if (rows > reserved_rows) bind(Extents(model, rows));
  }

  int reserved_rows = 0;
};

}  // namespace torqued
