// CSR5 SpMV on the CPU, y = alpha*A*x + beta*y (liu-thesis-csr5.txt sec. 8.5.1, Algorithm 32,
// with the fast segmented sum of sec. 4.4.4, Algorithm 13): the reference for the GPU kernel.
#pragma once
#include "formats/csr5.hpp"

namespace spconv::cpu {

// Computed on the CSR5 arrays only: tiles in parallel, each lane summing its sigma entries
// and cutting them into segments by bit_flag, rows found by tile_ptr + y_offset (or
// empty_offset), the sub-segments of rows crossing lanes joined through seg_offset; rows
// crossing tiles and the incomplete last tile are finished by a calibrator pass in tile
// order, so y does not depend on the thread count. When beta == 0, y is not read.
// `a` must be valid (validate()); x has a.cols elements, y a.rows.
template <class V>
void spmv(const csr5<V>& a, V alpha, const V* x, V beta, V* y);

}  // namespace spconv::cpu
