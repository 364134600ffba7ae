// load_container_to_device (io/hdf5/device_load.hpp, specs/container.md "Loading to the
// device"): every format, compressed and not, arrives in device memory bit for bit as
// read_container reads it; datasets our decoder leaves to HDF5 load too; corrupt chunks,
// lies and short device memory are refused with the right category, naming the file and the
// object. Every test skips without a GPU.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstdint>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "convert/graph.hpp"
#include "formats/any_device_matrix.hpp"
#include "formats/device.hpp"
#include "io/hdf5/container.hpp"
#include "io/hdf5/device_load.hpp"
#include "io/hdf5/h5.hpp"
#include "tests/support/expect.hpp"
#include "tests/support/matrices.hpp"

using namespace spconv;
namespace fs = std::filesystem;

namespace {

// More than 2^20 entries: the nnz-long arrays span two chunks, the second one partial.
const csr<double, std::int32_t>& large() {
  static const csr<double, std::int32_t> a = test::random_csr(150000, 150000, 8.0, 41);
  return a;
}

std::vector<any_matrix> every_format(const any_matrix& a, value_type values) {
  convert_options co;
  co.values = values;
  std::vector<any_matrix> out;
  for (std::string_view name : format_list) out.push_back(convert(a, name, co));
  return out;
}

void write(const fs::path& p, const std::vector<any_matrix>& formats, bool zstd) {
  write_options opt;
  opt.comp = {zstd, 3};
  write_container(p, formats, {}, opt);
}

// The message of the spconv::error f() throws ("" if none).
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const error& e) {
    return e.what();
  }
  return "";
}

// Replaces dataset `name` of the container by one of `type`, `n` elements, made by `setup`
// (layout, filters) and holding `data` (nothing written when null), as another writer could.
void replace_dataset(const fs::path& p, const std::string& name, hid_t type, hsize_t n, const void* data,
                     const std::function<void(hid_t)>& setup) {
  auto file = h5::own_file(H5Fopen(p.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), "open");
  h5::check(H5Ldelete(file, name.c_str(), H5P_DEFAULT), "delete");
  auto space = h5::own_space(H5Screate_simple(1, &n, nullptr), "space");
  auto dcpl = h5::own_plist(H5Pcreate(H5P_DATASET_CREATE), "dcpl");
  setup(dcpl);
  auto d = h5::own_dataset(H5Dcreate2(file, name.c_str(), type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), "create");
  if (data) h5::check(H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), "write");
}

// Flips one byte in the middle of the chunk of `dataset` that starts at element `first`, found
// through HDF5's chunk query (a container has no user block: the chunk's address is its file
// offset).
void corrupt_chunk(const fs::path& p, const std::string& dataset, hsize_t first) {
  haddr_t address = 0;
  hsize_t size = 0;
  {
    auto file = h5::own_file(H5Fopen(p.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "open");
    auto d = h5::own_dataset(H5Dopen2(file, dataset.c_str(), H5P_DEFAULT), "open dataset");
    unsigned mask = 0;
    h5::check(H5Dget_chunk_info_by_coord(d, &first, &mask, &address, &size), "chunk info");
  }
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  const auto at = static_cast<std::streamoff>(address + size / 2);
  f.seekg(at);
  const char c = static_cast<char>(f.get() ^ 0x5a);
  f.seekp(at);
  f.put(c);
}

}  // namespace

TEST(GpuLoad, EveryFormatArrivesAsReadContainerReadsIt) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  test::temp_dir dir;
  std::vector<test::generated> inputs = {{"large", large()}};
  for (auto& g : test::generator_set())
    if (g.name == "empty_0x0" || g.name == "all_rows_empty_7x9" || g.name == "power_law_2000") inputs.push_back(g);
  for (const auto& in : inputs)
    for (const value_type vt : {value_type::f64, value_type::f32}) {
      const std::vector<any_matrix> formats = every_format(in.a, vt);
      for (const bool zstd : {true, false}) {
        SCOPED_TRACE(in.name + (vt == value_type::f64 ? " float64 " : " float32 ") + (zstd ? "zstd" : "none"));
        const fs::path p = dir / (in.name + (vt == value_type::f64 ? ".f64" : ".f32") + (zstd ? ".z.h5" : ".n.h5"));
        write(p, formats, zstd);
        for (std::string_view name : format_list) {
          SCOPED_TRACE(std::string(name));
          const any_matrix host = read_container(p, std::string(name));
          device_load_stats stats;
          device_load_options opt;
          opt.stats = &stats;
          const any_device_matrix dev = load_container_to_device(p, std::string(name), ctx, opt);
          EXPECT_EQ(format_name(dev), name);
          EXPECT_TRUE(equal(to_host(dev), host));
          // Our own files never need HDF5 to read their arrays.
          EXPECT_EQ(stats.datasets_through_hdf5, 0);
          EXPECT_EQ(stats.device_bytes, device_bytes(dev));
        }
      }
    }
}

