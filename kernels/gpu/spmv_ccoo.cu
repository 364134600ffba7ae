// CCOO SpMV on the GPU: the balanced, compressed COO kernel of Aliaga et al., Euro-Par 2020
// Workshops, Sect. 2 (bccoo-aliaga-anzt.txt). One thread block per chunk (the balanced part:
// every block gets B*K entries), one thread per group of K entries (Listing 1.1, the K loop
// unrolled for the K the automatic rule picks), the chunk's encoding chosen by its format
// code, uniform over the block so the decode does not diverge (the compressed part). Row
// sums are combined by the segmented scan of Listing 1.2 and added to y with atomicAdd.
// Chunks of table values may go to a second kernel instead, a warp per chunk (spconv's
// addition, below chunk_products; the choice is in spmv_ccoo.hpp).
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "convert/gpu/ccoo_device.cuh"
#include "formats/device_kernel.cuh"
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

// The same for any K, element by element: the block kernel's general K and the table warps'
// partial last chunk.
template <class V>
__device__ __forceinline__ V group_sum_any(const std::uint8_t* cols, std::uint32_t col_bytes,
                                           const std::uint8_t* vals, bool lut, const V* table,
                                           const std::uint8_t* bitmap, std::int64_t g, int k, std::uint32_t col0,
                                           const V* __restrict__ x) {
  V sum = 0;
  for (int j = 0; j < k; ++j) {
    const std::int64_t e = g * k + j;
    if (ccoo_device::is_pad(bitmap, e)) continue;
    const V v = lut ? table[vals[e]] : reinterpret_cast<const V*>(vals)[e];
    sum += v * x[col0 + ccoo_device::col_offset(cols, col_bytes, e)];
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

// The chunks a block or a warp takes: first, first + stride, ...; with Filter, only those whose
// code has every bit of `need` and no bit of `skip` (the others are the other kernel's): then
// the lanes read the codes of the next 32 at once, a lane each, and a ballot lists the ones to
// take, so that skipping does not wait on one code at a time (a chain of ~100 such loads a
// block cost the replicated rajat01 ~0.13 ms, stop 29). Every lane of the warp calls next()
// alike.
template <bool Filter>
struct chunk_walk {
  std::int64_t first;  // Filter: the chunk of lane 0 in the current 32; else the current chunk
  unsigned todo = 0;   // Filter: the chunks of the current 32 still to take, a bit per lane
  unsigned lane_code = 0;

  __device__ bool next(const std::uint8_t* format, std::int64_t chunks, std::int64_t stride, unsigned need,
                       unsigned skip, std::int64_t& c, std::uint8_t& code) {
    if constexpr (!Filter) {
      first += stride;
      if (first >= chunks) return false;
      c = first;
      code = format[c];
      return true;
    }
    const int lane = static_cast<int>(threadIdx.x % warp_size);
    while (todo == 0) {
      first += warp_size * stride;
      if (first >= chunks) return false;
      const std::int64_t mine = first + lane * stride;
      lane_code = mine < chunks ? format[mine] : 0u;
      todo = __ballot_sync(0xffffffffu, mine < chunks && (lane_code & need) == need && !(lane_code & skip));
    }
    const int i = __ffs(static_cast<int>(todo)) - 1;
    todo &= todo - 1;
    c = first + i * stride;
    code = static_cast<std::uint8_t>(__shfl_sync(0xffffffffu, lane_code, i));
    return true;
  }
};

// The block loops over chunks blockIdx.x, blockIdx.x + gridDim.x, ... (enough blocks to fill
// the device, launched once): the value table is staged in shared memory once per block
// instead of once per chunk, and the per-block start-up is paid once per ~100 chunks.
// Eight blocks per SM (at most 32 registers): a chunk's loads wait on one another, so the
// kernel hides latency by occupancy (Nsight Compute: long_scoreboard stalls dominate; loading
// the next chunk's header or blob ahead, which costs registers or shared memory, was slower).
// Split: the chunks whose values are table indices are chunk_table_warps', not this kernel's.
template <class V, int K, bool Split>
__global__ void __launch_bounds__(block_threads, 8)
    chunk_products(chunks_view m, std::int64_t chunks, const V* table, int table_size, V alpha,
                   const V* __restrict__ x, V* y) {
  __shared__ V s_table[ccoo_table_capacity];
  __shared__ V warp_sum[block_threads / warp_size];
  const int k = K ? K : m.k;
  const int t = threadIdx.x, lane = t % warp_size;
  for (int i = t; i < table_size; i += blockDim.x) s_table[i] = table[i];
  __syncthreads();

  chunk_walk<Split> walk{std::int64_t{blockIdx.x} - (Split ? std::int64_t{warp_size} : 1) * gridDim.x};
  std::int64_t c;
  std::uint8_t code;
  while (walk.next(m.format, chunks, gridDim.x, 0u, ccoo_code::lut, c, code)) {  // alike for the block's warps
    const std::int64_t e_count = ccoo_device::chunk_entries(m.counts[0], std::int64_t{m.b} * k, c);
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
        sum = group_sum_any(cols, l.col_bytes, vals, lut, s_table, bitmap, t, k, col0, x);
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

// ---- table chunks: a warp per chunk, a lane per K consecutive groups -------------------
// The block kernel pays a chunk's header (its code, layout and pointers, about a quarter of its
// instructions on the matrices of table values, Nsight Compute, stop 29) in every thread, for
// K entries, and a segmented scan for every group. For chunks whose values are table indices
// (1 byte an entry: 3-4 bytes an entry in all, where the work per byte, not the memory, sets
// the pace) and B = 256 groups, chunk_table_warps gives a chunk to one warp: the header is
// paid once a warp, and in each of 256 / (32 K) steps a lane takes K consecutive groups (K*K
// entries), reads each section of them as one aligned vector, sums them row by row in
// registers and one segmented scan a step joins the rows that cross lanes (specs/formats/
// ccoo.md, "SpMV", for the measurements behind K groups a lane).
constexpr int warp_kernel_threads = 128;

// N consecutive elements of EB bytes of one section of a full chunk, from p. A full chunk of
// B = 256 has sections whose lengths are multiples of 32 bytes (256 row offsets, 32*K bytes of
// pad bits, 256*K column offsets and values), so every full chunk's blob and sections start
// 16-byte aligned (the blob allocation is, and only the last chunk is partial); a lane's
// share of a section in a step (K*K elements from a multiple of K*K) and a group's (K from a
// multiple of K) are then aligned to their size up to 16 bytes. They are loaded in aligned
// units of up to 16 bytes and element j is cut out of its unit (j is a constant once the group
// loops are unrolled).
template <int EB, int N>
struct elements {
  static constexpr int bytes = N * EB;
  static constexpr int unit = bytes < 16 ? bytes : 16;  // bytes a load
  static constexpr int per_unit = unit / EB;            // elements a load
  static constexpr int units = bytes / unit;
  std::uint32_t w[units][unit < 4 ? 1 : unit / 4];

  __device__ explicit elements(const std::uint8_t* p) {
#pragma unroll
    for (int u = 0; u < units; ++u) {
      const std::uint8_t* q = p + u * unit;
      if constexpr (unit == 16) {
        const uint4 v = *reinterpret_cast<const uint4*>(q);
        w[u][0] = v.x;
        w[u][1] = v.y;
        w[u][2] = v.z;
        w[u][3] = v.w;
      } else if constexpr (unit == 8) {
        const uint2 v = *reinterpret_cast<const uint2*>(q);
        w[u][0] = v.x;
        w[u][1] = v.y;
      } else if constexpr (unit == 4) {
        w[u][0] = *reinterpret_cast<const std::uint32_t*>(q);
      } else if constexpr (unit == 2) {
        w[u][0] = *reinterpret_cast<const std::uint16_t*>(q);
      } else {
        w[u][0] = *q;
      }
    }
  }
  // Element j as an unsigned integer (EB <= 4).
  __device__ std::uint32_t operator[](int j) const {
    const int u = j / per_unit, b = (j % per_unit) * EB;
    if constexpr (EB == 4) return w[u][b / 4];
    else return (w[u][b / 4] >> (8 * (b % 4))) & ((1u << (8 * EB)) - 1u);
  }
};

// A lane's elements of one section in one step (G groups, G*K elements): loaded at once where
// they take at most 32 bytes (8 registers: 1- and 2-byte column offsets, table indices),
// otherwise a group's K at a time (4-byte column offsets of K = 4); the group loops are
// unrolled, so the compiler may still load ahead as far as the registers allow.
template <int EB, int K, int G, bool Whole = (G * K * EB <= 32)>
struct lane_section;

template <int EB, int K, int G>
struct lane_section<EB, K, G, true> {
  elements<EB, G * K> all;
  __device__ explicit lane_section(const std::uint8_t* p) : all(p) {}
  __device__ elements<EB, G * K> group(int) const { return all; }
  __device__ static constexpr int first(int g) { return g * K; }  // the group's first element in group(g)
};

template <int EB, int K, int G>
struct lane_section<EB, K, G, false> {
  const std::uint8_t* p;
  __device__ explicit lane_section(const std::uint8_t* q) : p(q) {}
  __device__ elements<EB, K> group(int g) const { return elements<EB, K>(p + g * K * EB); }
  __device__ static constexpr int first(int) { return 0; }
};

// A lane's running row sums. Its groups' rows do not decrease and step by at most one, so a
// new row ends the one before: the lane's first row may continue the lane before's last, so
// its part is kept (head) for the join; the rows after it, until the current one, are the
// lane's alone and go to y at once.
template <class V>
struct lane_rows {
  int head_row = -1, row = -1;  // the lane's first row and its current one; -1: no group
  V head = 0, sum = 0;          // the first row's part once the lane has left it; the current row's
  bool left = false;            // whether the lane has left its first row

  __device__ void start(int r) { head_row = row = r; }
  __device__ void add(int r, V s, V alpha, V* y) {
    if (r == row) {
      sum += s;
      return;
    }
    if (left) add_to(y + row, alpha * sum);
    else head = sum;
    left = true;
    row = r;
    sum = s;
  }
  // The join over the warp: a lane's first part goes to the lane before when that lane's last
  // row is the same row, else to y; then the lanes' last parts are summed per row by the
  // segmented scan, whose segment heads add them to y. Every lane calls it.
  __device__ void finish(int lane, V alpha, V* y) {
    const unsigned full = 0xffffffffu;
    const int next_head_row = __shfl_down_sync(full, left ? head_row : -1, 1);
    const V next_head = __shfl_down_sync(full, head, 1);
    const int prev_row = __shfl_up_sync(full, row, 1);
    if (lane + 1 < warp_size && row >= 0 && next_head_row == row) sum += next_head;
    if (left && (lane == 0 || prev_row != head_row)) add_to(y + head_row, alpha * head);
    add_row_sums(sum, row, lane, alpha, y);
  }
};

// The lane's G*K pad bits from entry e (bit j: entry e + j), 0 without a pad bitmap. e is a
// multiple of G*K, a power of two, so the bits never straddle an aligned word of their size.
template <int K, int G>
__device__ __forceinline__ std::uint32_t lane_pads(const std::uint8_t* bitmap, int e) {
  constexpr int bits = G * K;
  if (!bitmap) return 0;
  if constexpr (bits == 32) return reinterpret_cast<const std::uint32_t*>(bitmap)[e / 32];
  else if constexpr (bits == 16) return reinterpret_cast<const std::uint16_t*>(bitmap)[e / 16];
  else if constexpr (bits == 8) return bitmap[e / 8];
  else return (bitmap[e / 8] >> (e % 8)) & ((1u << bits) - 1u);
}

// The G row offsets from group g (aligned to G bytes), byte i for group g + i.
template <int G>
__device__ __forceinline__ std::uint64_t lane_row_offsets(const std::uint8_t* rows, int g) {
  if constexpr (G == 8) return reinterpret_cast<const std::uint64_t*>(rows)[g / 8];
  else if constexpr (G == 4) return reinterpret_cast<const std::uint32_t*>(rows)[g / 4];
  else if constexpr (G == 2) return reinterpret_cast<const std::uint16_t*>(rows)[g / 2];
  else return rows[g];
}

// The lane's G groups from group g0 of a full table chunk, CB bytes a column offset.
template <class V, int K, int G, int CB>
__device__ __forceinline__ void full_chunk_lane(const std::uint8_t* p, const ccoo_device::section& l,
                                                std::uint8_t code, int g0, std::uint32_t col0, const V* table,
                                                const V* __restrict__ x, V alpha, V* y, lane_rows<V>& acc) {
  const int e0 = g0 * K;
  const std::uint64_t rows = (code & ccoo_code::single_row) ? 0 : lane_row_offsets<G>(p + l.rows, g0);
  const std::uint32_t pads = lane_pads<K, G>((code & ccoo_code::pads) ? p + l.pads : nullptr, e0);
  const lane_section<CB, K, G> cols(p + l.cols + e0 * CB);
  const lane_section<1, K, G> vals(p + l.values + e0);
  acc.start(static_cast<int>(rows & 0xffu));
#pragma unroll
  for (int g = 0; g < G; ++g) {
    const auto gc = cols.group(g);
    const auto gv = vals.group(g);
    V sum = 0;
#pragma unroll
    for (int j = 0; j < K; ++j) {
      const int c = decltype(cols)::first(g) + j, v = decltype(vals)::first(g) + j;
      const V a = table[gv[v]], xv = x[col0 + gc[c]];
      if (!((pads >> (g * K + j)) & 1u)) sum += a * xv;
    }
    acc.add(static_cast<int>((rows >> (8 * g)) & 0xffu), sum, alpha, y);
  }
}

// The lane's groups [g0, g0 + G) of the last table chunk when it is partial (`groups` < 256 of
// them): element by element (group_sum_any).
template <class V, int K, int G>
__device__ void partial_chunk_lane(const std::uint8_t* p, const ccoo_device::section& l, std::uint8_t code,
                                   std::int64_t groups, int g0, std::uint32_t col0, const V* table,
                                   const V* __restrict__ x, V alpha, V* y, lane_rows<V>& acc) {
  const std::uint8_t* roff = (code & ccoo_code::single_row) ? nullptr : p + l.rows;
  const std::uint8_t* bitmap = (code & ccoo_code::pads) ? p + l.pads : nullptr;
  const int n = static_cast<int>(min(groups - g0, std::int64_t{G}));
  if (n <= 0) return;
  acc.start(roff ? roff[g0] : 0);
  for (int g = g0; g < g0 + n; ++g)
    acc.add(roff ? roff[g] : 0,
            group_sum_any(p + l.cols, l.col_bytes, p + l.values, true, table, bitmap, g, K, col0, x), alpha, y);
}

// The chunks whose values are table indices (the others are the block kernel's), a warp each.
// One step per K groups a lane (G = K), the measured best of G = 1, 2, 4, 8 (specs).
template <class V, int K>
__global__ void __launch_bounds__(warp_kernel_threads)
    chunk_table_warps(chunks_view m, std::int64_t chunks, const V* table, int table_size, V alpha,
                      const V* __restrict__ x, V* y) {
  constexpr int G = K;
  __shared__ V s_table[ccoo_table_capacity];
  for (int i = threadIdx.x; i < table_size; i += blockDim.x) s_table[i] = table[i];
  __syncthreads();
  const int lane = static_cast<int>(threadIdx.x % warp_size);
  constexpr std::int64_t per_chunk = std::int64_t{ccoo_table_warps_b} * K;
  const std::int64_t entries = m.counts[0];
  const std::int64_t warps = std::int64_t{gridDim.x} * (blockDim.x / warp_size);
  const std::int64_t warp = std::int64_t{blockIdx.x} * (blockDim.x / warp_size) + threadIdx.x / warp_size;
  chunk_walk<true> walk{warp - warp_size * warps};
  std::int64_t c;
  std::uint8_t code;
  while (walk.next(m.format, chunks, warps, ccoo_code::lut, 0u, c, code)) {
    const std::int64_t e_count = ccoo_device::chunk_entries(entries, per_chunk, c);
    const ccoo_device::section l = ccoo_device::chunk_section(e_count, K, code, sizeof(V));
    const std::uint8_t* p = m.blob + m.ptr[c];
    const auto col0 = static_cast<std::uint32_t>(m.col[c]);
    V* const yc = y + m.row[c];
#pragma unroll 1
    for (int g = lane * G; g < ccoo_table_warps_b; g += warp_size * G) {
      lane_rows<V> acc;
      if (e_count == per_chunk) {
        switch (l.col_bytes) {
          case 1: full_chunk_lane<V, K, G, 1>(p, l, code, g, col0, s_table, x, alpha, yc, acc); break;
          case 2: full_chunk_lane<V, K, G, 2>(p, l, code, g, col0, s_table, x, alpha, yc, acc); break;
          default: full_chunk_lane<V, K, G, 4>(p, l, code, g, col0, s_table, x, alpha, yc, acc); break;
        }
      } else {
        partial_chunk_lane<V, K, G>(p, l, code, e_count / K, g, col0, s_table, x, alpha, yc, acc);
      }
      acc.finish(lane, alpha, yc);
    }
  }
}

template <class V>
using kernel_fn = void (*)(chunks_view, std::int64_t, const V*, int, V, const V*, V*);

// The K loop unrolls for the K the automatic rule picks (4, 2, 1); other K run it with a
// run-time bound. split: table chunks are left to chunk_table_warps (K in {1, 2, 4}).
template <class V>
kernel_fn<V> pick_blocks(int k, bool split) {
  switch (k) {
    case 1: return split ? &chunk_products<V, 1, true> : &chunk_products<V, 1, false>;
    case 2: return split ? &chunk_products<V, 2, true> : &chunk_products<V, 2, false>;
    case 4: return split ? &chunk_products<V, 4, true> : &chunk_products<V, 4, false>;
    default: return &chunk_products<V, 0, false>;
  }
}

template <class V>
kernel_fn<V> pick_table_warps(int k) {
  return k == 1 ? &chunk_table_warps<V, 1> : k == 2 ? &chunk_table_warps<V, 2> : &chunk_table_warps<V, 4>;
}

}  // namespace

template <class V>
void spmv(const ccoo<V, I, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx, ccoo_kernel kernel) {
  const int b = a.params.chunk_b, k = a.params.chunk_k;
  if (b < 1 || b > ccoo_max_chunk_b || k < 1 || k > ccoo_max_chunk_k)
    fail(errc::usage, "gpu::spmv: ccoo chunk " + std::to_string(b) + "x" + std::to_string(k) +
                          " is out of range [1, " + std::to_string(ccoo_max_chunk_b) + "] x [1, " +
                          std::to_string(ccoo_max_chunk_k) + "]");
  if (a.counts.size() != 2)
    fail(errc::usage, "gpu::spmv: ccoo counts has " + std::to_string(a.counts.size()) + " elements, expected 2");
  // Table warps need B = 256, K in {1, 2, 4} and a 16-byte aligned blob (their vector loads).
  const bool warps_fit = ccoo_table_warps_fit(b, k) && on_16_bytes(a.blob.data());
  if (kernel == ccoo_kernel::table_warps && !warps_fit)
    fail(errc::usage, "gpu::spmv: the ccoo table-warp kernel takes chunks of 256 x 1, 2 or 4 (a 16-byte aligned "
                      "blob), not " + std::to_string(b) + "x" + std::to_string(k));
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
  const auto table = static_cast<std::int64_t>(a.table.size());
  // Table chunks go to a warp each where asked (the block kernel takes the others, if the
  // matrix can have any), or alone where automatic, every chunk is a table chunk and it pays.
  const kernel_fn<V> warps_kernel = warps_fit ? pick_table_warps<V>(k) : nullptr;
  constexpr int per_block = warp_kernel_threads / warp_size;
  // The table-warp kernel's resident blocks (one wave), where it may run.
  const std::int64_t warps_wave =
      warps_fit && table > 0 ? resident_blocks(warps_kernel, warp_kernel_threads, ctx.device(), "gpu::spmv (ccoo)") : 0;
  bool warps = false, blocks = true;
  if (kernel == ccoo_kernel::table_warps && table > 0) {
    warps = true;
    blocks = !ccoo_every_chunk_in_table(table);
  } else if (kernel == ccoo_kernel::automatic && warps_fit && ccoo_every_chunk_in_table(table)) {
    warps = ccoo_table_warps_pay(chunks, b, a.rows, warps_wave * per_block);
    blocks = !warps;
  }
  if (blocks) {
    // A thread per group: B rounded up to whole warps (B <= 256 = block_threads).
    const int threads = (b + warp_size - 1) / warp_size * warp_size;
    const kernel_fn<V> blocks_kernel = pick_blocks<V>(k, warps);
    // One resident wave; each block loops over its share of the equal-sized chunks.
    const std::int64_t n =
        std::min<std::int64_t>(chunks, resident_blocks(blocks_kernel, threads, ctx.device(), "gpu::spmv (ccoo)"));
    blocks_kernel<<<static_cast<unsigned>(n), threads, 0, s>>>(m, chunks, a.table.data(), static_cast<int>(table),
                                                               alpha, x, y);
    check_cuda(cudaGetLastError(), "gpu::spmv: launching the CCOO chunk kernel");
  }
  if (warps) {
    const std::int64_t n = std::min<std::int64_t>((chunks + per_block - 1) / per_block, warps_wave);
    warps_kernel<<<static_cast<unsigned>(n), warp_kernel_threads, 0, s>>>(m, chunks, a.table.data(),
                                                                          static_cast<int>(table), alpha, x, y);
    check_cuda(cudaGetLastError(), "gpu::spmv: launching the CCOO table-warp kernel");
  }
}

#define SPCONV_INST(V) \
  template void spmv<V>(const ccoo<V, I, device>&, V, const V*, V, V*, gpu_context&, ccoo_kernel);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
