// `spconv convert --device gpu|auto` on a machine with a GPU: every format converted on the
// GPU from Matrix Market (triplets sorted on the device) and from a container equals the
// CPU's file content. Skips without a GPU.
#include <gtest/gtest.h>

#include <string>

#include "formats/device.hpp"
#include "io/matrix_file.hpp"
#include "tests/support/matrices.hpp"
#include "tests/support/process.hpp"

using namespace spconv;

TEST(GpuCli, ConvertOnTheGpuWritesWhatTheCpuWrites) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  test::temp_dir dir;
  const std::string sample = (test::source_dir() / "tests" / "data" / "poisson2d_40.mtx").string();
  const std::string stored = (dir / "stored.h5").string();
  ASSERT_EQ(test::run_spconv({sample, "--to", "csr", stored}).code, 0);
  for (const auto& [name, in] : {std::pair{"mtx", sample}, std::pair{"h5", stored}}) {
    for (std::string_view f : format_list) {
      SCOPED_TRACE(std::string(name) + " -> " + std::string(f));
      const std::string gpu = (dir / ("gpu_" + std::string(f) + "_" + name + ".h5")).string();
      const std::string cpu = (dir / ("cpu_" + std::string(f) + "_" + name + ".h5")).string();
      const auto r = test::run_spconv({in, "--to", std::string(f), "--device", "gpu", gpu});
      ASSERT_EQ(r.code, 0) << r.err;
      EXPECT_NE(r.out.find("converted on"), std::string::npos) << r.out;
      ASSERT_EQ(test::run_spconv({in, "--to", std::string(f), "--device", "cpu", cpu}).code, 0);
      read_options ro;
      ro.format = std::string(f);
      EXPECT_TRUE(equal(read_matrix_file(gpu, ro).matrix, read_matrix_file(cpu, ro).matrix));
    }
  }
  // auto picks the GPU when there is one, without a notice.
  const auto r = test::run_spconv({sample, "--to", "ccoo", "--device", "auto", (dir / "auto.h5").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("converted on"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("notice"), std::string::npos) << r.err;
}

TEST(GpuCli, RealMatricesConvertOnTheGpuLikeOnTheCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  test::temp_dir dir;
  int n = 0;
  for (const auto& p : test::real_matrices()) {
    if (n++ % 4) continue;  // a quarter of the set: each run starts a process per format
    for (std::string_view f : {"csr", "csr5", "bcsr", "ccoo"}) {
      SCOPED_TRACE(p.filename().string() + " -> " + std::string(f));
      const std::string gpu = (dir / "g.h5").string(), cpu = (dir / "c.h5").string();
      const auto r = test::run_spconv({p.string(), "--to", std::string(f), "--device", "gpu", "--force", gpu});
      const auto c = test::run_spconv({p.string(), "--to", std::string(f), "--force", cpu});
      ASSERT_EQ(r.code, c.code) << r.err << c.err;
      if (c.code != 0) continue;  // refused on both (the complex matrix)
      read_options ro;
      ro.format = std::string(f);
      EXPECT_TRUE(equal(read_matrix_file(gpu, ro).matrix, read_matrix_file(cpu, ro).matrix));
    }
  }
}

// bench --generate stencil27:N on the GPU: the stencil is made on the device, measured there
// and checked against cuSPARSE; the run names where it was generated.
TEST(GpuCli, BenchMeasuresAStencilGeneratedOnTheGpu) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  const auto r = test::run_spconv({"bench", "--generate", "stencil27:24", "--device", "gpu", "--formats", "csr,csr5",
                                   "--repeat", "1", "--no-storage"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("stencil27 24 --seed 1 (generated on the GPU)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("13824 x 13824"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("WRONG"), std::string::npos) << r.out;
}
