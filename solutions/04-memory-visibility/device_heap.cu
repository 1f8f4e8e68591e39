// Exercise device-heap: scratch memory allocated and freed in device code.
//
// cudaMalloc (or malloc) in a kernel takes memory from the device heap, a pool whose size the
// host fixes with cudaLimitMallocHeapSize before the first kernel that uses it runs (8 MiB by
// default). Such memory is global: a child may be handed it, and it outlives the kernel that
// allocated it. It can only be freed in device code: the host's cudaFree does not know it.
//
// Thread i of heap_sums_kernel allocates sizes[i] unsigned integers, fills them with
// 1, 2, ..., sizes[i], sums them into sums[i] (so sums[i] = sizes[i] * (sizes[i] + 1) / 2) and
// frees them. Then one tiny kernel allocates a buffer and leaves its pointer in global memory;
// the host tries cudaFree on it and records the error; a last kernel frees it in device code.
#include "cdplab/check.h"
#include "cdplab/device_array.h"
#include "cdplab/host_part.h"
#include "cdplab/visibility.h"

#include <cstddef>
#include <stdexcept>
#include <string>

namespace cdplab::visibility {

/// Threads per block of heap_sums_kernel (one thread per item).
inline constexpr unsigned kHeapThreads = 128;
/// Bytes of the buffer the host tries to free.
inline constexpr std::size_t kOrphanBytes = 256;

/// Thread i: a device-heap buffer of sizes[i] unsigned integers, filled with 1 .. sizes[i],
/// summed into sums[i] and freed. A failed allocation adds 1 to *failures and leaves sums[i] 0.
__global__ void heap_sums_kernel(const unsigned* sizes, unsigned long long* sums, unsigned n, unsigned* failures) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const unsigned size = sizes[i];
  if (size == 0) {
    sums[i] = 0;
    return;
  }
  // BEGIN SOLUTION
  unsigned* scratch = nullptr;
  if (cudaMalloc(&scratch, size * sizeof(unsigned)) != cudaSuccess || scratch == nullptr) {
    atomicAdd(failures, 1u);  // the heap is full: the host reports it
    return;
  }
  for (unsigned k = 0; k < size; ++k) scratch[k] = k + 1;
  unsigned long long sum = 0;
  for (unsigned k = 0; k < size; ++k) sum += scratch[k];
  sums[i] = sum;
  cudaFree(scratch);  // device-heap memory is freed in device code, or it is lost until exit
  // END SOLUTION
  //| // TODO(device-heap): allocate a scratch buffer of `size` unsigned integers with cudaMalloc
  //| // in device code. If that fails, atomicAdd 1 to *failures and return. Otherwise fill it
  //| // with 1, 2, ..., size, add its elements into an unsigned long long, store the total in
  //| // sums[i], and free the buffer with cudaFree.
  //| (void)failures;
  //| CDPLAB_TODO();
}

/// Allocates kOrphanBytes on the device heap and leaves the pointer in *slot (nullptr on failure).
__global__ void allocate_orphan(void** slot) {
  void* p = nullptr;
  if (cudaMalloc(&p, kOrphanBytes) != cudaSuccess) p = nullptr;
  *slot = p;
}

/// Frees the device-heap buffer *slot in device code, where it was allocated.
__global__ void free_orphan(void** slot) {
  if (*slot != nullptr) cudaFree(*slot);
  *slot = nullptr;
}

namespace {

// BEGIN SOLUTION
/// The device heap these sizes need: twice the payload (the allocator's headers and alignment
/// cost up to about 45 % on small buffers), 64 bytes per allocation and 1 MiB to spare.
std::size_t heap_bytes_needed(const std::vector<unsigned>& sizes) {
  std::size_t payload = 0;
  for (unsigned size : sizes) payload += std::size_t{size} * sizeof(unsigned);
  return 2 * payload + 64 * (sizes.size() + 1) + (std::size_t{1} << 20);
}

/// Raises the device heap to at least `bytes` (never lowers it). It must happen before the
/// first kernel that uses the heap: after that the size is fixed for the process.
void reserve_device_heap(std::size_t bytes) {
  std::size_t heap = 0;
  CDPLAB_CHECK(cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize));
  if (heap >= bytes) return;
  const cudaError_t status = cudaDeviceSetLimit(cudaLimitMallocHeapSize, bytes);
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear it, so that a later check does not report it again
    throw CudaError(status, "heap_scratch_sums: the device heap is " + std::to_string(heap) + " bytes, " +
                                std::to_string(bytes) + " are needed, and cudaLimitMallocHeapSize could not be "
                                "raised: " + explain_cuda_error(status));
  }
}

