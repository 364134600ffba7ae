// y += alpha * A * x for row-sorted COO entries on the GPU (liu-thesis-csr5.txt sec. 5.2.3):
// the kernel behind COO SpMV and HYB's COO tail. Include from .cu files only.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <string_view>

#include "formats/device.hpp"
#include "kernels/gpu/search.cuh"

namespace spconv::gpu::detail {

// Consecutive entries per lane: a warp takes a tile of 32 * coo_per_lane entries.
inline constexpr int coo_per_lane = 4;
inline constexpr int coo_block_threads = 256;  // a multiple of the warp
// Whether coo_accumulate adds the row sums through shared memory (Staged, see there): for
// matrices whose rows average fewer than 2 entries. A host-side choice, so that the kernel for
// longer rows holds no shared memory (which would take L1 from the gathers of x).
inline bool coo_stages_row_sums(std::int64_t rows, std::int64_t entries) { return entries < 2 * rows; }

// out[k] = p[e0 + k] for k < coo_per_lane. `vector`: the run lies inside the array and p + e0
// is 16-byte aligned, so it is read as 16-byte words (one or two per array); otherwise element
// by element, entries at or past n left as they are.
template <class T>
__device__ __forceinline__ void load_run(const T* __restrict__ p, std::int64_t e0, std::int64_t n, bool vector,
                                         T (&out)[coo_per_lane]) {
  constexpr int words = coo_per_lane * static_cast<int>(sizeof(T)) / 16;
  static_assert(words * 16 == coo_per_lane * static_cast<int>(sizeof(T)), "a run is whole 16-byte words");
  if (vector) {
    const uint4* q = reinterpret_cast<const uint4*>(p + e0);
#pragma unroll
    for (int w = 0; w < words; ++w) {
      const uint4 word = __ldg(q + w);
      std::memcpy(reinterpret_cast<char*>(out) + 16 * w, &word, 16);
    }
  } else {
#pragma unroll
    for (int k = 0; k < coo_per_lane; ++k)
      if (e0 + k < n) out[k] = p[e0 + k];
  }
}

// The row sums of a warp's 32 * E consecutive entries, E per lane (lane l holds entries l*E ..
// l*E + E - 1), whose rows r[] do not decrease along the entries (-1, never a row, marks entries
// past the end, which have product 0):
//  1. each lane sums its products p[] row by row: seg[k] is the sum of the row piece that entry
//     k closes, from the piece's first entry in this lane;
//  2. an inclusive segmented scan of the last pieces (tails) across the warp by shuffles (lane
//     k adds the tail d lanes up while that lane's tail row is its own: rows are sorted, so
//     the lanes in between hold only that row), so the lane where a row ends finds the row's
//     sum over the lanes before it in the lane before it;
// then at(r, k) is the sum of entry k's row from the warp's first entry of it up to entry k,
// where entry k is the last of its row in its lane. Every lane must construct it (shuffles).
template <class V, class I, int E>
struct warp_row_sums {
  V seg[E];
  V tail, carry;  // the scanned sum of the lane's last piece; the part of its head row in lanes before
  I head_row, next_head;  // r[0], and the next lane's r[0]

  __device__ __forceinline__ warp_row_sums(const I (&r)[E], const V (&p)[E], int lane) {
#pragma unroll
    for (int k = 0; k < E; ++k) seg[k] = k > 0 && r[k] == r[k - 1] ? seg[k - 1] + p[k] : p[k];
    const I tail_row = r[E - 1];
    head_row = r[0];
    tail = seg[E - 1];
    for (int d = 1; d < 32; d *= 2) {
      const V other = __shfl_up_sync(0xffffffffu, tail, d);
      const I other_row = __shfl_up_sync(0xffffffffu, tail_row, d);
      if (lane >= d && other_row == tail_row) tail += other;
    }
    const V before = __shfl_up_sync(0xffffffffu, tail, 1);
    const I before_row = __shfl_up_sync(0xffffffffu, tail_row, 1);
    carry = lane > 0 && before_row == head_row ? before : V(0);
    next_head = __shfl_down_sync(0xffffffffu, head_row, 1);
  }

