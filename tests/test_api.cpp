// The library API (io/api.hpp): read() as stored, read<Fmt>() loading a stored format as
// written or converting an absent one, the refusal when conversion is disabled, value and
// index type mismatches, write() round trips, errors, and reads and writes from many threads
// at once (the HDF5 library lock).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "io/api.hpp"
#include "io/hdf5/h5.hpp"
#include "tests/support/expect.hpp"
#include "tests/support/matrices.hpp"

using namespace spconv;
namespace fs = std::filesystem;

namespace {

const fs::path sample_mtx = test::source_dir() / "tests" / "data" / "poisson2d_40.mtx";

// A HYB with a width its automatic rule would not pick, so that a group loaded as stored and
// one converted again differ.
any_matrix hyb_of(const any_matrix& a, std::int64_t width) {
  convert_options o;
  o.hyb.ell_width = width;
  return convert(a, "hyb", o);
}

any_matrix retyped(const any_matrix& a, std::string_view format, value_type vt, index_type it) {
  convert_options o;
  o.values = vt;
  o.index = it;
  return convert(a, format, o);
}

// A container of `a` as csr plus a HYB of ELL width 1.
struct stored {
  test::temp_dir dir;
  fs::path path = dir / "m.h5";
  any_matrix csr_form, hyb_form;
  explicit stored(const any_matrix& a) : csr_form(a), hyb_form(hyb_of(a, 1)) { write(path, {csr_form, hyb_form}); }
};

any_matrix sample_csr() { return any_matrix(test::random_csr(300, 280, 5.0, 41)); }

}  // namespace

TEST(ApiRead, MatrixMarketAsCanonicalCsr) {
  const any_matrix m = read(sample_mtx);
  ASSERT_TRUE((std::holds_alternative<csr<double, std::int32_t>>(m)));
  EXPECT_TRUE(equal(m, read_matrix_file(sample_mtx).matrix));
  EXPECT_EQ(rows_of(m), 1600);
  read_options f32;
  f32.values = value_type::f32;
  EXPECT_TRUE((std::holds_alternative<csr<float, std::int32_t>>(read(sample_mtx, f32))));
}

TEST(ApiRead, ContainerAsStored) {
  const stored s(sample_csr());
  EXPECT_TRUE(equal(read(s.path), s.csr_form));  // csr when stored
  read_options hyb;
  hyb.format = "hyb";
  EXPECT_TRUE(equal(read(s.path, hyb), s.hyb_form));
  read_options absent;
  absent.format = "csr5";
  test::expect_error([&] { read(s.path, absent); }, errc::usage, "no 'csr5' format");
}

TEST(ApiRead, MissingFileIsIoError) {
  const test::temp_dir dir;
  const fs::path p = dir / "absent.h5";
  test::expect_error([&] { read(p); }, errc::io, p.string());
  test::expect_error([&] { read<csr<double>>(p); }, errc::io, p.string());
  test::expect_error([&] { read<hyb<float>>(p); }, errc::io, p.string());
}

TEST(ApiReadAs, StoredFormatIsLoadedAsWritten) {
  const stored s(sample_csr());
  read_as_options no_convert;
  no_convert.allow_convert = false;
  const auto h = read<hyb<double>>(s.path, no_convert);
  EXPECT_TRUE(equal(h, std::get<hyb<double>>(s.hyb_form)));
  EXPECT_EQ(h.params.ell_width, 1);  // not the automatic width a conversion would choose
  EXPECT_FALSE(equal(any_matrix(h), convert(s.csr_form, "hyb")));
  EXPECT_TRUE(equal(any_matrix(read<csr<double>>(s.path, no_convert)), s.csr_form));
}

TEST(ApiReadAs, AbsentFormatIsConverted) {
  const stored s(sample_csr());
  EXPECT_TRUE(equal(any_matrix(read<csr5<double>>(s.path)), convert(s.csr_form, "csr5")));
  EXPECT_TRUE(equal(any_matrix(read<coo<double>>(s.path)), convert(s.csr_form, "coo")));
  read_as_options opt;
  opt.conversion.bcsr.block_rows = 2;
  opt.conversion.bcsr.block_cols = 3;
  convert_options co;
  co.bcsr = opt.conversion.bcsr;
  const auto b = read<bcsr<double>>(s.path, opt);
  EXPECT_EQ(b.params.block_rows, 2);
  EXPECT_TRUE(equal(any_matrix(b), convert(s.csr_form, "bcsr", co)));
}

