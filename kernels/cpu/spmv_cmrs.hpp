// CMRS SpMV on the CPU, y = alpha*A*x + beta*y, computed on the CMRS arrays themselves:
// the reference (oracle) for the GPU kernels of shared/papers/cmrs-koza.txt (Algorithm 1
// in sec. 4, appendix 9 and 10). See kernels/cpu/spmv_cmrs.cpp for the summation order.
#pragma once

#include "formats/cmrs.hpp"

namespace spconv::cpu {

// When beta == 0, y is not read (it may hold NaN or be uninitialised).
template <class V>
void spmv(const cmrs<V>& a, V alpha, const V* x, V beta, V* y);

}  // namespace spconv::cpu
