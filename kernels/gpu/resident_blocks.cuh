// One wave of blocks for a kernel whose blocks loop over their share of the work: as many
// blocks as the device's multiprocessors hold at once. A second, partial wave would leave
// most of the device idle while it runs, and a block per work item pays a block's start and
// its first memory latencies again for every item (include from .cu files only).
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "formats/device.hpp"

namespace spconv::gpu {

// The count is remembered per host thread, kernel, block size and device: the occupancy query
// costs host time that SpMVs of a few microseconds (the matrices as they are) would feel.
template <class Kernel>
int resident_blocks(Kernel kernel, int threads, int device, std::string_view who) {
  struct known {
    const void* kernel;
    int threads, device, blocks;
  };
  thread_local std::vector<known> seen;
  const void* const k = reinterpret_cast<const void*>(kernel);
  for (const known& e : seen)
    if (e.kernel == k && e.threads == threads && e.device == device) return e.blocks;
  int sms = 0, per_sm = 0;
  check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
             std::string(who) + ": reading the multiprocessor count");
  check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0),
             std::string(who) + ": reading the occupancy");
  const int blocks = sms * std::max(per_sm, 1);
  seen.push_back({k, threads, device, blocks});
  return blocks;
}

}  // namespace spconv::gpu
