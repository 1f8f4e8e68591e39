# Chooses CMAKE_CUDA_ARCHITECTURES before CUDA is enabled:
#  - whatever the user passed (-DCMAKE_CUDA_ARCHITECTURES=...) wins;
#  - otherwise the compute capabilities of the GPUs present (nvidia-smi);
#  - otherwise, on a machine without a GPU, a fixed list that includes Hopper (sm_90).
set(CDPLAB_DEFAULT_CUDA_ARCHITECTURES "90" CACHE STRING
    "CUDA architectures used when no GPU is present to detect")

if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
  set(_cdplab_archs "")
  find_program(CDPLAB_NVIDIA_SMI nvidia-smi)
  if(CDPLAB_NVIDIA_SMI)
    execute_process(
      COMMAND "${CDPLAB_NVIDIA_SMI}" --query-gpu=compute_cap --format=csv,noheader
      OUTPUT_VARIABLE _cdplab_caps RESULT_VARIABLE _cdplab_rc ERROR_QUIET TIMEOUT 20)
    if(_cdplab_rc EQUAL 0)
      string(REGEX MATCHALL "[0-9]+\\.[0-9]+" _cdplab_caps "${_cdplab_caps}")
      foreach(_cap IN LISTS _cdplab_caps)
        string(REPLACE "." "" _arch "${_cap}")
        list(APPEND _cdplab_archs "${_arch}")
      endforeach()
      list(REMOVE_DUPLICATES _cdplab_archs)
    endif()
  endif()
  if(_cdplab_archs)
    message(STATUS "cdp-lab: CUDA architectures of the GPUs present: ${_cdplab_archs}")
  else()
    set(_cdplab_archs "${CDPLAB_DEFAULT_CUDA_ARCHITECTURES}")
    message(STATUS "cdp-lab: no GPU detected; CUDA architectures: ${_cdplab_archs}")
  endif()
  set(CMAKE_CUDA_ARCHITECTURES "${_cdplab_archs}" CACHE STRING "CUDA architectures")
endif()
