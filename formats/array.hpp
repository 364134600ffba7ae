// array<T, Space>: the storage every format is built from.
// The host array is a std::vector whose resize leaves new elements uninitialised:
// conversions write every element anyway, and zero-filling gigabytes costs a pass.
// The device specialisation lives with the GPU code (formats/device_array.hpp).
#pragma once
#include <cstddef>
#include <memory>
#include <vector>

namespace spconv {

struct host {};
struct device {};

template <class T>
struct default_init_allocator : std::allocator<T> {
  using value_type = T;
  template <class U>
  struct rebind {
    using other = default_init_allocator<U>;
  };
  default_init_allocator() = default;
  template <class U>
  default_init_allocator(const default_init_allocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    std::allocator_traits<std::allocator<T>>::construct(static_cast<std::allocator<T>&>(*this), p,
                                                        std::forward<Args>(args)...);
  }
};

template <class T, class Space = host>
struct array_of;

template <class T>
struct array_of<T, host> {
  using type = std::vector<T, default_init_allocator<T>>;
};

template <class T, class Space = host>
using array = typename array_of<T, Space>::type;

}  // namespace spconv