TEST(GpuLoad, SmallStagingBuffersFewThreadsAndValidation) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  test::temp_dir dir;
  const fs::path p = dir / "a.h5";
  write(p, every_format(large(), value_type::f64), true);
  device_load_options opt;
  opt.threads = 3;
  opt.staging_buffer_bytes = 64 << 10;  // many pieces per chunk: the ring's 5 buffers reused often
  opt.validate = true;
  for (std::string_view name : format_list) {
    SCOPED_TRACE(std::string(name));
    EXPECT_TRUE(equal(to_host(load_container_to_device(p, std::string(name), ctx, opt)), read_container(p, std::string(name))));
  }
  // "" picks as read_container does: csr when stored.
  EXPECT_TRUE(equal(to_host(load_container_to_device(p, "", ctx)), read_container(p)));
}

TEST(GpuLoad, CorruptChunkIsBadInputNamingFileDatasetAndChunk) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  test::temp_dir dir;
  for (const bool zstd : {true, false}) {
    SCOPED_TRACE(zstd ? "zstd" : "none");
    const fs::path p = dir / (zstd ? "z.h5" : "n.h5");
    write(p, {large()}, zstd);
    corrupt_chunk(p, "/csr/values", hsize_t{1} << 20);  // chunk 1
    test::expect_error([&] { load_container_to_device(p, "csr", ctx); }, errc::bad_input,
                       p.string() + ": /csr/values: chunk 1 (elements 1048576 to ");
    const std::string msg = error_of([&] { load_container_to_device(p, "csr", ctx); });
    EXPECT_NE(msg.find("Fletcher32 checksum mismatch"), std::string::npos) << msg;
    // HDF5 agrees that the chunk is bad.
    test::expect_error([&] { read_container(p, "csr"); }, errc::bad_input, "/csr/values");
  }
}

TEST(GpuLoad, LiesAreRefusedAsReadContainerRefusesThem) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  test::temp_dir dir;
  const csr<double, std::int32_t> a = test::random_csr(300, 200, 5.0, 42);
  auto same_refusal = [&](const fs::path& p, const std::string& format, errc code, const std::string& fragment) {
    const std::string host = error_of([&] { read_container(p, format); });
    EXPECT_NE(host.find(fragment), std::string::npos) << host;
    test::expect_error([&] { load_container_to_device(p, format, ctx); }, code, fragment);
    EXPECT_EQ(error_of([&] { load_container_to_device(p, format, ctx); }), host);
  };
  const fs::path missing = dir / "missing.h5";
  write(missing, {a}, true);
  {
    auto file = h5::own_file(H5Fopen(missing.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), "open");
    h5::check(H5Ldelete(file, "/csr/indices_1", H5P_DEFAULT), "delete");
  }
  same_refusal(missing, "csr", errc::bad_input, "/csr/indices_1: dataset is missing");
  same_refusal(missing, "hyb", errc::usage, "has no 'hyb' format");

  // An extent beyond the container's limit, chunks never written: refused before allocating.
  const fs::path huge = dir / "huge.h5";
  write(huge, {a}, true);
  replace_dataset(huge, "/csr/values", H5T_IEEE_F64LE, hsize_t{1} << 40, nullptr, [](hid_t dcpl) {
    const hsize_t chunk = 1 << 20;
    h5::check(H5Pset_chunk(dcpl, 1, &chunk), "chunk");
  });
  same_refusal(huge, "csr", errc::bad_input, "/csr/values: has 1099511627776 elements, beyond the container limit");

  // A float32 dataset where float64 is declared.
  const fs::path type = dir / "type.h5";
  write(type, {a}, false);
  const std::vector<float> v(a.values.begin(), a.values.end());
  replace_dataset(type, "/csr/values", H5T_IEEE_F32LE, v.size(), v.data(), [](hid_t) {});
  same_refusal(type, "csr", errc::bad_input, "/csr/values: element type float32, expected float64");
}

