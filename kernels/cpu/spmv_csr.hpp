// The CSR reference SpMV, y = alpha*A*x + beta*y: the oracle every other format's
// SpMV is checked against, and the CPU baseline of the benchmarks.
#pragma once
#include <cstdint>

#include "formats/csr.hpp"

namespace spconv::cpu {

template <class V, class I>
void spmv(const csr<V, I>& a, V alpha, const V* x, V beta, V* y);

// How far y_test is from the reference product, per row, in units of that row's
// rounding scale: err_i = |y_test_i - y_ref_i| / (|alpha| * sum_j |a_ij x_j| + |beta y0_i|)
// (computed in double), after forgiving each of the row's len + 2 products one smallest
// subnormal of V (underflow errs absolutely). Rows whose scale is 0 must match to within
// that (err = inf otherwise).
// Returns the maximum over rows (infinity if any row is NaN).
template <class V, class I>
double spmv_max_rel_error(const csr<V, I>& a, V alpha, const V* x, V beta, const V* y0, const V* y_test);

// The tolerance spmv_max_rel_error is held to: any summation order of n terms in
// precision eps errs by at most about n*eps of the scale (Higham, gamma_n); both the
// tested product and the reference round, hence 2 * (n + 2) * eps.
template <class V>
double spmv_tolerance(std::int64_t max_row_len);

}  // namespace spconv::cpu
