// CCOO SpMV on the GPU: the balanced, compressed COO kernel of Aliaga et al., Euro-Par 2020
// Workshops, Sect. 2 (bccoo-aliaga-anzt.txt). One thread block per chunk (the balanced part:
// every block gets B*K entries), one thread per group of K entries (Listing 1.1, the K loop
// unrolled for the K the automatic rule picks), the chunk's encoding chosen by its format
// code, uniform over the block so the decode does not diverge (the compressed part). Row
// sums are combined by the segmented scan of Listing 1.2 and added to y with atomicAdd.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "convert/gpu/ccoo_device.cuh"
#include "formats/instantiate.hpp"
#include "kernels/gpu/resident_blocks.cuh"
#include "kernels/gpu/scale_y.cuh"
#include "kernels/gpu/spmv_ccoo.hpp"

namespace spconv::gpu {
namespace {

using I = std::int32_t;
constexpr int block_threads = 256;
constexpr int warp_size = 32;

// y[row] += v from many threads. PTX's atom/red.add.f32 flush subnormal inputs and results
// to zero (PTX ISA, "atom"), which loses whole rows of tiny values (memplus_rhs1.mtx holds a
// float-subnormal entry) where the CPU reference keeps them; so float adds go through a
// compare-and-swap loop around an ordinary IEEE add. The f64 atomic add does not flush.
__device__ __forceinline__ void add_to(double* p, double v) { atomicAdd(p, v); }
__device__ __forceinline__ void add_to(float* p, float v) {
  auto* word = reinterpret_cast<unsigned*>(p);
  unsigned seen = *word, assumed;
  do {
    assumed = seen;
    seen = atomicCAS(word, assumed, __float_as_uint(__uint_as_float(assumed) + v));
  } while (seen != assumed);
}

struct chunks_view {
  const std::uint8_t* format;
  const I* row;
  const I* col;
  const std::uint64_t* ptr;
  const std::uint8_t* blob;
  const std::int64_t* counts;  // {entries, stored entries}, on the device
  int b, k;
};

// A group's K column offsets and K values (or table indices), into registers. Sections are
// only aligned to their element size, but the alignment of a section modulo 16 is the same for
// every group of the chunk (groups are K * size bytes apart), so the choice of loads is made
// once per chunk. For K = 4: 1- and 2-byte offsets come as one or two aligned 32-bit words
// per group, shifted into place (funnel shift) when the section is not 4-byte aligned: the
// words read at most 3 bytes past the group, inside the chunk's blob, whose value section
// follows; values in double come as two 16-byte pairs, or as a single, a pair and a single
// when the section is 8 bytes off; table indices as one word when aligned. Fewer, wider
// loads: the same bytes in a quarter to a half of the load instructions.
template <class V, int K>
struct group_loader {
  const std::uint32_t* words;  // the column section's first 4-byte aligned word at or before it
  int shift;                   // bits from that word's start to the section's
  bool pair_vals, wide_lut;

  __device__ group_loader(const std::uint8_t* cols, const std::uint8_t* vals) {
    const auto skew = [](const void* q, std::uintptr_t a) { return reinterpret_cast<std::uintptr_t>(q) & (a - 1); };
    words = reinterpret_cast<const std::uint32_t*>(cols - skew(cols, 4));
    shift = 8 * static_cast<int>(skew(cols, 4));
    pair_vals = skew(vals, 16) == 0;
    wide_lut = skew(vals, 4) == 0;
  }

  // The 4 bytes at section offset 4 * i.
  __device__ std::uint32_t word(std::int64_t i) const {
    return shift == 0 ? words[i] : __funnelshift_r(words[i], words[i + 1], shift);
  }

  __device__ void columns(const std::uint8_t* cols, std::uint32_t col_bytes, std::int64_t g, std::uint32_t* off) const {
    if constexpr (K == 4) {
      if (col_bytes == 1) {
        const std::uint32_t w = word(g);
#pragma unroll
        for (int j = 0; j < 4; ++j) off[j] = (w >> (8 * j)) & 0xffu;
        return;
      }
      if (col_bytes == 2) {
        const std::uint32_t lo = word(2 * g), hi = word(2 * g + 1);
        off[0] = lo & 0xffffu;
        off[1] = lo >> 16;
        off[2] = hi & 0xffffu;
        off[3] = hi >> 16;
        return;
      }
    }
#pragma unroll
    for (int j = 0; j < K; ++j) off[j] = ccoo_device::col_offset(cols, col_bytes, g * K + j);
  }

