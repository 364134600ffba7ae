// build/model_gathers (tests/bench/model_gathers.cpp) as a user runs it: refusals of bad
// flags and files with a message and a non-zero exit, and a report on a small matrix.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/matrices.hpp"
#include "tests/support/process.hpp"

namespace {

using spconv::test::run_process;
using spconv::test::run_result;

run_result model(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {(spconv::test::binary_dir() / "model_gathers").string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv);
}

std::string sample() { return (spconv::test::source_dir() / "tests" / "data" / "poisson2d_40.mtx").string(); }

TEST(ModelGathers, NoFileIsAUsageError) {
  const auto r = model({});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("usage: model_gathers"), std::string::npos) << r.err;
}

TEST(ModelGathers, UnknownKernelIsAUsageError) {
  const auto r = model({sample(), "--kernel", "csr5"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("usage: model_gathers"), std::string::npos) << r.err;
}

TEST(ModelGathers, FlagValuesMustBePositiveWholeNumbers) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{sample(), "--l1-kib", "abc"}, {sample(), "--workers", "0"}, {sample(), "--sms", "-3"},
        {sample(), "--scale-to", "12x"}}) {
    const auto r = model(args);
    EXPECT_EQ(r.code, 2) << args[1];
    EXPECT_NE(r.err.find(args[1] + " takes a whole number"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("'" + args[2] + "'"), std::string::npos) << r.err;
  }
  const auto r = model({sample(), "--l1-kib"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--l1-kib needs a value"), std::string::npos) << r.err;
}

TEST(ModelGathers, MissingFileIsNamed) {
  const std::string missing = (spconv::test::binary_dir() / "no_such_matrix.mtx").string();
  const auto r = model({missing});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find(missing), std::string::npos) << r.err;
}

// poisson2d_40 (1600 rows): x is 12.5 KiB, so once it is in a 1 MiB L1 every later gather of it
// hits whatever the order; with one copy each walk reads x's 400 sectors once cold.
TEST(ModelGathers, ReportsBothKernelsOnASmallMatrix) {
  for (const std::string kernel : {"ccoo", "hola"}) {
    const auto r = model({sample(), "--kernel", kernel, "--scale-to", "1", "--l1-kib", "1024", "--sms", "1"});
    ASSERT_EQ(r.code, 0) << r.err;
    const auto at = r.out.find("poisson2d_40.mtx");
    ASSERT_NE(at, std::string::npos) << r.out;
    EXPECT_NE(r.out.find("1 copies", at), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("100.0%", at), std::string::npos) << "cold misses are counted: " << r.out;
  }
}

}  // namespace
