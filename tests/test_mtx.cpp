// Matrix Market reader and writer: the shared matrices against an independent reference
// parser, every malformed case (message and line), gzip, CRLF, blank lines, bit-exact
// write -> read round trips, and the writer's atomicity.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "convert/cpu/csr_coo.hpp"
#include "io/mtx.hpp"
#include "io/physical_memory.hpp"
#include "tests/support/matrices.hpp"

using namespace spconv;
namespace fs = std::filesystem;

namespace {

void write_text(const fs::path& p, const std::string& s) {
  std::ofstream out(p, std::ios::binary);
  out << s;
  ASSERT_TRUE(out.good()) << p;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_gz(const fs::path& p, const std::string& s, const char* mode = "wb") {
  gzFile f = gzopen(p.c_str(), mode);
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, s.data(), static_cast<unsigned>(s.size())), static_cast<int>(s.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

template <class V = double, class I = std::int32_t>
const coo<V, I>& as_coo(const mtx_data& d) {
  return std::get<coo<V, I>>(d.matrix);
}
// From a temporary: by value, so that `const auto& a = as_coo(read_mtx(p))` holds it.
template <class V = double, class I = std::int32_t>
coo<V, I> as_coo(mtx_data&& d) {
  return std::get<coo<V, I>>(std::move(d.matrix));
}

// ---- an independent, slow reference parser: iostreams and strtod, line by line ----------
struct triplets {
  std::int64_t rows = 0, cols = 0, stored = 0;
  std::vector<std::int64_t> r, c;
  std::vector<double> v;
};

std::string lowercase(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

triplets reference_parse(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::string line, word, object, format, field, symmetry;
  std::getline(in, line);
  std::istringstream(lowercase(line)) >> word >> object >> format >> field >> symmetry;
  auto content = [&](std::string& l) {  // next line that is neither blank nor a comment
    while (std::getline(in, l)) {
      if (!l.empty() && l.back() == '\r') l.pop_back();
      auto at = l.find_first_not_of(" \t");
      if (at != std::string::npos && l[at] != '%') return true;
    }
    return false;
  };
  triplets t;
  content(line);
  std::istringstream size(line);
  size >> t.rows >> t.cols;
  if (format == "coordinate") {
    size >> t.stored;
    for (std::int64_t k = 0; k < t.stored && content(line); ++k) {
      std::istringstream e(line);
      std::int64_t i, j;
      std::string val = "1";
      e >> i >> j;
      if (field != "pattern") e >> val;
      t.r.push_back(i - 1);
      t.c.push_back(j - 1);
      t.v.push_back(std::strtod(val.c_str(), nullptr));
    }
  } else {
    for (std::int64_t j = 0; j < t.cols; ++j)
      for (std::int64_t i = symmetry == "general" ? 0 : symmetry == "skew-symmetric" ? j + 1 : j; i < t.rows; ++i) {
        if (!content(line)) return t;
        t.r.push_back(i);
        t.c.push_back(j);
        t.v.push_back(std::strtod(line.c_str(), nullptr));
      }
    t.stored = static_cast<std::int64_t>(t.v.size());
  }
  if (symmetry != "general")
    for (std::int64_t k = 0; k < t.stored; ++k)
      if (t.r[k] != t.c[k]) {
        t.r.push_back(t.c[k]);
        t.c.push_back(t.r[k]);
        t.v.push_back(symmetry == "skew-symmetric" ? -t.v[k] : t.v[k]);
      }
  return t;
}

// The COO equals the reference in order, values bit for bit.
template <class V, class I>
void expect_same(const coo<V, I>& a, const triplets& t) {
  ASSERT_EQ(a.rows, t.rows);
  ASSERT_EQ(a.cols, t.cols);
  ASSERT_EQ(a.nnz(), static_cast<std::int64_t>(t.v.size()));
  for (std::size_t k = 0; k < t.v.size(); ++k) {
    ASSERT_EQ(a.row_idx[k], t.r[k]) << "entry " << k;
    ASSERT_EQ(a.col_idx[k], t.c[k]) << "entry " << k;
    ASSERT_EQ(std::bit_cast<std::uint64_t>(static_cast<double>(a.values[k])), std::bit_cast<std::uint64_t>(t.v[k]))
        << "entry " << k;
  }
}

struct manifest_row {
  std::int64_t rows = 0, cols = 0, stored = 0;
  std::string field, symmetry;
};

std::map<std::string, manifest_row> manifest() {
  std::map<std::string, manifest_row> out;
  std::ifstream in(test::shared_dir() / "matrices" / "MANIFEST.tsv");
  std::string line;
  std::getline(in, line);  // column names
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::istringstream s(line);
    for (std::string x; std::getline(s, x, '\t');) f.push_back(x);
    if (f.size() < 8) continue;
    out[f[0]] = {std::stoll(f[3]), std::stoll(f[4]), std::stoll(f[5]), f[6], f[7]};
  }
  return out;
}

// The message must start "PATH:LINE: " and contain `fragment`.
void expect_error_at(const fs::path& p, std::function<void()> f, errc code, std::int64_t line,
                     const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "expected an error containing '" << fragment << "'";
  } catch (const error& e) {
    const std::string msg = e.what(), prefix = p.string() + ":" + std::to_string(line) + ": ";
    EXPECT_EQ(e.code(), code) << msg;
    EXPECT_EQ(msg.rfind(prefix, 0), 0u) << "expected the prefix '" << prefix << "': " << msg;
    EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
  }
}

// Writes `content` to a file and expects read_mtx to fail with it; for header errors
// read_mtx_header must fail the same way.
void expect_bad(const std::string& content, errc code, std::int64_t line, const std::string& fragment,
                bool in_header = false) {
  test::temp_dir d;
  const fs::path p = d / "bad.mtx";
  write_text(p, content);
  expect_error_at(p, [&] { read_mtx(p); }, code, line, fragment);
  if (in_header) expect_error_at(p, [&] { read_mtx_header(p); }, code, line, fragment);
}

const std::string banner = "%%MatrixMarket matrix coordinate real general\n";

}  // namespace

// ---- the shared matrices ---------------------------------------------------------------

TEST(MtxSmall, EveryFileMatchesManifestReferenceAndGeneralForm) {
  const auto man = manifest();
  const auto files = test::small_matrices();
  ASSERT_FALSE(files.empty()) << "no files in " << test::shared_dir() / "matrices" / "small";
  for (const auto& p : files) {
    SCOPED_TRACE(p.filename().string());
    auto it = man.find("small/" + p.filename().string());
    ASSERT_NE(it, man.end()) << "not in MANIFEST.tsv";
    const manifest_row& m = it->second;
    if (m.field == "complex") {
      expect_error_at(p, [&] { read_mtx(p); }, errc::unsupported, 1, "complex values are not supported");
      continue;
    }
    mtx_data d = read_mtx(p);
    EXPECT_EQ(d.header.rows, m.rows);
    EXPECT_EQ(d.header.cols, m.cols);
    EXPECT_EQ(d.header.entries, m.stored);
    EXPECT_EQ(d.header.field, m.field);
    EXPECT_EQ(d.header.symmetry, m.symmetry);
    expect_same(as_coo(d), reference_parse(p));
    fs::path general = p.parent_path() / (p.stem().string() + "_general.mtx");
    if (fs::exists(general)) {
      mtx_data g = read_mtx(general);
      EXPECT_EQ(as_coo(d).nnz(), man.at("small/" + general.filename().string()).stored);
      EXPECT_TRUE(equal(cpu::coo_to_csr(as_coo(d)), cpu::coo_to_csr(as_coo(g)))) << "differs from " << general;
    }
  }
}

TEST(MtxSmall, ExpandedContentsByHand) {
  const fs::path dir = test::shared_dir() / "matrices" / "small";
  {  // skew-symmetric: the mirror is negated, stored entries first
    const auto& a = as_coo(read_mtx(dir / "coordinate_skew_symmetric_row.mtx"));
    EXPECT_EQ(std::vector<int>(a.row_idx.begin(), a.row_idx.end()), (std::vector<int>{2, 2, 0, 1}));
    EXPECT_EQ(std::vector<int>(a.col_idx.begin(), a.col_idx.end()), (std::vector<int>{0, 1, 2, 2}));
    EXPECT_EQ(std::vector<double>(a.values.begin(), a.values.end()), (std::vector<double>{10, 20, -10, -20}));
  }
  {  // hermitian on a real field acts as symmetric; the diagonal is not mirrored
    const auto& a = as_coo(read_mtx(dir / "coordinate_hermitian_real_row.mtx"));
    EXPECT_EQ(a.nnz(), 5);
    EXPECT_EQ(std::vector<double>(a.values.begin(), a.values.end()), (std::vector<double>{10, 20, 30, 10, 20}));
  }
  {  // array: every value is an entry, zeros included, column-major
    const auto& a = as_coo(read_mtx(dir / "eye3_array.mtx"));
    EXPECT_EQ(a.nnz(), 9);
    EXPECT_EQ(std::vector<int>(a.row_idx.begin(), a.row_idx.end()), (std::vector<int>{0, 1, 2, 0, 1, 2, 0, 1, 2}));
    EXPECT_EQ(std::vector<int>(a.col_idx.begin(), a.col_idx.end()), (std::vector<int>{0, 0, 0, 1, 1, 1, 2, 2, 2}));
  }
  {  // array skew-symmetric: the strictly lower triangle, then the negated mirror
    const auto& a = as_coo(read_mtx(dir / "array_skew-symmetric.mtx"));
    EXPECT_EQ(std::vector<int>(a.row_idx.begin(), a.row_idx.end()), (std::vector<int>{1, 2, 2, 0, 0, 1}));
    EXPECT_EQ(std::vector<int>(a.col_idx.begin(), a.col_idx.end()), (std::vector<int>{0, 0, 1, 1, 2, 2}));
    EXPECT_EQ(std::vector<double>(a.values.begin(), a.values.end()), (std::vector<double>{22, 33, 44, -22, -33, -44}));
  }
  {  // duplicates kept in file order; the CSR sums them
    const auto& a = as_coo(read_mtx(dir / "matrix_double.mtx"));
    EXPECT_EQ(a.nnz(), 4);
    auto c = cpu::coo_to_csr(a);
    EXPECT_EQ(c.nnz(), 3);
    EXPECT_EQ(c.values[2], 2.0);
  }
  // The free-form file (mixed-case banner, blank lines, odd spacing, 1.5e-2, -2.8E2, 12.)
  // is the same matrix as the tidy one.
  EXPECT_TRUE(equal(cpu::coo_to_csr(as_coo(read_mtx(dir / "nist_ex1_freeformat.mtx"))),
                    cpu::coo_to_csr(as_coo(read_mtx(dir / "nist_ex1.mtx")))));
}

TEST(MtxReal, EveryFileMatchesManifestAndReference) {
  const auto man = manifest();
  const auto files = test::real_matrices();
  ASSERT_FALSE(files.empty());
  for (const auto& p : files) {
    SCOPED_TRACE(p.filename().string());
    auto it = man.find("real/" + p.filename().string());
    ASSERT_NE(it, man.end()) << "not in MANIFEST.tsv";
    const manifest_row& m = it->second;
    if (m.field == "complex") {
      expect_error_at(p, [&] { read_mtx(p); }, errc::unsupported, 1, "complex values are not supported");
      continue;
    }
    mtx_data d = read_mtx(p);
    EXPECT_EQ(d.header.rows, m.rows);
    EXPECT_EQ(d.header.cols, m.cols);
    EXPECT_EQ(d.header.entries, m.stored);
    const std::string bytes = read_bytes(p);
    EXPECT_EQ(d.file_bytes, bytes.size());
    EXPECT_EQ(d.crc32, crc32_z(0, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size()));
    expect_same(as_coo(d), reference_parse(p));
    auto c = cpu::coo_to_csr(as_coo(d));
    validate(c);
  }
}

// ---- malformed files: one test per case, message and line --------------------------------

TEST(MtxMalformed, EmptyFile) { expect_bad("", errc::bad_input, 1, "file is empty", true); }

TEST(MtxMalformed, MissingBanner) {
  expect_bad("3 3 1\n1 1 1\n", errc::bad_input, 1, "expected the banner '%%MatrixMarket matrix", true);
}

TEST(MtxMalformed, ObjectOtherThanMatrix) {
  expect_bad("%%MatrixMarket vector coordinate real general\n3 1\n1 1\n", errc::unsupported, 1,
             "object 'vector' is not supported", true);
}

TEST(MtxMalformed, UnknownFormat) {
  expect_bad("%%MatrixMarket matrix sparse real general\n1 1 0\n", errc::bad_input, 1, "unknown format 'sparse'", true);
}

TEST(MtxMalformed, UnknownField) {
  expect_bad("%%MatrixMarket matrix coordinate quaternion general\n1 1 0\n", errc::bad_input, 1,
             "unknown field 'quaternion'", true);
}

TEST(MtxMalformed, UnknownSymmetry) {
  expect_bad("%%MatrixMarket matrix coordinate real upper\n1 1 0\n", errc::bad_input, 1, "unknown symmetry 'upper'",
             true);
}

TEST(MtxMalformed, BannerTooShort) {
  expect_bad("%%MatrixMarket matrix coordinate real\n1 1 0\n", errc::bad_input, 1, "the banner ends before the symmetry",
             true);
}

TEST(MtxMalformed, BannerExtraWord) {
  expect_bad("%%MatrixMarket matrix coordinate real general extra\n1 1 0\n", errc::bad_input, 1,
             "unexpected 'extra' after the symmetry", true);
}

TEST(MtxMalformed, ComplexIsUnsupported) {
  expect_bad("%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n", errc::unsupported, 1,
             "complex values are not supported", true);
}

TEST(MtxMalformed, PatternArray) {
  expect_bad("%%MatrixMarket matrix array pattern general\n1 1\n", errc::bad_input, 1,
             "'pattern' is only valid with the coordinate format", true);
}

TEST(MtxMalformed, PatternSkewSymmetric) {
  expect_bad("%%MatrixMarket matrix coordinate pattern skew-symmetric\n2 2 1\n2 1\n", errc::bad_input, 1,
             "cannot be skew-symmetric", true);
}

TEST(MtxMalformed, MissingSizeLine) {
  expect_bad(banner + "% only comments\n\n", errc::bad_input, 4, "expected the size line 'rows cols entries', file ends",
             true);
}

TEST(MtxMalformed, SizeLineWithTooFewNumbers) {
  expect_bad(banner + "% c\n3 3\n", errc::bad_input, 3, "invalid size line '3 3': expected 'rows cols entries'", true);
}

TEST(MtxMalformed, SizeLineNotNumeric) {
  expect_bad(banner + "3 x 4\n", errc::bad_input, 2, "invalid size line '3 x 4'", true);
}

TEST(MtxMalformed, NegativeSize) {
  expect_bad(banner + "3 -4 1\n1 1 1\n", errc::bad_input, 2, "negative size -4", true);
}

TEST(MtxMalformed, SizeOverflow) {
  expect_bad(banner + "99999999999999999999 3 1\n1 1 1\n", errc::bad_input, 2,
             "size '99999999999999999999' in the size line does not fit in 64 bits", true);
}

TEST(MtxMalformed, ArraySizeOverflow) {
  expect_bad("%%MatrixMarket matrix array real general\n4000000000 4000000000\n1\n", errc::bad_input, 2,
             "does not fit in 64 bits", true);
}

TEST(MtxMalformed, SymmetricNotSquare) {
  expect_bad("%%MatrixMarket matrix coordinate real symmetric\n3 4 1\n1 1 1\n", errc::bad_input, 2,
             "a symmetric matrix must be square, the size line gives 3 x 4", true);
}

TEST(MtxMalformed, TooFewEntries) {
  expect_bad(banner + "5 5 8\n1 1 1\n2 2 2\n3 3 3\n4 4 4\n5 5 5\n", errc::bad_input, 7,
             "expected 8 entries, file ends after 5");
}

TEST(MtxMalformed, TooFewArrayValues) {
  expect_bad("%%MatrixMarket matrix array real general\n2 2\n1\n2\n\n3\n", errc::bad_input, 6,
             "expected 4 values, file ends after 3");
}

TEST(MtxMalformed, HugeEntryCountInSmallFileFailsBeforeAllocating) {
  expect_bad(banner + "3 3 1000000000000\n1 1 1\n", errc::bad_input, 3,
             "expected 1000000000000 entries, file ends after 1");
}

TEST(MtxMalformed, TooManyEntries) {
  expect_bad(banner + "3 3 2\n1 1 1\n\n2 2 2\n% note\n3 3 3\n", errc::bad_input, 7,
             "too many entries: the size line declares 2");
}

TEST(MtxMalformed, SizeBeyondMemory) {
  expect_bad(banner + "1000000000000 1000000000000 1\n1 1 1\n", errc::bad_input, 2, "GB of memory");
}

TEST(MtxMalformed, RowPointersAndRowCountsBeyondMemory) {
  // CSR needs a row pointer and, while converting, a count per row: rows whose pointers
  // alone fit this machine's memory, but not twice over, are refused before allocating (they
  // were read, then killed for memory: 2^31 rows over one entry took 78 s to die here).
  const auto rows =
      std::max<std::int64_t>(std::int64_t{1} << 31, static_cast<std::int64_t>(0.75 * physical_memory_bytes() / 8));
  expect_bad(banner + std::to_string(rows) + " 3 1\n1 1 1\n", errc::bad_input, 2, "GB of memory");
}

TEST(MtxMalformed, RowIndexZero) {
  expect_bad(banner + "5 5 2\n1 1 1\n0 2 1\n", errc::bad_input, 4,
             "row index 0 is out of range (the matrix has 5 rows; indices are 1-based)");
}

TEST(MtxMalformed, ColumnIndexBeyondSize) {
  expect_bad(banner + "5 4 2\n1 1 1\n2 5 1\n", errc::bad_input, 4,
             "column index 5 is out of range (the matrix has 4 columns");
}

TEST(MtxMalformed, RowIndexBeyondSize) {
  expect_bad(banner + "5 4 1\n6 1 1\n", errc::bad_input, 3, "row index 6 is out of range (the matrix has 5 rows");
}

TEST(MtxMalformed, IndexOverflow) {
  expect_bad(banner + "5 5 1\n123456789012345678901234 1 1\n", errc::bad_input, 3,
             "row index 123456789012345678901234 does not fit in 64 bits");
}

TEST(MtxMalformed, NegativeIndex) {
  expect_bad(banner + "5 5 1\n-1 1 1\n", errc::bad_input, 3, "expected a row index (a positive integer), found '-1'");
}

TEST(MtxMalformed, NonNumericIndex) {
  expect_bad(banner + "5 5 1\n1 b2 1\n", errc::bad_input, 3, "expected a column index (a positive integer), found 'b2'");
}

TEST(MtxMalformed, NonNumericValue) {
  expect_bad(banner + "5 5 2\n1 1 1\n2 2 abc\n", errc::bad_input, 4, "expected a real value, found 'abc'");
}

TEST(MtxMalformed, ValueWithTrailingGarbage) {
  expect_bad(banner + "5 5 1\n1 1 1.0e5x\n", errc::bad_input, 3, "expected a real value, found '1.0e5x'");
}

TEST(MtxMalformed, NonIntegerInIntegerFile) {
  expect_bad("%%MatrixMarket matrix coordinate integer general\n5 5 1\n1 1 1.5\n", errc::bad_input, 3,
             "expected an integer value, found '1.5'");
}

TEST(MtxMalformed, IntegerValueOverflow) {
  expect_bad("%%MatrixMarket matrix coordinate integer general\n5 5 1\n1 1 99999999999999999999\n", errc::bad_input, 3,
             "integer value 99999999999999999999 does not fit in 64 bits");
}

TEST(MtxMalformed, MissingValue) {
  expect_bad(banner + "5 5 2\n1 1 1\n2 2   \r\n", errc::bad_input, 4,
             "missing value (an entry line holds row, column and value)");
}

TEST(MtxMalformed, MissingColumnIndex) {
  expect_bad(banner + "5 5 1\n3\n", errc::bad_input, 3, "missing column index");
}

TEST(MtxMalformed, ExtraToken) {
  expect_bad(banner + "5 5 1\n1 1 1 7\n", errc::bad_input, 3,
             "unexpected '7' at the end of the line (an entry line holds row, column and value)");
}

TEST(MtxMalformed, ExtraTokenInPatternFile) {
  expect_bad("%%MatrixMarket matrix coordinate pattern general\n5 5 1\n1 1 1\n", errc::bad_input, 3,
             "unexpected '1' at the end of the line (a pattern entry line holds row and column)");
}

TEST(MtxMalformed, ExtraTokenInArrayFile) {
  expect_bad("%%MatrixMarket matrix array real general\n2 1\n1 2\n3\n", errc::bad_input, 3,
             "unexpected '2' at the end of the line (an array line holds one value)");
}

TEST(MtxMalformed, SkewSymmetricDiagonal) {
  expect_bad("%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 1\n2 2 5\n", errc::bad_input, 4,
             "diagonal entry (2, 2) in a skew-symmetric matrix");
}

TEST(MtxMalformed, CorruptGzip) {
  test::temp_dir d;
  std::string text = banner + "3 3 3\n1 1 1\n2 2 2\n3 3 3\n";
  for (int i = 0; i < 200; ++i) text += "% filler comment line to make the stream longer\n";
  write_gz(d / "c.mtx.gz", text);
  std::string gz = read_bytes(d / "c.mtx.gz");
  gz[gz.size() / 2] = static_cast<char>(gz[gz.size() / 2] ^ 0x55);
  write_text(d / "c.mtx.gz", gz);
  try {
    read_mtx(d / "c.mtx.gz");
    FAIL() << "no error";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::bad_input);
    EXPECT_EQ(std::string(e.what()).rfind((d / "c.mtx.gz").string() + ": corrupt gzip data", 0), 0u) << e.what();
  }
}

