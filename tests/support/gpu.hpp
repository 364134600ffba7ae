// Helpers of the GPU tests (tests/gpu/): device array contents and the SpMV check that every
// GPU kernel must pass against the CPU reference. CUDA builds only.
#pragma once
#ifdef SPCONV_HAVE_CUDA
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "formats/any_device_matrix.hpp"
#include "formats/device.hpp"
#include "kernels/cpu/spmv_csr.hpp"
#include "tests/support/matrices.hpp"

namespace spconv::test {

template <class T>
std::vector<T> download(const device_array<T>& d) {
  std::vector<T> h(d.size());
  d.download(h.data());
  return h;
}

// Runs `spmv(alpha, x, beta, y)` (device pointers, queued on ctx) twice — beta != 0, and
// beta == 0 on a y full of NaN, which must not be read — and expects both results within the
// CPU reference's tolerance of y = alpha*A*x + beta*y0 for the canonical CSR `a`.
template <class V, class I, class F>
void expect_spmv_matches(const csr<V, I>& a, gpu_context& ctx, F&& spmv) {
  const std::vector<V> x = test_vector<V>(a.cols, 1), y0 = test_vector<V>(a.rows, 2);
  const std::vector<V> nan(static_cast<std::size_t>(a.rows), std::numeric_limits<V>::quiet_NaN());
  device_array<V> dx, dy;
  dx.upload(x.data(), x.size());
  const double tol = cpu::spmv_tolerance<V>(max_row_length(a));
  for (const V beta : {V(-0.5), V(0)}) {
    const V alpha = V(1.25);
    dy.upload(beta == V(0) ? nan.data() : y0.data(), nan.size());
    spmv(alpha, static_cast<const V*>(dx.data()), beta, dy.data());
    ctx.synchronize();
    const auto y = download(dy);
    EXPECT_LE(cpu::spmv_max_rel_error(a, alpha, x.data(), beta, y0.data(), y.data()), tol) << "beta " << beta;
  }
}

}  // namespace spconv::test
#endif  // SPCONV_HAVE_CUDA
