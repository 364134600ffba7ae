// `spconv bench` run as a real process on tiny matrices on the CPU: the JSON and the CSV are
// well formed and carry every figure for every format, the refusals have their exit codes.
// No timing is judged: only that the figures exist and are consistent with each other.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/any_matrix.hpp"
#include "tests/support/matrices.hpp"
#include "tests/support/process.hpp"
#ifdef SPCONV_HAVE_CUDA
#include "formats/device.hpp"
#endif

using namespace spconv;
namespace fs = std::filesystem;
using json = nlohmann::ordered_json;  // keeps the keys in file order

namespace {

const fs::path sample = test::source_dir() / "tests" / "data" / "poisson2d_40.mtx";

bool have_gpu() {
#ifdef SPCONV_HAVE_CUDA
  return gpu_available();
#else
  return false;
#endif
}

json read_json(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

// RFC 4180 fields: quoted fields may hold commas, doubled quotes and line breaks.
std::vector<std::vector<std::string>> read_csv(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  const std::string s{std::istreambuf_iterator<char>(in), {}};
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quoted) {
      if (c == '"' && i + 1 < s.size() && s[i + 1] == '"') field += '"', ++i;
      else if (c == '"') quoted = false;
      else field += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().push_back(field);
      field.clear();
    } else if (c == '\n') {
      rows.back().push_back(field);
      field.clear();
      rows.emplace_back();
    } else {
      field += c;
    }
  }
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

// What every result record must carry (tools/bench_report.cpp's record()).
const std::vector<std::string> record_keys = {
    "matrix", "path", "device", "format", "value_type", "rows", "cols", "nnz", "copies", "status", "message", "params",
    "spmv_median_s", "spmv_min_s", "batch", "gflops", "effective_gbps", "bandwidth_gbps", "bandwidth_pct", "baseline",
    "baseline_spmv_median_s", "baseline_spmv_min_s", "speedup", "to_format_median_s", "to_format_min_s",
    "to_csr_median_s", "to_csr_min_s", "conversion_spmvs", "to_csr_spmvs", "break_even", "max_rel_error",
    "error_bound", "bytes", "spmv_bytes", "bytes_per_nnz", "footprint_vs_csr", "container_zstd_bytes", "container_raw_bytes",
    "load_host_median_s", "load_host_min_s", "load_device_median_s", "load_device_min_s", "mtx_parse_median_s",
    "from_mtx_s", "load_vs_mtx"};

bool positive(const json& v) { return v.is_number() && v.get<double>() > 0; }

}  // namespace