TEST(ApiReadAs, ConversionDisabledNamesFileFormatAndContents) {
  const stored s(sample_csr());
  read_as_options no_convert;
  no_convert.allow_convert = false;
  for (const std::string& fragment : {s.path.string(), std::string("not csr5 with float64 values"),
                                     std::string("holds csr, hyb (float64 values, int32 indices)"),
                                     std::string("allow_convert")})
    test::expect_error([&] { read<csr5<double>>(s.path, no_convert); }, errc::unsupported, fragment);
  test::expect_error([&] { read<hyb<double>>(sample_mtx, no_convert); }, errc::unsupported, "Matrix Market");
}

// One container has one value and index type; asking for others converts (or is refused).
TEST(ApiReadAs, ValueAndIndexTypeMismatch) {
  const any_matrix a32 = retyped(sample_csr(), "csr", value_type::f32, index_type::i32);
  const stored s(a32);
  // The types stored: loaded as written.
  EXPECT_TRUE(equal(any_matrix(read<hyb<float>>(s.path)), s.hyb_form));
  // Other value type: converted from the stored csr, with the parameters a conversion picks.
  EXPECT_TRUE(equal(any_matrix(read<hyb<double>>(s.path)), retyped(a32, "hyb", value_type::f64, index_type::i32)));
  EXPECT_TRUE(equal(any_matrix(read<csr<double>>(s.path)), retyped(a32, "csr", value_type::f64, index_type::i32)));
  // Other index type.
  EXPECT_TRUE((equal(any_matrix(read<csr<float, std::int64_t>>(s.path)),
                     retyped(a32, "csr", value_type::f32, index_type::i64))));
  read_as_options no_convert;
  no_convert.allow_convert = false;
  test::expect_error([&] { read<hyb<double>>(s.path, no_convert); }, errc::unsupported,
                     "holds csr, hyb (float32 values, int32 indices), not hyb with float64 values");
  test::expect_error([&] { read<csr<float, std::int64_t>>(s.path, no_convert); }, errc::unsupported,
                     "not csr with float32 values and int64 indices");
}

TEST(ApiReadAs, MatrixMarketParsesIntoTheValueType) {
  read_as_options no_convert;
  no_convert.allow_convert = false;
  read_options f32;
  f32.values = value_type::f32;
  // csr in any value type is what the parse gives: no conversion needed.
  EXPECT_TRUE(equal(any_matrix(read<csr<float>>(sample_mtx, no_convert)), read(sample_mtx, f32)));
  EXPECT_TRUE(equal(any_matrix(read<csr<double>>(sample_mtx, no_convert)), read(sample_mtx)));
  EXPECT_TRUE(equal(any_matrix(read<hyb<float>>(sample_mtx)), convert(read(sample_mtx, f32), "hyb")));
}

TEST(ApiWrite, RoundTripsOneAndSeveralFormats) {
  const test::temp_dir dir;
  const any_matrix a = sample_csr();
  const any_matrix c = convert(a, "ccoo");
  write(dir / "one.h5", c);
  EXPECT_TRUE(equal(read(dir / "one.h5"), c));

  write_options opt;
  opt.comp = parse_compression("none");
  container_meta meta;
  meta.source_name = "generated";
  meta.source_symmetry = "general";
  write(dir / "two.h5", {a, c}, opt, meta);
  EXPECT_TRUE(equal(read(dir / "two.h5"), a));
  EXPECT_TRUE(equal(any_matrix(read<ccoo<double>>(dir / "two.h5")), c));
  const container_info info = read_container_info(dir / "two.h5");
  EXPECT_EQ(info.meta.source_name, "generated");
  ASSERT_EQ(info.formats.size(), 2u);

  // Matrix Market output, and the write rules of write_matrix_file.
  write(dir / "m.mtx", a);
  EXPECT_TRUE(equal(read(dir / "m.mtx"), a));
  test::expect_error([&] { write(dir / "one.h5", a); }, errc::usage, "exists");
  test::expect_error([&] { write(dir / "m.txt", a); }, errc::usage, "unknown output kind");
}

