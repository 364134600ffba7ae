// SpMV on whatever format an any_matrix holds: y = alpha*A*x + beta*y with the
// format's own reference kernel. V must be the matrix's value type.
#pragma once
#include "formats/any_matrix.hpp"

namespace spconv::cpu {

template <class V>
void spmv(const any_matrix& a, V alpha, const V* x, V beta, V* y);

// A typed format whose own kernel header (kernels/cpu/spmv_X.hpp) is not included would
// otherwise be copied into an any_matrix silently; this makes that a compile error.
template <class Fmt, class V>
  requires(!std::is_same_v<Fmt, any_matrix>)
void spmv(const Fmt& a, V alpha, const V* x, V beta, V* y) = delete;

}  // namespace spconv::cpu
