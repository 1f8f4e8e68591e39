# cmake -DDIR=<folder> -P CdplabKeepPtxOnly.cmake: deletes every file of <folder> but the PTX.
# nvcc -keep leaves all its intermediate files in the exercise's keep folder; the rule checker
# reads only the PTX.
file(GLOB kept LIST_DIRECTORIES false "${DIR}/*")
foreach(file IN LISTS kept)
  if(NOT file MATCHES "\\.ptx$")
    file(REMOVE "${file}")
  endif()
endforeach()
