// CSR <-> CSR5 on the CPU (specs/formats/csr5.md; liu-thesis-csr5.txt sec. 6.3, 8.5).
#pragma once
#include <cstdint>

#include "formats/csr.hpp"
#include "formats/csr5.hpp"

namespace spconv::cpu {

// The tile size rule of the thesis (sec. 6.3.2) for the given target. Fields given
// (non-zero) must lie in [1, 64] (errc::usage otherwise) and are kept; fields left 0 are:
//   omega  gpu: 32, the warp size ("omega = 32 for the nVidia GPUs");
//          cpu: the lanes of a 256-bit SIMD unit, 32 / sizeof(V): 4 for double (the
//          thesis's "omega = 4 for CPUs with 256-bit SIMD units"), 8 for float. Fixed
//          rather than detected, so that a file does not depend on the converting machine.
//   sigma  cpu: 16 ("for the double precision SpMV on CPUs ... we always set sigma to 16");
//          gpu: from n = nnz / rows (integer division; 0 when rows = 0), the thesis's
//          bounds <r, s, t, u> = <4, 32, 256, 4> for nVidia GPUs with taller tiles for short
//          rows (measured on the H100, specs/formats/csr5.md):
//            n < 5: 8;  5 <= n <= 16: 16;  16 < n <= 32: n;  32 < n <= 256: 32;  n > 256: 4.
template <class V>
csr5_params resolve_csr5_params(const csr<V, std::int32_t>& a, csr5_params requested,
                                csr5_target target = csr5_target::gpu);

// Canonical CSR -> CSR5 with the resolved tile size. Multi-threaded over tiles, one pass:
// tile_ptr, descriptors and the transposed col_idx/values per tile from a walk along
// row_ptr (plus a second walk for the rare tiles that span empty rows, for empty_offset);
// the result does not depend on the thread count. Refuses (errc::unsupported) a matrix beyond the 32-bit fields: more than
// 2^31 - 1 rows, columns or entries.
template <class V>
csr5<V> csr_to_csr5(const csr<V, std::int32_t>& a, const csr5_params& requested,
                    csr5_target target = csr5_target::gpu);

// CSR5 (valid: validate() holds) -> the CSR it was made from, bit for bit: row_ptr as
// stored, col_idx/values transposed back within the complete tiles.
template <class V>
csr<V, std::int32_t> csr5_to_csr(const csr5<V>& a);

}  // namespace spconv::cpu
