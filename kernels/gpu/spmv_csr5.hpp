// CSR5 SpMV on the GPU, y = alpha*A*x + beta*y (liu-thesis-csr5.txt sec. 8.5.1, Algorithm 32;
// specs/formats/csr5.md, section "GPU"). Queued on ctx's stream; y is complete after
// ctx.synchronize() or a synchronous copy. beta == 0 writes y without reading it. A, x (a.cols
// elements) and y (a.rows elements) in device memory; `a` must be valid (validate() holds on
// its host copy).
#pragma once
#ifdef SPCONV_HAVE_CUDA
#include <cstdint>

#include "formats/csr5.hpp"
#include "formats/device.hpp"

namespace spconv::gpu {

// omega = 32 (the GPU tile width cpu::resolve_csr5_params picks): one warp per tile, a lane
// per tile column, the red/green/blue segmented sum of Algorithm 32 with the sub-segments
// joined by a segmented suffix sum over the warp's shuffles. Other widths (files tuned for a
// CPU, omega 4 or 8, or any omega in [1, 64]): one thread per tile walks its lanes in CSR
// order. In both, the first and the last segment of every tile are added to y atomically,
// their rows set to beta*y (plus their entries in the incomplete last tile) by a row pass that
// runs first; rows starting in the incomplete tile and empty rows are done there by a thread
// per row. Two launches, no workspace; rows spanning tiles are summed in no fixed order.
template <class V>
void spmv(const csr5<V, std::int32_t, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx);

}  // namespace spconv::gpu
#endif  // SPCONV_HAVE_CUDA
