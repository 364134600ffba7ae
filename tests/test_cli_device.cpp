// `--device cpu|gpu|auto` of `spconv convert` where no GPU can be used (the CI machines, and
// every CPU-only build): gpu is a device error, auto falls back to the CPU with a notice.
// tests/gpu/test_gpu_cli.cpp covers the GPU side.
#include <gtest/gtest.h>

#include <filesystem>

#include "convert/select_format.hpp"
#include "io/matrix_file.hpp"
#include "tests/support/matrices.hpp"
#include "tests/support/process.hpp"
#ifdef SPCONV_HAVE_CUDA
#include "formats/device.hpp"
#endif

using namespace spconv;

namespace {

bool gpu_usable() {
#ifdef SPCONV_HAVE_CUDA
  return gpu_available();
#else
  return false;
#endif
}

const std::string sample = (test::source_dir() / "tests" / "data" / "poisson2d_40.mtx").string();

}  // namespace

TEST(CliDevice, GpuWithoutAGpuIsADeviceErrorAndWritesNothing) {
  if (gpu_usable()) GTEST_SKIP() << "a GPU is visible: tests/gpu/test_gpu_cli.cpp covers it";
  test::temp_dir dir;
  const auto out = (dir / "out.h5").string();
  const auto r = test::run_spconv({sample, "--to", "csr5", "--device", "gpu", out});
  EXPECT_EQ(r.code, 6) << r.err;
  EXPECT_NE(r.err.find("--device gpu"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(CliDevice, AutoFallsBackToTheCpuWithANotice) {
  if (gpu_usable()) GTEST_SKIP() << "a GPU is visible: tests/gpu/test_gpu_cli.cpp covers it";
  test::temp_dir dir;
  const auto out = (dir / "auto.h5").string(), ref = (dir / "cpu.h5").string();
  const auto r = test::run_spconv({sample, "--to", "hyb", "--device", "auto", out});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("no GPU visible, working on the CPU"), std::string::npos) << r.err;
  ASSERT_EQ(test::run_spconv({sample, "--to", "hyb", ref}).code, 0);
  EXPECT_TRUE(equal(read_matrix_file(out).matrix, read_matrix_file(ref).matrix));
}

TEST(CliDevice, UnknownDeviceIsAUsageError) {
  test::temp_dir dir;
  const auto r = test::run_spconv({sample, "--to", "csr", "--device", "tpu", (dir / "x.h5").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--device"), std::string::npos) << r.err;
}

// --to auto converts to the format select_format picks for the --for processor, and says so.
TEST(CliAuto, ConvertsToThePickedFormatAndNamesIt) {
  test::temp_dir dir;
  for (const std::string proc : {"gpu", "cpu"}) {
    const auto out = (dir / ("auto_" + proc + ".h5")).string();
    const auto r = test::run_spconv({sample, "--to", "auto", "--for", proc, out});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("auto: "), std::string::npos) << r.out;
    const any_matrix m = read_matrix_file(out).matrix;
    const auto pick = select_format(read_matrix_file(sample).matrix, proc == "gpu" ? spmv_device::gpu : spmv_device::cpu);
    EXPECT_EQ(format_name(m), pick.format);
    EXPECT_NE(r.out.find(out + ": " + std::string(format_name(m))), std::string::npos) << r.out;
  }
}
