// CSR <-> CCOO (balanced and compressed COO) on the CPU. Spec: specs/formats/ccoo.md.
#pragma once
#include <cstdint>

#include "formats/ccoo.hpp"
#include "formats/csr.hpp"

namespace spconv::cpu {

// Fills the automatic (0) fields and checks the ranges (errc::usage otherwise):
//   chunk_b: 256, the paper's block size (Sect. 2: "B = 256 is rather optimal");
//   chunk_k: the largest K in {4, 2} whose padded entry count (every row padded to a
//            multiple of K, an empty row to K) is at most 5/4 of the count for K = 1
//            (the paper uses 2 or 4 entries per thread; this bounds what padding costs),
//            else 1.
// `a` must be a valid CSR.
template <class V>
ccoo_params resolve_ccoo_params(const csr<V, std::int32_t>& a, ccoo_params requested);

// Refuses (errc::unsupported) more than 2^31 - 1 columns or rows and more than 2^31 - 1
// entries after padding. Validates `a`. Deterministic for any thread count.
template <class V>
ccoo<V> csr_to_ccoo(const csr<V, std::int32_t>& a, const ccoo_params& requested);

// The exact inverse on canonical CSR. `a` must satisfy validate().
template <class V>
csr<V, std::int32_t> ccoo_to_csr(const ccoo<V>& a);

}  // namespace spconv::cpu
