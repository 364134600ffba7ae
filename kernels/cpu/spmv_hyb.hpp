// The HYB reference SpMV, y = alpha*A*x + beta*y, on HYB's own arrays
// (shared/papers/liu-thesis-csr5.txt, sec. 5.3.1: the ELL part and the COO part).
#pragma once
#include "formats/hyb.hpp"

namespace spconv::cpu {

// Rows are split into fixed blocks, one thread each. Within a block, the ELL part is read
// slot by slot over tiles of rows (one partial sum per row, column-major runs as a GPU ELL
// kernel with a thread per row reads them); then each row's COO tail entries, which are
// grouped by row and found by binary search once per block, are added to its sum. A row is
// owned by one thread, so no atomics; each row sums its ELL slots then its tail in order,
// which is its CSR order, so the result does not depend on the thread count.
// When beta == 0, y is not read.
template <class V>
void spmv(const hyb<V>& a, V alpha, const V* x, V beta, V* y);

}  // namespace spconv::cpu
