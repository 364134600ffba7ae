// Human- and JSON-friendly descriptions of a stored format: its parameters and the
// figures `spconv info` prints, all derived from the format's own declaration.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "formats/any_matrix.hpp"

namespace spconv {

// The format's parameters as (name, value) in declaration order.
std::vector<std::pair<std::string, std::int64_t>> params_of(const any_matrix& m);

// Bytes a canonical CSR of the same matrix (same value and index types) holds.
std::uint64_t csr_bytes(std::int64_t rows, std::int64_t nnz, value_type v, index_type i);

// Format-specific figures worth reporting (e.g. BCSR's fill ratio), as (name, value).
std::vector<std::pair<std::string, double>> figures_of(const any_matrix& m);

}  // namespace spconv
