// The BCSR reference SpMV on the CPU, y = alpha*A*x + beta*y, on BCSR's own arrays:
// one block row at a time, its r sums kept in registers across the block row's blocks
// (mbr-kannan.txt sec. II, fig. 2; liu-thesis-csr5.txt sec. 5.4.4).
#pragma once
#include "formats/bcsr.hpp"

namespace spconv::cpu {

// Multi-threaded over block rows, deterministic (each row's sum runs over its blocks in
// stored order, columns increasing). When beta == 0, y is not read. Fill takes part in
// the products as 0 * x, as in any BCSR kernel: with a non-finite x element it gives NaN
// where the CSR product, which skips absent entries, does not.
template <class V>
void spmv(const bcsr<V>& a, V alpha, const V* x, V beta, V* y);

}  // namespace spconv::cpu
