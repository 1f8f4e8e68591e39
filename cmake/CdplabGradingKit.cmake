# The grading kit: what the build tree of one submission shares with every other one. That is
# the starter kit, the harness with the suites' main(), the oracles, the chapters' support
# kernels, the compiled checks of every suite, and every suite's grading suite (the checks linked
# against the workbook's host code, which `cdplab grade` runs with the submission's device code
# loaded: grader/harness/device_code/device_code.h).
# A tree configured as usual compiles all of it and describes it in
# <build>/cdplab-grading-kit.cmake (target cdplab_grading_kit builds every piece).
# `cdplab grade` configures each submission's tree with -DCDPLAB_GRADING_KIT=<that file>. Such a
# tree links the kit's object files instead of compiling them again: it compiles only the
# submission's own exercise files.

set(CDPLAB_GRADING_KIT "" CACHE FILEPATH
    "cdplab-grading-kit.cmake of another build tree: link its compiled grader instead of compiling it here")

# What must agree for the kit's object files to fit this tree.
set(_cdplab_kit_signature
    "${PROJECT_SOURCE_DIR}|${CMAKE_CUDA_COMPILER}|${CMAKE_CUDA_COMPILER_VERSION}|${CMAKE_CXX_COMPILER}|${CMAKE_CXX_COMPILER_VERSION}|${CMAKE_CUDA_ARCHITECTURES}|${CMAKE_BUILD_TYPE}|${CDPLAB_CHECK_TIMEOUT}")

set(CDPLAB_KIT_IN_USE FALSE)
if(CDPLAB_GRADING_KIT)
  if(NOT EXISTS "${CDPLAB_GRADING_KIT}")
    message(STATUS "cdp-lab: the grading kit ${CDPLAB_GRADING_KIT} does not exist; compiling the grader here")
  else()
    include("${CDPLAB_GRADING_KIT}")
    if(CDPLAB_KIT_SIGNATURE STREQUAL _cdplab_kit_signature)
      set(CDPLAB_KIT_IN_USE TRUE)
      message(STATUS "cdp-lab: linking the compiled grader of ${CDPLAB_GRADING_KIT}")
    else()
      message(STATUS "cdp-lab: the grading kit ${CDPLAB_GRADING_KIT} was built with other settings "
                     "(${CDPLAB_KIT_SIGNATURE}, here ${_cdplab_kit_signature}); compiling the grader here")
    endif()
  endif()
endif()

set_property(GLOBAL PROPERTY CDPLAB_KIT_LINES "")
set_property(GLOBAL PROPERTY CDPLAB_KIT_TARGETS "")