TEST(GpuLoad, DatasetsOurDecoderLeavesToHdf5LoadToo) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  test::temp_dir dir;
  const fs::path p = dir / "foreign.h5";
  write(p, {large()}, true);
  // gzip-compressed values in small chunks, big-endian contiguous column indices: what another
  // writer may produce and read_container accepts.
  replace_dataset(p, "/csr/values", H5T_IEEE_F64LE, large().values.size(), large().values.data(), [](hid_t dcpl) {
    const hsize_t chunk = 300000;
    h5::check(H5Pset_chunk(dcpl, 1, &chunk), "chunk");
    h5::check(H5Pset_deflate(dcpl, 1), "deflate");
  });
  {
    auto file = h5::own_file(H5Fopen(p.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), "open");
    h5::check(H5Ldelete(file, "/csr/indices_1", H5P_DEFAULT), "delete");
    const hsize_t n = large().col_idx.size();
    auto space = h5::own_space(H5Screate_simple(1, &n, nullptr), "space");
    auto d = h5::own_dataset(
        H5Dcreate2(file, "/csr/indices_1", H5T_STD_I32BE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "create");
    h5::check(H5Dwrite(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, large().col_idx.data()), "write");
  }
  device_load_stats stats;
  device_load_options opt;
  opt.stats = &stats;
  opt.staging_buffer_bytes = 1 << 20;  // several H5Dread pieces per dataset
  const any_device_matrix dev = load_container_to_device(p, "csr", ctx, opt);
  EXPECT_TRUE(equal(to_host(dev), read_container(p, "csr")));
  EXPECT_TRUE(equal(to_host(dev), any_matrix(large())));
  EXPECT_EQ(stats.datasets_through_hdf5, 2);
  EXPECT_EQ(stats.datasets_decoded, 1);  // pointers_to_1 as spconv wrote it
}

TEST(GpuLoad, ValidateRefusesWhatChecksumsCannotSee) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  test::temp_dir dir;
  const csr<double, std::int32_t> a = test::random_csr(300, 200, 5.0, 43);
  const fs::path p = dir / "lie.h5";
  write(p, {a}, true);
  // Column indices out of range, in a dataset with a correct checksum: only validate() sees it.
  std::vector<std::int32_t> cols(a.col_idx.size(), static_cast<std::int32_t>(a.cols));
  replace_dataset(p, "/csr/indices_1", H5T_STD_I32LE, cols.size(), cols.data(), [&](hid_t dcpl) {
    const hsize_t chunk = cols.size();
    h5::check(H5Pset_chunk(dcpl, 1, &chunk), "chunk");
    h5::check(H5Pset_fletcher32(dcpl), "fletcher32");
  });
  const std::string host = error_of([&] { read_container(p, "csr"); });
  ASSERT_NE(host.find("out of range"), std::string::npos) << host;
  // Without validation the arrays arrive as stored.
  const any_matrix loaded = to_host(load_container_to_device(p, "csr", ctx));
  const auto& m = std::get<csr<double, std::int32_t>>(loaded);
  EXPECT_EQ(std::vector<std::int32_t>(m.col_idx.begin(), m.col_idx.end()), cols);
  device_load_options opt;
  opt.validate = true;
  test::expect_error([&] { load_container_to_device(p, "csr", ctx, opt); }, errc::bad_input, "out of range");
  EXPECT_EQ(error_of([&] { load_container_to_device(p, "csr", ctx, opt); }), host);
}

TEST(GpuLoad, ShortDeviceMemoryIsDeviceErrorNamingTheArray) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  gpu_context ctx;
  test::temp_dir dir;
  const fs::path p = dir / "tall.h5";
  csr<double, std::int64_t> a;
  a.rows = a.cols = 1;
  a.row_ptr = {0, 0};
  write(p, {a}, true);
  // 2^36 rows, no entries: row pointers of 2^36 + 1 int64 (512 GiB) are within the container's
  // limit, so every check passes and the allocation is what fails.
  const std::int64_t rows = std::int64_t{1} << 36;
  {
    auto file = h5::own_file(H5Fopen(p.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), "open");
    auto attr = h5::own_attr(H5Aopen(file, "shape", H5P_DEFAULT), "shape");
    const std::int64_t shape[2] = {rows, 1};
    h5::check(H5Awrite(attr, H5T_NATIVE_INT64, shape), "write shape");
  }
  replace_dataset(p, "/csr/pointers_to_1", H5T_STD_I64LE, static_cast<hsize_t>(rows) + 1, nullptr, [](hid_t dcpl) {
    const hsize_t chunk = 1 << 20;
    h5::check(H5Pset_chunk(dcpl, 1, &chunk), "chunk");
  });
  test::expect_error([&] { load_container_to_device(p, "csr", ctx); }, errc::device,
                     p.string() + ": /csr/pointers_to_1: ");
  const std::string msg = error_of([&] { load_container_to_device(p, "csr", ctx); });
  EXPECT_NE(msg.find("out of device memory"), std::string::npos) << msg;
}
