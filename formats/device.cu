// Device memory, queries, error reporting and gpu_context: every plain CUDA runtime and
// cuSPARSE handle call of spconv (kernels and converters add only their launches).
#include <cuda_runtime.h>
#include <cusparse.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "formats/device.hpp"

namespace spconv {

void check_cuda(int status, std::string_view what) {
  if (status == cudaSuccess) return;
  const auto e = static_cast<cudaError_t>(status);
  // Clears the runtime's last-error slot so that a recoverable failure (an allocation)
  // is not reported again by the next unrelated check.
  cudaGetLastError();
  fail(errc::device, std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

void check_cusparse(int status, std::string_view what) {
  if (status == CUSPARSE_STATUS_SUCCESS) return;
  const auto s = static_cast<cusparseStatus_t>(status);
  fail(errc::device, std::string(what) + ": " + cusparseGetErrorName(s) + " (" + cusparseGetErrorString(s) + ")");
}

bool gpu_available() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return n > 0;
}

std::string device_name(int device) {
  cudaDeviceProp prop{};
  check_cuda(cudaGetDeviceProperties(&prop, device), "device " + std::to_string(device) + ": reading its properties");
  return prop.name;
}

// ---- device memory: a stream-ordered pool ------------------------------------------
//
// Every device allocation of spconv comes from one memory pool per device (made on first use
// and kept for the process), allocated and freed in the order of the legacy default stream.
// Why: a conversion allocates its output arrays and scratch each time it runs, and
// cudaMalloc/cudaFree of large blocks map and unmap memory and synchronise the whole device.
// The pool keeps freed memory (its release threshold is unlimited), so a repeated conversion
// reuses it without a driver call, and a free never blocks the host. The legacy stream is ordered with
// every blocking stream (gpu_context's stream is one), so an allocation is ready before any
// work queued after it on any such stream, and a free waits for the work queued before it.
namespace {

std::mutex pools_mutex;
std::vector<cudaMemPool_t> pools;  // by device ordinal; null until first used

cudaMemPool_t pool_of(int device) {
  const std::lock_guard<std::mutex> lock(pools_mutex);
  if (pools.size() <= static_cast<std::size_t>(device)) pools.resize(static_cast<std::size_t>(device) + 1, nullptr);
  cudaMemPool_t& p = pools[static_cast<std::size_t>(device)];
  if (!p) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    const std::string what = "device " + std::to_string(device) + ": ";
    check_cuda(cudaMemPoolCreate(&p, &props), what + "creating the memory pool");
    std::uint64_t keep_all = std::numeric_limits<std::uint64_t>::max();
    check_cuda(cudaMemPoolSetAttribute(p, cudaMemPoolAttrReleaseThreshold, &keep_all),
               what + "setting the memory pool's release threshold");
  }
  return p;
}

cudaMemPool_t current_pool() {
  int device = 0;
  check_cuda(cudaGetDevice(&device), "reading the current device");
  return pool_of(device);
}

}  // namespace

void release_cached_device_memory() {
  const cudaMemPool_t pool = current_pool();
  check_cuda(cudaStreamSynchronize(cudaStreamLegacy), "waiting for pending device frees");
  check_cuda(cudaMemPoolTrimTo(pool, 0), "returning the memory pool's spare memory to the device");
}

device_memory device_memory_info() {
  release_cached_device_memory();
  device_memory m;
  check_cuda(cudaMemGetInfo(&m.free, &m.total), "reading the device's free memory");
  return m;
}

// ---- device_buffer ----------------------------------------------------------------

void device_buffer::resize(std::size_t bytes, std::string_view what) {
  if (bytes <= cap_) {
    bytes_ = bytes;
    return;
  }
  const cudaMemPool_t pool = current_pool();
  void* p = nullptr;
  bool pooled = true;
  // The pool's spare blocks, or what a failed request left reserved, go back to the device
  // (after the frees still queued).
  const auto trim = [&] {
    cudaGetLastError();
    return cudaStreamSynchronize(cudaStreamLegacy) == cudaSuccess && cudaMemPoolTrimTo(pool, 0) == cudaSuccess;
  };
  cudaError_t e = cudaMallocFromPoolAsync(&p, bytes, pool, cudaStreamLegacy);
  // Spare blocks too small or scattered for this request: once more after trimming.
  if (e == cudaErrorMemoryAllocation && trim()) e = cudaMallocFromPoolAsync(&p, bytes, pool, cudaStreamLegacy);
  // A block of nearly all the free memory can fail from the pool where cudaMalloc succeeds
  // (seen on the H100 for 97% of the free memory in one block): the pool is an optimisation,
  // never the reason an allocation fails.
  if (e == cudaErrorMemoryAllocation && trim()) {
    e = cudaMalloc(&p, bytes);
    pooled = false;
  }
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    std::size_t free = 0, total = 0;
    const bool known = cudaMemGetInfo(&free, &total) == cudaSuccess;
    if (!known) cudaGetLastError();
    fail(errc::device, std::string(what) + ": out of device memory (needed " + std::to_string(bytes) + " bytes, free " +
                           (known ? std::to_string(free) : std::string("unknown")) + ")");
  }
  check_cuda(e, std::string(what) + ": allocating " + std::to_string(bytes) + " bytes");
  if (bytes_ > 0) {
    const cudaError_t c = cudaMemcpyAsync(p, ptr_, bytes_, cudaMemcpyDeviceToDevice, cudaStreamLegacy);
    if (c != cudaSuccess) {
      if (pooled) cudaFreeAsync(p, cudaStreamLegacy);
      else cudaFree(p);
      check_cuda(c, std::string(what) + ": moving " + std::to_string(bytes_) + " bytes to the larger allocation");
    }
  }
  release();
  ptr_ = p;
  bytes_ = cap_ = bytes;
  pooled_ = pooled;
}

