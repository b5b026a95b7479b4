// Heap bytes held by the buffers of a workspace (std::vector and dynamic Eigen matrices), so
// that a cache of workspaces can budget its memory from what was really allocated.
#pragma once

#include <Eigen/Core>
#include <cstddef>
#include <vector>

namespace torqued {

template <typename T>
std::size_t heap_bytes(const std::vector<T>& buffer) {
  return buffer.capacity() * sizeof(T);
}

template <typename Derived>
std::size_t heap_bytes(const Eigen::PlainObjectBase<Derived>& buffer) {
  return static_cast<std::size_t>(buffer.size()) * sizeof(typename Derived::Scalar);
}

template <typename... Buffers>
std::size_t total_heap_bytes(const Buffers&... buffers) {
  return (heap_bytes(buffers) + ...);
}

}  // namespace torqued
