#include "formats/describe.hpp"

namespace spconv {

std::vector<std::pair<std::string, std::int64_t>> params_of(const any_matrix& m) {
  std::vector<std::pair<std::string, std::int64_t>> out;
  std::visit(
      [&](const auto& x) {
        using P = std::remove_cvref_t<decltype(x.params)>;
        P::for_each_param(x.params, [&](std::string_view name, const auto& v) {
          out.emplace_back(std::string(name), static_cast<std::int64_t>(v));
        });
      },
      m);
  return out;
}

std::uint64_t csr_bytes(std::int64_t rows, std::int64_t nnz, value_type v, index_type i) {
  const std::uint64_t isz = i == index_type::i32 ? 4 : 8, vsz = v == value_type::f32 ? 4 : 8;
  return static_cast<std::uint64_t>(rows + 1) * isz + static_cast<std::uint64_t>(nnz) * (isz + vsz);
}

std::vector<std::pair<std::string, double>> figures_of(const any_matrix& m) {
  std::vector<std::pair<std::string, double>> out;
  std::visit(
      [&](const auto& x) {
        using M = std::remove_cvref_t<decltype(x)>;
        if constexpr (std::is_same_v<M, bcsr<typename M::value_type>>) out.emplace_back("fill_ratio", fill_ratio(x));
      },
      m);
  return out;
}

}  // namespace spconv
