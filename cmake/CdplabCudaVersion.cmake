# The CUDA version the workbook was built, graded and measured with, and what to say of another.
# The rule checker reads the PTX nvcc writes, whose shape another version may change.
set(CDPLAB_TESTED_CUDA "13.0")

# Sets `out` to the warning for nvcc version `version` ("13.0.88"), or to "" for the tested one.
function(cdplab_cuda_version_warning version out)
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" major_minor "${version}")
  if(major_minor VERSION_EQUAL CDPLAB_TESTED_CUDA)
    set(${out} "" PARENT_SCOPE)
  else()
    set(${out} "cdp-lab: nvcc ${version} is not the CUDA version the workbook was tested with "
               "(${CDPLAB_TESTED_CUDA}). It may work; if a rule fails on a correct solution "
               "(`cdplab rules solutions/...`), the PTX of this version is the likely cause: please report it."
        PARENT_SCOPE)
  endif()
endfunction()
