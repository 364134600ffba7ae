// SpMV on whatever format an any_matrix holds: y = alpha*A*x + beta*y with the
// format's own reference kernel. V must be the matrix's value type.
#pragma once
#include "formats/any_matrix.hpp"

namespace spconv::cpu {

template <class V>
void spmv(const any_matrix& a, V alpha, const V* x, V beta, V* y);

}  // namespace spconv::cpu
