// Heap bytes held by the buffers of a workspace (std::vector and dynamic Eigen matrices), so
// that a cache of workspaces can budget its memory from what was really allocated.
#pragma once

#include <Eigen/Core>
#include <cstddef>
#include <type_traits>
#include <vector>

namespace torqued {

template <typename Derived>
std::size_t heap_bytes(const Eigen::PlainObjectBase<Derived>& buffer) {
  return static_cast<std::size_t>(buffer.size()) * sizeof(typename Derived::Scalar);
}

// With what its elements hold when they are dynamic Eigen matrices.
template <typename T>
std::size_t heap_bytes(const std::vector<T>& buffer) {
  std::size_t bytes = buffer.capacity() * sizeof(T);
  if constexpr (std::is_base_of_v<Eigen::PlainObjectBase<T>, T>) {
    if constexpr (T::SizeAtCompileTime == Eigen::Dynamic) {
      for (const T& element : buffer) bytes += heap_bytes(element);
    }
  }
  return bytes;
}

template <typename... Buffers>
std::size_t total_heap_bytes(const Buffers&... buffers) {
  return (heap_bytes(buffers) + ...);
}

}  // namespace torqued
