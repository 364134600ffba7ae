// The 27-point 3D stencil generated on the GPU (the host's gen::stencil(3, 27, ...)): a
// thread per row counts its neighbours, a scan gives row_ptr, a thread per row writes its
// columns in increasing order and the values from the same counter-based hash as the host.
#include <cuda_runtime.h>

#include <cub/device/device_scan.cuh>

#include <limits>
#include <string>

#include "formats/instantiate.hpp"
#include "io/generate_gpu.hpp"
#include "io/generate_hash.hpp"

namespace spconv::gen::gpu {
namespace {

constexpr int threads = 256;

// Neighbours of coordinate c along one axis inside [0, n), the point included.
__device__ __forceinline__ std::int64_t axis_span(std::int64_t c, std::int64_t n) {
  return 1 + (c > 0) + (c < n - 1);
}

__global__ void count_rows(std::int64_t n, std::int64_t rows, std::int32_t* count) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows; i += stride) {
    const std::int64_t x = i % n, y = i / n % n, z = i / (n * n);
    count[i] = static_cast<std::int32_t>(axis_span(x, n) * axis_span(y, n) * axis_span(z, n));
  }
}

template <class V>
__global__ void fill_rows(std::int64_t n, std::int64_t rows, std::uint64_t values_seed, const std::int32_t* ptr,
                          std::int32_t* col, V* val) {
  const std::int64_t plane = n * n;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows; i += stride) {
    const std::int64_t x = i % n, y = i / n % n, z = i / plane;
    std::int64_t k = ptr[i];
    // (dz, dy, dx) in lexicographic order is increasing column order.
    for (int dz = -1; dz <= 1; ++dz)
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          if (x + dx < 0 || x + dx >= n || y + dy < 0 || y + dy >= n || z + dz < 0 || z + dz >= n) continue;
          const std::int64_t j = i + dx + n * dy + plane * dz;
          col[k] = static_cast<std::int32_t>(j);
          val[k] = static_cast<V>(detail::stencil_value(values_seed, 27, i, j));
          ++k;
        }
  }
}

}  // namespace

template <class V>
csr<V, std::int32_t, device> stencil27(std::int64_t n, std::uint64_t seed, gpu_context& ctx) {
  if (n < 1) fail(errc::usage, "gen stencil27: N must be at least 1, got " + std::to_string(n));
  constexpr std::int64_t max_index = std::numeric_limits<std::int32_t>::max();
  // Entries: every axis contributes 3n - 2 (point, neighbour) pairs, so (3n - 2)^3 in all.
  const std::int64_t pairs = 3 * n - 2;
  if (n > 1290 || n * n * n > max_index || pairs * pairs * pairs > max_index)
    fail(errc::unsupported, "gen stencil27: a " + std::to_string(n) + "^3 grid exceeds 32-bit indices");
  const std::int64_t rows = n * n * n, nnz = pairs * pairs * pairs;
  csr<V, std::int32_t, device> out;
  out.rows = rows;
  out.cols = rows;
  out.row_ptr.resize(static_cast<std::size_t>(rows) + 1);
  out.col_idx.resize(static_cast<std::size_t>(nnz));
  out.values.resize(static_cast<std::size_t>(nnz));
  const auto s = static_cast<cudaStream_t>(ctx.stream());
  // Counts in row_ptr[1..rows], then an inclusive scan in place; row_ptr[0] = 0.
  check_cuda(cudaMemsetAsync(out.row_ptr.data(), 0, sizeof(std::int32_t), s), "gen stencil27: row_ptr[0]");
  count_rows<<<launch_blocks(rows, threads), threads, 0, s>>>(n, rows, out.row_ptr.data() + 1);
  check_cuda(cudaGetLastError(), "gen stencil27: launching the count kernel");
  std::size_t bytes = 0;
  check_cuda(cub::DeviceScan::InclusiveSum(nullptr, bytes, out.row_ptr.data() + 1, out.row_ptr.data() + 1, rows, s),
             "gen stencil27: sizing the scan");
  check_cuda(cub::DeviceScan::InclusiveSum(ctx.workspace(bytes), bytes, out.row_ptr.data() + 1, out.row_ptr.data() + 1,
                                           rows, s),
             "gen stencil27: scan");
  fill_rows<V><<<launch_blocks(rows, threads), threads, 0, s>>>(
      n, rows, detail::stream_seed(seed, detail::purpose::values), out.row_ptr.data(), out.col_idx.data(),
      out.values.data());
  check_cuda(cudaGetLastError(), "gen stencil27: launching the fill kernel");
  ctx.synchronize();
  return out;
}

#define SPCONV_INST(V) template csr<V, std::int32_t, device> stencil27<V>(std::int64_t, std::uint64_t, gpu_context&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gen::gpu