TEST(BenchCli, JsonAndCsvCarryEveryFigureForEveryFormat) {
  test::temp_dir d;
  const auto r = test::run_spconv({"bench", sample.string(), "--repeat", "2", "--io-repeat", "1", "--formats", "all",
                                   "--json", (d / "b.json").string(), "--csv", (d / "b.csv").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  // Piped stderr: no progress bar (no carriage returns).
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << r.err;
  for (auto f : format_list) EXPECT_NE(r.out.find("\n    " + std::string(f) + " "), std::string::npos) << f;
  EXPECT_NE(r.out.find("summary, cpu (baseline csr-reference)"), std::string::npos) << r.out;

  const json j = read_json(d / "b.json");
  EXPECT_EQ(j["spconv_version"], SPCONV_VERSION);
  for (const char* k : {"cpu", "threads", "loadavg", "loadavg_after", "gpu", "driver"}) EXPECT_TRUE(j["machine"].contains(k)) << k;
  EXPECT_FALSE(j["machine"]["cpu"].get<std::string>().empty());
  EXPECT_EQ(j["settings"]["repeat"], 2);
  ASSERT_EQ(j["matrices"].size(), 1u);
  const json& m = j["matrices"][0];
  EXPECT_EQ(m["name"], "poisson2d_40.mtx");
  EXPECT_EQ(m["rows"], 1600);
  EXPECT_TRUE(positive(m["mtx_parse_median_s"]));

  const json& results = j["results"];
  ASSERT_EQ(results.size(), format_list.size());
  std::set<std::string> seen;
  for (const auto& rec : results) {
    const std::string f = rec["format"];
    SCOPED_TRACE(f);
    seen.insert(f);
    std::vector<std::string> keys;
    for (auto it = rec.begin(); it != rec.end(); ++it) keys.push_back(it.key());
    EXPECT_EQ(keys, record_keys);
    EXPECT_EQ(rec["device"], "cpu");
    EXPECT_EQ(rec["status"], "ok") << rec["message"];  // every format converts and multiplies correctly
    EXPECT_LE(rec["max_rel_error"].get<double>(), rec["error_bound"].get<double>());
    for (const char* k : {"spmv_median_s", "spmv_min_s", "gflops", "effective_gbps", "bandwidth_gbps", "bandwidth_pct",
                          "baseline_spmv_median_s", "speedup", "bytes", "spmv_bytes", "bytes_per_nnz", "footprint_vs_csr",
                          "container_zstd_bytes", "container_raw_bytes", "load_host_median_s", "from_mtx_s",
                          "load_vs_mtx"})
      EXPECT_TRUE(positive(rec[k])) << k << " = " << rec[k];
    EXPECT_LE(rec["spmv_min_s"].get<double>(), rec["spmv_median_s"].get<double>());
    // What an SpMV reads: every array but those kept for the round trip only.
    if (rec["format"] == "bcsr" || rec["format"] == "cmrs")
      EXPECT_LE(rec["spmv_bytes"].get<double>(), rec["bytes"].get<double>());
    else
      EXPECT_EQ(rec["spmv_bytes"], rec["bytes"]);
    EXPECT_DOUBLE_EQ(rec["speedup"].get<double>(),
                     rec["baseline_spmv_median_s"].get<double>() / rec["spmv_median_s"].get<double>());
    EXPECT_DOUBLE_EQ(rec["gflops"].get<double>(), 2.0 * 7840 / rec["spmv_median_s"].get<double>() / 1e9);
    EXPECT_TRUE(rec["load_device_median_s"].is_null());  // no device on the CPU rows
    EXPECT_EQ(rec["baseline"], "csr-reference");
    if (f == "csr") {
      EXPECT_TRUE(rec["to_format_median_s"].is_null());
      EXPECT_DOUBLE_EQ(rec["footprint_vs_csr"].get<double>(), 1.0);
    } else {
      for (const char* k : {"to_format_median_s", "to_format_min_s", "to_csr_median_s", "to_csr_min_s",
                            "conversion_spmvs", "to_csr_spmvs"})
        EXPECT_TRUE(positive(rec[k])) << k;
    }
    // Break-even: a count when the format is faster than the baseline, else "never".
    if (rec["spmv_median_s"].get<double>() < rec["baseline_spmv_median_s"].get<double>())
      EXPECT_TRUE(rec["break_even"].is_number_integer()) << rec["break_even"];
    else
      EXPECT_EQ(rec["break_even"], "never");
  }
  EXPECT_EQ(seen.size(), format_list.size());
  const json& s = j["summary"]["cpu"];
  EXPECT_EQ(s["formats"].size(), format_list.size());
  ASSERT_EQ(s["best"].size(), 1u);
  EXPECT_TRUE(seen.count(s["best"][0]["format"].get<std::string>()));
  EXPECT_TRUE(s["slower_everywhere"].is_array());

  const auto csv = read_csv(d / "b.csv");
  ASSERT_EQ(csv.size(), 1 + results.size());
  EXPECT_EQ(csv[0], record_keys);
  for (std::size_t i = 1; i < csv.size(); ++i) {
    ASSERT_EQ(csv[i].size(), record_keys.size()) << i;
    EXPECT_EQ(csv[i][3], results[i - 1]["format"].get<std::string>());
    EXPECT_EQ(csv[i][2], "cpu");
  }
}

TEST(BenchCli, ContainerInputFloatScaleToAndSkippedFiles) {
  test::temp_dir d;
  fs::create_directory(d / "in");
  ASSERT_EQ(test::run_spconv({sample.string(), "--to", "hyb", (d / "in" / "a.h5").string()}).code, 0);
  std::ofstream(d / "in" / "c.mtx") << "%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 1 1.0 2.0\n";
  std::ofstream(d / "in" / "notes.txt") << "not a matrix\n";
  const auto r = test::run_spconv({"bench", (d / "in").string(), "--repeat", "1", "--io-repeat", "1", "--formats",
                                   "csr,bcsr", "--type", "float", "--scale-to", "20000", "--json",
                                   (d / "b.json").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("skipped"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("complex"), std::string::npos) << r.err;
  const json j = read_json(d / "b.json");
  ASSERT_EQ(j["matrices"].size(), 1u);
  const json& m = j["matrices"][0];
  // 7840 entries replicated 3 times reach 20000; a container has no Matrix Market path.
  EXPECT_EQ(m["copies"], 3);
  EXPECT_EQ(m["rows"], 3 * 1600);
  EXPECT_EQ(m["nnz"], 3 * 7840);
  EXPECT_TRUE(m["mtx_parse_median_s"].is_null());
  ASSERT_EQ(j["results"].size(), 2u);
  for (const auto& rec : j["results"]) {
    EXPECT_EQ(rec["value_type"], "float32");
    EXPECT_EQ(rec["status"], "ok") << rec["message"];
    EXPECT_TRUE(rec["from_mtx_s"].is_null());
  }
  ASSERT_EQ(j["skipped"].size(), 1u);
  EXPECT_NE(j["skipped"][0]["file"].get<std::string>().find("c.mtx"), std::string::npos);

  // --no-storage: no container figures.
  const auto quick = test::run_spconv({"bench", sample.string(), "--repeat", "1", "--formats", "coo", "--no-storage",
                                       "--csv", (d / "q.csv").string()});
  ASSERT_EQ(quick.code, 0) << quick.err;
  const auto rows = read_csv(d / "q.csv");
  ASSERT_EQ(rows.size(), 2u);
  const auto col = std::find(rows[0].begin(), rows[0].end(), "container_zstd_bytes") - rows[0].begin();
  EXPECT_EQ(rows[1][static_cast<std::size_t>(col)], "");
}

// --generate: matrices made by the generators of `spconv gen`, measured like files (here on
// the CPU; tests/gpu/test_gpu_cli.cpp runs stencil27 generated on the GPU).
TEST(BenchCli, GeneratedMatrices) {
  test::temp_dir d;
  const auto r = test::run_spconv({"bench", sample.string(), "--generate", "stencil27:6", "--generate", "stencil5:12",
                                   "--repeat", "1", "--formats", "csr,hyb", "--no-storage", "--json",
                                   (d / "g.json").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = read_json(d / "g.json");
  ASSERT_EQ(j["matrices"].size(), 3u);  // the file first, then the generated ones in order
  EXPECT_EQ(j["matrices"][1]["rows"], 216);
  EXPECT_EQ(j["matrices"][2]["rows"], 144);
  EXPECT_NE(j["matrices"][1]["name"].get<std::string>().find("stencil27 6"), std::string::npos);
  for (const auto& rec : j["results"]) EXPECT_EQ(rec["status"], "ok") << rec["message"];
  // A bad spec is skipped with a usage error and, nothing else measured, fails the run (2).
  const auto bad = test::run_spconv({"bench", "--generate", "lattice:3", "--repeat", "1", "--no-storage", "--json",
                                     (d / "bad.json").string(), "--csv", (d / "bad.csv").string()});
  EXPECT_EQ(bad.code, 2) << bad.err;
  EXPECT_NE(bad.err.find("lattice"), std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(d / "bad.json"));
  EXPECT_FALSE(fs::exists(d / "bad.csv"));
  const auto negative = test::run_spconv({"bench", "--generate", "stencil27:-4", "--repeat", "1", "--no-storage"});
  EXPECT_EQ(negative.code, 2) << negative.err;
  const auto not_int = test::run_spconv({"bench", "--generate", "stencil27:x", "--repeat", "1", "--no-storage"});
  EXPECT_EQ(not_int.code, 2) << not_int.err;
  EXPECT_NE(not_int.err.find("not an integer"), std::string::npos) << not_int.err;
  const auto nothing = test::run_spconv({"bench", "--repeat", "1"});
  EXPECT_EQ(nothing.code, 2) << nothing.err;
  EXPECT_NE(nothing.err.find("nothing to measure"), std::string::npos) << nothing.err;
}

// The format parameters of `convert` replace the automatic rules for every matrix; a value out
// of a measured format's range, or a malformed one, is a usage error before anything is
// measured, with no JSON or CSV written.
TEST(BenchCli, FormatParametersReplaceTheAutomaticRules) {
  test::temp_dir d;
  const auto params_of = [](const json& j, const std::string& format) {
    for (const auto& rec : j["results"])
      if (rec["format"] == format) return rec["params"].get<std::string>();
    return std::string("(no record)");
  };
  const auto automatic = test::run_spconv({"bench", sample.string(), "--repeat", "1", "--formats", "cmrs,bcsr",
                                           "--no-storage", "--json", (d / "a.json").string()});
  ASSERT_EQ(automatic.code, 0) << automatic.err;
  // 7840 entries in 1600 rows (mean 4.9): 8 rows per strip.
  EXPECT_NE(params_of(read_json(d / "a.json"), "cmrs").find("height=8"), std::string::npos);

  const auto given = test::run_spconv({"bench", sample.string(), "--repeat", "1", "--formats", "cmrs,bcsr,mbr",
                                       "--height", "12", "--block", "2x4", "--no-storage", "--json",
                                       (d / "g.json").string()});
  ASSERT_EQ(given.code, 0) << given.err;
  const json g = read_json(d / "g.json");
  EXPECT_NE(params_of(g, "cmrs").find("height=12"), std::string::npos) << params_of(g, "cmrs");
  EXPECT_NE(params_of(g, "bcsr").find("block_rows=2 block_cols=4"), std::string::npos) << params_of(g, "bcsr");
  EXPECT_NE(params_of(g, "mbr").find("block_rows=2 block_cols=4"), std::string::npos) << params_of(g, "mbr");
  for (const auto& rec : g["results"]) EXPECT_EQ(rec["status"], "ok") << rec["message"];

  // Out of range for a measured format: refused before anything is measured, with convert's
  // error (usage, 2; a block beyond a 64-bit bitmap is unsupported, 5), and no files.
  const std::vector<std::pair<std::vector<std::string>, int>> refusals = {
      {{"--formats", "csr,cmrs", "--height", "17"}, 2},
      {{"--formats", "mbr", "--block", "9x9"}, 5},
      {{"--formats", "csr5", "--omega", "65"}, 2},
      {{"--formats", "cmrs", "--modulo", "3"}, 2}};
  for (const auto& [bad, code] : refusals) {
    std::vector<std::string> args = {"bench", sample.string(), "--repeat", "1", "--no-storage", "--json",
                                     (d / "r.json").string(), "--csv", (d / "r.csv").string()};
    args.insert(args.end(), bad.begin(), bad.end());
    const auto refused = test::run_spconv(args);
    EXPECT_EQ(refused.code, code) << bad[3] << ": " << refused.err;
    EXPECT_NE(refused.err.find(bad[3] == "9x9" ? "9 x 9" : bad[3]), std::string::npos) << refused.err;
    EXPECT_FALSE(fs::exists(d / "r.json")) << bad[3];
    EXPECT_FALSE(fs::exists(d / "r.csv")) << bad[3];
  }
  // A parameter only another format takes is not checked against the measured ones.
  EXPECT_EQ(test::run_spconv({"bench", sample.string(), "--repeat", "1", "--no-storage", "--formats", "csr",
                              "--height", "17"})
                .code,
            0);
  const auto malformed = test::run_spconv({"bench", sample.string(), "--formats", "bcsr", "--block", "4", "--json",
                                           (d / "m.json").string()});
  EXPECT_EQ(malformed.code, 2);
  EXPECT_NE(malformed.err.find("--block 4"), std::string::npos) << malformed.err;
  EXPECT_FALSE(fs::exists(d / "m.json"));
  // --for belongs to convert: the bench's device decides CSR5's rule.
  EXPECT_EQ(test::run_spconv({"bench", sample.string(), "--for", "cpu"}).code, 2);
}

TEST(BenchCli, Refusals) {
  test::temp_dir d;
  const auto unknown = test::run_spconv({"bench", sample.string(), "--formats", "csr,lattice"});
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.err.find("unknown format 'lattice'"), std::string::npos) << unknown.err;
  EXPECT_EQ(test::run_spconv({"bench", sample.string(), "--device", "tpu"}).code, 2);
  EXPECT_EQ(test::run_spconv({"bench", sample.string(), "--repeat", "0"}).code, 2);
  EXPECT_EQ(test::run_spconv({"bench", (d / "missing.mtx").string()}).code, 4);
  // A file that is no matrix: nothing measured, the reading error's code.
  std::ofstream(d / "x.mtx") << "hello\n";
  EXPECT_EQ(test::run_spconv({"bench", (d / "x.mtx").string(), "--repeat", "1"}).code, 3);
  if (have_gpu()) GTEST_SKIP() << "a GPU is visible: the no-GPU refusals do not apply";
  const auto gpu = test::run_spconv({"bench", sample.string(), "--device", "gpu", "--repeat", "1"});
  EXPECT_EQ(gpu.code, 6);
  EXPECT_NE(gpu.err.find("--device gpu"), std::string::npos) << gpu.err;
  const auto both = test::run_spconv({"bench", sample.string(), "--device", "both", "--repeat", "1", "--formats", "csr",
                                      "--no-storage", "--json", (d / "b.json").string()});
  EXPECT_EQ(both.code, 0) << both.err;
  EXPECT_NE(both.err.find("measuring the CPU only"), std::string::npos) << both.err;
  EXPECT_EQ(read_json(d / "b.json")["settings"]["devices"], json::array({"cpu"}));
}

// --plot writes the JSON beside the charts; the charts themselves need python3-matplotlib,
// without which the bench says so and still succeeds.
TEST(BenchCli, PlotWritesChartsOrSaysWhyNot) {
  test::temp_dir d;
  const auto r = test::run_spconv({"bench", sample.string(), "--repeat", "1", "--io-repeat", "1", "--formats",
                                   "csr,hyb", "--plot", (d / "plots").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(d / "plots" / "bench.json"));
  // The interpreters the bench tries: Debian's, then the first on PATH.
  const bool matplotlib = test::run_process({"/usr/bin/python3", "-c", "import matplotlib"}).code == 0 ||
                          test::run_process({"/usr/bin/env", "python3", "-c", "import matplotlib"}).code == 0;
  if (matplotlib) {
    for (const char* name : {"speedup", "conversion", "bytes_per_nnz"})
      for (const char* ext : {".png", ".svg"}) EXPECT_TRUE(fs::exists(d / "plots" / (std::string(name) + ext))) << name << ext;
  } else {
    EXPECT_NE(r.err.find("python3-matplotlib is not installed"), std::string::npos) << r.err;
  }
}
