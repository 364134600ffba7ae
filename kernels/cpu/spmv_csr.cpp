#include "kernels/cpu/spmv_csr.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "formats/instantiate.hpp"
#include "formats/parallel.hpp"

namespace spconv::cpu {

template <class V, class I>
void spmv(const csr<V, I>& a, V alpha, const V* x, V beta, V* y) {
  parallel_for(a.rows, 1 << 12, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      V sum = 0;
      for (I k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) sum += a.values[k] * x[a.col_idx[k]];
      // beta == 0 must not read y (it may hold NaN or be uninitialised), as in BLAS.
      y[r] = beta == V(0) ? alpha * sum : alpha * sum + beta * y[r];
    }
  });
}

template <class V, class I>
double spmv_max_rel_error(const csr<V, I>& a, V alpha, const V* x, V beta, const V* y0, const V* y_test) {
  double worst = 0;
  for (std::int64_t r = 0; r < a.rows; ++r) {
    double ref = 0, scale = 0;
    for (I k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) {
      double t = static_cast<double>(a.values[k]) * static_cast<double>(x[a.col_idx[k]]);
      ref += t;
      scale += std::fabs(t);
    }
    ref *= static_cast<double>(alpha);
    scale *= std::fabs(static_cast<double>(alpha));
    if (beta != V(0)) {
      ref += static_cast<double>(beta) * static_cast<double>(y0[r]);
      scale += std::fabs(static_cast<double>(beta) * static_cast<double>(y0[r]));
    }
    // Products in V's subnormal range err absolutely, not relatively (Higham, Accuracy and
    // Stability, eq. 2.8): each of the row's len + 2 products may be off by up to the
    // smallest subnormal of V, whatever the row's scale.
    const double underflow = static_cast<double>(a.row_ptr[r + 1] - a.row_ptr[r] + 2) *
                             static_cast<double>(std::numeric_limits<V>::denorm_min());
    double diff = std::max(0.0, std::fabs(static_cast<double>(y_test[r]) - ref) - underflow);
    double err = scale > 0 ? diff / scale : (diff == 0 ? 0.0 : std::numeric_limits<double>::infinity());
    if (std::isnan(err)) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, err);
  }
  return worst;
}

template <class V>
double spmv_tolerance(std::int64_t max_row_len) {
  return 2.0 * static_cast<double>(max_row_len + 2) * std::numeric_limits<V>::epsilon();
}

#define SPCONV_INST(V, I)                                                       \
  template void spmv<V, I>(const csr<V, I>&, V, const V*, V, V*);             \
  template double spmv_max_rel_error<V, I>(const csr<V, I>&, V, const V*, V, const V*, const V*);
SPCONV_FOR_VALUE_INDEX(SPCONV_INST)
#undef SPCONV_INST
template double spmv_tolerance<float>(std::int64_t);
template double spmv_tolerance<double>(std::int64_t);

}  // namespace spconv::cpu
