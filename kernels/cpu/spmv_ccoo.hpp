// CCOO SpMV on the CPU, y = alpha*A*x + beta*y, computed on the chunks themselves: the
// reference (oracle) for the GPU kernel of Aliaga et al., Euro-Par 2020 Workshops, Sect. 2.
#pragma once
#include "formats/ccoo.hpp"

namespace spconv::cpu {

// One chunk = one thread block of the paper: each group (thread) sums its K products in
// order, then a segmented reduction adds the group sums of each run of equal row offsets
// in group order. Rows inside a chunk are written directly; a chunk's first and last rows
// may continue into its neighbours, so their partial sums are combined afterwards in chunk
// order (where the GPU kernel uses atomicAdd), which keeps the result independent of the
// thread count. Padding entries are skipped, so y equals the CSR product even when x
// holds Inf or NaN. When beta == 0, y is not read. `a` must satisfy validate().
template <class V>
void spmv(const ccoo<V>& a, V alpha, const V* x, V beta, V* y);

}  // namespace spconv::cpu
