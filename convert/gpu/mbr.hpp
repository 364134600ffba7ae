// CSR <-> MBR on the GPU (shared/papers/mbr-kannan.txt sec. III; specs/formats/mbr.md,
// section "GPU"), byte-identical to the CPU converters of convert/cpu/mbr.hpp. Both return
// when the result is complete (they wait for ctx's stream).
#pragma once
#ifdef SPCONV_HAVE_CUDA
#include <cstdint>

#include "formats/csr.hpp"
#include "formats/device.hpp"
#include "formats/mbr.hpp"

namespace spconv::gpu {

// Canonical CSR -> MBR with the parameters `resolved`, which must be what
// cpu::resolve_mbr_params returned for this matrix: the automatic block size counts the
// blocks of every candidate size (a pass over the CSR on the host), so it is resolved there,
// on a host copy; the GPU converts with the concrete size. A block side left 0, or a
// bitmap_bytes that is not the one r*c needs, is errc::usage (out-of-range sides as the CPU
// reports them). The result equals cpu::csr_to_mbr(a, resolved) bit for bit.
template <class V>
mbr<V, std::int32_t, device> csr_to_mbr(const csr<V, std::int32_t, device>& a, const mbr_params& resolved,
                                        gpu_context& ctx);

// MBR (as validate() accepts it) -> canonical CSR, equal to cpu::mbr_to_csr bit for bit.
template <class V>
csr<V, std::int32_t, device> mbr_to_csr(const mbr<V, std::int32_t, device>& a, gpu_context& ctx);

}  // namespace spconv::gpu
#endif  // SPCONV_HAVE_CUDA