// END SOLUTION
/// Hands a device-heap pointer to the host's cudaFree and returns what it said; the buffer is
/// then freed in device code.
cudaError_t try_host_free() {
  DeviceArray<void*> slot(1);
  allocate_orphan<<<1, 1>>>(slot.data());
  CDPLAB_CHECK(cudaGetLastError());
  CDPLAB_CHECK(cudaDeviceSynchronize());
  void* orphan = slot.download()[0];
  if (orphan == nullptr) throw std::runtime_error("heap_scratch_sums: the device heap has no room for " +
                                                  std::to_string(kOrphanBytes) + " bytes");
  const cudaError_t host_free = cudaFree(orphan);  // expected to fail: the host does not own it
  cudaGetLastError();                              // clear that error: it is the expected one
  free_orphan<<<1, 1>>>(slot.data());
  CDPLAB_CHECK(cudaGetLastError());
  CDPLAB_CHECK(cudaDeviceSynchronize());
  return host_free;
}

}  // namespace

/// Host part (cdplab/host_part.h): makes the device heap large enough for one buffer of
/// sizes[i] unsigned integers per item, before anything is launched.
CDPLAB_HOST_PART void reserve_heap_for(const std::vector<unsigned>& sizes) {
  // BEGIN SOLUTION
  reserve_device_heap(heap_bytes_needed(sizes));
  // END SOLUTION
  //| // TODO(device-heap): the device heap holds 8 MiB by default, too little for large
  //| // workloads. Read cudaLimitMallocHeapSize with cudaDeviceGetLimit and, when it is smaller
  //| // than the sizes need (twice the bytes of all buffers, plus 64 bytes per buffer, plus
  //| // 1 MiB), raise it with cudaDeviceSetLimit. Wrap the calls in CDPLAB_CHECK.
  //| (void)sizes;
  //| CDPLAB_TODO();
}

HeapRun heap_scratch_sums(const std::vector<unsigned>& sizes) {
  if (sizes.size() >= (std::size_t{1} << 31)) throw std::invalid_argument("heap_scratch_sums: at most 2^31 - 1 items");
  HeapRun run{{}, cudaSuccess};
  reserve_heap_for(sizes);  // the host part above: before anything is launched

  if (!sizes.empty()) {
    const auto n = static_cast<unsigned>(sizes.size());
    DeviceArray<unsigned> device_sizes(sizes);
    DeviceArray<unsigned long long> sums(sizes.size());
    DeviceArray<unsigned> failures(1);
    reset_device_report();
    heap_sums_kernel<<<(n + kHeapThreads - 1) / kHeapThreads, kHeapThreads>>>(device_sizes.data(), sums.data(), n,
                                                                               failures.data());
    CDPLAB_CHECK(cudaGetLastError());
    CDPLAB_CHECK(cudaDeviceSynchronize());
    throw_if_device_reported();
    const unsigned failed = failures.download()[0];
    if (failed > 0) {
      std::size_t heap = 0;
      CDPLAB_CHECK(cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize));
      throw std::runtime_error("heap_scratch_sums: device-side cudaMalloc failed for " + std::to_string(failed) +
                               " of " + std::to_string(n) + " items: the device heap (" + std::to_string(heap) +
                               " bytes) is full. Size it from the host before the first launch, and free "
                               "every buffer in device code");
    }
    run.sums = sums.download();
  }
  run.host_free_error = try_host_free();
  return run;
}

}  // namespace cdplab::visibility
