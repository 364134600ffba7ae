// Every format against the CSR hub, through the runtime interface the CLI uses
// (any_matrix, convert(), cpu::spmv, the container), on the generated shapes and on the
// shared SuiteSparse files, in float and double. Each format's own test_<fmt>.cpp covers
// its invariants and worked examples; this file checks that all formats agree with CSR on
// the same inputs. The tests only hold any_matrix values, so this file instantiates no
// format code: the typed tests differ by a format name and a value type.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "convert/graph.hpp"
#include "io/hdf5/container.hpp"
#include "io/matrix_file.hpp"
#include "kernels/cpu/spmv.hpp"
#include "kernels/cpu/spmv_csr.hpp"
#include "tests/support/matrices.hpp"

using namespace spconv;
namespace fs = std::filesystem;

namespace {

// The complex file among the shared matrices: spconv refuses complex values
// (FormatsInputs.ComplexMatrixIsRefused), so it is no input of the typed tests.
constexpr std::string_view complex_file = "young1c.mtx";

// One test input: canonical CSR with 32-bit indices in the value type under test.
template <class V>
struct input {
  std::string name;
  any_matrix m;  // holds csr<V, std::int32_t>
  std::int64_t max_row_len = 0;

  const csr<V, std::int32_t>& a() const { return std::get<csr<V, std::int32_t>>(m); }
};

template <class V>
input<V> make_input(std::string name, any_matrix m) {
  if (!std::holds_alternative<csr<V, std::int32_t>>(m))
    throw std::runtime_error(name + ": expected csr " + std::string(type_name<V>()) + "/int32, got " +
                             std::string(format_name(m)) + " " + std::string(to_string(value_type_of(m))) + "/" +
                             std::string(to_string(index_type_of(m))));
  input<V> in{std::move(name), std::move(m), 0};
  const auto& a = in.a();
  for (std::int64_t r = 0; r < a.rows; ++r)
    in.max_row_len = std::max<std::int64_t>(in.max_row_len, a.row_ptr[r + 1] - a.row_ptr[r]);
  return in;
}

// The generated matrices, then every shared real matrix but the complex one. Parsed once
// per value type (MTX parsing would otherwise dominate the file's run time).
template <class V>
const std::vector<input<V>>& inputs() {
  static const std::vector<input<V>> all = [] {
    std::vector<input<V>> v;
    for (const auto& g : test::generator_set()) v.push_back(make_input<V>(g.name, test::cast_values<V>(g.a)));
    read_options opt;
    opt.values = value_type_of<V>();
    for (const auto& p : test::real_matrices())
      if (p.filename() != complex_file) v.push_back(make_input<V>(p.filename().string(), read_matrix_file(p, opt).matrix));
    return v;
  }();
  return all;
}

// Same alternative, bit-identical arrays and equal parameters. Visiting one side and
// looking the other up keeps this at one instantiation per alternative.
bool same(const any_matrix& a, const any_matrix& b) {
  return a.index() == b.index() && std::visit(
                                       [&](const auto& x) {
                                         return equal(x, *std::get_if<std::remove_cvref_t<decltype(x)>>(&b));
                                       },
                                       a);
}

std::string describe(const any_matrix& m) {
  return std::string(format_name(m)) + " " + std::string(to_string(value_type_of(m))) + "/" +
         std::string(to_string(index_type_of(m)));
}

// A type of the typed tests: the format format_list[F] with values V.
template <std::size_t F, class V>
struct fmt {
  static constexpr std::string_view name = format_list[F];
  using value = V;
};

static_assert(format_list.size() == 8, "a format was added or removed: update AllFormats");
using AllFormats = ::testing::Types<fmt<0, float>, fmt<0, double>, fmt<1, float>, fmt<1, double>,  //
                                    fmt<2, float>, fmt<2, double>, fmt<3, float>, fmt<3, double>,  //
                                    fmt<4, float>, fmt<4, double>, fmt<5, float>, fmt<5, double>,  //
                                    fmt<6, float>, fmt<6, double>, fmt<7, float>, fmt<7, double>>;

template <class V>
std::string value_name() {
  return std::is_same_v<V, float> ? "float" : "double";
}

// Test names "Formats/csr5_float.SpmvMatchesCsrReference" rather than "Formats/9.".
struct format_names {
  template <class T>
  static std::string GetName(int) {
    return std::string(T::name) + "_" + value_name<typename T::value>();
  }
};
struct value_names {
  template <class V>
  static std::string GetName(int) {
    return value_name<V>();
  }
};

// CSR -> X of one input; `error` holds the message when the conversion threw.
template <class V>
struct converted {
  const input<V>* in;
  any_matrix x;
  std::string error;
};

// The conversions are shared by the tests of one format and value type (CSR -> X is the
// costly step) and dropped when its suite ends, so that one format's copies are alive at
// a time.
template <class Tag>
class Formats : public ::testing::Test {
 protected:
  using Value = typename Tag::value;

