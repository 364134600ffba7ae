// CMRS SpMV on the GPU (shared/papers/cmrs-koza.txt sec. 4, Algorithm 1; appendix 9, the
// basic kernel; appendix 10, the modified kernel for the sec. 6.7 layout).
// One warp per strip (the vector kernel of Bell and Garland with rows replaced by strips,
// sec. 4): lane l reads slots strip_start + l, + 32, ... (coalesced), decodes the column word
// (row in strip = low 4 bits, column = the rest, shifted unsigned: spconv's words are uint32)
// and adds value * x[column] into the buffer cell [l % M][row], M = params.modulo. The
// buffer's columns are then added by the appendix's halving tree (buf[l][r] += buf[l +
// step][r] for step = M/2 .. 1) and row strip * height + r gets buf[0][r].
// M = 32 (register_kernel, pipelined_kernel) is Algorithm 1's buf[lane][r]: appendix 9 keeps it in shared
// memory, a 32 x height buffer per warp, which costs per strip a clear of 32 * height cells,
// a shared read-modify-write per slot and a tree of 31 * height shared additions with a
// __syncwarp() between its steps. Each cell is only ever touched by its own lane until the
// tree, so here lane l holds its cells buf[l][0 .. height) in registers: the same cells,
// receiving the same additions in the same order, so the arithmetic is the paper's. The
// tree then runs on shuffles, transposed (transpose_sum): at each step a lane keeps half of
// its remaining rows and its partner the other half, so a strip takes P - 1 + log2(32 / P)
// shuffle-and-add steps (P = height rounded up to a power of two: 9 for height 8, the count
// sec. 4 gives for its reduction of 32 x 8 partial sums), with the tree's pairs of operands.
// Strips of at most two slots a lane on average (gpu::cmrs_short_strips) take the same cells
// and tree in pipelined_kernel, which overlaps a warp's successive strips' memory latencies.
// M < 32 (strip_kernel) is appendix 10's buf[lane % M][r], M x height in shared memory,
// race-free because the sec. 6.7 layout never puts two slots of one row and one lane % M into
// the same 32-slot chunk. Its cells gather slots of several lanes in chunk order, which
// per-lane registers would not reproduce, so it keeps the shared buffer: the tree adds flat
// cells f += f + step * height, and lane r < height writes row strip * height + r.
// height and M are template parameters (the paper's HEIGHT and MODULO): the buffers are
// static (registers or shared arrays) and the reductions unroll; every valid pair is
// instantiated (height 1..16 with M = 32, in both basic kernels; height * M >= 32 with M < 32)
// and picked once per call.
// Arithmetic uses the round-to-nearest intrinsics, which are never contracted to FMA, so each
// cell sees the same additions in the same order as cpu::spmv(const cmrs&) and the results
// are the same bits.
// Synchronisation (M < 32): __syncwarp() between the phases (clear, accumulate, each
// reduction step, the next strip's clear after the row sums are read) orders the lanes'
// shared-memory accesses under independent thread scheduling (the appendix's caveat about
// implicit warp synchronisation), and, as different lanes update one cell in successive
// chunks, also after every chunk. The shuffles of M = 32 synchronise the full warp
// themselves; every loop that leads to one has warp-uniform bounds.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>

#include "formats/instantiate.hpp"
#include "kernels/gpu/resident_blocks.cuh"
#include "kernels/gpu/slot_batch.cuh"
#include "kernels/gpu/spmv_cmrs.hpp"