TEST(MtxMalformed, TruncatedGzip) {
  test::temp_dir d;
  write_gz(d / "t.gz", banner + "3 3 3\n1 1 1\n2 2 2\n3 3 3\n");
  std::string gz = read_bytes(d / "t.gz");
  write_text(d / "t.gz", gz.substr(0, gz.size() - 12));
  try {
    read_mtx(d / "t.gz");
    FAIL() << "no error";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::bad_input);
    EXPECT_EQ(std::string(e.what()), (d / "t.gz").string() + ": gzip data is truncated");
  }
}

TEST(MtxMalformed, MissingFileAndDirectoryAreIoErrors) {
  test::temp_dir d;
  for (const fs::path& p : {d / "nope.mtx", d.path}) {
    try {
      read_mtx(p);
      ADD_FAILURE() << "no error for " << p;
    } catch (const error& e) {
      EXPECT_EQ(e.code(), errc::io) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind(p.string() + ": ", 0), 0u) << e.what();
    }
  }
  try {
    read_mtx_header(d / "nope.mtx");
    ADD_FAILURE() << "no error";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::io) << e.what();
  }
}

// A file large enough to be split into several chunks, with blank lines, comments and
// CRLF, and errors placed in different chunks: the reported line is the first error's.
TEST(MtxMalformed, LineNumbersAcrossChunks) {
  std::string body;
  std::int64_t line = 3, entries = 0;
  std::vector<std::int64_t> bad_lines;
  std::mt19937 rng(7);
  for (int k = 0; k < 150000; ++k) {
    switch (rng() % 7) {
      case 0: body += "\r\n"; break;
      case 1: body += "% comment\n"; break;
      default:
        body += std::to_string(1 + rng() % 1000) + " " + std::to_string(1 + rng() % 1000) + " 0.12345678901234567\r\n";
        ++entries;
    }
    ++line;
  }
  const std::string head = banner + "1000 1000 " + std::to_string(entries) + "\n";
  ASSERT_GT(body.size(), std::size_t{2} << 20);
  test::temp_dir d;
  // Good file: parses, and each of two corrupted copies reports its own line.
  write_text(d / "ok.mtx", head + body);
  EXPECT_EQ(as_coo(read_mtx(d / "ok.mtx")).nnz(), entries);
  auto corrupt_at = [&](double where) {
    // The first entry line at or after the given fraction of the body.
    std::size_t pos = static_cast<std::size_t>(static_cast<double>(body.size()) * where);
    pos = body.find('\n', pos) + 1;
    while (body[pos] == '%' || body[pos] == '\r') pos = body.find('\n', pos) + 1;
    const std::int64_t l = 3 + std::count(body.begin(), body.begin() + static_cast<std::ptrdiff_t>(pos), '\n');
    return std::pair{pos, l};
  };
  auto [late_pos, late_line] = corrupt_at(0.9);
  std::string late = body;
  late[late_pos] = 'x';
  write_text(d / "late.mtx", head + late);
  expect_error_at(d / "late.mtx", [&] { read_mtx(d / "late.mtx"); }, errc::bad_input, late_line,
                  "expected a row index (a positive integer), found 'x");
  auto [early_pos, early_line] = corrupt_at(0.2);
  std::string both = late;
  both[early_pos] = 'y';
  write_text(d / "both.mtx", head + both);
  expect_error_at(d / "both.mtx", [&] { read_mtx(d / "both.mtx"); }, errc::bad_input, early_line,
                  "found 'y");
}

