// COO SpMV on the GPU: beta*y, then the shared COO accumulation kernel.
#include <cuda_runtime.h>

#include <string>

#include "formats/instantiate.hpp"
#include "kernels/gpu/coo_accumulate.cuh"
#include "kernels/gpu/scale_y.cuh"
#include "kernels/gpu/spmv_coo.hpp"

namespace spconv::gpu {

template <class V, class I>
void spmv(const coo<V, I, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx) {
  const std::size_t n = a.values.size();
  if (a.row_idx.size() != n || a.col_idx.size() != n)
    fail(errc::usage, "gpu::spmv: coo arrays differ in length (row_idx " + std::to_string(a.row_idx.size()) +
                          ", col_idx " + std::to_string(a.col_idx.size()) + ", values " + std::to_string(n) + ")");
  if (a.rows == 0) return;
  const auto s = static_cast<cudaStream_t>(ctx.stream());
  constexpr int threads = 256;
  scale_y<V><<<launch_blocks(a.rows, threads), threads, 0, s>>>(a.rows, beta, y);
  check_cuda(cudaGetLastError(), "gpu::spmv: launching the coo scaling kernel");
  detail::launch_coo_accumulate(static_cast<std::int64_t>(n), a.row_idx.data(), a.col_idx.data(), a.values.data(),
                                alpha, x, y, detail::coo_stages_row_sums(a.rows, static_cast<std::int64_t>(n)), s,
                                "gpu::spmv: launching the coo kernel");
}

#define SPCONV_INST(V, I) template void spmv<V, I>(const coo<V, I, device>&, V, const V*, V, V*, gpu_context&);
SPCONV_FOR_VALUE_INDEX(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