namespace spconv::gpu {
namespace {

using I = std::int32_t;
constexpr int warp_size = 32;
constexpr int block_threads = 256;  // 8 warps (M < 32: 8 buffers, at most 8 * 16 * 16 doubles = 16 KiB)
constexpr int block_warps = block_threads / warp_size;

__device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add(double a, double b) { return __dadd_rn(a, b); }

// Every shuffle involves all 32 lanes (a lane that skipped one would hang the warp).
constexpr unsigned full_mask = 0xffffffffu;

// Smallest power of two >= h: the register rows a lane reduces (rows h .. P - 1 stay +0.0).
__host__ __device__ constexpr int pow2_at_least(int h) { return h <= 1 ? 1 : 2 * pow2_at_least((h + 1) / 2); }

// The basic kernel's halving tree (buf[l][r] += buf[l + S][r], S = 16, 8, 4, 2, 1) on
// registers: v[r] is lane l's cell buf[l][r], of which the first N are still live (N = P on
// entry). At step S lane l pairs with lane l ^ S, which is the tree's pair (l, l + S) in
// each group of 2S lanes, and both lanes hold the same N rows. Rather than both adding all
// N (N shuffles), the lane with bit S clear keeps rows [0, N/2) of them and its partner
// rows [N/2, N), each sends the half it gives up, and each adds its kept cell to the
// partner's cell of the same row: N/2 shuffles per step, a transpose of the row sums over
// the lanes. The kept rows move to v[0 .. N/2), so every register index is a compile-time
// constant (a runtime index would put v in local memory). After log2(P) such steps one row
// is left per lane, and the remaining steps are the plain butterfly. Lane l then holds the
// sum of row l / (32 / P): its bits S = 16, 8, ... chose the upper half at each transposing
// step, i.e. they are the row's bits from P/2 down. Each addition has the tree's two
// operands (the lane with bit S set adds them swapped; IEEE addition is commutative), so
// the sum is cpu::spmv's buf[0][r] bit for bit.
template <int N, int S, int P, class V>
__device__ __forceinline__ V transpose_sum(V (&v)[P], int lane) {
  if constexpr (N == 1) {
#pragma unroll
    for (int step = S; step >= 1; step /= 2) v[0] = add(v[0], __shfl_xor_sync(full_mask, v[0], step));
    return v[0];
  } else {
    const bool upper = (lane & S) != 0;
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      const V give = upper ? v[i] : v[i + N / 2];
      const V keep = upper ? v[i + N / 2] : v[i];
      v[i] = add(keep, __shfl_xor_sync(full_mask, give, S));
    }
    return transpose_sum<N / 2, S / 2>(v, lane);
  }
}

// Basic layout (M = 32): lane l's cells buf[l][0 .. H) are registers, sum[r]. A slot adds
// into the cell of its row through H predicated additions (a runtime index into sum would
// put it in local memory), so each cell receives the same additions in the same order as in
// the shared buffer; transpose_sum then adds the cells in the tree's pairs.
template <int H, int P, class V>
__device__ __forceinline__ void add_slot(V (&sum)[P], std::uint32_t w, V product) {
  const int r = static_cast<int>(w & (cmrs_max_height - 1));
#pragma unroll
  for (int k = 0; k < H; ++k)
    if (r == k) sum[k] = add(sum[k], product);
}

// Adds the lane's slots s, s + 32, ... below e into its cells, in batches: a batch's
// column-word and value loads, then its x loads, are all issued before its first addition, so
// a lane waits one memory latency per batch rather than two per slot; the additions stay in
// slot order. Batches of 4 while they fill, then one of 2, then 1: measured on the H100
// (double), 4 alone ran long strips up to 1.9x faster than 2 alone (the matrices as they are,
// where few warps each walk a long strip: rajat01, Groebner, hangGlider_2) but strips of 1-3
// slots per lane 10-15% slower (bayer10, lap3D_7pt_n20 replicated), which take the 2 and 1
// steps without the 4 loop's overhead.
template <int H, int P, class V>
__device__ __forceinline__ void add_slots(V (&sum)[P], std::int64_t s, std::int64_t e,
                                          const std::uint32_t* __restrict__ col_row, const V* __restrict__ val,
                                          const V* __restrict__ x) {
  const auto batch = [&](auto n) {
    constexpr int N = decltype(n)::value;
    std::uint32_t w[N];
    V v[N], xv[N];
    const auto column = [](std::uint32_t word, const V* xs) { return xs[word >> cmrs_row_bits]; };
    load_slots(col_row, val, s, warp_size, x, column, w, v, xv);
#pragma unroll
    for (int q = 0; q < N; ++q) add_slot<H>(sum, w[q], mul(v[q], xv[q]));
    s += N * warp_size;
  };
  while (s + 3 * warp_size < e) batch(std::integral_constant<int, 4>{});
  if (s + warp_size < e) batch(std::integral_constant<int, 2>{});
  if (s < e) batch(std::integral_constant<int, 1>{});
}

// Adds up strip j's cells over the warp (transpose_sum) and writes its rows.
template <int H, int P, class V>
__device__ __forceinline__ void write_strip(V (&sum)[P], std::int64_t j, int lane, std::int64_t rows, V alpha,
                                            V beta, V* y) {
  constexpr int lanes_per_row = warp_size / P;
  const int row_in_strip = lane / lanes_per_row;  // the row transpose_sum leaves in this lane
  const V row_sum = transpose_sum<P, warp_size / 2>(sum, lane);
  const std::int64_t row = j * H + row_in_strip;
  if (lane % lanes_per_row == 0 && row_in_strip < H && row < rows)
    // beta == 0 writes y without reading it (BLAS semantics: y may hold NaN).
    y[row] = beta == V(0) ? mul(alpha, row_sum) : add(mul(alpha, row_sum), mul(beta, y[row]));
}

// A strip's slot b + lane (+ 32): b <= 2^31 - 1 (strip_ptr is I), so the sum stays below 2^32
// in unsigned 32-bit arithmetic, where an int sum overflows for a strip starting within 63
// slots of 2^31 - 1. The same instructions as the int sum (the widening zero-extends instead).
__device__ __forceinline__ std::uint32_t slot_of(I b, int lane) {
  return static_cast<std::uint32_t>(b) + static_cast<std::uint32_t>(lane);
}

// The calling thread's lane, its warp's index in the grid and the grid's warps: the basic
// layout's kernels walk strips first, first + warps, ...
struct warp_walk {
  int lane;
  std::int64_t first, warps;
};
__device__ __forceinline__ warp_walk grid_warps() {
  return {static_cast<int>(threadIdx.x % warp_size),
          (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / warp_size,
          static_cast<std::int64_t>(gridDim.x) * block_warps};
}

// A warp per strip, strips j, j + warps, ...
template <class V, int H>
__global__ void __launch_bounds__(block_threads)
    register_kernel(std::int64_t rows, std::int64_t strips, const I* __restrict__ strip_ptr,
                    const std::uint32_t* __restrict__ col_row, const V* __restrict__ val, V alpha,
                    const V* __restrict__ x, V beta, V* y) {
  constexpr int P = pow2_at_least(H);
  const auto [lane, first, warps] = grid_warps();
  std::int64_t j = first;
  I b = 0, e = 0;
  if (j < strips) b = strip_ptr[j], e = strip_ptr[j + 1];
  for (; j < strips; j += warps) {
    V sum[P] = {};  // +0.0, like the cleared buffer
    add_slots<H>(sum, slot_of(b, lane), e, col_row, val, x);
    // The next strip's bounds are loaded while this strip is reduced.
    if (j + warps < strips) b = strip_ptr[j + warps], e = strip_ptr[j + warps + 1];
    write_strip<H>(sum, j, lane, rows, alpha, beta, y);
  }
}

// Short strips (cmrs_short_strips): one resident wave of warps, each walking strips j, j +
// warps, ... as a pipeline. While strip j is added up, the bounds of strip j + 2 warps and the
// first slot of each lane in strip j + warps (its head: a short strip's only slot in most
// lanes) are already loading, so a warp waits for little more than x per strip, where the
// register kernel's warp waits for a strip's bounds, then its slots, then x. Each cell's
// additions keep the slot order (the head is the lane's first slot), so the result is the
// register kernel's.
template <class V, int H>
__global__ void __launch_bounds__(block_threads)
    pipelined_kernel(std::int64_t rows, std::int64_t strips, const I* __restrict__ strip_ptr,
                     const std::uint32_t* __restrict__ col_row, const V* __restrict__ val, V alpha,
                     const V* __restrict__ x, V beta, V* y) {
  constexpr int P = pow2_at_least(H);
  const auto [lane, first, warps] = grid_warps();
  const auto bounds = [&](std::int64_t k, I& kb, I& ke) {
    kb = ke = 0;
    if (k < strips) kb = strip_ptr[k], ke = strip_ptr[k + 1];
  };
  const auto head = [&](I kb, I ke, std::uint32_t& w, V& v) {
    w = 0, v = V(0);
    const std::uint32_t s = slot_of(kb, lane);
    if (s < static_cast<std::uint32_t>(ke)) w = col_row[s], v = val[s];
  };
  std::int64_t j = first;
  I b, e, nb, ne;
  bounds(j, b, e);
  bounds(j + warps, nb, ne);
  std::uint32_t hw;
  V hv;
  head(b, e, hw, hv);
  for (; j < strips; j += warps) {
    const bool has_head = slot_of(b, lane) < static_cast<std::uint32_t>(e);
    const V hx = has_head ? x[hw >> cmrs_row_bits] : V(0);
    std::uint32_t next_w;
    V next_v;
    head(nb, ne, next_w, next_v);
    I nnb, nne;
    bounds(j + 2 * warps, nnb, nne);
    V sum[P] = {};  // +0.0, like the cleared buffer
    if (has_head) add_slot<H>(sum, hw, mul(hv, hx));
    add_slots<H>(sum, slot_of(b, lane) + warp_size, e, col_row, val, x);
    write_strip<H>(sum, j, lane, rows, alpha, beta, y);
    b = nb, e = ne, nb = nnb, ne = nne, hw = next_w, hv = next_v;
  }
}

// Sec. 6.7 layout (M < 32): the shared buffer of appendix 10, whose cells gather the slots
// of several lanes (lane % M) in chunk order.
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
void launch(const cmrs<V, I, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx) {
  // Pairs the format refuses (height * M < 32 with M < 32) are never instantiated; spmv()
  // has refused them before dispatching.
  if constexpr (M == warp_size || H * M >= warp_size) {
    const std::int64_t strips = cmrs_strips(a.rows, H);
    const unsigned blocks = launch_blocks(strips * warp_size, block_threads);
    const auto s = static_cast<cudaStream_t>(ctx.stream());
    if constexpr (M == warp_size) {
      if (cmrs_short_strips(static_cast<std::int64_t>(a.col_row.size()), strips)) {
        const auto kernel = pipelined_kernel<V, H>;
        const int wave = resident_blocks(kernel, block_threads, ctx.device(), "gpu::spmv (cmrs)");
        kernel<<<std::min(blocks, static_cast<unsigned>(wave)), block_threads, 0, s>>>(
            a.rows, strips, a.strip_ptr.data(), a.col_row.data(), a.values.data(), alpha, x, beta, y);
      } else {
        register_kernel<V, H><<<blocks, block_threads, 0, s>>>(a.rows, strips, a.strip_ptr.data(), a.col_row.data(),
                                                              a.values.data(), alpha, x, beta, y);
      }
    } else {
      strip_kernel<V, H, M><<<blocks, block_threads, 0, s>>>(a.rows, strips, a.strip_ptr.data(), a.col_row.data(),
                                                            a.values.data(), alpha, x, beta, y);
    }
  }
}

template <class V, int M, int... Hm1>
void dispatch_height(std::integer_sequence<int, Hm1...>, int h, const cmrs<V, I, device>& a, V alpha, const V* x,
                     V beta, V* y, gpu_context& ctx) {
  (void)((h == Hm1 + 1 ? (launch<V, Hm1 + 1, M>(a, alpha, x, beta, y, ctx), true) : false) || ...);
}

template <class V, int M>
void dispatch(int h, const cmrs<V, I, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx) {
  dispatch_height<V, M>(std::make_integer_sequence<int, cmrs_max_height>{}, h, a, alpha, x, beta, y, ctx);
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
  switch (m) {
    case 2: dispatch<V, 2>(h, a, alpha, x, beta, y, ctx); break;
    case 4: dispatch<V, 4>(h, a, alpha, x, beta, y, ctx); break;
    case 8: dispatch<V, 8>(h, a, alpha, x, beta, y, ctx); break;
    case 16: dispatch<V, 16>(h, a, alpha, x, beta, y, ctx); break;
    default: dispatch<V, cmrs_warp>(h, a, alpha, x, beta, y, ctx); break;
  }
  check_cuda(cudaGetLastError(), "gpu::spmv: launching the cmrs strip kernel (height " + std::to_string(h) +
                                     ", modulo " + std::to_string(m) + ")");
}

#define SPCONV_INST(V) template void spmv<V>(const cmrs<V, I, device>&, V, const V*, V, V*, gpu_context&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