// ---- accepted variations ------------------------------------------------------------------

TEST(MtxRead, CrlfBlankLinesTabsAndCaseGiveTheSameMatrix) {
  test::temp_dir d;
  write_text(d / "plain.mtx", banner + "% c\n4 5 4\n1 1 1.5\n2 3 -2\n4 5 1e-3\n4 5 7\n");
  write_text(d / "messy.mtx",
             "  %%matrixmarket MATRIX\tCoordinate REAL   General  \r\n"
             "\r\n% comment\r\n   \t\r\n \t4\t5  4 \r\n"
             "\r\n1 1 1.5\r\n\t2\t3\t-2\t\r\n   \r\n% a comment between entries\r\n"
             "4 5 +1e-3   \r\n\n4 5 7");  // last line without a newline
  const auto& a = as_coo(read_mtx(d / "plain.mtx"));
  const auto& b = as_coo(read_mtx(d / "messy.mtx"));
  EXPECT_TRUE(equal(a, b));
  EXPECT_EQ(read_mtx_header(d / "messy.mtx").header_lines, 5);
}

TEST(MtxRead, GzipDetectedByMagicNotName) {
  test::temp_dir d;
  std::string text = banner + "% gz\n40 30 " + std::to_string(40 * 3) + "\n";
  for (int r = 1; r <= 40; ++r)
    for (int c = 1; c <= 3; ++c) text += std::to_string(r) + " " + std::to_string(c * 10) + " " + std::to_string(r * 0.25 - c) + "\n";
  write_text(d / "plain.mtx", text);
  write_gz(d / "packed.bin", text);
  write_text(d / "plain.mtx.gz", text);  // a plain file with a .gz name
  mtx_data p = read_mtx(d / "plain.mtx"), z = read_mtx(d / "packed.bin"), n = read_mtx(d / "plain.mtx.gz");
  EXPECT_TRUE(equal(as_coo(p), as_coo(z)));
  EXPECT_TRUE(equal(as_coo(p), as_coo(n)));
  const std::string gz = read_bytes(d / "packed.bin");
  EXPECT_EQ(z.file_bytes, gz.size());
  EXPECT_EQ(z.crc32, crc32_z(0, reinterpret_cast<const Bytef*>(gz.data()), gz.size()));
  EXPECT_EQ(read_mtx_header(d / "packed.bin").entries, 120);
  // Two gzip members (gzopen "ab" appends one) read as one text.
  write_gz(d / "two.gz", text.substr(0, 500));
  write_gz(d / "two.gz", text.substr(500), "ab");
  EXPECT_TRUE(equal(as_coo(p), as_coo(read_mtx(d / "two.gz"))));
}

