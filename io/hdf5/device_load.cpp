// load_container_to_device (specs/container.md, "Loading to the device"). Three phases:
//  1. under the HDF5 lock: every check of read_container that precedes reading (shared code,
//     io/hdf5/container_read.hpp), each dataset's chunk locations and filters, the device
//     arrays allocated, and the datasets our decoder does not handle read by HDF5 (H5Dread of
//     staging-sized pieces);
//  2. without the lock (no HDF5 call): the remaining chunks read from the file with pread and
//     checked by several threads; uncompressed ones straight into a ring of pinned buffers,
//     compressed or shuffled ones decompressed into a pinned buffer per thread (and unshuffled
//     on the device); each copied to the device with cudaMemcpyAsync on ctx's stream while the
//     threads go on;
//  3. optionally (device_load_options::validate) read_container's content checks on a host copy.
#ifdef SPCONV_HAVE_CUDA
#include "io/hdf5/device_load.hpp"

#include <cuda_runtime.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "formats/parallel.hpp"
#include "io/hdf5/chunks.hpp"
#include "io/hdf5/container_read.hpp"
#include "io/hdf5/device_unshuffle.hpp"
#include "io/hdf5/h5.hpp"
#include "io/hdf5/zstd_filter.hpp"

namespace spconv {
namespace {

using namespace container_detail;
using clock_type = std::chrono::steady_clock;
using lock_type = std::unique_lock<std::recursive_mutex>;

// Chunks larger than this go through HDF5: each decoding thread holds one chunk decoded (and
// one stored) in its own memory. spconv writes chunks of 2^20 elements, at most 8 MiB.
constexpr std::size_t max_decoded_chunk_bytes = std::size_t{16} << 20;
// Below this average chunk size (several chunks), one chunk-index lookup per chunk would cost
// more than it saves: HDF5 reads such datasets.
constexpr std::size_t min_chunk_bytes = std::size_t{64} << 10;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// Releases the HDF5 lock for work that makes no HDF5 call and takes it back at the end, also
// when unwinding, so that the identifiers still open are closed under it.
class unlocked {
 public:
  explicit unlocked(lock_type& l) : l_(l) { l_.unlock(); }
  ~unlocked() { l_.lock(); }
  unlocked(const unlocked&) = delete;
  unlocked& operator=(const unlocked&) = delete;

