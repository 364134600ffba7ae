// The raw chunk path of the device loader (io/hdf5/chunks.hpp), against HDF5 itself: our
// Fletcher32 equals the checksums HDF5 stored, our unshuffle undoes HDF5's shuffle, chunk
// addresses are where H5Dread_chunk finds the bytes, and our decoder turns the chunks of our
// own containers into exactly what H5Dread returns, refusing corrupt ones.
#include <gtest/gtest.h>
#include <zstd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "formats/array.hpp"
#include "io/hdf5/chunks.hpp"
#include "io/hdf5/container.hpp"
#include "io/hdf5/h5.hpp"
#include "io/hdf5/zstd_filter.hpp"
#include "tests/support/matrices.hpp"

using namespace spconv;
namespace fs = std::filesystem;

namespace {

using byte_vec = std::vector<unsigned char>;

// One 1-D chunked dataset "d" of `type` (element size from it) holding `data`, with the
// filters `add_filters` puts on the creation properties.
template <class F>
void write_dataset(const fs::path& p, hid_t type, const byte_vec& data, hsize_t chunk, F&& add_filters) {
  h5::register_zstd_filter();
  const hsize_t n = data.size() / H5Tget_size(type);
  auto file = h5::own_file(H5Fcreate(p.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), "create");
  auto space = h5::own_space(H5Screate_simple(1, &n, nullptr), "space");
  auto dcpl = h5::own_plist(H5Pcreate(H5P_DATASET_CREATE), "dcpl");
  h5::check(H5Pset_chunk(dcpl, 1, &chunk), "chunk");
  add_filters(static_cast<hid_t>(dcpl));
  auto d = h5::own_dataset(H5Dcreate2(file, "d", type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), "dataset");
  h5::check(H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()), "write");
}

// The chunk at element `offset` as stored, through HDF5 (H5Dread_chunk).
byte_vec read_chunk_raw(hid_t dset, hsize_t offset, unsigned* mask = nullptr) {
  hsize_t size = 0;
  h5::check(H5Dget_chunk_storage_size(dset, &offset, &size), "chunk size");
  byte_vec raw(size);
  std::uint32_t filters = 0;
  h5::check(H5Dread_chunk(dset, H5P_DEFAULT, &offset, &filters, raw.data()), "read chunk");
  if (mask) *mask = filters;
  return raw;
}

byte_vec random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  byte_vec b(n);
  for (auto& x : b) x = static_cast<unsigned char>(rng());
  return b;
}

byte_vec file_range(const fs::path& p, std::uint64_t offset, std::size_t n) {
  std::ifstream in(p, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset));
  byte_vec b(n);
  in.read(reinterpret_cast<char*>(b.data()), static_cast<std::streamsize>(n));
  return in.gcount() == static_cast<std::streamsize>(n) ? b : byte_vec{};
}

std::uint32_t little_endian(const unsigned char* p) {
  return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 | std::uint32_t{p[3]} << 24;
}

}  // namespace

