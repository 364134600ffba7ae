// The GPU: device queries, CUDA/cuSPARSE error reporting and gpu_context, the stream,
// library handle and scratch memory that the GPU kernels and converters run with
// (specs/gpu.md). No CUDA types in this header (handles are opaque pointers), so .cpp
// files use it with g++; only CUDA builds (SPCONV_HAVE_CUDA) declare it.
#pragma once
#ifdef SPCONV_HAVE_CUDA
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "formats/device_array.hpp"
#include "formats/error.hpp"

namespace spconv {

// Whether the CUDA runtime sees a usable device. Never throws: no driver, no device or a
// driver too old for the runtime all answer false.
bool gpu_available();

// The device's name as the driver reports it (e.g. "NVIDIA H100 80GB HBM3").
// errc::device when there is no such device.
std::string device_name(int device = 0);

// Device memory comes from a stream-ordered pool per device that keeps what spconv frees for
// its next allocations (formats/device.cu says why). device_memory_info() first returns the
// pool's spare memory to the device (release_cached_device_memory, so it waits for the
// device), so that `free` is what any allocator, spconv's or another, can get.
struct device_memory {
  std::size_t free = 0, total = 0;  // bytes, of the current device
};
device_memory device_memory_info();

// Returns the pool's spare memory to the device, after the frees still queued, so that other
// allocators in the process (cudaMalloc, another library) can have it. Waits for the device.
void release_cached_device_memory();

// Throw spconv::error(errc::device, "<what>: <error name> (<description>)") unless status
// is success. They take the status as an int (cudaError_t, cusparseStatus_t) so that this
// header needs no CUDA include.
void check_cuda(int status, std::string_view what);
void check_cusparse(int status, std::string_view what);

// Blocks for a grid-stride kernel over `work` items, `threads` per block: enough blocks to
// cover the work, capped because each thread loops over the rest.
inline unsigned launch_blocks(std::int64_t work, int threads) {
  const std::int64_t blocks = (work + threads - 1) / threads;
  return static_cast<unsigned>(std::clamp<std::int64_t>(blocks, 1, std::int64_t{1} << 20));
}

// What GPU work runs with: a CUDA stream (kernels and library calls are queued on it, in
// order), a cuSPARSE handle bound to that stream (created on first use: most work never
// needs it) and one scratch allocation reused across calls. Not thread-safe: one context per
// host thread. The stream is a blocking stream, so the synchronous copies of
// device_array/to_device/to_host (legacy default stream) are ordered with its work.
class gpu_context {
 public:
  // Makes `device` current for the calling thread and creates the stream. errc::device when
  // no such device exists.
  explicit gpu_context(int device = 0);
  ~gpu_context();
  gpu_context(gpu_context&&) noexcept;
  gpu_context& operator=(gpu_context&&) noexcept;
  gpu_context(const gpu_context&) = delete;
  gpu_context& operator=(const gpu_context&) = delete;

  int device() const;
  void* stream() const;  // the cudaStream_t
  void* cusparse();      // the cusparseHandle_t
  // Scratch device memory of at least `bytes`, valid until the next workspace() call. Grows
  // (the old block is freed in stream order, after the work queued on it), never shrinks.
  void* workspace(std::size_t bytes);
  // Pinned (page-locked) host memory of at least `bytes`, kept for the next call: the
  // staging ring of file -> device loads (io/hdf5/device_load.hpp). Pinning costs about as
  // much as copying the memory several times over, so a context that loads several files
  // pins once. Valid until the next pinned_staging() call; grows (after waiting for the
  // stream, whose copies may still read the old block), never shrinks.
  void* pinned_staging(std::size_t bytes);
  // A small pinned area (copy_back_bytes) for counts read back from the device. copy_back
  // queues a copy of `bytes` at `from` to byte `at` of it on the stream, as it would a kernel;
  // wait_copies_back() waits for the copies queued so far, not for the work queued after them,
  // and returns the area. So a count that sizes the next pass comes back while the device goes
  // on with the passes queued behind its copy, where synchronize() would leave the device idle
  // until the host has queued the next pass. Valid until the next copy_back.
  static constexpr std::size_t copy_back_bytes = 64;
  void copy_back(std::size_t at, const void* from, std::size_t bytes);
  const void* wait_copies_back();
  // Waits for everything queued on the stream; errc::device if any of it failed.
  void synchronize();

 private:
  struct impl;
  std::unique_ptr<impl> p_;
};

// The device-to-device copy rate of the current device, in bytes per second counting both
// the bytes read and the bytes written (2 * bytes per copy), the same way an SpMV's traffic
// counts the matrix and x it reads and the y it writes: the ceiling a bandwidth-bound kernel
// is compared with. Copies of `bytes` (at least 1) between two scratch buffers on ctx's
// stream, timed on the host around a batch of copies (enough for about 1 GiB, so that the
// launch cost of small copies is amortised, as it is in a loop of SpMVs); the median of 5
// batches after a warm-up batch. Buffers of a few MB stay in the L2 cache, as the arrays of
// an SpMV of that size do. errc::device when the buffers cannot be allocated.
double measure_copy_bandwidth(gpu_context& ctx, std::size_t bytes);

}  // namespace spconv
#endif  // SPCONV_HAVE_CUDA
