// Copies of a whole any_matrix between host and device memory.
#ifdef SPCONV_HAVE_CUDA
#include "formats/any_device_matrix.hpp"

namespace spconv {

any_device_matrix to_device(const any_matrix& m) {
  return std::visit([](const auto& x) -> any_device_matrix { return to_device(x); }, m);
}

any_matrix to_host(const any_device_matrix& m) {
  return std::visit([](const auto& x) -> any_matrix { return to_host(x); }, m);
}

}  // namespace spconv
#endif  // SPCONV_HAVE_CUDA
