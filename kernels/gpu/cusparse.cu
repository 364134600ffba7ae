// The cuSPARSE CSR SpMV baseline (generic API, CUSPARSE_SPMV_ALG_DEFAULT) behind the same
// interface as our kernels.
#include <cuda_runtime.h>
#include <cusparse.h>

#include <optional>
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

// The descriptors of (a, x, y), destroyed on every path out (an exception included).
template <class V, class I>
struct descriptors {
  cusparseConstSpMatDescr_t a = nullptr;
  cusparseConstDnVecDescr_t x = nullptr;
  cusparseDnVecDescr_t y = nullptr;

  descriptors(const csr<V, I, device>& m, const V* xp, V* yp) {
    constexpr cudaDataType vt = value_type_of_cuda<V>;
    constexpr cusparseIndexType_t it = index_type_of_cusparse<I>;
    check_cusparse(cusparseCreateConstCsr(&a, m.rows, m.cols, m.nnz(), m.row_ptr.data(), m.col_idx.data(),
                                          m.values.data(), it, it, CUSPARSE_INDEX_BASE_ZERO, vt),
                   "gpu::spmv_cusparse: describing the matrix");
    check_cusparse(cusparseCreateConstDnVec(&x, m.cols, xp, vt), "gpu::spmv_cusparse: describing x");
    check_cusparse(cusparseCreateDnVec(&y, m.rows, yp, vt), "gpu::spmv_cusparse: describing y");
  }
  ~descriptors() {
    if (y) cusparseDestroyDnVec(y);
    if (x) cusparseDestroyDnVec(x);
    if (a) cusparseDestroySpMat(a);
  }
  descriptors(const descriptors&) = delete;
  descriptors& operator=(const descriptors&) = delete;

  std::size_t buffer_size(cusparseHandle_t h, V alpha, V beta) const {
    std::size_t bytes = 0;
    check_cusparse(cusparseSpMV_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, a, x, &beta, y,
                                           value_type_of_cuda<V>, CUSPARSE_SPMV_ALG_DEFAULT, &bytes),
                   "gpu::spmv_cusparse: sizing the work buffer");
    return bytes;
  }
  void run(cusparseHandle_t h, V alpha, V beta, void* work) const {
    check_cusparse(cusparseSpMV(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, a, x, &beta, y, value_type_of_cuda<V>,
                                CUSPARSE_SPMV_ALG_DEFAULT, work),
                   "gpu::spmv_cusparse: cusparseSpMV");
  }
};

bool cusparse_applies(std::int64_t nnz, std::int64_t cols) { return nnz > 0 && cols > 0; }

}  // namespace

template <class V, class I>
void spmv_cusparse(const csr<V, I, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx) {
  if (!cusparse_applies(a.nnz(), a.cols)) return spmv(a, alpha, x, beta, y, ctx);
  auto handle = static_cast<cusparseHandle_t>(ctx.cusparse());
  const descriptors<V, I> d(a, x, y);
  d.run(handle, alpha, beta, ctx.workspace(d.buffer_size(handle, alpha, beta)));
}

template <class V, class I>
struct cusparse_spmv<V, I>::impl {
  const csr<V, I, device>& a;
  const V* x;
  V* y;
  gpu_context& ctx;
  std::optional<descriptors<V, I>> d;
  device_buffer work;
};

template <class V, class I>
cusparse_spmv<V, I>::cusparse_spmv(const csr<V, I, device>& a, const V* x, V* y, gpu_context& ctx)
    : p_(new impl{a, x, y, ctx, std::nullopt, {}}) {
  if (!cusparse_applies(a.nnz(), a.cols)) return;
  p_->d.emplace(a, x, y);
  // The buffer size does not depend on the values of alpha and beta; sized with the common (1, 0).
  p_->work.resize(p_->d->buffer_size(static_cast<cusparseHandle_t>(ctx.cusparse()), V(1), V(0)),
                  "gpu::cusparse_spmv: work buffer");
}

template <class V, class I>
cusparse_spmv<V, I>::~cusparse_spmv() = default;

template <class V, class I>
void cusparse_spmv<V, I>::operator()(V alpha, V beta) {
  if (!p_->d) return spmv(p_->a, alpha, p_->x, beta, p_->y, p_->ctx);
  p_->d->run(static_cast<cusparseHandle_t>(p_->ctx.cusparse()), alpha, beta, p_->work.data());
}

#define SPCONV_INST(V, I)                                                                           \
  template void spmv_cusparse<V, I>(const csr<V, I, device>&, V, const V*, V, V*, gpu_context&); \
  template class cusparse_spmv<V, I>;
SPCONV_FOR_VALUE_INDEX(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
