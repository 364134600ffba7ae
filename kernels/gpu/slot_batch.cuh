// Batched loads for the GPU kernels whose thread walks its slots one after another (CSR's
// scalar rows, CMRS's register kernel, HYB's ELL rows; include from .cu files only). A chain
// of index -> x -> add per slot leaves one load in flight per thread; loading N slots' index
// words and values first, then the x elements they name, puts all of them in flight before the
// first addition, so the thread waits one memory latency per batch instead of two per slot.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace spconv::gpu {

// Slot q of the batch lies at k + q * stride of `words` and `vals`; gather(word, x) returns
// the element of x the word names (0 for a padding word, whose x is never loaded).
template <int N, class W, class V, class Gather>
__device__ __forceinline__ void load_slots(const W* __restrict__ words, const V* __restrict__ vals, std::int64_t k,
                                           std::int64_t stride, const V* __restrict__ x, Gather gather, W (&w)[N],
                                           V (&v)[N], V (&xv)[N]) {
#pragma unroll
  for (int q = 0; q < N; ++q) {
    w[q] = words[k + q * stride];
    v[q] = vals[k + q * stride];
  }
#pragma unroll
  for (int q = 0; q < N; ++q) xv[q] = gather(w[q], x);
}

}  // namespace spconv::gpu