  // Table indices (lut) or the values themselves.
  __device__ void values(const std::uint8_t* vals, bool lut, const V* table, std::int64_t g, V* v) const {
    if constexpr (K == 4) {
      if (lut && wide_lut) {
        const std::uint32_t w = reinterpret_cast<const std::uint32_t*>(vals)[g];
#pragma unroll
        for (int j = 0; j < 4; ++j) v[j] = table[(w >> (8 * j)) & 0xffu];
        return;
      }
      if constexpr (sizeof(V) == 8) {
        if (!lut) {
          const double* d = reinterpret_cast<const double*>(vals) + 4 * g;
          if (pair_vals) {
            const double2 a = reinterpret_cast<const double2*>(d)[0], b = reinterpret_cast<const double2*>(d)[1];
            v[0] = a.x;
            v[1] = a.y;
            v[2] = b.x;
            v[3] = b.y;
          } else {  // 8 bytes off: entries 1 and 2 form the aligned pair
            const double2 m = *reinterpret_cast<const double2*>(d + 1);
            v[0] = d[0];
            v[1] = m.x;
            v[2] = m.y;
            v[3] = d[3];
          }
          return;
        }
      } else {
        if (!lut && pair_vals) {
          const float4 a = reinterpret_cast<const float4*>(vals)[g];
          v[0] = a.x;
          v[1] = a.y;
          v[2] = a.z;
          v[3] = a.w;
          return;
        }
      }
    }
#pragma unroll
    for (int j = 0; j < K; ++j) {
      const std::int64_t e = g * K + j;
      v[j] = lut ? table[vals[e]] : reinterpret_cast<const V*>(vals)[e];
    }
  }
};

// A group's K products, in order, skipping padding (Listing 1.1). For K = 1, 2, 4 the
// group's K pad bits lie in one byte of the bitmap: one load instead of K. A padding entry's
// x is loaded (its column is the chunk's baseline, a valid column) but its product is not
// added, so an Inf or NaN there does not reach y. Columns are 32-bit (baseline plus offset,
// below 2^31), so x is indexed without 64-bit arithmetic.
template <class V, int K>
__device__ __forceinline__ V group_sum(const group_loader<V, K>& load, const std::uint8_t* cols,
                                       std::uint32_t col_bytes, const std::uint8_t* vals, bool lut, const V* table,
                                       const std::uint8_t* bitmap, std::int64_t g, std::uint32_t col0,
                                       const V* __restrict__ x) {
  static_assert(8 % K == 0, "a group's pad bits must lie in one byte");
  std::uint32_t off[K];
  V v[K];
  load.columns(cols, col_bytes, g, off);
  load.values(vals, lut, table, g, v);
  unsigned pads = 0;
  if (bitmap) {
    const std::int64_t e = g * K;
    pads = bitmap[e >> 3] >> (e & 7);
  }
  V sum = 0;
#pragma unroll
  for (int j = 0; j < K; ++j) {
    const V xv = x[col0 + off[j]];
    if (!((pads >> j) & 1u)) sum += v[j] * xv;
  }
  return sum;
}

// Listing 1.2, a segmented suffix scan over the warp's groups, whose rows do not decrease
// along the warp: after the step with distance d each lane holds the sum of the lanes
// [lane, min(lane + 2d, end)), end being the first lane of the next row segment (found once,
// from a ballot of the segments' first lanes, instead of comparing shuffled rows at every
// step). The first lane of each segment then adds the segment's sum to y. Lanes past the
// chunk's groups (row -1) form a segment of their own that writes nothing.
template <class V>
__device__ __forceinline__ void add_row_sums(V sum, int row, int lane, V alpha, V* y) {
  const unsigned full = 0xffffffffu;
  const int prev = __shfl_up_sync(full, row, 1);
  const bool first = lane == 0 || prev != row;
  const unsigned later = __ballot_sync(full, first) & (~1u << lane);
  const int end = later ? __ffs(static_cast<int>(later)) - 1 : warp_size;
  for (int d = 1; d < warp_size; d *= 2) {
    const V other = __shfl_down_sync(full, sum, d);
    if (lane + d < end) sum += other;
  }
  if (first && row >= 0) add_to(y + row, alpha * sum);
}

// The block loops over chunks blockIdx.x, blockIdx.x + gridDim.x, ... (enough blocks to fill
// the device, launched once): the value table is staged in shared memory once per block
// instead of once per chunk, and the per-block start-up is paid once per ~100 chunks.
// Eight blocks per SM (at most 32 registers): a chunk's loads wait on one another, so the
// kernel hides latency by occupancy (Nsight Compute: long_scoreboard stalls dominate; loading
// the next chunk's header or blob ahead, which costs registers or shared memory, was slower).
template <class V, int K>
__global__ void __launch_bounds__(block_threads, 8)
    chunk_products(chunks_view m, std::int64_t chunks, const V* table, int table_size, V alpha,
                   const V* __restrict__ x, V* y) {
  __shared__ V s_table[ccoo_table_capacity];
  __shared__ V warp_sum[block_threads / warp_size];
  const int k = K ? K : m.k;
  const int t = threadIdx.x, lane = t % warp_size;
  for (int i = t; i < table_size; i += blockDim.x) s_table[i] = table[i];
  __syncthreads();

  for (std::int64_t c = blockIdx.x; c < chunks; c += gridDim.x) {
    const std::int64_t e_count = ccoo_device::chunk_entries(m.counts[0], std::int64_t{m.b} * k, c);
    const std::uint8_t code = m.format[c];
    const ccoo_device::section l = ccoo_device::chunk_section(e_count, k, code, sizeof(V));
    const std::uint8_t* p = m.blob + m.ptr[c];
    const std::uint8_t* roff = (code & ccoo_code::single_row) ? nullptr : p + l.rows;
    const std::uint8_t* bitmap = (code & ccoo_code::pads) ? p + l.pads : nullptr;
    const std::uint8_t* cols = p + l.cols;
    const std::uint8_t* vals = p + l.values;
    const bool lut = code & ccoo_code::lut;
    const auto col0 = static_cast<std::uint32_t>(m.col[c]);
    const std::int64_t base_row = m.row[c];

    // One thread: its group's K products, in order, skipping padding.
    V sum = 0;
    int row = -1;  // the group's row offset; -1 for threads past the chunk's groups
    if (t < e_count / k) {
      row = roff ? roff[t] : 0;
      if constexpr (K != 0) {
        const group_loader<V, K> load(cols, vals);
        sum = group_sum<V, K>(load, cols, l.col_bytes, vals, lut, s_table, bitmap, t, col0, x);
      } else {
        for (int j = 0; j < k; ++j) {
          const std::int64_t e = static_cast<std::int64_t>(t) * k + j;
          if (ccoo_device::is_pad(bitmap, e)) continue;
          const V v = lut ? s_table[vals[e]] : reinterpret_cast<const V*>(vals)[e];
          sum += v * x[col0 + ccoo_device::col_offset(cols, l.col_bytes, e)];
        }
      }
    }

    if (!roff) {
      // One row: a plain reduction, one atomicAdd per chunk. The code is the same for the
      // whole block, so every thread takes this branch and reaches both barriers.
      for (int offset = warp_size / 2; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
      if (lane == 0) warp_sum[t / warp_size] = sum;
      __syncthreads();
      if (t == 0) {
        V total = 0;
        for (int w = 0; w < static_cast<int>(blockDim.x / warp_size); ++w) total += warp_sum[w];
        add_to(y + base_row, alpha * total);
      }
      __syncthreads();  // warp_sum is written again for the next chunk
      continue;
    }
    add_row_sums(sum, row, lane, alpha, y + base_row);
  }
}

template <class V>
using kernel_fn = void (*)(chunks_view, std::int64_t, const V*, int, V, const V*, V*);

// The K loop unrolls for the K the automatic rule picks (4, 2, 1); other K run it with a
// run-time bound.
template <class V>
kernel_fn<V> pick(int k) {
  switch (k) {
    case 1: return &chunk_products<V, 1>;
    case 2: return &chunk_products<V, 2>;
    case 4: return &chunk_products<V, 4>;
    default: return &chunk_products<V, 0>;
  }
}

}  // namespace

template <class V>
void spmv(const ccoo<V, I, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx) {
  const int b = a.params.chunk_b, k = a.params.chunk_k;
  if (b < 1 || b > ccoo_max_chunk_b || k < 1 || k > ccoo_max_chunk_k)
    fail(errc::usage, "gpu::spmv: ccoo chunk " + std::to_string(b) + "x" + std::to_string(k) +
                          " is out of range [1, " + std::to_string(ccoo_max_chunk_b) + "] x [1, " +
                          std::to_string(ccoo_max_chunk_k) + "]");
  if (a.counts.size() != 2)
    fail(errc::usage, "gpu::spmv: ccoo counts has " + std::to_string(a.counts.size()) + " elements, expected 2");
  if (a.rows == 0) return;
  const auto s = static_cast<cudaStream_t>(ctx.stream());
  if (beta != V(1)) {
    scale_y<V><<<launch_blocks(a.rows, block_threads), block_threads, 0, s>>>(a.rows, beta, y);
    check_cuda(cudaGetLastError(), "gpu::spmv: launching the CCOO y scaling");
  }
  const std::int64_t chunks = static_cast<std::int64_t>(a.chunk_format.size());
  if (chunks == 0) return;
  const chunks_view m{a.chunk_format.data(), a.chunk_row.data(), a.chunk_col.data(), a.chunk_ptr.data(),
                      a.blob.data(),         a.counts.data(),    b,                   k};
  // A thread per group: B rounded up to whole warps (B <= 256 = block_threads).
  const int threads = (b + warp_size - 1) / warp_size * warp_size;
  const kernel_fn<V> kernel = pick<V>(k);
  // One resident wave; each block loops over its share of the equal-sized chunks.
  const std::int64_t blocks =
      std::min<std::int64_t>(chunks, resident_blocks(kernel, threads, ctx.device(), "gpu::spmv (ccoo)"));
  kernel<<<static_cast<unsigned>(blocks), threads, 0, s>>>(m, chunks, a.table.data(), static_cast<int>(a.table.size()),
                                                           alpha, x, y);
  check_cuda(cudaGetLastError(), "gpu::spmv: launching the CCOO chunk kernel");
}

#define SPCONV_INST(V) template void spmv<V>(const ccoo<V, I, device>&, V, const V*, V, V*, gpu_context&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