 private:
  lock_type& l_;
};

// ---- the file's bytes ------------------------------------------------------------------------

// A duplicate of the descriptor HDF5 opened the file with (the same file, even if the path
// is replaced meanwhile), when chunk addresses are file offsets: the default sec2 driver and no
// user block (HDF5 addresses count from the end of a user block). Otherwise fd < 0 and HDF5
// reads every dataset.
struct raw_file {
  int fd = -1;
  std::uint64_t size = 0;
  raw_file() = default;
  raw_file(const raw_file&) = delete;
  raw_file& operator=(const raw_file&) = delete;
  ~raw_file() {
    if (fd >= 0) ::close(fd);
  }
};

void open_raw(const source& s, hid_t file, raw_file& raw) {
  // The decoder copies elements as stored: little-endian, the host's order.
  if constexpr (std::endian::native != std::endian::little) return;
  auto fapl = h5::own_plist(H5Fget_access_plist(file), "file access properties");
  if (H5Pget_driver(fapl) != H5FD_SEC2) return;
  auto fcpl = h5::own_plist(H5Fget_create_plist(file), "file creation properties");
  hsize_t user_block = 0;
  h5::check(H5Pget_userblock(fcpl, &user_block), "user block size");
  if (user_block != 0) return;
  void* handle = nullptr;
  h5::check(H5Fget_vfd_handle(file, H5P_DEFAULT, &handle), "file descriptor");
  raw.fd = ::fcntl(*static_cast<const int*>(handle), F_DUPFD_CLOEXEC, 0);
  if (raw.fd < 0) fail(errc::io, s.path + ": cannot duplicate its descriptor: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(raw.fd, &st) != 0) fail(errc::io, s.path + ": cannot stat: " + std::strerror(errno));
  raw.size = static_cast<std::uint64_t>(st.st_size);
}

// Reads exactly `bytes` at `offset` (the plan checked that they lie within the file).
void read_exact(const source& s, int fd, void* buf, std::size_t bytes, std::uint64_t offset) {
  auto* p = static_cast<unsigned char*>(buf);
  while (bytes > 0) {
    const ssize_t got = ::pread(fd, p, bytes, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail(errc::io, s.path + ": cannot read: " + std::strerror(errno));
    if (got == 0) fail(errc::io, s.path + ": cannot read: the file shrank while being read");
    p += got;
    bytes -= static_cast<std::size_t>(got);
    offset += static_cast<std::uint64_t>(got);
  }
}

// ---- the plan: one per array ----------------------------------------------------------------

struct array_plan {
  std::string obj;  // "/csr/values", for messages
  std::size_t element = 0;
  std::uint64_t elements = 0;
  hid_t memory_type = H5I_INVALID_HID;  // what H5Dread converts to
  unsigned char* device = nullptr;      // the device array
  // Decoded by spconv: filters and chunks. Otherwise `dataset` is open for H5Dread.
  bool decoded = false;
  h5::raw_filters filters;
  std::uint64_t chunk_elements = 0;
  std::vector<h5::chunk_location> chunks;
  h5::handle dataset;
};

// The chunk locations of a dataset spconv decodes; nullopt when a chunk is not allocated (HDF5
// reads the dataset then). A chunk stored larger than its filters produce, or beyond the end of
// the file, is a lie (errc::bad_input), as HDF5's read of it would fail.
std::optional<std::vector<h5::chunk_location>> decodable_chunks(const source& s, const array_plan& p, hid_t dset,
                                                                const raw_file& raw) {
  auto chunks = h5::locate_chunks(dset, p.elements, p.chunk_elements);
  if (!chunks) return std::nullopt;
  const std::size_t chunk_bytes = p.chunk_elements * p.element;
  for (std::size_t k = 0; k < chunks->size(); ++k) {
    const h5::chunk_location& c = (*chunks)[k];
    const std::string where = "chunk " + std::to_string(k);
    // A lying chunk index must size no buffer and send no read past the file's end.
    if (c.stored_bytes > h5::max_stored_bytes(p.filters, c.filter_mask, chunk_bytes))
      s.lie(p.obj, where + " is stored as " + std::to_string(c.stored_bytes) + " bytes, more than its filters produce for " +
                       std::to_string(chunk_bytes) + " bytes");
    if (c.address > raw.size || c.stored_bytes > raw.size - c.address)
      s.lie(p.obj, where + " lies beyond the end of the file");
  }
  return chunks;
}

array_plan plan_dataset(const source& s, hid_t group, const std::string& gobj, const std::string& rel,
                        checked_dataset d, std::size_t element, hid_t memory_type, const raw_file& raw) {
  array_plan p;
  p.obj = gobj + "/" + rel;
  p.element = element;
  p.elements = d.elements;
  p.memory_type = memory_type;
  if (p.elements == 0) {
    p.decoded = true;  // nothing to read
    return p;
  }
  auto dcpl = h5::own_plist(H5Dget_create_plist(d.dataset), p.obj + ": properties");
  const bool chunked = H5Pget_layout(dcpl) == H5D_CHUNKED;
  hsize_t chunk = 0;
  if (chunked && H5Pget_chunk(dcpl, 1, &chunk) != 1) h5::raise(p.obj + ": chunking");
  const std::size_t chunk_bytes = static_cast<std::size_t>(chunk) * element;
  if (raw.fd >= 0 && !d.big_endian && chunked && chunk_bytes <= max_decoded_chunk_bytes &&
      (chunk >= p.elements || chunk_bytes >= min_chunk_bytes)) {
    if (const auto filters = h5::decodable_filters(dcpl, element)) {
      p.filters = *filters;
      p.chunk_elements = chunk;
      if (auto chunks = decodable_chunks(s, p, d.dataset, raw)) {
        p.decoded = true;
        p.chunks = std::move(*chunks);
        return p;
      }
    }
  }
  // HDF5 reads it, by pieces of a staging buffer: reopened with a chunk cache that holds a
  // whole chunk, so that each chunk is decoded once, not once per piece.
  auto dapl = h5::own_plist(H5Pcreate(H5P_DATASET_ACCESS), p.obj + ": access properties");
  if (chunked)
    h5::check(H5Pset_chunk_cache(dapl, 521, std::max<std::size_t>(chunk_bytes, std::size_t{1} << 20), 1.0),
              p.obj + ": chunk cache");
  p.dataset = h5::own_dataset(H5Dopen2(group, rel.c_str(), dapl), p.obj + ": opening");
  return p;
}

template <class T>
array_plan plan_array(const source& s, hid_t group, const std::string& gobj, const std::string& rel,
                      std::int64_t limit, const raw_file& raw) {
  return plan_dataset(s, group, gobj, rel, open_dataset<T>(s, group, gobj, rel, limit), sizeof(T),
                      h5::native_type<T>(), raw);
}

// ---- pinned staging: a ring of buffers, each reused once its copy is done ---------------------

class staging {
 public:
  // `memory`: slots * slot_bytes of pinned memory (the context's, see transfer()).
  staging(const source& s, std::size_t slot_bytes, int slots, unsigned char* memory, cudaStream_t stream)
      : s_(s), slot_bytes_(slot_bytes), stream_(stream), memory_(memory), events_(static_cast<std::size_t>(slots), nullptr),
        pending_(static_cast<std::size_t>(slots), 0) {
    try {
      for (int k = 0; k < slots; ++k) {
        // Blocking sync: a thread waiting for a buffer sleeps instead of spinning on a core
        // the other threads decode with.
        check_cuda(cudaEventCreateWithFlags(&events_[k], cudaEventDisableTiming | cudaEventBlockingSync),
                   s_.path + ": creating a staging event");
        free_.push_back(k);
      }
    } catch (...) {
      destroy();
      throw;
    }
  }
  ~staging() { destroy(); }
  staging(const staging&) = delete;
  staging& operator=(const staging&) = delete;

  // One buffer, held until submitted or destroyed.
  class lease {
   public:
    lease(staging& owner, int slot) : owner_(&owner), slot_(slot) {}
    lease(lease&& o) noexcept : owner_(o.owner_), slot_(std::exchange(o.slot_, -1)) {}
    lease(const lease&) = delete;
    lease& operator=(const lease&) = delete;
    ~lease() {
      if (slot_ >= 0) owner_->release(slot_);
    }
    unsigned char* data() const { return owner_->memory_ + static_cast<std::size_t>(slot_) * owner_->slot_bytes_; }

   private:
    friend class staging;
    staging* owner_;
    int slot_;
  };

  std::size_t slot_bytes() const { return slot_bytes_; }

  // The oldest free buffer, once the copy that last read it has finished.
  lease acquire() {
    int k = 0;
    {
      std::unique_lock l(m_);
      cv_.wait(l, [&] { return !free_.empty(); });
      k = free_.front();
      free_.pop_front();
    }
    lease out(*this, k);
    if (pending_[k]) {
      check_cuda(cudaEventSynchronize(events_[k]), s_.path + ": copying to the device");
      pending_[k] = 0;
    }
    return out;
  }

  // Queues the copy of the lease's first `bytes` to `device` and returns the buffer to the ring.
  void submit(lease& l, unsigned char* device, std::size_t bytes) {
    const int k = l.slot_;
    check_cuda(cudaMemcpyAsync(device, l.data(), bytes, cudaMemcpyHostToDevice, stream_),
               s_.path + ": queuing a copy to the device");
    check_cuda(cudaEventRecord(events_[k], stream_), s_.path + ": queuing a copy to the device");
    pending_[k] = 1;
    l.slot_ = -1;
    release(k);
  }

  // Waits for every queued copy.
  void finish() { check_cuda(cudaStreamSynchronize(stream_), s_.path + ": copying to the device"); }

 private:
  void destroy() noexcept {
    // Copies may still read the buffers (after an error elsewhere): wait before they are
    // reused. A failure here was already reported, or is reported by finish().
    cudaStreamSynchronize(stream_);
    for (cudaEvent_t e : events_)
      if (e) cudaEventDestroy(e);
    cudaGetLastError();
  }

  void release(int k) {
    {
      std::lock_guard l(m_);
      free_.push_back(k);
    }
    cv_.notify_one();
  }

  const source& s_;
  std::size_t slot_bytes_;
  cudaStream_t stream_;
  unsigned char* memory_ = nullptr;
  std::vector<cudaEvent_t> events_;
  // pending_[k] (whether an unfinished copy may read buffer k) is touched only by the holder
  // of buffer k; the ring's mutex orders holders. Bytes, not vector<bool>'s shared words.
  std::vector<unsigned char> pending_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<int> free_;
};

// ---- moving the data ------------------------------------------------------------------------------

// A dataset HDF5 reads: H5Dread of staging-sized pieces straight into the pinned buffers
// (HDF5 converts a big-endian twin and applies whatever filters the dataset has).
void read_through_hdf5(const array_plan& p, staging& st) {
  const std::uint64_t per = std::max<std::uint64_t>(1, st.slot_bytes() / p.element);
  auto file_space = h5::own_space(H5Dget_space(p.dataset), p.obj + ": dataspace");
  for (std::uint64_t first = 0; first < p.elements; first += per) {
    const hsize_t start = first, count = std::min(per, p.elements - first);
    h5::check(H5Sselect_hyperslab(file_space, H5S_SELECT_SET, &start, nullptr, &count, nullptr), p.obj + ": selecting");
    auto memory_space = h5::own_space(H5Screate_simple(1, &count, nullptr), p.obj + ": dataspace");
    auto l = st.acquire();
    h5::check(H5Dread(p.dataset, p.memory_type, memory_space, file_space, H5P_DEFAULT, l.data()), p.obj + ": reading");
    st.submit(l, p.device + first * p.element, count * p.element);
  }
}

// What one decoding thread keeps between chunks. A compressed or shuffled chunk is decoded
// straight into the thread's pinned buffer and copied to the device as it is; a shuffled one
// lands in the thread's device scratch and is unshuffled there (io/hdf5/device_unshuffle.hpp),
// which spares the host a pass over every byte. `done` marks when the last copy (and unshuffle)
// that reads those buffers has finished.
struct decoder_state {
  h5::chunk_decoder decoder;
  array<unsigned char> stored;
  unsigned char* pinned = nullptr;
  unsigned char* scratch = nullptr;
  cudaEvent_t done = nullptr;
  bool pending = false;

  decoder_state(const source& s, unsigned char* pinned_chunk, unsigned char* device_chunk)
      : pinned(pinned_chunk), scratch(device_chunk) {
    check_cuda(cudaEventCreateWithFlags(&done, cudaEventDisableTiming | cudaEventBlockingSync),
               s.path + ": creating a decoding event");
  }
  ~decoder_state() {
    if (done) cudaEventDestroy(done);  // a pending event is released once it completes
  }
  decoder_state(const decoder_state&) = delete;
  decoder_state& operator=(const decoder_state&) = delete;
};

// Whether spconv decodes the chunks of `p` into the pinned chunk buffers (any compression or
// shuffle in its pipeline).
bool decodes_into_pinned(const array_plan& p) { return p.decoded && (p.filters.zstd >= 0 || p.filters.shuffle >= 0); }

struct chunk_job {
  std::size_t plan, chunk;
};

// Chunk `index` of `p`: read, checked, decoded and queued for the device (unshuffled there).
void decode_chunk(const source& s, const array_plan& p, std::size_t index, const raw_file& raw, staging& st,
                  decoder_state& ds, gpu_context& ctx) {
  const h5::chunk_location& c = p.chunks[index];
  const std::size_t chunk_bytes = p.chunk_elements * p.element;
  const std::uint64_t valid = std::min(p.chunk_elements, p.elements - c.first);  // the last chunk is partial
  const std::size_t valid_bytes = valid * p.element;
  unsigned char* device = p.device + c.first * p.element;
  auto refuse = [&](const std::string& why) {
    s.lie(p.obj, "chunk " + std::to_string(index) + " (elements " + std::to_string(c.first) + " to " +
                     std::to_string(c.first + valid - 1) + "): " + why);
  };
  const bool checksum = h5::applied(p.filters.fletcher32, c.filter_mask);
  if (!h5::applied(p.filters.zstd, c.filter_mask) && !h5::applied(p.filters.shuffle, c.filter_mask)) {
    // Stored as the elements themselves (and the checksum): read straight into the staging
    // buffers, summed on the way; copies may start before the last piece is summed, but the load
    // fails, and its arrays go, on a mismatch.
    if (c.stored_bytes != chunk_bytes + (checksum ? 4 : 0))
      refuse("stored as " + std::to_string(c.stored_bytes) + " bytes, the chunk holds " + std::to_string(chunk_bytes));
    h5::fletcher32 sum;
    for (std::size_t off = 0; off < chunk_bytes; off += st.slot_bytes()) {
      const std::size_t len = std::min(st.slot_bytes(), chunk_bytes - off);
      auto l = st.acquire();
      read_exact(s, raw.fd, l.data(), len, c.address + off);
      if (checksum) sum.update(l.data(), len);  // every piece but the last has the (even) slot size
      if (off < valid_bytes) st.submit(l, device + off, std::min(len, valid_bytes - off));
    }
    if (checksum) {
      unsigned char stored[4];
      read_exact(s, raw.fd, stored, 4, c.address + chunk_bytes);
      if (const std::string why = h5::fletcher32_refusal(sum.value(), stored); !why.empty()) refuse(why);
    }
    return;
  }
  // Read in pieces, each summed for the checksum while it is still in the cache (rather than a
  // second pass over the chunk from memory); the decoder then skips the checksum it would
  // otherwise verify first (decode's filter mask marks it done).
  if (const std::string why = checksum ? h5::checksum_length_refusal(c.stored_bytes) : ""; !why.empty()) refuse(why);
  const std::size_t body = c.stored_bytes - (checksum ? 4 : 0);
  ds.stored.resize(c.stored_bytes);
  h5::fletcher32 sum;
  constexpr std::size_t piece = std::size_t{256} << 10;  // even: every piece but the last
  for (std::size_t off = 0; off < c.stored_bytes; off += piece) {
    const std::size_t len = std::min(piece, c.stored_bytes - off);
    read_exact(s, raw.fd, ds.stored.data() + off, len, c.address + off);
    if (checksum && off < body) sum.update(ds.stored.data() + off, std::min(len, body - off));
  }
  if (const std::string why = checksum ? h5::fletcher32_refusal(sum.value(), ds.stored.data() + body) : "";
      !why.empty())
    refuse(why);
  const unsigned mask = c.filter_mask | (checksum ? 1u << p.filters.fletcher32 : 0u);
  if (ds.pending) {
    check_cuda(cudaEventSynchronize(ds.done), s.path + ": copying to the device");
    ds.pending = false;
  }
  const std::string why = ds.decoder.decode(p.filters, mask, ds.stored.data(), body, ds.pinned, chunk_bytes);
  if (!why.empty()) refuse(why);
  const cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream());
  if (h5::applied(p.filters.shuffle, c.filter_mask) && p.element > 1) {
    // The whole chunk: byte plane j of the valid elements starts at j * chunk_elements.
    check_cuda(cudaMemcpyAsync(ds.scratch, ds.pinned, chunk_bytes, cudaMemcpyHostToDevice, stream),
               s.path + ": queuing a copy to the device");
    unshuffle_on_device(ds.scratch, p.chunk_elements, valid, p.element, device, ctx);
  } else {
    check_cuda(cudaMemcpyAsync(device, ds.pinned, valid_bytes, cudaMemcpyHostToDevice, stream),
               s.path + ": queuing a copy to the device");
  }
  check_cuda(cudaEventRecord(ds.done, stream), s.path + ": queuing a copy to the device");
  ds.pending = true;
}

// Every chunk of the decoded plans, on `threads` threads taking chunks in order. On a failure
// the others stop at their next chunk; the failure of the lowest chunk seen is raised.
// Thread b decodes into pinned + b * chunk_bytes and, when shuffled, device_scratch + b * chunk_bytes.
void decode_all(const source& s, const std::vector<array_plan>& plans, const std::vector<chunk_job>& jobs,
                const raw_file& raw, staging& st, int threads, gpu_context& ctx, unsigned char* pinned,
                unsigned char* device_scratch, std::size_t chunk_bytes) {
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  std::size_t error_job = jobs.size();
  std::exception_ptr error;
  parallel_blocks(threads, threads, [&](int b, std::int64_t, std::int64_t) {
    std::size_t j = jobs.size();
    try {
      // The current device is per host thread.
      check_cuda(cudaSetDevice(ctx.device()), s.path + ": selecting device " + std::to_string(ctx.device()));
      const std::size_t mine = static_cast<std::size_t>(b) * chunk_bytes;
      decoder_state ds(s, pinned ? pinned + mine : nullptr, device_scratch ? device_scratch + mine : nullptr);
      while (!failed.load(std::memory_order_relaxed) && (j = next.fetch_add(1)) < jobs.size())
        decode_chunk(s, plans[jobs[j].plan], jobs[j].chunk, raw, st, ds, ctx);
    } catch (...) {
      failed = true;
      std::lock_guard l(error_mutex);
      if (!error || j < error_job) {
        error = std::current_exception();
        error_job = j;
      }
    }
  });
  if (error) std::rethrow_exception(error);
}

// Phase 1's HDF5 reads and phase 2, until the device holds every array.
void transfer(const source& s, const std::vector<array_plan>& plans, const raw_file& raw, gpu_context& ctx,
              const device_load_options& opt, lock_type& held, device_load_stats& stats) {
  std::vector<chunk_job> jobs;
  bool through_hdf5 = false;
  for (std::size_t k = 0; k < plans.size(); ++k) {
    const array_plan& p = plans[k];
    if (p.elements == 0) continue;
    through_hdf5 = through_hdf5 || !p.decoded;
    (p.decoded ? stats.datasets_decoded : stats.datasets_through_hdf5) += 1;
    for (std::size_t c = 0; p.decoded && c < p.chunks.size(); ++c) {
      jobs.push_back({k, c});
      stats.file_bytes += p.chunks[c].stored_bytes;
    }
  }
  stats.chunks = jobs.size();
  if (jobs.empty() && !through_hdf5) return;
  const int wanted = opt.threads > 0 ? opt.threads : thread_count();
  const int threads = static_cast<int>(std::clamp<std::size_t>(jobs.size(), 1, static_cast<std::size_t>(wanted)));
  stats.threads = jobs.empty() ? 0 : threads;
  // A multiple of 8 (whole elements; even pieces for the running checksum), at least 64 KiB.
  const std::size_t slot = std::max<std::size_t>(opt.staging_buffer_bytes / 8 * 8, std::size_t{64} << 10);
  const std::size_t ring = slot * static_cast<std::size_t>(threads + 2);
  // Compressed or shuffled chunks: one pinned chunk buffer per thread, and one device chunk
  // for the shuffled ones (decoder_state).
  std::size_t chunk = 0;
  bool shuffled = false;
  for (const array_plan& p : plans)
    if (decodes_into_pinned(p) && !p.chunks.empty()) {
      chunk = std::max(chunk, (p.chunk_elements * p.element + 4095) / 4096 * 4096);  // whole pages apart
      shuffled = shuffled || p.filters.shuffle >= 0;
    }
  const std::size_t chunks_bytes = jobs.empty() ? 0 : chunk * static_cast<std::size_t>(threads);
  const auto t0 = clock_type::now();
  unsigned char* pinned = nullptr;
  device_array<unsigned char> scratch;
  try {
    pinned = static_cast<unsigned char*>(ctx.pinned_staging(ring + chunks_bytes));
    if (shuffled && chunks_bytes > 0) scratch.resize(chunks_bytes);
  } catch (const error& e) {
    fail(e.code(), s.path + ": " + e.what());
  }
  staging st(s, slot, threads + 2, pinned, static_cast<cudaStream_t>(ctx.stream()));
  stats.staging_seconds = seconds_since(t0);
  stats.staging_bytes = ring + chunks_bytes;
  for (const array_plan& p : plans)
    if (!p.decoded) read_through_hdf5(p, st);
  {
    unlocked u(held);
    if (!jobs.empty())
      decode_all(s, plans, jobs, raw, st, threads, ctx, chunks_bytes ? pinned + ring : nullptr,
                 scratch.empty() ? nullptr : scratch.data(), chunk);
    st.finish();
  }
}

// Loads group /<Fmt::name> into its device twin.
template <class Fmt>
any_device_matrix load_as(const source& s, hid_t file, const container_info& info, gpu_context& ctx,
                          const device_load_options& opt, lock_type& held, device_load_stats& stats,
                          clock_type::time_point start) {
  using D = with_space_t<Fmt, device>;
  const std::string obj = "/" + std::string(Fmt::name);
  Fmt shape;  // the root's shape and the group's parameters; its arrays stay empty
  auto group = open_format(s, file, info, shape);
  raw_file raw;
  open_raw(s, file, raw);
  // Every dataset checked before any device memory is allocated.
  const std::int64_t limit = container_array_cap(info.nnz, info.rows);
  std::vector<array_plan> plans;
  Fmt::for_each_array(shape, [&](std::string_view rel, auto& arr) {
    plans.push_back(plan_array<element_t<decltype(arr)>>(s, group, obj, std::string(rel), limit, raw));
  });
  const binsparse_attribute binsparse = opt.validate ? read_binsparse(s, group, obj) : binsparse_attribute{};
  D d;
  d.rows = shape.rows;
  d.cols = shape.cols;
  d.params = shape.params;
  if constexpr (requires { D::sync_parts(d); }) D::sync_parts(d);
  std::size_t k = 0;
  D::for_each_array(d, [&](std::string_view, auto& arr) {
    array_plan& p = plans[k++];
    try {
      arr.resize(p.elements);
    } catch (const error& e) {
      fail(e.code(), s.path + ": " + p.obj + ": " + e.what());
    }
    p.device = reinterpret_cast<unsigned char*>(arr.data());
    stats.device_bytes += p.elements * p.element;
  });
  stats.check_seconds = seconds_since(start);
  const auto t0 = clock_type::now();
  transfer(s, plans, raw, ctx, opt, held, stats);
  stats.transfer_seconds = seconds_since(t0) - stats.staging_seconds;
  if (opt.validate) {
    const auto t1 = clock_type::now();
    unlocked u(held);
    Fmt m = to_host(d);
    check_contents(s, obj, m, info.nnz, binsparse);
    stats.validate_seconds = seconds_since(t1);
  }
  return d;
}

}  // namespace

any_device_matrix load_container_to_device(const std::filesystem::path& path, const std::string& format,
                                           gpu_context& ctx, const device_load_options& opt) {
  const auto start = clock_type::now();
  device_load_stats stats;
  // The arrays are allocated on the current device: ctx's.
  check_cuda(cudaSetDevice(ctx.device()), path.string() + ": selecting device " + std::to_string(ctx.device()));
  lock_type held = h5::lock();
  h5::quiet_errors quiet;
  h5::register_zstd_filter();
  const source s{path.string()};
  std::optional<any_device_matrix> out;
  try {
    h5::handle file = open_for_read(s);
    const container_info info = read_info(s, file);
    const std::string name = choose_format(s, info, format);
    visit_alternative(info, name, [&]<class Fmt>(std::type_identity<Fmt>) {
      out.emplace(load_as<Fmt>(s, file, info, ctx, opt, held, stats, start));
    });
    if (!out) refuse_unbuilt(s, info, name);
  } catch (const h5::failure& f) {
    fail(errc::bad_input, s.path + ": " + f.what());
  }
  if (opt.stats) *opt.stats = stats;
  return std::move(*out);
}

}  // namespace spconv
#endif  // SPCONV_HAVE_CUDA
