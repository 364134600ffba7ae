// One wave of blocks for a kernel whose blocks loop over their share of the work: as many
// blocks as the device's multiprocessors hold at once. A second, partial wave would leave
// most of the device idle while it runs, and a block per work item pays a block's start and
// its first memory latencies again for every item (include from .cu files only).
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "formats/device.hpp"

namespace spconv::gpu {

template <class Kernel>
int resident_blocks(Kernel kernel, int threads, int device, const std::string& who) {
  int sms = 0, per_sm = 0;
  check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
             who + ": reading the multiprocessor count");
  check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0), who + ": reading the occupancy");
  return sms * std::max(per_sm, 1);
}

}  // namespace spconv::gpu
