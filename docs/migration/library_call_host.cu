// CDP2 version of a kernel that made a library call from device code, with the library call
// moved to the host: a kernel creates the matrices, cuBLAS multiplies them, a kernel uses the
// products. Work queued into one stream runs in order, so nobody waits in between.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace migration::library_host {

/// Matrices are kDim x kDim, column-major as cuBLAS expects them, one triple per item.
constexpr int kDim = 32;
constexpr int kElements = kDim * kDim;

/// "Create data": block i fills a_i and b_i.
__global__ void create_data(double* a, double* b) {
  double* my_a = a + blockIdx.x * kElements;
  double* my_b = b + blockIdx.x * kElements;
  for (int e = threadIdx.x; e < kElements; e += blockDim.x) {
    my_a[e] = 1.0 / (1.0 + e % kDim + blockIdx.x);
    my_b[e] = (e / kDim == e % kDim) ? 2.0 : 0.0;
  }
}

/// "Consume data": block i reduces product i to its trace (one thread per diagonal element).
__global__ void consume(const double* c, double* traces) {
  const double* product = c + blockIdx.x * kElements;
  __shared__ double diagonal[kDim];
  diagonal[threadIdx.x] = product[threadIdx.x * kDim + threadIdx.x];
  __syncthreads();
  if (threadIdx.x == 0) {
    double trace = 0.0;
    for (int i = 0; i < kDim; ++i) trace += diagonal[i];
    traces[blockIdx.x] = trace;
  }
}

namespace {

void check(cudaError_t code, const char* what) {
  if (code != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(code));
}

void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": " + cublasGetStatusString(status));
}

}  // namespace

// [cdp2]
/// Creates `items` pairs of matrices, multiplies each pair and reduces each product to its
/// trace, all queued into `stream`: a, b and c hold items * kElements doubles, `traces` holds
/// `items` doubles, in global memory. Returns without waiting; the caller synchronizes `stream`.
void batched_products(cublasHandle_t handle, cudaStream_t stream, double* a, double* b, double* c,
                      double* traces, int items) {
  if (items <= 0) return;
  create_data<<<items, 256, 0, stream>>>(a, b);
  check(cudaGetLastError(), "create_data");

  // The library call, from the host, into the same stream: it starts after create_data.
  // One batched call replaces the one call per block of the device-side version.
  const double one = 1.0, zero = 0.0;
  check(cublasSetStream(handle, stream), "cublasSetStream");
  check(cublasDgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, kDim, kDim, kDim, &one,
                                  a, kDim, kElements, b, kDim, kElements, &zero,
                                  c, kDim, kElements, items),
        "cublasDgemmStridedBatched");

  consume<<<items, kDim, 0, stream>>>(c, traces);  // starts after the products
  check(cudaGetLastError(), "consume");
}
// [cdp2]

}  // namespace migration::library_host
