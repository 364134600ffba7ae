// Loads marked evict-first in the L2 cache (PTX createpolicy + ld.global.nc.L2::cache_hint,
// sm_80 on), for arrays an SpMV reads once (column words, values), so that their lines give
// way to those of x, which the kernel gathers again. Include from .cu files only.
//
// Only CMRS's tile kernel uses them: the hint is worth it there and nowhere else measured.
// H200, double, replicated set, each variant beside the code without it in one device call
// (stop 37 calls 3 and 4; geometric mean over cuSPARSE):
// - CMRS tile kernel (its runs of 4 slots a lane, detail::load_run): 1.160x -> 1.184x (74.1%
//   -> 75.6% of the copy bandwidth; 19 of 20 matrices 1.3-3.4% faster, memplus_rhs1 2.5% slower),
//   stencil 1.090x -> 1.103x; the same in both calls;
// - COO, through the same load_run: 1.077x -> 1.068x (memplus_rhs1 1.91x -> 1.77x);
// - HOLA (coalesced column and value loads): 1.153x -> 1.030x; L1::no_allocate instead 1.107x;
// - CSR5's tile kernel: 1.280x -> 0.881x; HYB's ELL part: 1.115x -> 1.095x; MBR: unchanged.
// Not profiled: the coalesced kernels may lose the lines' other sectors before their
// neighbours read them.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace spconv::gpu {

// The policy: evict-first for every line the load brings in (fraction 1.0).
__device__ __forceinline__ std::uint64_t l2_evict_first_policy() {
  std::uint64_t policy;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}

#define SPCONV_LOAD_EVICT_FIRST(T, PTX_TYPE, CONSTRAINT)                                                   \
  __device__ __forceinline__ T load_evict_first(const T* p) {                                             \
    T v;                                                                                                   \
    asm("ld.global.nc.L2::cache_hint" PTX_TYPE " %0, [%1], %2;"                                            \
        : "=" CONSTRAINT(v)                                                                                \
        : "l"(p), "l"(l2_evict_first_policy()));                                                           \
    return v;                                                                                              \
  }
SPCONV_LOAD_EVICT_FIRST(double, ".f64", "d")
SPCONV_LOAD_EVICT_FIRST(float, ".f32", "f")
SPCONV_LOAD_EVICT_FIRST(std::uint32_t, ".u32", "r")
#undef SPCONV_LOAD_EVICT_FIRST

__device__ __forceinline__ uint4 load_evict_first(const uint4* p) {
  uint4 v;
  asm("ld.global.nc.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p), "l"(l2_evict_first_policy()));
  return v;
}

}  // namespace spconv::gpu
