// The device memory space: array<T, device> is device_array<T>, so that every format
// template instantiated with Space = device holds its arrays in GPU memory
// (specs/gpu.md). Plain C++: no CUDA types here, every CUDA call lives in
// formats/device.cu, so .cpp files (tests, the CLI) include this header with g++.
// Only CUDA builds (SPCONV_HAVE_CUDA) declare it: a CPU-only build that names the
// device space fails to compile (array_of<T, device> stays incomplete) instead of linking
// against functions that do not exist.
#pragma once
#ifdef SPCONV_HAVE_CUDA
#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "formats/array.hpp"
#include "formats/types.hpp"

namespace spconv {

// One owning, untyped device allocation. device_array<T> and scratch buffers are built on
// it, so the allocation and its error path exist once, without templates.
class device_buffer {
 public:
  device_buffer() = default;
  ~device_buffer() { release(); }
  device_buffer(device_buffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)),
        bytes_(std::exchange(o.bytes_, 0)),
        cap_(std::exchange(o.cap_, 0)),
        pooled_(o.pooled_) {}
  device_buffer& operator=(device_buffer&& o) noexcept {
    if (this != &o) {
      release();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
      cap_ = std::exchange(o.cap_, 0);
      pooled_ = o.pooled_;
    }
    return *this;
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;

  void* data() const { return ptr_; }
  std::size_t size() const { return bytes_; }      // bytes in use
  std::size_t capacity() const { return cap_; }    // bytes allocated

  // Makes size() == bytes. Keeps the first min(size(), bytes) bytes; new bytes are
  // uninitialised. Allocates only when growing past capacity(). On failure throws
  // errc::device ("<what>: out of device memory (needed N bytes, free M)" when the
  // device is full) and leaves the buffer as it was.
  void resize(std::size_t bytes, std::string_view what);
  // Frees the allocation (size and capacity become 0). Never throws.
  void release() noexcept;

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0, cap_ = 0;
  bool pooled_ = true;  // from spconv's memory pool (formats/device.cu), else from cudaMalloc
};

// Synchronous copies between host memory and device memory (bytes may be 0).
void copy_to_device(void* device_dst, const void* host_src, std::size_t bytes);
void copy_to_host(void* host_dst, const void* device_src, std::size_t bytes);

// array<T, device>: owning, move-only, resize() leaves new elements uninitialised like the
// host array. Its elements are not addressable from the host (no operator[], no
// iterators); upload()/download() move whole arrays.
template <class T>
class device_array {
  static_assert(std::is_trivially_copyable_v<T>, "device arrays hold trivially copyable elements (copied as bytes)");

 public:
  using value_type = T;

  device_array() = default;
  explicit device_array(std::size_t n) { resize(n); }

  std::size_t size() const { return buf_.size() / sizeof(T); }
  bool empty() const { return buf_.size() == 0; }
  T* data() { return static_cast<T*>(buf_.data()); }
  const T* data() const { return static_cast<const T*>(buf_.data()); }

  void resize(std::size_t n) {
    const std::string what = "device array of " + std::to_string(n) + " " + std::string(type_name<T>());
    if (n > static_cast<std::size_t>(-1) / sizeof(T))
      fail(errc::device, what + ": out of device memory (needs more than 2^64 bytes)");
    buf_.resize(n * sizeof(T), what);
  }
  void clear() noexcept { buf_.release(); }

  // Replaces the contents with the n host elements at src.
  void upload(const T* src, std::size_t n) {
    resize(n);
    copy_to_device(buf_.data(), src, n * sizeof(T));
  }
  // Copies all size() elements to the host memory at dst.
  void download(T* dst) const { copy_to_host(dst, buf_.data(), buf_.size()); }

 private:
  device_buffer buf_;
};

template <class T>
struct array_of<T, device> {
  using type = device_array<T>;
};

// The same format template in another memory space: with_space_t<csr<V, I, host>, device>
// is csr<V, I, device>. Every format is `template <class V, class I, class Space>`.
template <class Fmt, class Space>
struct with_space;
template <template <class, class, class> class F, class V, class I, class S, class Space>
struct with_space<F<V, I, S>, Space> {
  using type = F<V, I, Space>;
};
template <class Fmt, class Space>
using with_space_t = typename with_space<Fmt, Space>::type;

// Copies a whole matrix between the spaces: shape, parameters and every array of
// Fmt::for_each_array, then Fmt::sync_parts where the format has one (HYB's parts take
// their shape from the matrix). to_host(to_device(m)) is bit-identical to m. Instantiated
// (formats/device_copy.cu) for every any_matrix alternative and for ell.
template <class Fmt>
  requires std::is_same_v<typename Fmt::space, host>
with_space_t<Fmt, device> to_device(const Fmt& m);

template <class Fmt>
  requires std::is_same_v<typename Fmt::space, device>
with_space_t<Fmt, host> to_host(const Fmt& m);

}  // namespace spconv
#endif  // SPCONV_HAVE_CUDA