TEST(MtxRead, LargeGzipFileInSeveralChunks) {
  test::temp_dir d;
  auto a = test::random_csr(20000, 9000, 12.0, 3);
  write_mtx(d / "a.mtx", a);
  write_gz(d / "a.mtx.gz", read_bytes(d / "a.mtx"));
  EXPECT_TRUE(equal(cpu::coo_to_csr(as_coo(read_mtx(d / "a.mtx.gz"))), a));
}

TEST(MtxRead, FifoInput) {
  test::temp_dir d;
  const fs::path p = d / "pipe.mtx";
  ASSERT_EQ(mkfifo(p.c_str(), 0600), 0);
  const std::string text = banner + "2 2 2\n1 1 3\n2 2 4\n";
  std::thread writer([&] { write_text(p, text); });
  mtx_data r = read_mtx(p);
  writer.join();
  EXPECT_EQ(as_coo(r).nnz(), 2);
  EXPECT_EQ(r.file_bytes, text.size());
  EXPECT_EQ(r.crc32, crc32_z(0, reinterpret_cast<const Bytef*>(text.data()), text.size()));
}

TEST(MtxRead, SpecialValues) {
  test::temp_dir d;
  write_text(d / "v.mtx", banner + "1 11 11\n1 1 nan\n1 2 -inf\n1 3 Infinity\n1 4 1e999\n1 5 -1e-999\n"
                                   "1 6 -0.0\n1 7 4.9406564584124654e-324\n1 8 0.1\n1 9 -NaN\n"
                                   "1 10 999.5e306\n1 11 -0.000123e-330\n");
  const auto& a = as_coo(read_mtx(d / "v.mtx"));
  EXPECT_TRUE(std::isnan(a.values[0]) && !std::signbit(a.values[0]));
  EXPECT_EQ(a.values[1], -std::numeric_limits<double>::infinity());
  EXPECT_EQ(a.values[2], std::numeric_limits<double>::infinity());
  EXPECT_EQ(a.values[3], std::numeric_limits<double>::infinity());  // beyond the range: inf, as strtod
  EXPECT_TRUE(a.values[4] == 0.0 && std::signbit(a.values[4]));       // below it: signed zero
  EXPECT_TRUE(a.values[5] == 0.0 && std::signbit(a.values[5]));
  EXPECT_EQ(a.values[6], std::numeric_limits<double>::denorm_min());
  EXPECT_EQ(a.values[7], 0.1);
  EXPECT_TRUE(std::isnan(a.values[8]) && std::signbit(a.values[8]));
  EXPECT_EQ(a.values[9], std::numeric_limits<double>::infinity());  // 9.995e308
  EXPECT_TRUE(a.values[10] == 0.0 && std::signbit(a.values[10]));    // -1.23e-334
  // float values are rounded once, from the decimal text.
  mtx_read_options f32;
  f32.values = value_type::f32;
  const auto& f = as_coo<float>(read_mtx(d / "v.mtx", f32));
  EXPECT_EQ(f.values[7], 0.1f);
  EXPECT_EQ(f.values[3], std::numeric_limits<float>::infinity());
  EXPECT_EQ(f.values[6], 0.0f);  // a double denormal underflows a float
}