// hdf5_lock() is the lock spconv's HDF5 calls take, and spconv calls run while holding it.
TEST(ApiThreads, Hdf5LockIsTheLibraryLock) {
  const stored s(sample_csr());
  auto held = hdf5_lock();
  EXPECT_TRUE(equal(read(s.path), s.csr_form));  // recursive: no self-deadlock
  bool other_got_it = true;
  std::thread([&] {
    other_got_it = h5::library_mutex().try_lock();
    if (other_got_it) h5::library_mutex().unlock();
  }).join();
  EXPECT_FALSE(other_got_it);
}

// Eight threads at once, each several times: read() and read<Fmt> of one shared container
// (zstd), of a container of their own (uncompressed, float), a conversion of a format the
// container lacks, a write of a file of their own read back, and a forced write of one path
// all threads replace. Without the HDF5 lock an HDF5 built without thread-safety breaks here
// (crashes, HDF5 errors or wrong arrays); the forced writes check that concurrent writers of
// one path each stay atomic (distinct temporary files, one complete file in the end).
TEST(ApiThreads, ConcurrentReadsAndWrites) {
  constexpr int threads = 8, rounds = 4;
  const any_matrix big = any_matrix(test::random_csr(20000, 20000, 6.0, 7));
  const stored shared(big);
  const any_matrix shared_csr5 = convert(big, "csr5");

  struct own {
    test::temp_dir dir;
    any_matrix csr_form, coo_form;
  };
  std::vector<own> mine(threads);
  write_options plain;
  plain.comp = parse_compression("none");
  for (int t = 0; t < threads; ++t) {
    mine[t].csr_form = retyped(any_matrix(test::random_csr(3000 + 100 * t, 2500, 4.0, 100 + t)), "csr",
                               value_type::f32, index_type::i32);
    mine[t].coo_form = convert(mine[t].csr_form, "coo");
    write(mine[t].dir / "own.h5", {mine[t].csr_form, mine[t].coo_form}, plain);
  }

  const fs::path contended = shared.dir / "contended.h5";
  write_options replace;
  replace.force = true;

  std::vector<std::string> problems(threads);
  std::vector<std::exception_ptr> errors(threads);
  std::atomic<int> ready{0};
  auto work = [&](int t) {
    try {
      ++ready;
      while (ready.load() < threads) std::this_thread::yield();  // start together
      auto expect = [&](bool ok, const char* what) {
        if (!ok && problems[t].empty()) problems[t] = what;
      };
      read_options coo_group;
      coo_group.format = "coo";
      for (int r = 0; r < rounds; ++r) {
        expect(equal(read(shared.path), shared.csr_form), "read(shared)");
        expect(equal(any_matrix(read<hyb<double>>(shared.path)), shared.hyb_form), "read<hyb>(shared)");
        expect(equal(any_matrix(read<csr5<double>>(shared.path)), shared_csr5), "read<csr5>(shared), converted");
        expect(equal(read(mine[t].dir / "own.h5", coo_group), mine[t].coo_form), "read(own, coo)");
        expect(equal(any_matrix(read<csr<float>>(mine[t].dir / "own.h5")), mine[t].csr_form), "read<csr>(own)");
        const fs::path out = mine[t].dir / ("w" + std::to_string(r) + ".h5");
        write(out, {shared.csr_form, shared.hyb_form});
        expect(equal(any_matrix(read<hyb<double>>(out)), shared.hyb_form), "write then read<hyb>");
        write(contended, shared.hyb_form, replace);
      }
    } catch (...) {
      errors[t] = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(work, t);
  for (auto& th : pool) th.join();
  EXPECT_TRUE(equal(read(contended), shared.hyb_form));
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(shared.dir.path)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"contended.h5", "m.h5"}));  // no temporary file left
  for (int t = 0; t < threads; ++t) {
    EXPECT_EQ(problems[t], "") << "thread " << t;
    if (errors[t]) {
      try {
        std::rethrow_exception(errors[t]);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "thread " << t << ": " << e.what();
      }
    }
  }
}
