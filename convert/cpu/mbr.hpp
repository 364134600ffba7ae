// CSR <-> MBR on the CPU (shared/papers/mbr-kannan.txt sec. III; specs/formats/mbr.md).
#pragma once
#include <cstdint>

#include "formats/csr.hpp"
#include "formats/mbr.hpp"

namespace spconv::cpu {

// The concrete parameters csr_to_mbr uses for `requested`.
// Ranges: block_rows, block_cols in [0, 64] and bitmap_bytes in {0, 1, 2, 4, 8}, else
// errc::usage; r*c > 64 is errc::unsupported (a bitmap holds at most 64 bits);
// bitmap_bytes other than 0 must equal the width r*c needs (errc::usage).
// Auto rule (a field left 0): among r, c in {1, 2, 4, 8} (the sizes the paper evaluates,
// sec. V, up to 8x8), keeping a requested field fixed, take the block size whose arrays
// hold the fewest bytes for this matrix: blocks * (4 + bitmap_bytes) + 8 * (ceil(rows/r) + 1)
// (values cost the same for every size). SpMV streams these bytes (sec. I, memory wall)
// and the paper's storage bound (sec. III, Table I) is this count in words. Ties go to
// the larger block (r*c, then r): more entries per decoded block (sec. V-B).
template <class V>
mbr_params resolve_mbr_params(const csr<V, std::int32_t>& a, mbr_params requested);

// Canonical CSR (sorted, duplicate-free rows) -> MBR. Exact: every stored entry,
// explicit zeros included, becomes one set bit and one value, bit for bit.
template <class V>
mbr<V> csr_to_mbr(const csr<V, std::int32_t>& a, const mbr_params& requested);

// MBR -> canonical CSR, the exact inverse of csr_to_mbr. Expects a valid MBR
// (validate() it first when it comes from outside).
template <class V>
csr<V, std::int32_t> mbr_to_csr(const mbr<V>& a);

}  // namespace spconv::cpu
