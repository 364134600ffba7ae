// COO <-> CSR on the CPU.
#pragma once
#include "formats/coo.hpp"
#include "formats/csr.hpp"

namespace spconv::cpu {

// The canonical CSR of a COO matrix in any order: rows sorted, columns sorted within
// each row, duplicates summed in the order they appear in the COO arrays (so the sum,
// and hence every bit of the result, is deterministic). Validates the input's indices.
template <class V, class I>
csr<V, I> coo_to_csr(const coo<V, I>& a);

// CSR -> COO: row-sorted triplets, the exact inverse of coo_to_csr on canonical CSR.
template <class V, class I>
coo<V, I> csr_to_coo(const csr<V, I>& a);

}  // namespace spconv::cpu
