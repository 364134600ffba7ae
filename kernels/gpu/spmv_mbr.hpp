// MBR products on the GPU (shared/papers/mbr-kannan.txt sec. IV; specs/formats/mbr.md,
// section "GPU"): SpMV and the multiple-vector product SMMV with A, x and y in device memory,
// decoding each block's bitmap on the GPU. Both queue their work on ctx's stream and return:
// y is complete after ctx.synchronize() or a synchronous copy. beta == 0 writes y without
// reading it (it may hold NaN). The matrix must be valid (validate() on its host form).
#pragma once
#ifdef SPCONV_HAVE_CUDA
#include <cstdint>

#include "formats/device.hpp"
#include "formats/mbr.hpp"

namespace spconv::gpu {

// y = alpha*A*x + beta*y; x has a.cols elements, y a.rows. Same bits as cpu::spmv(const mbr&).
template <class V>
void spmv(const mbr<V, std::int32_t, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx);

// Y = alpha*A*X + beta*Y for k >= 1 vectors (k < 1: errc::usage): X row-major a.cols x k, Y
// row-major a.rows x k, as cpu::spmm; vectors are taken 8 at a time (one kernel per group).
// Same bits as cpu::spmm(const mbr&).
template <class V>
void spmm(const mbr<V, std::int32_t, device>& a, int k, V alpha, const V* x, V beta, V* y, gpu_context& ctx);

}  // namespace spconv::gpu
#endif  // SPCONV_HAVE_CUDA
