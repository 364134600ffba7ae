// CMRS SpMV on the GPU, y = alpha*A*x + beta*y, with A, x and y in device memory: the
// warp-per-strip kernels of shared/papers/cmrs-koza.txt (Algorithm 1 in sec. 4, the basic
// kernel of appendix 9 and the modified kernel of appendix 10 for the sec. 6.7 layout);
// specs/formats/cmrs.md, section "GPU". Queues its work on ctx's stream and returns: y is
// complete after ctx.synchronize() or a synchronous copy. beta == 0 writes y without reading
// it (it may hold NaN). x has a.cols elements, y a.rows; the matrix must be valid (validate()
// on its host form).
#pragma once
#ifdef SPCONV_HAVE_CUDA
#include <cstdint>

#include "formats/cmrs.hpp"
#include "formats/device.hpp"

namespace spconv::gpu {

// Whether gpu::spmv runs the basic layout (M = 32) with the pipelined kernel rather than a warp
// per strip: when strips hold at most 64 slots on average (two a lane). Such strips cost a
// warp little more than the memory latencies of their bounds, slots and x in turn, which the
// pipelined kernel overlaps across a warp's strips; longer strips keep the latencies busy
// already and lose to the pipeline's registers and fixed grid. Measured on the H100 (double,
// the real matrices replicated to 100M entries, stop 18): the pipeline for every strip length
// gave luxembourg 33% -> 45% of copy bandwidth, arrow 27% -> 35%, bayer10 55% -> 64%, but
// sparse-images 94% -> 76% and the 27-point stencil (216 slots a strip) 84% -> 72%; cut at 64
// slots, the geometric mean over the set went 58.8% -> 62.4% (cut at 32: 59.1%, 80: 61.9%).
inline bool cmrs_short_strips(std::int64_t slots, std::int64_t strips) { return slots <= 64 * strips; }

// Same bits as cpu::spmv(const cmrs&) for every input (same buffer cells, same order of
// additions, no contraction to FMA). Parameters outside the format's range are errc::usage.
template <class V>
void spmv(const cmrs<V, std::int32_t, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx);

}  // namespace spconv::gpu
#endif  // SPCONV_HAVE_CUDA
