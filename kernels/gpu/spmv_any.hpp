// SpMV on whatever format an any_device_matrix holds, y = alpha*A*x + beta*y, with the
// format's GPU kernel (kernels/gpu/spmv_X.hpp; CSR: our row kernel, see `csr_with`). V must be
// the matrix's value type (errc::usage otherwise); x and y in device memory (a.cols and
// a.rows elements). Queued on ctx's stream: y is complete after ctx.synchronize().
#pragma once
#ifdef SPCONV_HAVE_CUDA
#include "formats/any_device_matrix.hpp"
#include "formats/device.hpp"

namespace spconv::gpu {

// Which kernel runs a CSR matrix: ours (kernels/gpu/spmv.hpp, automatic rule), HOLA-SpMV
// (kernels/gpu/spmv_csr_hola.hpp) or cuSPARSE.
enum class csr_method { spconv, hola, cusparse };

template <class V>
void spmv(const any_device_matrix& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx,
          csr_method csr_with = csr_method::spconv);

}  // namespace spconv::gpu
#endif  // SPCONV_HAVE_CUDA
