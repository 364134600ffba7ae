// SpMV on whatever format an any_device_matrix holds, y = alpha*A*x + beta*y, with the
// format's GPU kernel (kernels/gpu/spmv_X.hpp; CSR: the kernel `csr_with` names, csr_method in
// kernels/gpu/spmv.hpp). V must be the matrix's value type (errc::usage otherwise); x and y in
// device memory (a.cols and a.rows elements). Queued on ctx's stream: y is complete after ctx.synchronize().
#pragma once
#ifdef SPCONV_HAVE_CUDA
#include "formats/any_device_matrix.hpp"
#include "formats/device.hpp"
#include "kernels/gpu/spmv.hpp"

namespace spconv::gpu {

template <class V>
void spmv(const any_device_matrix& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx,
          csr_method csr_with = csr_method::hola);

}  // namespace spconv::gpu
#endif  // SPCONV_HAVE_CUDA
