// The converter graph: the single entry point that turns any stored format into any
// other. CSR is the hub: every format has an edge to and from CSR; COO <-> CSR is the
// direct edge the Matrix Market path uses. Value-type and index-type changes are
// explicit options here, never implicit in a constructor.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

#include "formats/any_matrix.hpp"

namespace spconv {

// Format parameters as requested: 0 fields mean "choose automatically" (each format's
// resolve_X_params documents its rule); the stored parameters are always concrete.
struct convert_options {
  std::optional<value_type> values;  // cast values to this type (float <-> double)
  std::optional<index_type> index;   // CSR/COO index width of the result (default: keep;
                                     // the other formats use 32-bit indices)
  cmrs_params cmrs;
  mbr_params mbr;
  csr5_params csr5;
  csr5_target csr5_for = csr5_target::gpu;  // whose rule picks automatic omega/sigma
  bcsr_params bcsr;
  hyb_params hyb;
  ccoo_params ccoo;
};

// Converts `in` to the format named `target` (see format_list). Throws errc::usage for an
// unknown name, errc::unsupported when the target cannot represent the matrix.
any_matrix convert(const any_matrix& in, std::string_view target, const convert_options& opt = {});

// errc::unsupported (with the message every path uses) unless a matrix of this shape and
// entry count fits indices of type `it`.
void check_index_fits(index_type it, std::int64_t rows, std::int64_t cols, std::int64_t nnz);

// `opt` with the parameters of `target` made concrete by the automatic rules applied to `in`
// (the values convert(in, target, opt) would store); every other field unchanged. For GPU
// conversions (convert/gpu/graph.hpp), whose rules run on the host.
convert_options resolve_params(const any_matrix& in, std::string_view target, const convert_options& opt = {});

}  // namespace spconv
