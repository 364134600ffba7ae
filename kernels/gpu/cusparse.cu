// The cuSPARSE CSR SpMV baseline (generic API, CUSPARSE_SPMV_ALG_DEFAULT) behind the same
// interface as our kernels.
#include <cuda_runtime.h>
#include <cusparse.h>

#include <type_traits>

#include "formats/instantiate.hpp"
#include "kernels/gpu/spmv.hpp"

namespace spconv::gpu {
namespace {

template <class V>
constexpr cudaDataType value_type_of_cuda = std::is_same_v<V, float> ? CUDA_R_32F : CUDA_R_64F;
template <class I>
constexpr cusparseIndexType_t index_type_of_cusparse =
    std::is_same_v<I, std::int32_t> ? CUSPARSE_INDEX_32I : CUSPARSE_INDEX_64I;

// The three descriptors of one call, destroyed on every path out (an exception included).
struct descriptors {
  cusparseConstSpMatDescr_t a = nullptr;
  cusparseConstDnVecDescr_t x = nullptr;
  cusparseDnVecDescr_t y = nullptr;
  ~descriptors() {
    if (y) cusparseDestroyDnVec(y);
    if (x) cusparseDestroyDnVec(x);
    if (a) cusparseDestroySpMat(a);
  }
};

}  // namespace

template <class V, class I>
void spmv_cusparse(const csr<V, I, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx) {
  if (a.nnz() == 0 || a.cols == 0) return spmv(a, alpha, x, beta, y, ctx);
  auto handle = static_cast<cusparseHandle_t>(ctx.cusparse());
  constexpr cudaDataType vt = value_type_of_cuda<V>;
  constexpr cusparseIndexType_t it = index_type_of_cusparse<I>;
  descriptors d;
  check_cusparse(cusparseCreateConstCsr(&d.a, a.rows, a.cols, a.nnz(), a.row_ptr.data(), a.col_idx.data(),
                                        a.values.data(), it, it, CUSPARSE_INDEX_BASE_ZERO, vt),
                 "gpu::spmv_cusparse: describing the matrix");
  check_cusparse(cusparseCreateConstDnVec(&d.x, a.cols, x, vt), "gpu::spmv_cusparse: describing x");
  check_cusparse(cusparseCreateDnVec(&d.y, a.rows, y, vt), "gpu::spmv_cusparse: describing y");
  std::size_t bytes = 0;
  check_cusparse(cusparseSpMV_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, d.a, d.x, &beta, d.y, vt,
                                         CUSPARSE_SPMV_ALG_DEFAULT, &bytes),
                 "gpu::spmv_cusparse: sizing the work buffer");
  void* work = ctx.workspace(bytes);
  check_cusparse(cusparseSpMV(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, d.a, d.x, &beta, d.y, vt,
                              CUSPARSE_SPMV_ALG_DEFAULT, work),
                 "gpu::spmv_cusparse: cusparseSpMV");
}

#define SPCONV_INST(V, I) \
  template void spmv_cusparse<V, I>(const csr<V, I, device>&, V, const V*, V, V*, gpu_context&);
SPCONV_FOR_VALUE_INDEX(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
