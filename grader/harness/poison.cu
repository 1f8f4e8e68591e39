#include "poison.h"

#include <cuda_runtime.h>

#include <cstddef>

namespace cdplab::harness {
namespace {

__global__ void fill_shared_memory(unsigned words) {
  extern __shared__ unsigned shared[];
  volatile unsigned* words_of_block = shared;  // volatile: stores that nothing reads are kept
  for (unsigned i = threadIdx.x; i < words; i += blockDim.x) words_of_block[i] = kSharedPoison;
}

}  // namespace

void poison_shared_memory() {
  int device = 0;
  int sms = 0;
  int bytes = 0;
  if (cudaGetDevice(&device) == cudaSuccess &&
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) == cudaSuccess &&
      cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) == cudaSuccess &&
      cudaFuncSetAttribute(fill_shared_memory, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) == cudaSuccess &&
      sms > 0 && bytes >= 4) {
    // One such block fits an SM at a time: 2 x SMs blocks cover every SM, whatever the order.
    fill_shared_memory<<<2 * sms, 1024, static_cast<std::size_t>(bytes)>>>(static_cast<unsigned>(bytes) / 4u);
    cudaDeviceSynchronize();
  }
  cudaGetLastError();  // a refusal is the grader's business, never the check's
}

}  // namespace cdplab::harness