# What the kit in use says of a piece (`kind` OBJECTS: its object files; REFERENCE: the reference
# suite of a suite); empty without a kit, or when the kit has none.
function(cdplab_kit_value kind piece out)
  if(CDPLAB_KIT_IN_USE AND DEFINED CDPLAB_KIT_${kind}_${piece})
    set(${out} "${CDPLAB_KIT_${kind}_${piece}}" PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()

# Adds a piece this tree compiled to the kit it describes.
function(_cdplab_kit_record piece)
  set_property(GLOBAL APPEND PROPERTY CDPLAB_KIT_LINES
               "set(CDPLAB_KIT_OBJECTS_${piece} \"$<TARGET_OBJECTS:${piece}>\")")
  set_property(GLOBAL APPEND PROPERTY CDPLAB_KIT_TARGETS ${piece})
endfunction()

# cdplab_kit_library(<target> <sources>...): a static library of the kit, compiled here or
# archived from the kit's objects. Its usage requirements are set by the caller either way.
function(cdplab_kit_library target)
  cdplab_kit_value(OBJECTS ${target} objects)
  if(objects)
    add_library(${target} STATIC ${objects})
    set_target_properties(${target} PROPERTIES LINKER_LANGUAGE CXX)
  else()
    add_library(${target} STATIC ${ARGN})
    _cdplab_kit_record(${target})
  endif()
endfunction()

# cdplab_kit_checks(<target> SOURCES <files>... LIBRARIES <libraries>...): the compiled checks of
# a suite (its *_test.cpp), linked into the suite and into its grading suite. An object library
# compiled here, or the kit's objects; LIBRARIES give the headers they include.
function(cdplab_kit_checks target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SOURCES;LIBRARIES")
  cdplab_kit_value(OBJECTS ${target} objects)
  if(objects)
    add_library(${target} INTERFACE)
    target_sources(${target} INTERFACE ${objects})
    target_link_libraries(${target} INTERFACE ${arg_LIBRARIES})
  else()
    add_library(${target} OBJECT ${arg_SOURCES})
    target_link_libraries(${target} PUBLIC ${arg_LIBRARIES})
    _cdplab_kit_record(${target})
  endif()
endfunction()

# Offers `executable_target` as the reference suite of `suite_target` to trees using this kit.
function(cdplab_kit_record_reference suite_target executable_target)
  set_property(GLOBAL APPEND PROPERTY CDPLAB_KIT_LINES
               "set(CDPLAB_KIT_REFERENCE_${suite_target} \"$<TARGET_FILE:${executable_target}>\")")
  set_property(GLOBAL APPEND PROPERTY CDPLAB_KIT_TARGETS ${executable_target})
endfunction()

# cdplab_add_suite(<target> [EXCLUDE_FROM_ALL] NAME <suite> HOST_PTX <file>
#                  [DEVICE_LIBRARIES <targets>...] [SOURCES <files>...] LIBRARIES <libraries>...):
# a suite executable. The checks and the exercise file whose host code it runs come in LIBRARIES
# (or SOURCES); main() is the harness's (harness/suite_main.cpp). HOST_PTX is that exercise file's
# kept PTX: the device code the suite loads by default, and the list of kernels and variables
# whose host-side launches and copies go to the loaded code; DEVICE_LIBRARIES are the chapter's
# device libraries it is linked with, besides the starter kit's and the device runtime
# (grader/harness/device_code/device_code.h). The suite's name and these paths go into a small
# generated file, so that nothing else is compiled per suite.
# cdplab_device_libraries(<out> <targets>...): the device libraries an exercise's device code is
# linked with at run time, '|' between them (a generator expression): the starter kit's, those of
# <targets> (the chapter's support kernels) and the device runtime.
function(cdplab_device_libraries out)
  set(libraries "$<TARGET_FILE:cdplab_starter>")
  foreach(library IN LISTS ARGN)
    string(APPEND libraries "|$<TARGET_FILE:${library}>")
  endforeach()
  string(APPEND libraries "|${CDPLAB_CUDADEVRT}")
  set(${out} "${libraries}" PARENT_SCOPE)
endfunction()

function(cdplab_add_suite target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "EXCLUDE_FROM_ALL" "NAME;HOST_PTX" "SOURCES;LIBRARIES;DEVICE_LIBRARIES")
  cdplab_device_libraries(device_libraries ${arg_DEVICE_LIBRARIES})
  set(identity "${PROJECT_BINARY_DIR}/suite-identity/${target}.cpp")
  file(GENERATE OUTPUT "${identity}" CONTENT
"// Generated by the build (cmake/CdplabGradingKit.cmake): which suite this executable is.
#include \"suite_identity.h\"

namespace cdplab::harness {
const char* suite_name() { return R\"cdplab(${arg_NAME})cdplab\"; }
const char* suite_host_code_ptx() { return R\"cdplab(${arg_HOST_PTX})cdplab\"; }
const char* suite_device_libraries() { return R\"cdplab(${device_libraries})cdplab\"; }
}  // namespace cdplab::harness
")
  set(exclude "")
  if(arg_EXCLUDE_FROM_ALL)
    set(exclude EXCLUDE_FROM_ALL)
  endif()
  add_executable(${target} ${exclude} ${arg_SOURCES} "${identity}")
  target_link_libraries(${target} PRIVATE ${arg_LIBRARIES} cdplab::harness)
  # The check process finds the exercise's kernels and variables by name (exported symbols) and
  # sends the host code's launches and symbol copies to the device code it loaded: the runtime's
  # entry points for those are wrapped (harness/device_code/device_code.cpp defines the wrappers;
  # --undefined takes its object from the harness library before anything needs it).
  set_target_properties(${target} PROPERTIES ENABLE_EXPORTS ON)
  target_link_options(${target} PRIVATE
    "LINKER:--undefined=__wrap___cudaGetKernel"
    "LINKER:--wrap=__cudaGetKernel,--wrap=cudaLaunchKernel"
    "LINKER:--wrap=cudaMemcpyToSymbol,--wrap=cudaMemcpyFromSymbol"
    "LINKER:--wrap=cudaMemcpyToSymbolAsync,--wrap=cudaMemcpyFromSymbolAsync")
endfunction()

# Writes <build>/cdplab-grading-kit.cmake and the target cdplab_grading_kit that builds it. A tree
# that links another kit describes none (it compiled nothing of its own to offer).
function(cdplab_write_grading_kit)
  get_property(lines GLOBAL PROPERTY CDPLAB_KIT_LINES)
  get_property(targets GLOBAL PROPERTY CDPLAB_KIT_TARGETS)
  if(CDPLAB_KIT_IN_USE OR NOT targets)
    return()
  endif()
  list(JOIN lines "\n" body)
  file(GENERATE OUTPUT "${PROJECT_BINARY_DIR}/cdplab-grading-kit.cmake" CONTENT
"# Generated by the build (cmake/CdplabGradingKit.cmake): the compiled grader of this tree, for
# the build trees of submissions (-DCDPLAB_GRADING_KIT=<this file>). Build it first:
# cmake --build ${PROJECT_BINARY_DIR} --target cdplab_grading_kit
set(CDPLAB_KIT_SIGNATURE \"${_cdplab_kit_signature}\")
${body}
")
  add_custom_target(cdplab_grading_kit)
  add_dependencies(cdplab_grading_kit ${targets})
endfunction()
