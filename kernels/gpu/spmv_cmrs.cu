// CMRS SpMV on the GPU (shared/papers/cmrs-koza.txt sec. 4, Algorithm 1; appendix 9, the
// basic kernel; appendix 10, the modified kernel for the sec. 6.7 layout).
// One warp per strip (the vector kernel of Bell and Garland with rows replaced by strips,
// sec. 4): lane l reads slots strip_start + l, + 32, ... (coalesced), decodes the column word
// (row in strip = low 4 bits, column = the rest, shifted unsigned: spconv's words are uint32)
// and adds value * x[column] into its warp's shared-memory buffer cell [l % M][row], M =
// params.modulo. M = 32 is Algorithm 1's buf[lane][r], a 32 x height buffer per warp; M < 32
// is appendix 10's buf[lane % M][r], M x height, which is race-free because the sec. 6.7
// layout never puts two slots of one row and one lane % M into the same 32-slot chunk. The
// buffer columns are then added by the appendix's halving tree (flat cells f += f + step *
// height for step = M/2 .. 1, i.e. buf[l][r] += buf[l + step][r]), and lane r < height
// writes row strip * height + r.
// height and M are template parameters (the paper's HEIGHT and MODULO): the buffer is a
// static shared array and the reduction unrolls; every valid pair is instantiated
// (height 1..16 with M = 32; height * M >= 32 with M < 32) and picked once per call.
// Arithmetic uses the round-to-nearest intrinsics, which are never contracted to FMA, so each
// cell sees the same additions in the same order as cpu::spmv(const cmrs&) and the results
// are the same bits.
// Synchronisation: __syncwarp() between the phases (clear, accumulate, each reduction step,
// the next strip's clear after the row sums are read) orders the lanes' shared-memory
// accesses under independent thread scheduling (the appendix's caveat about implicit warp
// synchronisation). With M < 32 different lanes update one cell in successive chunks, so the
// modified kernel also synchronises after every chunk; the basic kernel's cells belong to
// one lane each and need no synchronisation inside the loop.
#include <cuda_runtime.h>

#include <string>
#include <utility>

#include "formats/instantiate.hpp"
#include "kernels/gpu/spmv_cmrs.hpp"