TEST(MtxRead, SymmetricArrayAcrossChunks) {
  // n(n+1)/2 values in several chunks: each chunk must find its start in the triangle.
  const int n = 1500;
  std::string text = "%%MatrixMarket matrix array real symmetric\n" + std::to_string(n) + " " + std::to_string(n) + "\n";
  for (int j = 0; j < n; ++j)
    for (int i = j; i < n; ++i) text += std::to_string(i * 1000 + j) + "\n";
  test::temp_dir d;
  write_text(d / "s.mtx", text);
  write_text(d / "k.mtx", "%%MatrixMarket matrix array integer skew-symmetric\n" + std::to_string(n + 1) + " " +
                              std::to_string(n + 1) + "\n" + text.substr(text.find('\n', text.find('\n') + 1) + 1));
  for (const char* name : {"s.mtx", "k.mtx"}) {
    SCOPED_TRACE(name);
    expect_same(as_coo(read_mtx(d / name)), reference_parse(d / name));
  }
}

TEST(MtxRead, IndexTypeFollowsTheSize) {
  test::temp_dir d;
  write_text(d / "wide.mtx", banner + "3 3000000000 2\n1 2999999999 5\n3 1 6\n");
  mtx_data w = read_mtx(d / "wide.mtx");
  const auto& a = as_coo<double, std::int64_t>(w);
  EXPECT_EQ(a.col_idx[0], 2999999998);
  mtx_read_options force32;
  force32.force_index = true;
  expect_error_at(d / "wide.mtx", [&] { read_mtx(d / "wide.mtx", force32); }, errc::unsupported, 2,
                  "does not fit int32 indices");
  write_text(d / "small.mtx", banner + "3 3 1\n1 2 5\n");
  mtx_read_options force64;
  force64.force_index = true;
  force64.index = index_type::i64;
  EXPECT_EQ((as_coo<double, std::int64_t>(read_mtx(d / "small.mtx", force64)).col_idx[0]), 1);
  EXPECT_EQ(index_type_of(read_mtx(d / "small.mtx").matrix), index_type::i32);
}

