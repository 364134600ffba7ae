// COO SpMV on the GPU, y = alpha*A*x + beta*y (liu-thesis-csr5.txt sec. 5.2.3): a warp per tile
// of 128 consecutive entries (4 a lane) sums its rows (segmented sum by shuffles). Where rows
// average fewer than 4 entries, each row the tile holds whole is written once and the parts of
// rows split between tiles are joined by a second kernel; otherwise y is scaled by beta first
// and each row a tile ends is added with one atomicAdd (kernels/gpu/coo_accumulate.cuh,
// specs/gpu.md). Queued on ctx's stream; beta == 0 writes y without reading it.
// `a` must be row-sorted as validate() requires (the segmented sum relies on it).
#pragma once
#ifdef SPCONV_HAVE_CUDA
#include "formats/coo.hpp"
#include "formats/device.hpp"

namespace spconv::gpu {

template <class V, class I>
void spmv(const coo<V, I, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx);

}  // namespace spconv::gpu
#endif  // SPCONV_HAVE_CUDA
