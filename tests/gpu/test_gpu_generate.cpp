// The 27-point stencil generated on the GPU equals the host generator's arrays bit for bit.
#include <gtest/gtest.h>

#include "formats/device.hpp"
#include "io/generate.hpp"
#include "io/generate_gpu.hpp"
#include "tests/support/expect.hpp"

using namespace spconv;

TEST(GpuGenerate, Stencil27EqualsTheHostGenerator) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  for (const std::int64_t n : {1, 2, 3, 5, 17, 40}) {
    SCOPED_TRACE(n);
    EXPECT_TRUE(equal(to_host(gen::gpu::stencil27<double>(n, 7, ctx)), gen::stencil<double>(3, 27, n, 7)));
    EXPECT_TRUE(equal(to_host(gen::gpu::stencil27<float>(n, 9, ctx)), gen::stencil<float>(3, 27, n, 9)));
  }
  test::expect_error([&] { gen::gpu::stencil27<double>(0, 1, ctx); }, errc::usage, "at least 1");
  test::expect_error([&] { gen::gpu::stencil27<double>(1000, 1, ctx); }, errc::unsupported, "32-bit");
}