TEST(MtxHeader, StopsAfterTheSizeLine) {
  test::temp_dir d;
  // The body is broken: the header reader never looks at it.
  std::string text = "%%MatrixMarket matrix array integer symmetric\n% c\n% " + std::string(100000, 'x') + "\n\n7 7\n";
  text += "not a number\n";
  write_text(d / "h.mtx", text);
  mtx_header h = read_mtx_header(d / "h.mtx");
  EXPECT_EQ(h.format, "array");
  EXPECT_EQ(h.field, "integer");
  EXPECT_EQ(h.symmetry, "symmetric");
  EXPECT_EQ(h.rows, 7);
  EXPECT_EQ(h.cols, 7);
  EXPECT_EQ(h.entries, 28);
  EXPECT_EQ(h.header_lines, 5);
}

// ---- writer ------------------------------------------------------------------------------

TEST(MtxWrite, GeneratedMatricesRoundTrip) {
  test::temp_dir d;
  for (const auto& g : test::generator_set()) {
    SCOPED_TRACE(g.name);
    write_mtx(d / "g.mtx", g.a);
    mtx_data r = read_mtx(d / "g.mtx");
    EXPECT_EQ(r.header.symmetry, "general");
    EXPECT_TRUE(equal(cpu::coo_to_csr(as_coo(r)), g.a));
    write_mtx(d / "c.mtx", cpu::csr_to_coo(g.a));
    EXPECT_EQ(read_bytes(d / "c.mtx"), read_bytes(d / "g.mtx"));  // CSR and its COO write the same text
  }
  EXPECT_EQ(read_bytes(d / "g.mtx").rfind("%%MatrixMarket matrix coordinate real general\n% written by spconv\n", 0), 0u);
}

