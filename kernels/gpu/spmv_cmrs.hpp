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

// Same bits as cpu::spmv(const cmrs&) for every input (same buffer cells, same order of
// additions, no contraction to FMA). Parameters outside the format's range are errc::usage.
template <class V>
void spmv(const cmrs<V, std::int32_t, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx);

}  // namespace spconv::gpu
#endif  // SPCONV_HAVE_CUDA
