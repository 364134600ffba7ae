// The API's device loads (io/api.hpp): load<Fmt> and load() give in device memory exactly what
// read<Fmt> and read() give on the host, for a stored format, a converted one and the stored
// one as stored; errors of the read come through. Every test skips without a GPU.
#include <gtest/gtest.h>

#include <string>

#include "io/api.hpp"
#include "tests/support/expect.hpp"
#include "tests/support/matrices.hpp"

using namespace spconv;
namespace fs = std::filesystem;

namespace {

// A container of a random matrix as csr plus hyb (ELL width 2).
struct stored {
  test::temp_dir dir;
  fs::path path = dir / "m.h5";
  stored() {
    const any_matrix a(test::random_csr(700, 650, 6.0, 53));
    convert_options o;
    o.hyb.ell_width = 2;
    write(path, {a, convert(a, "hyb", o)});
  }
};

template <class Fmt>
void expect_load_matches_read(const fs::path& path, gpu_context& ctx) {
  const Fmt host = read<Fmt>(path);
  const auto dev = load<Fmt>(path, ctx);
  EXPECT_EQ(dev.rows, host.rows);
  EXPECT_TRUE(equal(to_host(dev), host)) << Fmt::name;
}

}  // namespace

TEST(GpuApi, LoadOfAFormatEqualsTheHostRead) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  const stored s;
  gpu_context ctx;
  expect_load_matches_read<csr<double>>(s.path, ctx);   // stored
  expect_load_matches_read<hyb<double>>(s.path, ctx);   // stored, with its width
  expect_load_matches_read<csr5<double>>(s.path, ctx);  // converted on the host
  expect_load_matches_read<csr<float>>(s.path, ctx);    // values cast
}

TEST(GpuApi, LoadAsStoredEqualsTheHostRead) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  const stored s;
  gpu_context ctx;
  EXPECT_TRUE(equal(to_host(load(s.path, ctx)), read(s.path)));
  read_options hyb;
  hyb.format = "hyb";
  EXPECT_TRUE(equal(to_host(load(s.path, ctx, hyb)), read(s.path, hyb)));
}

TEST(GpuApi, LoadReportsTheReadErrors) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  const stored s;
  gpu_context ctx;
  read_as_options no_convert;
  no_convert.allow_convert = false;
  test::expect_error([&] { load<csr5<double>>(s.path, ctx, no_convert); }, errc::unsupported, s.path.string());
  test::expect_error([&] { load<csr<double>>(s.dir / "absent.h5", ctx); }, errc::io, "absent.h5");
}