void device_buffer::release() noexcept {
  // The free is queued after all work already queued on blocking streams (see above); it only
  // fails when the context is already broken (a kernel fault reported elsewhere), which a
  // destructor cannot report.
  if (ptr_) {
    if (pooled_) cudaFreeAsync(ptr_, cudaStreamLegacy);
    else cudaFree(ptr_);  // synchronises the device, as every cudaFree does
  }
  ptr_ = nullptr;
  bytes_ = cap_ = 0;
}

void copy_to_device(void* device_dst, const void* host_src, std::size_t bytes) {
  if (bytes == 0) return;
  check_cuda(cudaMemcpy(device_dst, host_src, bytes, cudaMemcpyHostToDevice),
             "copying " + std::to_string(bytes) + " bytes to the device");
}

void copy_to_host(void* host_dst, const void* device_src, std::size_t bytes) {
  if (bytes == 0) return;
  check_cuda(cudaMemcpy(host_dst, device_src, bytes, cudaMemcpyDeviceToHost),
             "copying " + std::to_string(bytes) + " bytes from the device");
}

// ---- gpu_context ------------------------------------------------------------------

struct gpu_context::impl {
  int device = 0;
  cudaStream_t stream = nullptr;
  cusparseHandle_t sparse = nullptr;
  device_buffer work;
  void* pinned = nullptr;
  std::size_t pinned_bytes = 0;
  void* back = nullptr;  // copy_back's area, and the event after its last copy
  cudaEvent_t back_done = nullptr;

  ~impl() {
    work.release();
    // Copies queued on the stream may still use the pinned blocks.
    if ((pinned || back) && stream) cudaStreamSynchronize(stream);
    if (pinned) cudaFreeHost(pinned);
    if (back) cudaFreeHost(back);
    if (back_done) cudaEventDestroy(back_done);
    if (sparse) cusparseDestroy(sparse);
    if (stream) cudaStreamDestroy(stream);
  }
};

gpu_context::gpu_context(int device) : p_(std::make_unique<impl>()) {
  p_->device = device;
  const std::string what = "gpu_context on device " + std::to_string(device);
  check_cuda(cudaSetDevice(device), what + ": selecting the device");
  check_cuda(cudaStreamCreate(&p_->stream), what + ": creating a stream");
}

gpu_context::~gpu_context() = default;
gpu_context::gpu_context(gpu_context&&) noexcept = default;
gpu_context& gpu_context::operator=(gpu_context&&) noexcept = default;

