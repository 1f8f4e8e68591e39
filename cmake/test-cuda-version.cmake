# A test of cmake/CdplabCudaVersion.cmake: the tested version gets no warning, any other one does.
include("${CMAKE_CURRENT_LIST_DIR}/CdplabCudaVersion.cmake")
cdplab_cuda_version_warning("13.0.88" tested)
cdplab_cuda_version_warning("12.4.131" older)
cdplab_cuda_version_warning("13.1.0" newer)
if(NOT tested STREQUAL "" OR older STREQUAL "" OR newer STREQUAL "" OR NOT older MATCHES "12.4.131.*tested with")
  message(FATAL_ERROR "CUDA version warning: 13.0.88 [${tested}], 12.4.131 [${older}], 13.1.0 [${newer}]")
endif()
message(STATUS "13.0 gets no warning; 12.4 and 13.1 get one")