  static void TearDownTestSuite() { cache_.reset(); }

  static const std::vector<converted<Value>>& conversions() {
    if (!cache_) {
      cache_ = std::make_unique<std::vector<converted<Value>>>();
      for (const auto& in : inputs<Value>()) {
        converted<Value> c{&in, {}, {}};
        try {
          c.x = convert(in.m, Tag::name);
        } catch (const error& e) {
          c.error = std::string(errc_name(e.code())) + ": " + e.what();
        }
        cache_->push_back(std::move(c));
      }
    }
    return *cache_;
  }

  // False (and a failure naming the input) when CSR -> X threw.
  static bool usable(const converted<Value>& c) {
    if (c.error.empty()) return true;
    ADD_FAILURE() << c.in->name << ": CSR -> " << Tag::name << " threw " << c.error;
    return false;
  }

 private:
  static inline std::unique_ptr<std::vector<converted<Value>>> cache_;
};

TYPED_TEST_SUITE(Formats, AllFormats, format_names);

TYPED_TEST(Formats, RoundTripThroughCsrIsExact) {
  using V = typename TypeParam::value;
  for (const auto& c : this->conversions()) {
    SCOPED_TRACE(c.in->name);
    if (!this->usable(c)) continue;
    EXPECT_EQ(format_name(c.x), TypeParam::name);
    EXPECT_EQ(value_type_of(c.x), value_type_of<V>());
    EXPECT_EQ(rows_of(c.x), c.in->a().rows);
    EXPECT_EQ(cols_of(c.x), c.in->a().cols);
    EXPECT_NO_THROW(validate(c.x));
    const any_matrix back = convert(c.x, "csr");
    // The same alternative: X -> CSR keeps the value type and gives the int32 CSR it came from.
    ASSERT_EQ(back.index(), c.in->m.index()) << "got " << describe(back) << ", expected " << describe(c.in->m);
    EXPECT_TRUE(same(back, c.in->m)) << "CSR -> " << TypeParam::name << " -> CSR is not the input";
  }
}

TYPED_TEST(Formats, SpmvMatchesCsrReference) {
  using V = typename TypeParam::value;
  // x is dense over the columns: the 2^28-column generated matrix would need a 1-2 GB x.
  constexpr std::int64_t max_cols = std::int64_t{1} << 24;
  for (const auto& c : this->conversions()) {
    SCOPED_TRACE(c.in->name);
    if (!this->usable(c) || c.in->a().cols > max_cols) continue;
    const auto& a = c.in->a();
    // Varied signs and magnitudes, so that a value multiplied by the wrong x is noticed.
    std::vector<V> x(static_cast<std::size_t>(a.cols)), y0(static_cast<std::size_t>(a.rows));
    for (std::size_t j = 0; j < x.size(); ++j) x[j] = static_cast<V>(static_cast<double>(j % 23) / 8.0 - 1.375);
    for (std::size_t i = 0; i < y0.size(); ++i) y0[i] = static_cast<V>(static_cast<double>(i % 13) * 0.25 - 1.5);
    const double tol = cpu::spmv_tolerance<V>(c.in->max_row_len);
    {
      // beta = 0 must overwrite y without reading it, empty rows included.
      const std::vector<V> nan(y0.size(), std::numeric_limits<V>::quiet_NaN());
      std::vector<V> y = nan;
      cpu::spmv<V>(c.x, V(1), x.data(), V(0), y.data());
      EXPECT_LE(cpu::spmv_max_rel_error<V>(a, V(1), x.data(), V(0), nan.data(), y.data()),
                tol)
          << "alpha = 1, beta = 0, y filled with NaN";
    }
    {
      std::vector<V> y = y0;
      cpu::spmv<V>(c.x, V(-0.5), x.data(), V(2), y.data());
      EXPECT_LE(cpu::spmv_max_rel_error<V>(a, V(-0.5), x.data(), V(2), y0.data(), y.data()),
                tol)
          << "alpha = -0.5, beta = 2";
    }
  }
}

TYPED_TEST(Formats, ContainerRoundTripIsIdentical) {
  test::temp_dir dir;
  const std::string name(TypeParam::name);
  for (const compression comp : {compression{true, 3}, compression{false, 3}}) {
    write_options opt;
    opt.comp = comp;
    for (const auto& c : this->conversions()) {
      SCOPED_TRACE(c.in->name + (comp.zstd ? ", zstd" : ", no compression"));
      if (!this->usable(c)) continue;
      const fs::path path = dir / (c.in->name + ".h5");
      write_container(path, {c.x}, container_meta{}, opt);
      const any_matrix back = read_container(path, name);
      EXPECT_TRUE(same(back, c.x)) << "read back " << describe(back) << " differs from the " << describe(c.x)
                                   << " written";
      fs::remove(path);
    }
  }
}

template <class V>
class AllFormatsInOneContainer : public ::testing::Test {};
using ValueTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(AllFormatsInOneContainer, ValueTypes, value_names);

// Seven formats written, the eighth added (`add` copies the others as stored): every
// group reads back as written, and the kept groups keep their stored bytes. The added
// format rotates over the inputs so that each one is the added one somewhere.
TYPED_TEST(AllFormatsInOneContainer, AddingAFormatKeepsTheOthersIdentical) {
  using V = TypeParam;
  test::temp_dir dir;
  const fs::path path = dir / "all.h5";
  const auto& all_inputs = inputs<V>();
  for (std::size_t i = 0; i < all_inputs.size(); ++i) {
    const auto& in = all_inputs[i];
    SCOPED_TRACE(in.name);
    std::vector<any_matrix> formats;
    for (auto f : format_list) formats.push_back(convert(in.m, f));
    const std::size_t added = i % formats.size();
    std::vector<any_matrix> first;
    for (std::size_t j = 0; j < formats.size(); ++j)
      if (j != added) first.push_back(formats[j]);

    container_meta meta;
    meta.source_name = in.name;
    write_options opt;
    opt.force = true;
    write_container(path, first, meta, opt);
    const container_info before = read_container_info(path);
    ASSERT_EQ(before.formats.size(), formats.size() - 1);

    write_options add;
    add.add = true;
    write_container(path, {formats[added]}, container_meta{}, add);
    const container_info after = read_container_info(path);
    ASSERT_EQ(after.formats.size(), formats.size());
    EXPECT_EQ(after.meta.source_name, in.name) << "an empty source_name in `add` keeps the file's";

    for (std::size_t j = 0; j < formats.size(); ++j) {
      const std::string name(format_list[j]);
      SCOPED_TRACE(name + (j == added ? " (added)" : " (kept)"));
      EXPECT_TRUE(same(read_container(path, name), formats[j]));
      for (const auto& s : after.formats)
        if (s.name == name && j != added)
          for (const auto& b : before.formats)
            if (b.name == name) {
              EXPECT_EQ(s.raw_bytes, b.raw_bytes);
              EXPECT_EQ(s.stored_bytes, b.stored_bytes);
            }
    }
  }
}

TEST(FormatsInputs, ComplexMatrixIsRefused) {
  const fs::path p = test::shared_dir() / "matrices" / "real" / std::string(complex_file);
  ASSERT_TRUE(fs::exists(p)) << p;
  try {
    read_matrix_file(p);
    FAIL() << p << " was read";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::unsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("complex"), std::string::npos) << e.what();
  }
}

// The typed tests would pass vacuously on the generated matrices alone if the shared
// folder were missing; the array file memplus_rhs1.mtx (one dense column) must be there.
TEST(FormatsInputs, SharedRealMatricesAreInputs) {
  const auto& v = inputs<double>();
  EXPECT_EQ(v.size(), test::generator_set().size() + test::real_matrices().size() - 1);
  bool rhs = false;
  for (const auto& in : v)
    if (in.name == "memplus_rhs1.mtx") {
      rhs = true;
      EXPECT_EQ(in.a().rows, 17758);
      EXPECT_EQ(in.a().cols, 1);
      EXPECT_EQ(in.a().nnz(), 17758);
    }
  EXPECT_TRUE(rhs) << "memplus_rhs1.mtx is not among the inputs (shared dir: " << test::shared_dir() << ")";
}

}  // namespace