  __device__ __forceinline__ V at(const I (&r)[E], int k) const {
    return k == E - 1 ? tail : seg[k] + (r[k] == head_row ? carry : V(0));
  }
};

// A warp per tile of 32 * coo_per_lane consecutive entries, coo_per_lane consecutive entries
// per lane (read as 16-byte words where the tile is whole and the arrays aligned), summed by
// warp_row_sums; each row the tile ends is then added to y once, by the lane where it ends.
// Staged (rows of fewer than 2 entries, coo_stages_row_sums): the lanes write their (row, sum)
// pairs to consecutive slots of a per-warp buffer in shared memory (an exclusive scan of the
// counts gives the slots) and the warp adds slot s by lane s % 32: whole-warp atomics on
// consecutive elements rather than lanes 4 rows apart.
// Every addition to y is an atomicAdd whose result is unused (a reduction the L2 carries out,
// nothing for the thread to wait for): rows with entries in two tiles need it, and a plain
// y[r] += s waits for the load of y[r] (measured slower on rows of 1 entry, H200). The order
// of the additions therefore varies from run to run (within the bound of specs/gpu.md).
// Measured (H100, double, replicated set): a warp per 32 entries, one entry per lane, a scan
// and an atomic per row piece for every 32 entries reached 0.81x cuSPARSE; 4 entries per lane
// with each lane adding its own rows reached 0.92x but 0.70x on rows of 1 entry, whose
// atomics then hit addresses 4 rows apart; staging every tile's rows took those to 0.99x but
// cost 7-16% where rows hold 2 to 21 entries (bcspwr10 0.97x -> 0.81x, ca-AstroPh 0.98x ->
// 0.86x), and staging only the tiles that end more than 64 rows, in the same kernel, still
// cost ca-AstroPh 6% (0.92x): the kernel's shared memory alone takes L1 from the gathers of x.
template <class V, class I, bool Staged>
__global__ void __launch_bounds__(coo_block_threads)
    coo_accumulate(std::int64_t n, const I* __restrict__ row, const I* __restrict__ col, const V* __restrict__ val,
                   V alpha, const V* __restrict__ x, V* y, bool aligned) {
  constexpr int warp = 32, E = coo_per_lane;
  constexpr std::int64_t tile = std::int64_t{warp} * E;
  const int lane = static_cast<int>(threadIdx.x % warp);
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * blockDim.x / warp;
  for (std::int64_t base = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / warp * tile; base < n;
       base += warps * tile) {
    const std::int64_t e0 = base + std::int64_t{lane} * E;
    const bool vector = aligned && base + tile <= n;  // the same in every lane of the warp
    // Entries past n take row -1 (never added to y) and value 0.
    I r[E], c[E];
    V v[E];
#pragma unroll
    for (int k = 0; k < E; ++k) {
      r[k] = I(-1);
      c[k] = I(0);
      v[k] = V(0);
    }
    load_run(row, e0, n, vector, r);
    load_run(col, e0, n, vector, c);
    load_run(val, e0, n, vector, v);
    V p[E];
#pragma unroll
    for (int k = 0; k < E; ++k) p[k] = r[k] >= 0 ? v[k] * x[c[k]] : V(0);
    const warp_row_sums<V, I, E> sums(r, p, lane);
    // Entry k ends its row in this tile: the next entry starts another row, or (the last
    // entry) the next lane does, or the tile ends. Rows past n (-1) are never added.
    bool ends[E];
    int count = 0;
#pragma unroll
    for (int k = 0; k < E; ++k) {
      const I next = k + 1 < E ? r[k + 1] : lane == warp - 1 ? I(-2) : sums.next_head;
      ends[k] = r[k] >= 0 && next != r[k];
      count += ends[k] ? 1 : 0;
    }
    const auto row_sum = [&](int k) { return alpha * sums.at(r, k); };
    if constexpr (!Staged) {
#pragma unroll
      for (int k = 0; k < E; ++k)
        if (ends[k]) atomicAdd(y + r[k], row_sum(k));
    } else {
      __shared__ I slot_row[coo_block_threads / warp][warp * E];
      __shared__ V slot_sum[coo_block_threads / warp][warp * E];
      I* const rows_out = slot_row[threadIdx.x / warp];
      V* const sums_out = slot_sum[threadIdx.x / warp];
      int first = group_inclusive_sum(count, warp);  // then less count: this lane's first slot
      const int total = __shfl_sync(0xffffffffu, first, warp - 1);
      first -= count;
#pragma unroll
      for (int k = 0; k < E; ++k)
        if (ends[k]) {
          rows_out[first] = r[k];
          sums_out[first] = row_sum(k);
          ++first;
        }
      __syncwarp();
      for (int slot = lane; slot < total; slot += warp) atomicAdd(y + rows_out[slot], sums_out[slot]);
      __syncwarp();  // the buffer is refilled by the next tile
    }
  }
}

// Queues coo_accumulate over n entries on `stream` (staged: see coo_stages_row_sums); `what`
// names the caller in errors.
template <class V, class I>
void launch_coo_accumulate(std::int64_t n, const I* row, const I* col, const V* val, V alpha, const V* x, V* y,
                           bool staged, cudaStream_t stream, std::string_view what) {
  if (n == 0) return;
  constexpr int threads = coo_block_threads;
  const auto on16 = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  const bool aligned = on16(row) && on16(col) && on16(val);
  // A warp per tile, whole warps: every lane of a warp takes part in the shuffles.
  const std::int64_t tiles = (n + 32 * coo_per_lane - 1) / (32 * coo_per_lane);
  const unsigned blocks = launch_blocks(tiles * 32, threads);
  if (staged)
    coo_accumulate<V, I, true><<<blocks, threads, 0, stream>>>(n, row, col, val, alpha, x, y, aligned);
  else
    coo_accumulate<V, I, false><<<blocks, threads, 0, stream>>>(n, row, col, val, alpha, x, y, aligned);
  check_cuda(cudaGetLastError(), what);
}

}  // namespace spconv::gpu::detail
