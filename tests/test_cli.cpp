// The spconv CLI run as a real process: exit codes, messages, no partial files.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
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
  EXPECT_TRUE(equal(direct, read_matrix_file(d / "a.h5").matrix));
  EXPECT_TRUE(equal(direct, read_matrix_file(d / "b.mtx").matrix));
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

// Convert, info and validate on every format, all formats in one container via --add.
TEST(Cli, EveryFormatConvertsInfoAndValidates) {
  test::temp_dir d;
  const std::string h5 = (d / "all.h5").string();
  const fs::path add32 = test::shared_dir() / "matrices/real/add32.mtx";
  bool first = true;
  for (auto name : format_list) {
    std::vector<std::string> args = {add32.string(), "--to", std::string(name), h5};
    if (!first) args.push_back("--add");
    first = false;
    auto r = test::run_spconv(args);
    ASSERT_EQ(r.code, 0) << name << ": " << r.err;
    // Each format alone in its own file too, and back to Matrix Market through it.
    const std::string one = (d / (std::string(name) + ".h5")).string();
    ASSERT_EQ(test::run_spconv({add32.string(), "--to", std::string(name), one}).code, 0);
    const std::string back = (d / (std::string(name) + ".mtx")).string();
    auto b = test::run_spconv({one, "--from", std::string(name), "--to", "csr", back});
    ASSERT_EQ(b.code, 0) << b.err;
    EXPECT_TRUE(equal(read_matrix_file(back).matrix, read_matrix_file(add32).matrix)) << name;
  }
  auto v = test::run_spconv({"validate", h5, "--against", add32.string()});
  EXPECT_EQ(v.code, 0) << v.out << v.err;
  for (auto name : format_list) EXPECT_NE(v.out.find(std::string(name) + ": ok"), std::string::npos) << v.out;
  auto j = nlohmann::json::parse(test::run_spconv({"info", "--json", h5}).out);
  ASSERT_EQ(j["formats"].size(), format_list.size());
  for (const auto& f : j["formats"]) {
    EXPECT_GT(f["raw_bytes"].get<std::uint64_t>(), 0u) << f["name"];
    EXPECT_GT(f["bytes_vs_csr"].get<double>(), 0.0) << f["name"];
    if (f["name"] == "bcsr") {
      EXPECT_GE(f["figures"]["fill_ratio"].get<double>(), 1.0);
    }
    if (f["name"] == "csr5") {
      EXPECT_EQ(f["params"]["omega"], 32);
    }
  }
}

TEST(Cli, FormatParametersReachTheFormat) {
  test::temp_dir d;
  const std::string h5 = (d / "p.h5").string();
  ASSERT_EQ(test::run_spconv({sample.string(), "--to", "cmrs", "--height", "8", h5}).code, 0);
  ASSERT_EQ(test::run_spconv({h5, "--to", "mbr", "--block", "2x4", "--add", h5}).code, 0);
  ASSERT_EQ(test::run_spconv({h5, "--to", "csr5", "--omega", "16", "--sigma", "8", "--add", h5}).code, 0);
  ASSERT_EQ(test::run_spconv({h5, "--to", "bcsr", "--block", "2x2", "--add", h5}).code, 0);
  ASSERT_EQ(test::run_spconv({h5, "--to", "hyb", "--ell-width", "3", "--add", h5}).code, 0);
  ASSERT_EQ(test::run_spconv({h5, "--to", "ccoo", "--chunk", "64x2", "--add", h5}).code, 0);
  auto j = nlohmann::json::parse(test::run_spconv({"info", "--json", h5}).out);
  std::map<std::string, nlohmann::json> p;
  for (const auto& f : j["formats"]) p[f["name"]] = f["params"];
  EXPECT_EQ(p["cmrs"]["height"], 8);
  EXPECT_EQ(p["mbr"]["block_rows"], 2);
  EXPECT_EQ(p["mbr"]["block_cols"], 4);
  EXPECT_EQ(p["csr5"]["omega"], 16);
  EXPECT_EQ(p["csr5"]["sigma"], 8);
  EXPECT_EQ(p["bcsr"]["block_rows"], 2);
  EXPECT_EQ(p["hyb"]["ell_width"], 3);
  EXPECT_EQ(p["ccoo"]["chunk_b"], 64);
  EXPECT_EQ(p["ccoo"]["chunk_k"], 2);
  EXPECT_EQ(test::run_spconv({"validate", h5}).code, 0);
}

TEST(Cli, BadFormatParametersAreUsageErrors) {
  test::temp_dir d;
  const std::string h5 = (d / "p.h5").string();
  for (auto args : std::vector<std::vector<std::string>>{{"--to", "mbr", "--block", "4by4"},
                                                         {"--to", "mbr", "--block", "9x9"},
                                                         {"--to", "cmrs", "--height", "17"},
                                                         {"--to", "ccoo", "--chunk", "512x4"},
                                                         {"--to", "csr5", "--omega", "-1"},
                                                         {"--to", "hyb", "--ell-width", "-2"},
                                                         {"--to", "csr5", "--csr5-for", "tpu"}}) {
    args.insert(args.begin(), sample.string());
    args.push_back(h5);
    auto r = test::run_spconv(args);
    EXPECT_TRUE(r.code == 2 || r.code == 5) << args[2] << " " << args[4] << ": " << r.code << " " << r.err;
    EXPECT_FALSE(r.err.empty());
  }
  expect_only(d.path, {});
}

TEST(Cli, ValidateFailsOnADifferentMatrix) {
  test::temp_dir d;
  const std::string h5 = (d / "p.h5").string();
  ASSERT_EQ(test::run_spconv({sample.string(), "--to", "hyb", h5}).code, 0);
  auto r = test::run_spconv({"validate", h5, "--against", (test::shared_dir() / "matrices/real/add32.mtx").string()});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.out.find("hyb: FAILED"), std::string::npos) << r.out;
}

TEST(Cli, AddRefusesADifferentMatrix) {
  test::temp_dir d;
  const std::string h5 = (d / "p.h5").string();
  ASSERT_EQ(test::run_spconv({sample.string(), "--to", "csr", h5}).code, 0);
  const std::string before = read_bytes(h5);
  auto r = test::run_spconv({(test::shared_dir() / "matrices/real/add32.mtx").string(), "--to", "coo", "--add", h5});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(read_bytes(h5), before);
  expect_only(d.path, {"p.h5"});
}
