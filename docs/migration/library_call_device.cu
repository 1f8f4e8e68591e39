// CDP2 version of a kernel that made a library call from device code: each block creates two
// matrices, one thread multiplied them with a device-side BLAS call and waited for it, and the
// block then used the product. There is no device-side BLAS and no device-side wait: here the
// product is a child kernel of our own and the code that uses it a tail-launched kernel.
#include "launch_check.cuh"

#include <cuda_runtime.h>

namespace migration::library_device {

/// Matrices are kDim x kDim, row-major, one triple (a, b, c) per block of the parent.
constexpr unsigned kDim = 32;
constexpr unsigned kElements = kDim * kDim;

/// Threads per block of the parent.
constexpr unsigned kThreads = 256;

// [cdp2]
/// The product c = a * b, in place of the library call: one thread per element of c, run as
/// one block of kDim x kDim threads. For matrices this small the block could compute it itself
/// with no child at all; a child pays for itself when the matrices are large.
__global__ void gemm_child(const double* a, const double* b, double* c) {
  const unsigned row = threadIdx.y, col = threadIdx.x;
  double sum = 0.0;
  for (unsigned k = 0; k < kDim; ++k) sum += a[row * kDim + k] * b[k * kDim + col];
  c[row * kDim + col] = sum;
}

/// "Consume the data": block i reduces product i to its trace. Launched into the tail launch
/// stream, so every product is complete when it starts.
__global__ void consume(const double* c, double* traces) {
  const double* product = c + blockIdx.x * kElements;
  __shared__ double diagonal[kDim];
  diagonal[threadIdx.x] = product[threadIdx.x * kDim + threadIdx.x];
  __syncthreads();
  if (threadIdx.x == 0) {
    double trace = 0.0;
    for (unsigned i = 0; i < kDim; ++i) trace += diagonal[i];
    traces[blockIdx.x] = trace;
  }
}

/// The parent: block i creates a_i and b_i, and its thread 0 launches the product.
__global__ void batched_products(double* a, double* b, double* c, double* traces) {
  double* my_a = a + blockIdx.x * kElements;
  double* my_b = b + blockIdx.x * kElements;
  for (unsigned e = threadIdx.x; e < kElements; e += blockDim.x) {  // "create data"
    my_a[e] = 1.0 / (1.0 + e % kDim + blockIdx.x);
    my_b[e] = (e / kDim == e % kDim) ? 2.0 : 0.0;
  }
  __syncthreads();  // the whole block's writes are visible to the child thread 0 launches

  if (threadIdx.x == 0) {
    gemm_child<<<1, dim3(kDim, kDim)>>>(my_a, my_b, c + blockIdx.x * kElements);
    migration::check_launch("gemm_child");
  }
  // The code after the old wait runs once, for every block, after all the products.
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    consume<<<gridDim.x, kDim, 0, cudaStreamTailLaunch>>>(c, traces);
    migration::check_launch("consume");
  }
}
// [cdp2]

/// Host side: a, b and c hold `items` * kElements doubles each, `traces` holds `items` doubles,
/// all in global memory.
cudaError_t run(double* a, double* b, double* c, double* traces, unsigned items) {
  if (items == 0) return cudaSuccess;
  batched_products<<<items, kThreads>>>(a, b, c, traces);
  const cudaError_t launched = cudaGetLastError();
  if (launched != cudaSuccess) return launched;
  return cudaDeviceSynchronize();
}

}  // namespace migration::library_device
