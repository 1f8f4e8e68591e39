/// @file host_part.h
/// @brief Host parts: the host functions of an exercise whose body is your answer.
///
/// Most of an exercise's answer is device code: its kernels and device functions. Some lessons
/// also ask for a few lines of host code: how large the pending launch pool or the device heap
/// must be before the first launch, what goes into `__constant__` memory. Each such answer sits in
/// a host function marked CDPLAB_HOST_PART, declared in the exercise file with the name and the
/// parameters the starter gives it.
///
/// What is graded as yours when a file is graded (`cdplab grade`):
///  - every kernel and device function of the file (its device code, loaded into the grader's
///    own process, which launches your kernels from the workbook's host code);
///  - every function marked CDPLAB_HOST_PART. The grader calls it, in a process of its own that has
///    no GPU, with the arguments the workbook's host code would pass. There it may read and set the
///    device's limits (cudaDeviceGetLimit, cudaDeviceSetLimit), write the file's own `__constant__`
///    and `__device__` variables (cudaMemcpyToSymbol), call cdplab::reserve_pending_launches and
///    compute on the host; what it sets is applied to the GPU before your kernels run, and what it
///    returns or throws comes back as it was returned or thrown. Any other CUDA call fails there
///    (there is no GPU in that process).
///
/// Everything else on the host side (the entry points, the uploads and downloads, the host-side
/// launches) runs as the workbook gives it, whatever your copy of it says: change it to explore,
/// but know that the grade comes from the given host code with your kernels and host parts.
/// `cdplab check` grades the same way; `cdplab run CHAPTER` runs your whole file, host code
/// included.
///
/// A host part has external linkage (never in an anonymous namespace, never `static`), and its
/// parameters and result are plain values: integers, enums, structs of such fields, or
/// std::vector of them (by value or const reference).
#pragma once

/// Marks a host part (see the file's comment). A weak definition: the grader puts its own
/// definition, which calls yours in a process of its own, in the place of the workbook's copy.
#define CDPLAB_HOST_PART __attribute__((weak))
