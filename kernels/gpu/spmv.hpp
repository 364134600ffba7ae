// CSR SpMV on the GPU, y = alpha*A*x + beta*y, with A, x and y in device memory: our
// row-block kernels (kernels/gpu/spmv_csr.cu) and the cuSPARSE baseline
// (kernels/gpu/cusparse.cu) behind one interface, so benchmarks swap one for the other.
// Both queue their work on ctx's stream and return without waiting: y is complete after
// ctx.synchronize() (or any synchronous copy, e.g. device_array::download). As in BLAS,
// beta == 0 means y is only written, never read (it may hold NaN). x has a.cols elements,
// y a.rows; the matrix must be canonical CSR as validate() defines it.
#pragma once
#ifdef SPCONV_HAVE_CUDA
#include <cstdint>
#include <memory>

#include "formats/csr.hpp"
#include "formats/device.hpp"

namespace spconv::gpu {

// The two row-block methods of liu-thesis-csr5.txt sec. 8.3.1: CSR-scalar (Algorithm 28,
// one thread per row) and CSR-vector (Algorithm 29, here one 32-lane warp per row with a
// shuffle reduction).
enum class csr_kernel { automatic, thread_per_row, warp_per_row };

// The rule `automatic` follows: a warp per row once rows hold on average at least this many
// entries, a thread per row below. A warp on a row of n < 32 entries leaves 32 - n lanes
// idle; a thread per row reads its entries one by one, from a different cache line than its
// neighbours, which costs more than the idle lanes once rows are long (the CSR-scalar vs
// CSR-vector trade-off of Bell and Garland, the thesis's [21]; its sec. 8.4.2 finds
// CSR-scalar best for "very regular matrices with short rows"). 16 = half the warp busy on
// average.
inline constexpr double csr_warp_min_mean_row = 16.0;

// The kernel `automatic` picks for a matrix of `rows` rows and `nnz` entries.
csr_kernel choose_csr_kernel(std::int64_t rows, std::int64_t nnz);

template <class V, class I>
void spmv(const csr<V, I, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx,
          csr_kernel kernel = csr_kernel::automatic);

// cusparseSpMV with CUSPARSE_SPMV_ALG_DEFAULT for one product: describes the matrix and the
// vectors, sizes and takes the work buffer (ctx's workspace), runs, and frees the descriptors.
// A matrix without entries (or without columns) gives y = beta*y through our kernel: cuSPARSE
// is not asked about empty arrays. For repeated products use cusparse_spmv, which does the
// set-up once, as a solver would.
template <class V, class I>
void spmv_cusparse(const csr<V, I, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx);

// The cuSPARSE baseline as an application that multiplies many times uses it: the matrix and
// vector descriptors and a work buffer of its own are made once for (a, x, y); each call then
// only queues cusparseSpMV (default algorithm) on ctx's stream. a, x, y and ctx must outlive
// it. Without entries or columns each call is our kernel's y = beta*y.
template <class V, class I>
class cusparse_spmv {
 public:
  cusparse_spmv(const csr<V, I, device>& a, const V* x, V* y, gpu_context& ctx);
  ~cusparse_spmv();
  cusparse_spmv(const cusparse_spmv&) = delete;
  cusparse_spmv& operator=(const cusparse_spmv&) = delete;

  void operator()(V alpha, V beta);

 private:
  struct impl;
  std::unique_ptr<impl> p_;
};

}  // namespace spconv::gpu
#endif  // SPCONV_HAVE_CUDA
