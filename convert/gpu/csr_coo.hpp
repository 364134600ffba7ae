// COO <-> CSR on the GPU, byte-identical to the CPU converters (convert/cpu/csr_coo.hpp).
// Both return when the result is complete (they wait for ctx's stream).
#pragma once
#ifdef SPCONV_HAVE_CUDA
#include "formats/coo.hpp"
#include "formats/csr.hpp"
#include "formats/device.hpp"

namespace spconv::gpu {

// The canonical CSR of a COO matrix in any order: rows sorted, columns sorted within each
// row, duplicates summed left to right in the order they appear in the COO arrays, exactly
// as cpu::coo_to_csr does, so every bit of the result equals the CPU's. Validates the input
// as validate(coo) does and throws the same errors (errc::bad_input, same messages).
template <class V, class I>
csr<V, I, device> coo_to_csr(const coo<V, I, device>& a, gpu_context& ctx);

// CSR -> row-sorted COO: the exact inverse of coo_to_csr on canonical CSR, equal to
// cpu::csr_to_coo.
template <class V, class I>
coo<V, I, device> csr_to_coo(const csr<V, I, device>& a, gpu_context& ctx);

}  // namespace spconv::gpu
#endif  // SPCONV_HAVE_CUDA