int gpu_context::device() const { return p_->device; }
void* gpu_context::stream() const { return p_->stream; }

void* gpu_context::cusparse() {
  if (!p_->sparse) {
    check_cusparse(cusparseCreate(&p_->sparse), "gpu_context: creating the cuSPARSE handle");
    check_cusparse(cusparseSetStream(p_->sparse, p_->stream), "gpu_context: binding cuSPARSE to the stream");
  }
  return p_->sparse;
}

void* gpu_context::workspace(std::size_t bytes) {
  if (bytes > p_->work.capacity()) {
    p_->work.release();
    p_->work.resize(bytes, "gpu_context workspace");
  }
  return p_->work.data();
}

void* gpu_context::pinned_staging(std::size_t bytes) {
  if (bytes > p_->pinned_bytes) {
    synchronize();
    if (p_->pinned) check_cuda(cudaFreeHost(p_->pinned), "gpu_context: freeing pinned staging memory");
    p_->pinned = nullptr;
    p_->pinned_bytes = 0;
    check_cuda(cudaHostAlloc(&p_->pinned, bytes, cudaHostAllocDefault),
               "allocating " + std::to_string(bytes) + " bytes of pinned staging memory");
    p_->pinned_bytes = bytes;
  }
  return p_->pinned;
}

void gpu_context::copy_back(std::size_t at, const void* from, std::size_t bytes) {
  if (at + bytes > copy_back_bytes)
    fail(errc::usage, "gpu_context::copy_back: bytes [" + std::to_string(at) + ", " + std::to_string(at + bytes) +
                             ") pass the area's " + std::to_string(copy_back_bytes));
  if (!p_->back) {
    check_cuda(cudaHostAlloc(&p_->back, copy_back_bytes, cudaHostAllocDefault),
               "gpu_context: allocating the pinned area for counts read back");
    check_cuda(cudaEventCreateWithFlags(&p_->back_done, cudaEventDisableTiming),
               "gpu_context: creating the event for counts read back");
  }
  check_cuda(cudaMemcpyAsync(static_cast<unsigned char*>(p_->back) + at, from, bytes, cudaMemcpyDeviceToHost,
                             p_->stream),
             "gpu_context: queueing a count's copy back");
  check_cuda(cudaEventRecord(p_->back_done, p_->stream), "gpu_context: marking a count's copy back");
}

const void* gpu_context::wait_copies_back() {
  if (!p_->back) fail(errc::usage, "gpu_context::wait_copies_back: no copy_back was queued");
  check_cuda(cudaEventSynchronize(p_->back_done), "waiting for counts read back from the GPU");
  return p_->back;
}

void gpu_context::synchronize() { check_cuda(cudaStreamSynchronize(p_->stream), "waiting for the GPU stream"); }

// ---- copy bandwidth ---------------------------------------------------------------

double measure_copy_bandwidth(gpu_context& ctx, std::size_t bytes) {
  bytes = std::max<std::size_t>(bytes, 1);
  device_buffer src, dst;
  src.resize(bytes, "measure_copy_bandwidth: source buffer");
  dst.resize(bytes, "measure_copy_bandwidth: destination buffer");
  const auto stream = static_cast<cudaStream_t>(ctx.stream());
  // The source's contents do not matter to the copy rate, but copying uninitialised memory
  // would be reported by memory checkers.
  check_cuda(cudaMemsetAsync(src.data(), 0, bytes, stream), "measure_copy_bandwidth: clearing the source");
  const std::size_t copies = std::clamp<std::size_t>((std::size_t{1} << 30) / bytes, 1, 10000);
  auto batch = [&] {
    ctx.synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < copies; ++i)
      check_cuda(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice, stream),
                 "measure_copy_bandwidth: copying " + std::to_string(bytes) + " bytes");
    ctx.synchronize();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  batch();
  std::vector<double> t;
  for (int r = 0; r < 5; ++r) t.push_back(batch());
  std::sort(t.begin(), t.end());
  return 2.0 * static_cast<double>(bytes) * static_cast<double>(copies) / t[t.size() / 2];
}

}  // namespace spconv