namespace spconv::gpu {
namespace {

using I = std::int32_t;
constexpr int warp_size = 32;
constexpr int block_threads = 256;  // 8 warps, 8 buffers per block (at most 8 * 32 * 16 doubles = 32 KiB)
constexpr int block_warps = block_threads / warp_size;

__device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add(double a, double b) { return __dadd_rn(a, b); }

template <class V, int H, int M>
__global__ void __launch_bounds__(block_threads)
    strip_kernel(std::int64_t rows, std::int64_t strips, const I* __restrict__ strip_ptr,
                 const std::uint32_t* __restrict__ col_row, const V* __restrict__ val, V alpha,
                 const V* __restrict__ x, V beta, V* y) {
  __shared__ V buffers[block_warps][M * H];
  const int lane = static_cast<int>(threadIdx.x % warp_size);
  V* const buf = buffers[threadIdx.x / warp_size];
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * block_warps;
  for (std::int64_t j = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / warp_size; j < strips;
       j += warps) {
    __syncwarp();
    for (int f = lane; f < M * H; f += warp_size) buf[f] = V(0);
    __syncwarp();
    const std::int64_t b = strip_ptr[j], e = strip_ptr[j + 1];
    if constexpr (M == warp_size) {
      for (std::int64_t s = b + lane; s < e; s += warp_size) {
        const std::uint32_t w = col_row[s];
        V* const cell = buf + lane * H + static_cast<int>(w & (cmrs_max_height - 1));
        *cell = add(*cell, mul(val[s], x[w >> cmrs_row_bits]));
      }
    } else {
      // Whole chunks of 32 slots (a valid sec. 6.7 strip has no partial chunk; the bound
      // check keeps every lane in the loop, so the full-mask __syncwarp stays legal).
      for (std::int64_t chunk = b; chunk < e; chunk += warp_size) {
        const std::int64_t s = chunk + lane;
        if (s < e) {
          const std::uint32_t w = col_row[s];
          V* const cell = buf + (lane % M) * H + static_cast<int>(w & (cmrs_max_height - 1));
          *cell = add(*cell, mul(val[s], x[w >> cmrs_row_bits]));
        }
        __syncwarp();
      }
    }
    __syncwarp();
#pragma unroll
    for (int step = M / 2; step >= 1; step /= 2) {
      for (int f = lane; f < step * H; f += warp_size) buf[f] = add(buf[f], buf[f + step * H]);
      __syncwarp();
    }
    const std::int64_t row = j * H + lane;
    if (lane < H && row < rows) {
      const V sum = buf[lane];
      // beta == 0 writes y without reading it (BLAS semantics: y may hold NaN).
      y[row] = beta == V(0) ? mul(alpha, sum) : add(mul(alpha, sum), mul(beta, y[row]));
    }
  }
}

template <class V, int H, int M>
void launch(const cmrs<V, I, device>& a, V alpha, const V* x, V beta, V* y, cudaStream_t s) {
  // Pairs the format refuses (height * M < 32 with M < 32) are never instantiated; spmv()
  // has refused them before dispatching.
  if constexpr (M == warp_size || H * M >= warp_size) {
    const std::int64_t strips = cmrs_strips(a.rows, H);
    strip_kernel<V, H, M><<<launch_blocks(strips * warp_size, block_threads), block_threads, 0, s>>>(
        a.rows, strips, a.strip_ptr.data(), a.col_row.data(), a.values.data(), alpha, x, beta, y);
  }
}

template <class V, int M, int... Hm1>
void dispatch_height(std::integer_sequence<int, Hm1...>, int h, const cmrs<V, I, device>& a, V alpha, const V* x,
                     V beta, V* y, cudaStream_t s) {
  (void)((h == Hm1 + 1 ? (launch<V, Hm1 + 1, M>(a, alpha, x, beta, y, s), true) : false) || ...);
}

template <class V, int M>
void dispatch(int h, const cmrs<V, I, device>& a, V alpha, const V* x, V beta, V* y, cudaStream_t s) {
  dispatch_height<V, M>(std::make_integer_sequence<int, cmrs_max_height>{}, h, a, alpha, x, beta, y, s);
}

}  // namespace

template <class V>
void spmv(const cmrs<V, I, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx) {
  const int h = a.params.height, m = a.params.modulo;
  if (h < 1 || h > cmrs_max_height)
    fail(errc::usage, "gpu::spmv: cmrs height = " + std::to_string(h) + " is out of range [1, 16]");
  if (m != 2 && m != 4 && m != 8 && m != 16 && m != cmrs_warp)
    fail(errc::usage, "gpu::spmv: cmrs modulo = " + std::to_string(m) + " is not one of 2, 4, 8, 16, 32");
  if (m < cmrs_warp && h * m < cmrs_warp)
    fail(errc::usage, "gpu::spmv: cmrs height * modulo = " + std::to_string(h * m) +
                          " is below 32 (no sec. 6.7 layout exists for it)");
  const std::int64_t strips = cmrs_strips(a.rows, h);
  if (a.strip_ptr.size() != static_cast<std::size_t>(strips) + 1)
    fail(errc::usage, "gpu::spmv: cmrs strip_ptr has " + std::to_string(a.strip_ptr.size()) +
                          " elements, expected " + std::to_string(strips + 1));
  if (a.rows == 0) return;
  const auto s = static_cast<cudaStream_t>(ctx.stream());
  switch (m) {
    case 2: dispatch<V, 2>(h, a, alpha, x, beta, y, s); break;
    case 4: dispatch<V, 4>(h, a, alpha, x, beta, y, s); break;
    case 8: dispatch<V, 8>(h, a, alpha, x, beta, y, s); break;
    case 16: dispatch<V, 16>(h, a, alpha, x, beta, y, s); break;
    default: dispatch<V, cmrs_warp>(h, a, alpha, x, beta, y, s); break;
  }
  check_cuda(cudaGetLastError(), "gpu::spmv: launching the cmrs strip kernel (height " + std::to_string(h) +
                                     ", modulo " + std::to_string(m) + ")");
}

#define SPCONV_INST(V) template void spmv<V>(const cmrs<V, I, device>&, V, const V*, V, V*, gpu_context&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
