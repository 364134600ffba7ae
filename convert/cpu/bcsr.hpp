// CSR <-> BCSR on the CPU (specs/formats/bcsr.md; liu-thesis-csr5.txt sec. 5.4.4).
#pragma once
#include <cstdint>

#include "formats/bcsr.hpp"
#include "formats/csr.hpp"

namespace spconv::cpu {

// The block size rule. Fields given (non-zero) must lie in [1, 16] (errc::usage otherwise)
// and are kept. Fields left 0 are chosen among the candidates {1, 2, 3, 4, 6, 8} (each
// free side independently, so rectangular sizes compete too) by counting, exactly and in
// parallel, the r x c blocks the matrix needs, and taking the size with the fewest
// estimated SpMV matrix bytes:
//   nblocks * r * c * sizeof(V)  (values, fill included)
// + nblocks * 4                  (block_col)
// + (ceil(rows / r) + 1) * 4     (block_ptr)
// (stored_zeros is the same for every size). Ties go to the smaller r * c, then the
// smaller r. Sizes whose values would exceed bcsr_max_values are skipped; when none fits,
// errc::unsupported. `a` must be canonical CSR.
template <class V>
bcsr_params resolve_bcsr_params(const csr<V, std::int32_t>& a, bcsr_params requested);

// Canonical CSR -> BCSR with the resolved block size. Refuses (errc::unsupported) a block
// size whose values would exceed bcsr_max_values. Multi-threaded over block rows; the
// result does not depend on the thread count.
template <class V>
bcsr<V> csr_to_bcsr(const csr<V, std::int32_t>& a, const bcsr_params& requested);

// BCSR (valid: validate() holds) -> the canonical CSR it was made from, bit for bit:
// every value that is not +0.0 fill, plus the positions listed in stored_zeros.
template <class V>
csr<V, std::int32_t> bcsr_to_csr(const bcsr<V>& a);

}  // namespace spconv::cpu
