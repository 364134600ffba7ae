// HYB SpMV on the GPU, y = alpha*A*x + beta*y (liu-thesis-csr5.txt sec. 5.3.1 with the ELL and
// COO kernels of sec. 5.2.2-5.2.3; specs/formats/hyb.md, section "GPU"). Queued on ctx's
// stream; y is complete after ctx.synchronize() or a synchronous copy. beta == 0 writes y
// without reading it. A, x (a.cols elements) and y (a.rows elements) in device memory; `a`
// must be valid (validate() holds on its host copy).
#pragma once
#ifdef SPCONV_HAVE_CUDA
#include <cstdint>

#include "formats/device.hpp"
#include "formats/hyb.hpp"

namespace spconv::gpu {

// Two kernels in order on the stream. The ELL part: a thread per row walks its slots k = 0,
// 1, ... at k * rows + r, so the threads of a warp read consecutive words (the column-major
// layout of sec. 5.2.2), stops at the row's first padding slot and writes
// y[r] = alpha * sum + beta * y[r] (every row, also with an empty ELL part). The COO tail:
// a lane per entry, a segmented sum over each warp's 32 consecutive entries (rows are
// sorted, so equal rows are neighbours) by shuffles, and one atomicAdd of alpha * sum per
// row piece. The tail's order of additions therefore varies from run to run (within the
// accuracy bound of specs/gpu.md).
template <class V>
void spmv(const hyb<V, std::int32_t, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx);

}  // namespace spconv::gpu
#endif  // SPCONV_HAVE_CUDA
