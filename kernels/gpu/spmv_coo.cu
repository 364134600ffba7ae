// COO SpMV on the GPU: the shared COO kernel writing each row once (coo_accumulate.cuh).
#include <cuda_runtime.h>

#include <string>

#include "formats/instantiate.hpp"
#include "kernels/gpu/coo_accumulate.cuh"
#include "kernels/gpu/spmv_coo.hpp"

namespace spconv::gpu {

template <class V, class I>
void spmv(const coo<V, I, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx) {
  const std::size_t n = a.values.size();
  if (a.row_idx.size() != n || a.col_idx.size() != n)
    fail(errc::usage, "gpu::spmv: coo arrays differ in length (row_idx " + std::to_string(a.row_idx.size()) +
                          ", col_idx " + std::to_string(a.col_idx.size()) + ", values " + std::to_string(n) + ")");
  if (a.rows == 0) return;
  detail::launch_coo_spmv(a.rows, static_cast<std::int64_t>(n), a.row_idx.data(), a.col_idx.data(), a.values.data(),
                          alpha, x, beta, y, detail::coo_stages_row_sums(a.rows, static_cast<std::int64_t>(n)),
                          ctx, "gpu::spmv: launching the coo kernels");
}

#define SPCONV_INST(V, I) template void spmv<V, I>(const coo<V, I, device>&, V, const V*, V, V*, gpu_context&);
SPCONV_FOR_VALUE_INDEX(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
