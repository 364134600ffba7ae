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

// The row-block methods of liu-thesis-csr5.txt sec. 8.3.1 as one kernel: a vector of `lanes`
// threads per row (a power of two, 1 to 32), whose lanes stride through the row and add their
// partial sums by a shuffle tree. lanes = 1 is CSR-scalar (Algorithm 28), lanes > 1 CSR-vector
// (Algorithm 29) with a sub-warp as the vector unit, 32 a whole warp.
inline constexpr int csr_max_lanes = 32;

// The rule that `lanes = 0` (automatic) follows, by the mean row length m = nnz / rows:
// one lane per row below csr_scalar_below, a whole warp from csr_warp_from, and in between the
// largest power of two not above m, at most 16. Measured on the H100 over the 20 real matrices
// replicated to 100M entries (README, Performance): below a mean of 10 every matrix ran fastest
// with one thread per row (its rows fit a thread's few loads, and a vector would idle most of
// its lanes); from 10 to 30, vectors of 8 or 16 lanes beat both ends (e.g. mean 30: 16 lanes
// 0.96x cuSPARSE, a warp 0.71x), as several rows per warp keep more loads in flight than one
// row with idle lanes; a warp only for rows of 64 entries and more.
inline constexpr std::int64_t csr_scalar_below = 10;
inline constexpr std::int64_t csr_warp_from = 64;
int csr_vector_lanes(std::int64_t rows, std::int64_t nnz);

// lanes: 0 = automatic (csr_vector_lanes), else 1, 2, 4, 8, 16 or 32; other values are a
// usage error.
template <class V, class I>
void spmv(const csr<V, I, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx, int lanes = 0);

// Which kernel runs a CSR matrix (gpu::spmv on an any_device_matrix):
// - hola, the default: HOLA-SpMV (kernels/gpu/spmv_csr_hola.hpp);
// - rows: our row kernel above (spmv, lanes automatic);
// - cusparse: cusparseSpMV (spmv_cusparse below).
// Why HOLA by default: it splits the entries evenly between blocks, so no row length slows
// it, where a long row holds one thread (or vector) of the row kernel for the whole product.
// Measured on the H100 (double, the 20 real matrices as they are and replicated to 2M, 4M,
// 8M, 16M and 100M entries, stop 16): HOLA's geometric mean beat the row kernel's at every
// size (as they are 1.27x against 1.09x cuSPARSE; 2M 1.10x / 0.87x; 16M 1.08x / 0.78x; 100M
// 1.18x / 0.88x), while the row kernel took 20-150x HOLA's time on the matrices with a few
// long rows (arrow, rajat01, hangGlider_2, memplus; 5.3 ms against 35 us on arrow at 2M).
// The row kernel, one launch and no workspace, is faster on small matrices of even rows
// (3.5-7 us against 7-9 us as they are) and on rows of one or two entries up to ~16M entries
// (6-16%): ask for `rows` there.
enum class csr_method { hola, rows, cusparse };

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
