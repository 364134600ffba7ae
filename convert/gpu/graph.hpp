// The converter graph on the GPU: the device twin of spconv::convert (convert/graph.hpp),
// with the same targets, options and contract. Every result is byte-identical to what the
// CPU graph gives for the same input and options (tests/gpu/test_gpu_graph.cpp).
#pragma once
#ifdef SPCONV_HAVE_CUDA
#include <string_view>

#include "convert/graph.hpp"
#include "formats/any_device_matrix.hpp"
#include "formats/device.hpp"

namespace spconv::gpu {

// Converts `in` (device memory) to `target` on the device: X -> CSR, value/index casts,
// CSR -> target, through the GPU converters of convert/gpu/. Automatic parameters (0 fields
// of opt) follow the CPU rules (cpu::resolve_X_params), which read the CSR's structure on the
// host: when a field of the target is automatic, the CSR is copied to the host for that
// (cost shows in the time of the call). Give concrete parameters, e.g. from
// spconv::resolve_params on a host copy you already hold, to keep the whole conversion on the
// device. Returns when the result is complete. Errors as spconv::convert, plus errc::device
// for a device failure or short device memory (naming the conversion and the allocation).
any_device_matrix convert(const any_device_matrix& in, std::string_view target, const convert_options& opt,
                          gpu_context& ctx);

}  // namespace spconv::gpu
#endif  // SPCONV_HAVE_CUDA
