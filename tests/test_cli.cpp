// The spconv CLI run as a real process: exit codes, messages, no partial files.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <nlohmann/json.hpp>

#include "io/matrix_file.hpp"
#include "io/mtx.hpp"
#include "tests/support/matrices.hpp"
#include "tests/support/process.hpp"

using namespace spconv;
namespace fs = std::filesystem;

namespace {

const fs::path sample = test::source_dir() / "tests" / "data" / "poisson2d_40.mtx";

void write_text(const fs::path& p, const std::string& s) {
  std::ofstream(p, std::ios::binary) << s;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// No file in `dir` other than those named (no temporaries left behind).
void expect_only(const fs::path& dir, std::set<std::string> names) {
  std::set<std::string> seen;
  for (const auto& e : fs::directory_iterator(dir)) seen.insert(e.path().filename().string());
  EXPECT_EQ(seen, names);
}

}  // namespace

TEST(Cli, HelpAndVersion) {
  auto h = test::run_spconv({"--help"});
  EXPECT_EQ(h.code, 0) << h.err;
  EXPECT_NE(h.out.find("spconv IN --to FORMAT OUT"), std::string::npos) << h.out;
  EXPECT_NE(h.out.find("info"), std::string::npos);
  auto v = test::run_spconv({"--version"});
  EXPECT_EQ(v.code, 0);
  EXPECT_NE(v.out.find(SPCONV_VERSION), std::string::npos) << v.out;
  auto c = test::run_spconv({"convert", "--help"});
  EXPECT_EQ(c.code, 0);
  EXPECT_NE(c.out.find("--compression"), std::string::npos);
}

TEST(Cli, NoArgumentsIsUsageError) {
  auto r = test::run_spconv({});
  EXPECT_EQ(r.code, 2);
}

TEST(Cli, FormatsListsEveryFormat) {
  auto r = test::run_spconv({"formats"});
  EXPECT_EQ(r.code, 0) << r.err;
  for (auto n : format_list) EXPECT_NE(r.out.find(std::string(n) + "  "), std::string::npos) << n;
}

TEST(Cli, ConvertMtxToContainerAndBack) {
  test::temp_dir d;
  auto r = test::run_spconv({sample.string(), "--to", "csr", (d / "a.h5").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  auto back = test::run_spconv({(d / "a.h5").string(), "--to", "csr", (d / "b.mtx").string()});
  ASSERT_EQ(back.code, 0) << back.err;
  auto again = test::run_spconv({(d / "b.mtx").string(), "--to", "coo", (d / "c.h5").string(), "--compression", "none"});
  ASSERT_EQ(again.code, 0) << again.err;
  // MTX -> CSR -> .h5 -> CSR -> MTX -> CSR: the same arrays at every step.
  auto direct = read_matrix_file(sample).matrix;
  EXPECT_TRUE(std::visit([](const auto& x, const auto& y) {
    if constexpr (std::is_same_v<decltype(x), decltype(y)>) return equal(x, y); else return false;
  }, direct, read_matrix_file(d / "a.h5").matrix));
  EXPECT_TRUE(std::visit([](const auto& x, const auto& y) {
    if constexpr (std::is_same_v<decltype(x), decltype(y)>) return equal(x, y); else return false;
  }, direct, read_matrix_file(d / "b.mtx").matrix));
  expect_only(d.path, {"a.h5", "b.mtx", "c.h5"});
}

TEST(Cli, InfoTextAndJson) {
  test::temp_dir d;
  ASSERT_EQ(test::run_spconv({sample.string(), "--to", "csr", (d / "a.h5").string()}).code, 0);
  auto t = test::run_spconv({"info", (d / "a.h5").string()});
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("1600 x 1600, 7840 entries"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("poisson2d_40.mtx (symmetric, crc32:"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("csr v1"), std::string::npos) << t.out;
  auto js = test::run_spconv({"info", "--json", (d / "a.h5").string()});
  ASSERT_EQ(js.code, 0) << js.err;
  auto j = nlohmann::json::parse(js.out);
  EXPECT_EQ(j["nnz"], 7840);
  EXPECT_EQ(j["row_length"]["min"], 3);
  EXPECT_EQ(j["row_length"]["max"], 5);
  EXPECT_EQ(j["empty_rows"], 0);
  ASSERT_EQ(j["formats"].size(), 1u);
  EXPECT_EQ(j["formats"][0]["name"], "csr");
  EXPECT_GT(j["formats"][0]["raw_bytes"].get<std::uint64_t>(), j["formats"][0]["stored_bytes"].get<std::uint64_t>());
  auto m = test::run_spconv({"info", sample.string()});
  EXPECT_EQ(m.code, 0) << m.err;
  EXPECT_NE(m.out.find("Matrix Market"), std::string::npos);
}

TEST(Cli, UnknownFormatIsUsageError) {
  test::temp_dir d;
  auto r = test::run_spconv({sample.string(), "--to", "dia", (d / "a.h5").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown format 'dia'"), std::string::npos) << r.err;
  expect_only(d.path, {});
}

TEST(Cli, UnknownOutputKindIsUsageError) {
  test::temp_dir d;
  auto r = test::run_spconv({sample.string(), "--to", "csr", (d / "a.txt").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown output kind"), std::string::npos) << r.err;
  expect_only(d.path, {});
}

TEST(Cli, ExistingOutputNeedsForce) {
  test::temp_dir d;
  write_text(d / "a.h5", "precious");
  auto r = test::run_spconv({sample.string(), "--to", "csr", (d / "a.h5").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--force"), std::string::npos) << r.err;
  EXPECT_EQ(read_bytes(d / "a.h5"), "precious");
  auto f = test::run_spconv({sample.string(), "--to", "csr", (d / "a.h5").string(), "--force"});
  EXPECT_EQ(f.code, 0) << f.err;
  EXPECT_NE(read_bytes(d / "a.h5"), "precious");
  expect_only(d.path, {"a.h5"});
}

TEST(Cli, MalformedInputIsBadInputWithLineAndNoOutput) {
  test::temp_dir d;
  write_text(d / "bad.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.0\n4 1 2.0\n");
  write_text(d / "keep.h5", "precious");
  auto r = test::run_spconv({(d / "bad.mtx").string(), "--to", "csr", (d / "out.h5").string()});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("bad.mtx:4"), std::string::npos) << r.err;
  auto k = test::run_spconv({(d / "bad.mtx").string(), "--to", "csr", (d / "keep.h5").string(), "--force"});
  EXPECT_EQ(k.code, 3);
  EXPECT_EQ(read_bytes(d / "keep.h5"), "precious");
  expect_only(d.path, {"bad.mtx", "keep.h5"});
}

TEST(Cli, MissingInputIsIoError) {
  test::temp_dir d;
  auto r = test::run_spconv({(d / "nope.mtx").string(), "--to", "csr", (d / "out.h5").string()});
  EXPECT_EQ(r.code, 4);
  EXPECT_NE(r.err.find("nope.mtx"), std::string::npos) << r.err;
  expect_only(d.path, {});
}

TEST(Cli, UnwritableOutputIsIoErrorWithoutPartialFile) {
  test::temp_dir d;
  auto r = test::run_spconv({sample.string(), "--to", "csr", (d / "no" / "such" / "dir.h5").string()});
  EXPECT_EQ(r.code, 4) << r.err;
  auto m = test::run_spconv({sample.string(), "--to", "csr", (d / "no" / "dir.mtx").string()});
  EXPECT_EQ(m.code, 4) << m.err;
  expect_only(d.path, {});
}

TEST(Cli, ComplexInputIsUnsupported) {
  test::temp_dir d;
  auto r = test::run_spconv({(test::shared_dir() / "matrices/small/eye3_complex.mtx").string(), "--to", "csr",
                             (d / "out.h5").string()});
  EXPECT_EQ(r.code, 5);
  EXPECT_NE(r.err.find("complex"), std::string::npos) << r.err;
  expect_only(d.path, {});
}

TEST(Cli, MtxOutputOnlyForCsrAndCoo) {
  test::temp_dir d;
  auto r = test::run_spconv({sample.string(), "--to", "coo", (d / "a.mtx").string()});
  EXPECT_EQ(r.code, 0) << r.err;
  auto bad = test::run_spconv({sample.string(), "--to", "csr", (d / "b.h5").string(), "--compression", "lz4"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("lz4"), std::string::npos) << bad.err;
  expect_only(d.path, {"a.mtx"});
}

TEST(Cli, FloatValueType) {
  test::temp_dir d;
  auto r = test::run_spconv({sample.string(), "--to", "csr", "--type", "float", (d / "f.h5").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(test::run_spconv({"info", "--json", (d / "f.h5").string()}).out);
  EXPECT_EQ(j["value_type"], "float32");
  auto bad = test::run_spconv({sample.string(), "--to", "csr", "--type", "half", (d / "g.h5").string()});
  EXPECT_EQ(bad.code, 2);
}