TEST(MtxWrite, ValuesRoundTripBitExact) {
  test::temp_dir d;
  std::vector<double> special = {-0.0, 0.0, 1e-310, 1.0 / 3, 1e308, -1e308,
                                 std::numeric_limits<double>::min(), std::numeric_limits<double>::denorm_min(),
                                 std::numeric_limits<double>::max(), std::numeric_limits<double>::lowest(),
                                 std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                                 0.1, 123456789.0, 5e-324, 2.2250738585072009e-308};
  std::mt19937_64 rng(42);
  std::vector<double> vals = special;
  while (vals.size() < 20000) {
    double x = std::bit_cast<double>(rng());
    if (!std::isnan(x)) vals.push_back(x);
  }
  coo<double, std::int64_t> a;  // 64-bit indices written, read back as 32-bit
  a.rows = 200;
  a.cols = 100;
  for (std::size_t k = 0; k < vals.size(); ++k) {
    a.row_idx.push_back(static_cast<std::int64_t>(k % 200));
    a.col_idx.push_back(static_cast<std::int64_t>(k / 200));
    a.values.push_back(vals[k]);
  }
  write_mtx(d / "v.mtx", a);
  const auto& b = as_coo(read_mtx(d / "v.mtx"));
  ASSERT_EQ(b.nnz(), a.nnz());
  EXPECT_TRUE(std::equal(a.row_idx.begin(), a.row_idx.end(), b.row_idx.begin()));
  EXPECT_TRUE(std::equal(a.col_idx.begin(), a.col_idx.end(), b.col_idx.begin()));
  EXPECT_EQ(std::memcmp(a.values.data(), b.values.data(), vals.size() * sizeof(double)), 0);

  coo<float, std::int32_t> f;
  f.rows = 1;
  f.cols = 20000;
  std::mt19937 rng32(9);
  for (int k = 0; k < 20000; ++k) {
    float x = k < 6 ? std::vector<float>{-0.0f, 1e-40f, 1.0f / 3, std::numeric_limits<float>::max(),
                                         std::numeric_limits<float>::denorm_min(), -1e-45f}[k]
                    : std::bit_cast<float>(static_cast<std::uint32_t>(rng32()));
    if (std::isnan(x)) x = static_cast<float>(k);
    f.row_idx.push_back(0);
    f.col_idx.push_back(k);
    f.values.push_back(x);
  }
  write_mtx(d / "f.mtx", f);
  mtx_read_options f32;
  f32.values = value_type::f32;
  EXPECT_TRUE(equal(as_coo<float>(read_mtx(d / "f.mtx", f32)), f));
}