TEST(ContainerChunks, Fletcher32EqualsTheChecksumsHdf5Stored) {
  test::temp_dir dir;
  // Odd chunk sizes (a last half word), a chunk of several 360-word blocks plus a rest, data
  // all zero (checksum 0), all 0xff (sums that are positive multiples of 65535) and random.
  struct sample {
    std::string name;
    byte_vec data;
    hsize_t chunk;
  };
  std::vector<sample> cases = {
      {"random_odd_chunks", random_bytes(1001, 1), 7},
      {"random_long_chunks", random_bytes(10000, 2), 4321},
      {"zeros", byte_vec(3000, 0), 1000},
      {"all_ff", byte_vec(2 * 65535 + 6, 0xff), 65535},
      {"sparse_bytes", [] {
         byte_vec b(5000, 0);
         for (std::size_t i = 0; i < b.size(); i += 97) b[i] = 0x80;
         return b;
       }(), 1999},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const fs::path p = dir / (c.name + ".h5");
    write_dataset(p, H5T_STD_U8LE, c.data, c.chunk, [](hid_t dcpl) { h5::check(H5Pset_fletcher32(dcpl), "f32"); });
    auto file = h5::own_file(H5Fopen(p.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "open");
    auto d = h5::own_dataset(H5Dopen2(file, "d", H5P_DEFAULT), "open d");
    for (hsize_t off = 0; off < c.data.size(); off += c.chunk) {
      const byte_vec raw = read_chunk_raw(d, off);
      ASSERT_EQ(raw.size(), c.chunk + 4);
      const std::size_t n = raw.size() - 4;
      const std::uint32_t ours = h5::fletcher32_of(raw.data(), n);
      EXPECT_EQ(ours, little_endian(raw.data() + n)) << "chunk at " << off;
      EXPECT_TRUE(h5::fletcher32_matches(ours, raw.data() + n));
      // The same checksum fed in even pieces of varied lengths.
      h5::fletcher32 pieces;
      std::size_t at = 0;
      for (std::size_t len = 2; at < n; len = len * 3 % 998 + 2) {
        const std::size_t take = std::min(len, n - at);
        pieces.update(raw.data() + at, take);
        at += take;
      }
      EXPECT_EQ(pieces.value(), ours);
      // One flipped bit is caught.
      byte_vec bad = raw;
      bad[n / 2] ^= 0x10;
      EXPECT_FALSE(h5::fletcher32_matches(h5::fletcher32_of(bad.data(), n), raw.data() + n));
    }
  }
  if (HasFailure()) return;
  // The checksums of an all-zero chunk and of an all-0xff one, as HDF5 defines them.
  const byte_vec zeros(10, 0), ff(10, 0xff);
  EXPECT_EQ(h5::fletcher32_of(zeros.data(), zeros.size()), 0u);
  EXPECT_EQ(h5::fletcher32_of(ff.data(), ff.size()), 0xffffffffu);
}

TEST(ContainerChunks, Fletcher32AcceptsTheHalfSwappedChecksumOfOldHdf5) {
  const byte_vec data = random_bytes(4096, 3);
  const std::uint32_t sum = h5::fletcher32_of(data.data(), data.size());
  auto stored = [](std::uint32_t v) {
    return std::vector<unsigned char>{static_cast<unsigned char>(v), static_cast<unsigned char>(v >> 8),
                                      static_cast<unsigned char>(v >> 16), static_cast<unsigned char>(v >> 24)};
  };
  // HDF5 before 1.6.3 wrote each 16-bit half byte-swapped on little-endian machines.
  const std::uint32_t swapped = ((sum & 0x00ff00ffu) << 8) | ((sum >> 8) & 0x00ff00ffu);
  EXPECT_TRUE(h5::fletcher32_matches(sum, stored(sum).data()));
  EXPECT_TRUE(h5::fletcher32_matches(sum, stored(swapped).data()));
  for (const std::uint32_t other : {sum ^ 1u, sum ^ 0x10000u, (sum << 16) | (sum >> 16)})
    if (other != sum && other != swapped) {
      EXPECT_FALSE(h5::fletcher32_matches(sum, stored(other).data())) << other;
    }
}

TEST(ContainerChunks, UnshuffleUndoesHdf5Shuffle) {
  test::temp_dir dir;
  // Element sizes 2, 4, 8 (the unrolled paths), 3 (an opaque type: the general path) and 1
  // (shuffle leaves bytes in place).
  auto opaque3 = h5::own_type(H5Tcreate(H5T_OPAQUE, 3), "opaque");
  const hid_t types[] = {H5T_STD_I16LE, H5T_IEEE_F32LE, H5T_IEEE_F64LE, opaque3, H5T_STD_U8LE};
  for (hid_t type : types) {
    const std::size_t size = H5Tget_size(type);
    SCOPED_TRACE("element size " + std::to_string(size));
    const std::size_t elements = 2500, chunk = 1000;  // a partial last chunk
    const byte_vec data = random_bytes(elements * size, size);
    const fs::path p = dir / ("shuffle" + std::to_string(size) + ".h5");
    write_dataset(p, type, data, chunk, [](hid_t dcpl) {
      h5::check(H5Pset_shuffle(dcpl), "shuffle");
      h5::check(H5Pset_fletcher32(dcpl), "f32");
    });
    auto file = h5::own_file(H5Fopen(p.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "open");
    auto d = h5::own_dataset(H5Dopen2(file, "d", H5P_DEFAULT), "open d");
    for (std::size_t off = 0; off < elements; off += chunk) {
      const byte_vec raw = read_chunk_raw(d, off);
      ASSERT_EQ(raw.size(), chunk * size + 4);
      const std::size_t valid = std::min(chunk, elements - off);
      byte_vec out(valid * size);
      h5::unshuffle(raw.data(), chunk, size, 0, valid, out.data());
      EXPECT_EQ(out, byte_vec(data.begin() + off * size, data.begin() + (off + valid) * size)) << "chunk at " << off;
      // A middle range alone, as the loader fills one staging buffer.
      byte_vec part((valid / 2) * size);
      h5::unshuffle(raw.data(), chunk, size, valid / 4, valid / 4 + valid / 2, part.data());
      EXPECT_EQ(part, byte_vec(out.begin() + (valid / 4) * size, out.begin() + (valid / 4 + valid / 2) * size));
    }
  }
}

TEST(ContainerChunks, DecodableFiltersAreShuffleZstdFletcherInThatOrder) {
  h5::register_zstd_filter();
  auto make = [](auto&& add) {
    auto dcpl = h5::own_plist(H5Pcreate(H5P_DATASET_CREATE), "dcpl");
    const hsize_t chunk = 16;
    h5::check(H5Pset_chunk(dcpl, 1, &chunk), "chunk");
    add(static_cast<hid_t>(dcpl));
    return dcpl;
  };
  const unsigned level = 3, element = 8;
  // What spconv writes once set_local has run: shuffle's parameter is the element size.
  auto ours = make([&](hid_t p) {
    H5Pset_filter(p, H5Z_FILTER_SHUFFLE, H5Z_FLAG_OPTIONAL, 1, &element);
    H5Pset_filter(p, h5::zstd_filter_id, H5Z_FLAG_MANDATORY, 1, &level);
    H5Pset_fletcher32(p);
  });
  const auto all = h5::decodable_filters(ours, 8);
  ASSERT_TRUE(all.has_value());
  EXPECT_EQ(all->shuffle, 0);
  EXPECT_EQ(all->zstd, 1);
  EXPECT_EQ(all->fletcher32, 2);
  EXPECT_FALSE(h5::decodable_filters(ours, 4).has_value());  // shuffled by another size
  auto checksum_only = make([](hid_t p) { H5Pset_fletcher32(p); });
  const auto f = h5::decodable_filters(checksum_only, 8);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->shuffle, -1);
  EXPECT_EQ(f->zstd, -1);
  EXPECT_EQ(f->fletcher32, 0);
  auto none = make([](hid_t) {});
  EXPECT_TRUE(h5::decodable_filters(none, 8).has_value());
  auto gzip = make([](hid_t p) { H5Pset_deflate(p, 1); });
  EXPECT_FALSE(h5::decodable_filters(gzip, 8).has_value());
  auto checksum_first = make([&](hid_t p) {
    H5Pset_fletcher32(p);
    H5Pset_filter(p, h5::zstd_filter_id, H5Z_FLAG_MANDATORY, 1, &level);
  });
  EXPECT_FALSE(h5::decodable_filters(checksum_first, 8).has_value());
}

TEST(ContainerChunks, DecoderTurnsOurChunksIntoWhatH5DreadReturns) {
  test::temp_dir dir;
  // More than 2^20 entries: values and col_idx span two chunks, the second one partial.
  const csr<double, std::int32_t> a = test::random_csr(150000, 150000, 8.0, 21);
  ASSERT_GT(a.nnz(), 1 << 20);
  for (const bool zstd : {true, false}) {
    SCOPED_TRACE(zstd ? "zstd" : "none");
    const fs::path p = dir / (zstd ? "z.h5" : "n.h5");
    write_options opt;
    opt.comp = {zstd, 3};
    write_container(p, {a}, {}, opt);
    auto file = h5::own_file(H5Fopen(p.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "open");
    for (const char* name : {"csr/values", "csr/indices_1", "csr/pointers_to_1"}) {
      SCOPED_TRACE(name);
      auto d = h5::own_dataset(H5Dopen2(file, name, H5P_DEFAULT), "open");
      auto type = h5::own_type(H5Dget_type(d), "type");
      const std::size_t size = H5Tget_size(type);
      auto dcpl = h5::own_plist(H5Dget_create_plist(d), "dcpl");
      hsize_t chunk = 0;
      ASSERT_EQ(H5Pget_chunk(dcpl, 1, &chunk), 1);
      auto space = h5::own_space(H5Dget_space(d), "space");
      const auto elements = static_cast<std::uint64_t>(H5Sget_simple_extent_npoints(space));
      byte_vec all(elements * size);
      h5::check(H5Dread(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, all.data()), "read");

      const auto f = h5::decodable_filters(dcpl, size);
      ASSERT_TRUE(f.has_value());
      EXPECT_EQ(f->shuffle, zstd ? 0 : -1);
      EXPECT_EQ(f->zstd, zstd ? 1 : -1);
      EXPECT_EQ(f->fletcher32, zstd ? 2 : 0);
      const auto chunks = h5::locate_chunks(d, elements, chunk);
      ASSERT_TRUE(chunks.has_value());
      ASSERT_EQ(chunks->size(), (elements + chunk - 1) / chunk);
      h5::chunk_decoder decoder;
      for (std::size_t k = 0; k < chunks->size(); ++k) {
        const h5::chunk_location& c = (*chunks)[k];
        EXPECT_EQ(c.first, k * chunk);
        EXPECT_EQ(c.filter_mask, 0u);
        // The address is the file offset (no user block): the bytes there are the chunk.
        const byte_vec raw = read_chunk_raw(d, c.first);
        ASSERT_EQ(raw.size(), c.stored_bytes);
        EXPECT_LE(c.stored_bytes, h5::max_stored_bytes(*f, c.filter_mask, chunk * size));
        ASSERT_EQ(file_range(p, c.address, c.stored_bytes), raw);
        byte_vec decoded(chunk * size);
        EXPECT_EQ(decoder.decode(*f, c.filter_mask, raw.data(), raw.size(), decoded.data(), decoded.size()), "");
        const std::size_t valid = std::min<std::uint64_t>(chunk, elements - c.first);
        byte_vec out(valid * size);
        if (h5::applied(f->shuffle, c.filter_mask)) h5::unshuffle(decoded.data(), chunk, size, 0, valid, out.data());
        else std::memcpy(out.data(), decoded.data(), out.size());
        EXPECT_TRUE(std::equal(out.begin(), out.end(), all.begin() + c.first * size)) << "chunk " << k;
      }
    }
  }
}

TEST(ContainerChunks, DecoderRefusesCorruptChunks) {
  h5::chunk_decoder decoder;
  const byte_vec data = random_bytes(8192, 4);
  byte_vec frame(ZSTD_compressBound(data.size()));
  frame.resize(ZSTD_compress(frame.data(), frame.size(), data.data(), data.size(), 3));
  auto with_checksum = [](byte_vec b) {
    const std::uint32_t sum = h5::fletcher32_of(b.data(), b.size());
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<unsigned char>(sum >> (8 * i)));
    return b;
  };
  const h5::raw_filters f{-1, 0, 1};  // zstd, then Fletcher32
  byte_vec out(data.size());
  auto decode = [&](const byte_vec& stored, unsigned mask = 0, std::size_t chunk_bytes = 8192) {
    out.assign(chunk_bytes, 0);
    return decoder.decode(f, mask, stored.data(), stored.size(), out.data(), chunk_bytes);
  };
  const byte_vec good = with_checksum(frame);
  EXPECT_EQ(decode(good), "");
  EXPECT_EQ(out, data);

  byte_vec flipped = good;
  flipped[flipped.size() / 2] ^= 1;
  EXPECT_NE(decode(flipped).find("Fletcher32 checksum mismatch"), std::string::npos);
  EXPECT_NE(decode(byte_vec{1, 2}).find("too short for its checksum"), std::string::npos);
  // With valid checksums, what the zstd filter refuses (specs/container.md, section 4).
  EXPECT_NE(decode(with_checksum(data)).find("not a zstd frame"), std::string::npos);
  byte_vec trailing = frame;
  trailing.push_back(0);
  EXPECT_NE(decode(with_checksum(trailing)).find("beyond its zstd frame"), std::string::npos);
  byte_vec truncated(frame.begin(), frame.end() - 5);
  EXPECT_NE(decode(with_checksum(truncated)).find("truncated or corrupt frame"), std::string::npos);
  EXPECT_NE(decode(good, 0, 4096).find("decodes to 8192 bytes, the chunk holds 4096"), std::string::npos);
  // zstd skipped for this chunk (mask bit 0): the stored bytes must be the whole chunk.
  EXPECT_EQ(decode(with_checksum(data), 1u), "");
  EXPECT_EQ(out, data);
  EXPECT_NE(decode(with_checksum(frame), 1u).find("the chunk holds 8192"), std::string::npos);
}

TEST(ContainerChunks, LocateChunksFindsUnallocatedOnes) {
  test::temp_dir dir;
  const fs::path p = dir / "partial.h5";
  {
    const hsize_t n = 3000, chunk = 1000;
    auto file = h5::own_file(H5Fcreate(p.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), "create");
    auto space = h5::own_space(H5Screate_simple(1, &n, nullptr), "space");
    auto dcpl = h5::own_plist(H5Pcreate(H5P_DATASET_CREATE), "dcpl");
    h5::check(H5Pset_chunk(dcpl, 1, &chunk), "chunk");
    h5::check(H5Pset_fletcher32(dcpl), "f32");
    auto d = h5::own_dataset(H5Dcreate2(file, "d", H5T_STD_I32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), "dataset");
    // Only elements [0, 1000): chunks 1 and 2 are never written.
    const hsize_t start = 0, count = 1000;
    h5::check(H5Sselect_hyperslab(space, H5S_SELECT_SET, &start, nullptr, &count, nullptr), "select");
    auto mem = h5::own_space(H5Screate_simple(1, &count, nullptr), "mem");
    std::vector<std::int32_t> v(count, 7);
    h5::check(H5Dwrite(d, H5T_NATIVE_INT32, mem, space, H5P_DEFAULT, v.data()), "write");
  }
  auto file = h5::own_file(H5Fopen(p.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "open");
  auto d = h5::own_dataset(H5Dopen2(file, "d", H5P_DEFAULT), "open d");
  EXPECT_FALSE(h5::locate_chunks(d, 3000, 1000).has_value());
  const auto first = h5::locate_chunks(d, 1000, 1000);  // the allocated chunk alone
  ASSERT_TRUE(first.has_value());
  ASSERT_EQ(first->size(), 1u);
  EXPECT_EQ((*first)[0].stored_bytes, 4004u);
}
