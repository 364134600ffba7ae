// any_matrix: the runtime value passed between I/O, the converter graph and the CLI:
// one stored format of one matrix, as a variant over format x value type x index type.
// Adding a format means adding its instantiations to `any_matrix` and its name to
// `format_list` below; everything generic follows from its declaration.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "formats/bcsr.hpp"
#include "formats/ccoo.hpp"
#include "formats/cmrs.hpp"
#include "formats/coo.hpp"
#include "formats/csr.hpp"
#include "formats/csr5.hpp"
#include "formats/hyb.hpp"
#include "formats/mbr.hpp"

namespace spconv {

using any_matrix = std::variant<                                     //
    csr<float, std::int32_t>, csr<double, std::int32_t>,           //
    csr<float, std::int64_t>, csr<double, std::int64_t>,           //
    coo<float, std::int32_t>, coo<double, std::int32_t>,           //
    coo<float, std::int64_t>, coo<double, std::int64_t>,           //
    cmrs<float>, cmrs<double>, mbr<float>, mbr<double>,              //
    csr5<float>, csr5<double>, bcsr<float>, bcsr<double>,            //
    hyb<float>, hyb<double>, ccoo<float>, ccoo<double>>;

struct format_description {
  std::string_view name, summary, paper;
};

// The formats in the order `spconv formats` lists them.
inline constexpr std::array format_descriptions = {
    format_description{"csr", "compressed sparse row (canonical: sorted columns, no duplicates); binsparse CSR", ""},
    format_description{"coo", "coordinate triplets, row-sorted; binsparse COO", ""},
    format_description{"cmrs", "compressed multi-row storage: strips of up to 16 rows, row-in-strip in the 4 low bits of the column word",
                       "Koza et al., cmrs-koza.txt sec. 3-4, 6.7"},
    format_description{"mbr", "mapped blocked row: r x c blocks with a bitmap of the stored entries, values of those only",
                       "Kannan, mbr-kannan.txt sec. III-IV"},
    format_description{"csr5", "CSR5: omega x sigma tiles with bit-packed descriptors for segmented-sum SpMV",
                       "Liu, liu-thesis-csr5.txt sec. 6.3, 8.5"},
    format_description{"bcsr", "blocked CSR: dense r x c blocks with explicit zero fill",
                       "liu-thesis-csr5.txt sec. 5.4.4"},
    format_description{"hyb", "hybrid: ELL part (column-major, padded) plus COO tail",
                       "liu-thesis-csr5.txt sec. 5.3.1; Bell & Garland"},
    format_description{"ccoo", "balanced and compressed COO: chunks of B x K entries, 8/16/32-bit column offsets, 256-value table",
                       "Aliaga, Anzt et al., bccoo-aliaga-anzt.txt"},
};

inline constexpr auto format_list = [] {
  std::array<std::string_view, format_descriptions.size()> names{};
  for (std::size_t i = 0; i < names.size(); ++i) names[i] = format_descriptions[i].name;
  return names;
}();

inline bool is_format_name(std::string_view s) {
  for (auto n : format_list)
    if (n == s) return true;
  return false;
}

inline std::string format_names_joined(std::string_view sep = " ") {
  std::string s;
  for (auto n : format_list) {
    if (!s.empty()) s += sep;
    s += n;
  }
  return s;
}

inline void check_format_name(std::string_view s) {
  if (!is_format_name(s))
    fail(errc::usage, "unknown format '" + std::string(s) + "' (known: " + format_names_joined(", ") + ")");
}

inline std::string_view format_name(const any_matrix& m) {
  return std::visit([](const auto& x) { return std::remove_cvref_t<decltype(x)>::name; }, m);
}
inline value_type value_type_of(const any_matrix& m) {
  return std::visit([](const auto& x) { return value_type_of<typename std::remove_cvref_t<decltype(x)>::value_type>(); }, m);
}
inline index_type index_type_of(const any_matrix& m) {
  return std::visit([](const auto& x) { return index_type_of<typename std::remove_cvref_t<decltype(x)>::index_type>(); }, m);
}
inline std::int64_t rows_of(const any_matrix& m) {
  return std::visit([](const auto& x) { return x.rows; }, m);
}
inline std::int64_t cols_of(const any_matrix& m) {
  return std::visit([](const auto& x) { return x.cols; }, m);
}

// validate() of whatever format the value holds.
inline void validate(const any_matrix& m) {
  std::visit([](const auto& x) { validate(x); }, m);
}

// Same format, same types and bit-identical arrays and parameters.
inline bool equal(const any_matrix& a, const any_matrix& b) {
  return std::visit(
      [](const auto& x, const auto& y) {
        if constexpr (std::is_same_v<decltype(x), decltype(y)>) return equal(x, y);
        else return false;
      },
      a, b);
}

// Bytes held by the arrays of whatever format the value holds.
inline std::size_t bytes(const any_matrix& m) {
  return std::visit([](const auto& x) { return bytes(x); }, m);
}
inline std::size_t spmv_bytes(const any_matrix& m) {
  return std::visit([](const auto& x) { return spmv_bytes(x); }, m);
}

}  // namespace spconv