TEST(MtxWrite, NanKeepsSignButNotPayload) {
  // to_chars writes "nan"/"-nan": the payload is not representable in the text, so a NaN
  // comes back as the default quiet NaN of its sign.
  test::temp_dir d;
  coo<double, std::int32_t> a;
  a.rows = 1;
  a.cols = 2;
  a.row_idx = {0, 0};
  a.col_idx = {0, 1};
  a.values = {std::bit_cast<double>(std::uint64_t{0x7ff0000000000123}), -std::numeric_limits<double>::quiet_NaN()};
  write_mtx(d / "n.mtx", a);
  const auto& b = as_coo(read_mtx(d / "n.mtx"));
  EXPECT_EQ(std::bit_cast<std::uint64_t>(b.values[0]),
            std::bit_cast<std::uint64_t>(std::numeric_limits<double>::quiet_NaN()));
  EXPECT_TRUE(std::isnan(b.values[1]) && std::signbit(b.values[1]));
}

namespace {
std::vector<std::string> leftovers(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp") != std::string::npos) out.push_back(e.path().filename().string());
  return out;
}

void expect_io_error_naming(const fs::path& p, std::function<void()> f, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "no error writing " << p;
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::io) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind(p.string() + ": ", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}
}  // namespace

TEST(MtxWrite, FailuresLeaveNoFileBehind) {
  test::temp_dir d;
  auto a = test::random_csr(3000, 3000, 10.0, 8);
  write_text(d / "file", "x");
  expect_io_error_naming(d / "file" / "out.mtx", [&] { write_mtx(d / "file" / "out.mtx", a); },
                         "cannot create a temporary file");
  expect_io_error_naming(d / "no" / "out.mtx", [&] { write_mtx(d / "no" / "out.mtx", a); },
                         "cannot create a temporary file");
  // The rename fails (a directory is in the way) after the data was written.
  fs::create_directory(d / "taken.mtx");
  expect_io_error_naming(d / "taken.mtx", [&] { write_mtx(d / "taken.mtx", a); }, "cannot rename");
  EXPECT_TRUE(leftovers(d.path).empty());

  // A write that fails half way (file size limit: EFBIG) keeps the old target intact.
  write_text(d / "old.mtx", "old contents");
  struct rlimit saved {};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto old_handler = signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = saved;
  small.rlim_cur = 64 * 1024;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  expect_io_error_naming(d / "old.mtx", [&] { write_mtx(d / "old.mtx", a); }, "cannot write");
  setrlimit(RLIMIT_FSIZE, &saved);
  signal(SIGXFSZ, old_handler);
  EXPECT_EQ(read_bytes(d / "old.mtx"), "old contents");
  EXPECT_TRUE(leftovers(d.path).empty());

  // And a successful write replaces it.
  write_mtx(d / "old.mtx", a);
  EXPECT_TRUE(equal(cpu::coo_to_csr(as_coo(read_mtx(d / "old.mtx"))), a));
  EXPECT_TRUE(leftovers(d.path).empty());
}
