// The merge path over runs of items that the CSR -> COO, CMRS and HYB converters share to
// find each entry's row. Included by .cu files only.
#pragma once
#include <cstdint>

#include "formats/device_kernel.cuh"

namespace spconv::gpu {

// Merge path (Merrill and Garland, "Merge-based parallel sparse matrix-vector
// multiplication", SC 2016) over n items cut into consecutive runs by the nondecreasing
// ends[0, runs): run r holds the items [ends[r - 1], ends[r]) (ends[-1] = 0, ends[runs - 1] =
// n), e.g. CSR entries by row with ends = row_ptr + 1. Merging the run ends with the item
// numbers 0 .. n - 1 (a run end before an item it does not exceed) takes runs + n steps; a
// block takes merge_tile consecutive steps, so blocks get equal work however the items spread
// over the runs (an empty run costs one step). The block's run ends go to shared memory, each
// item finds its run there by binary search, and consecutive threads take consecutive items:
// coalesced reads and writes, where a search per item in global memory (~23 dependent reads
// for millions of rows) made the expansions latency-bound (CSR -> COO, the CMRS packing and
// the HYB tail: csr_coo.cu, csr_to_cmrs.cu, csr_to_hyb.cu).
constexpr int merge_items = 8;  // merge steps per thread
constexpr int merge_block_threads = 256;  // the block size of every kernel that loads a tile
constexpr int merge_tile = merge_items * merge_block_threads;

inline std::int64_t merge_tiles(std::int64_t runs, std::int64_t n) { return (runs + n + merge_tile - 1) / merge_tile; }

// cut[b] = the run ends among the first min(b * merge_tile, runs + n) merge steps, for b in
// [0, tiles]: the binary search of the merge path along that diagonal.
template <class E>
__global__ void merge_cuts(std::int64_t* cut, std::int64_t tiles, const E* ends, std::int64_t runs, std::int64_t n) {
  for (std::int64_t b = first_index(); b <= tiles; b += grid_stride()) {
    const std::int64_t d = b < tiles ? b * merge_tile : runs + n;
    std::int64_t lo = d > n ? d - n : 0, hi = d < runs ? d : runs;
    while (lo < hi) {  // is run end `mid` taken before item d - 1 - mid?
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (static_cast<std::int64_t>(ends[mid]) <= d - 1 - mid) lo = mid + 1;
      else hi = mid;
    }
    cut[b] = lo;
  }
}

// One block's tile of the merge: the items [first_item, end_item), all in the runs
// first_run + t for t in [0, ends]; start[t] (shared) is the first item of run first_run + t.
// Runs before the tile end at or before first_item and runs after it end after end_item - 1
// (merge path order), so counting the tile's own ends places an item.
template <class E>
struct merge_tile_runs {
  std::int64_t first_run, first_item, end_item;
  int ends;
  const E* start;
  // The tile-local run of item k (the tile's run ends <= k); `from` is a lower bound, e.g.
  // the answer for a smaller item.
  __device__ __forceinline__ int run_of(std::int64_t k, int from) const {
    int hi = ends;
    while (from < hi) {
      const int mid = (from + hi) / 2;
      if (static_cast<std::int64_t>(start[mid + 1]) <= k) from = mid + 1;
      else hi = mid;
    }
    return from;
  }
};

// Block blockIdx.x loads its tile (launch one block of merge_block_threads per tile).
template <class E>
__device__ __forceinline__ merge_tile_runs<E> load_merge_tile(const std::int64_t* cut, const E* ends,
                                                              std::int64_t runs, std::int64_t n) {
  __shared__ E start[merge_tile + 1];
  const std::int64_t b = blockIdx.x, r0 = cut[b], r1 = cut[b + 1];
  const std::int64_t d0 = b * merge_tile, d1 = d0 + merge_tile < runs + n ? d0 + merge_tile : runs + n;
  const int m = static_cast<int>(r1 - r0);  // <= d1 - d0 <= merge_tile
  for (int t = threadIdx.x; t <= m; t += merge_block_threads) start[t] = r0 + t > 0 ? ends[r0 + t - 1] : E{0};
  __syncthreads();
  return {r0, d0 - r0, d1 - r1, m, start};
}

}  // namespace spconv::gpu
