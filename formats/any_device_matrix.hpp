// any_device_matrix: the runtime value of a matrix in device memory, the device twin of
// any_matrix (the same format x value type x index type alternatives, Space = device), and
// the copies between the two. Only CUDA builds (SPCONV_HAVE_CUDA) declare it; no CUDA types.
#pragma once
#ifdef SPCONV_HAVE_CUDA
#include <string_view>
#include <variant>

#include "formats/any_matrix.hpp"
#include "formats/device_array.hpp"

namespace spconv {

template <class Variant, class Space>
struct variant_in_space;
template <class... Fmt, class Space>
struct variant_in_space<std::variant<Fmt...>, Space> {
  using type = std::variant<with_space_t<Fmt, Space>...>;
};

using any_device_matrix = variant_in_space<any_matrix, device>::type;

// Whole-matrix copies (shape, parameters, every array); to_host(to_device(m)) == m bit for bit.
any_device_matrix to_device(const any_matrix& m);
any_matrix to_host(const any_device_matrix& m);

inline std::string_view format_name(const any_device_matrix& m) {
  return std::visit([](const auto& x) { return std::remove_cvref_t<decltype(x)>::name; }, m);
}
inline value_type value_type_of(const any_device_matrix& m) {
  return std::visit([](const auto& x) { return value_type_of<typename std::remove_cvref_t<decltype(x)>::value_type>(); }, m);
}
inline index_type index_type_of(const any_device_matrix& m) {
  return std::visit([](const auto& x) { return index_type_of<typename std::remove_cvref_t<decltype(x)>::index_type>(); }, m);
}
inline std::int64_t rows_of(const any_device_matrix& m) {
  return std::visit([](const auto& x) { return static_cast<std::int64_t>(x.rows); }, m);
}
inline std::int64_t cols_of(const any_device_matrix& m) {
  return std::visit([](const auto& x) { return static_cast<std::int64_t>(x.cols); }, m);
}

// The bytes the format's arrays hold in device memory (bytes() of formats/format.hpp, which
// serves the device twins too).
inline std::size_t device_bytes(const any_device_matrix& m) {
  return std::visit([](const auto& x) { return bytes(x); }, m);
}
inline std::size_t spmv_bytes(const any_device_matrix& m) {
  return std::visit([](const auto& x) { return spmv_bytes(x); }, m);
}

}  // namespace spconv
#endif  // SPCONV_HAVE_CUDA
