// CCOO SpMV on the GPU, y = alpha*A*x + beta*y, with A, x and y in device memory
// (kernels/gpu/spmv_ccoo.cu; specs/formats/ccoo.md, "GPU"). Queued on ctx's stream without
// waiting: y is complete after ctx.synchronize() or a synchronous copy. As in BLAS, beta == 0
// means y is only written, never read (it may hold NaN). x has a.cols elements, y a.rows; the
// matrix must be valid (validate() on its host copy).
#pragma once
#ifdef SPCONV_HAVE_CUDA
#include <cstdint>

#include "formats/ccoo.hpp"
#include "formats/device.hpp"

namespace spconv::gpu {

// The kernel of Aliaga et al., Euro-Par 2020 Workshops, Sect. 2: y is first scaled by beta
// (set to 0 when beta == 0); then one thread block per chunk, one thread per group, decodes
// its K entries by the chunk's format code and sums their products (Listing 1.1, padding
// skipped by the pad bitmap, as on the CPU); a warp-level segmented scan over the row
// offsets (Listing 1.2, Fig. 1) leaves each row segment's sum in its first lane, which adds
// it to y with atomicAdd. A single-row chunk uses a plain block reduction and one atomicAdd.
// float adds use a compare-and-swap loop instead: the hardware's f32 atomic add flushes
// subnormals to zero. The atomics make the summation order, hence the last bits of y, vary
// from run to run.
template <class V>
void spmv(const ccoo<V, std::int32_t, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx);

}  // namespace spconv::gpu
#endif  // SPCONV_HAVE_CUDA
