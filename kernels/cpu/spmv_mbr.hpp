// MBR products on the CPU (shared/papers/mbr-kannan.txt sec. IV): SpMV and the
// multiple-vector product SMMV, computed on MBR's own arrays by iterating the set bits of
// each block's bitmap. The reference for the GPU MBR kernels.
#pragma once

#include "formats/mbr.hpp"

namespace spconv::cpu {

// y = alpha*A*x + beta*y. x has a.cols entries, y a.rows; when beta == 0, y is not read.
template <class V>
void spmv(const mbr<V>& a, V alpha, const V* x, V beta, V* y);

// Y = alpha*A*X + beta*Y for k vectors at once (the paper's SMMV, Fig. 6):
// X is row-major a.cols x k, Y row-major a.rows x k (vector l is column l); k >= 1,
// else errc::usage. When beta == 0, Y is not read. Every column is summed in the same
// order as spmv sums it.
template <class V>
void spmm(const mbr<V>& a, int k, V alpha, const V* x, V beta, V* y);

}  // namespace spconv::cpu
