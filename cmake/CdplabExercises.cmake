# The one mechanism every chapter uses. A chapter is a set of files, found by name:
#   grader/suites/<chapter>/<stem>_test.cpp   the test suite of exercise <stem>
#   <CDPLAB_EXERCISE_DIR>/<chapter>/<stem>.cu the exercise (student, solution or submission)
#   grader/suites/<chapter>/support/*.cu      grader-side kernels the suites need (optional)
#   grader/oracles/<chapter>.cpp              the chapter's CPU oracles (optional)
#   starter/drivers/<chapter>.cpp             the chapter's demo driver (optional)
#   grader/bench/<chapter>.cu                 the chapter's benchmark (optional)
# chapters/<chapter>/chapter.toml names the same stems; a project test checks that they agree.

set_property(GLOBAL PROPERTY CDPLAB_EXERCISE_INDEX "")

# The rule checker reads PTX for one architecture: the first one the build compiles for.
list(GET CMAKE_CUDA_ARCHITECTURES 0 _cdplab_first_arch)
string(REGEX MATCH "^[0-9]+[a-z]?" CDPLAB_PTX_ARCHITECTURE "${_cdplab_first_arch}")
if(NOT CDPLAB_PTX_ARCHITECTURE)
  set(CDPLAB_PTX_ARCHITECTURE 90)
endif()
# nvcc -keep names the PTX <stem>.ptx when it compiles for one architecture, and
# <stem>.compute_<arch>.ptx, one per architecture, when it compiles for several.
list(LENGTH CMAKE_CUDA_ARCHITECTURES _cdplab_arch_count)
if(_cdplab_arch_count EQUAL 1)
  set(CDPLAB_KEPT_PTX_SUFFIX ".ptx")
else()
  set(CDPLAB_KEPT_PTX_SUFFIX ".compute_${CDPLAB_PTX_ARCHITECTURE}.ptx")
endif()

# cdplab_add_chapter(<chapter>): targets and CTest tests for every exercise of a chapter.
function(cdplab_add_chapter chapter)
  set(suite_dir "${PROJECT_SOURCE_DIR}/grader/suites/${chapter}")
  string(REGEX REPLACE "[^A-Za-z0-9]" "_" chapter_id "${chapter}")
  file(GLOB suite_sources CONFIGURE_DEPENDS "${suite_dir}/*_test.cpp")
  list(SORT suite_sources)

  set(oracle_target "")
  if(EXISTS "${PROJECT_SOURCE_DIR}/grader/oracles/${chapter}.cpp")
    set(oracle_target "cdplab_oracle_${chapter_id}")
    cdplab_kit_library(${oracle_target} "${PROJECT_SOURCE_DIR}/grader/oracles/${chapter}.cpp")
    target_link_libraries(${oracle_target} PUBLIC cdplab::oracle_common)
    # Host code only: the device link happens once, in each suite executable.
    set_target_properties(${oracle_target} PROPERTIES CUDA_RESOLVE_DEVICE_SYMBOLS OFF)
  endif()

  set(support_target "")
  file(GLOB support_sources CONFIGURE_DEPENDS "${suite_dir}/support/*.cu")
  if(support_sources)
    set(support_target "cdplab_support_${chapter_id}")
    cdplab_kit_library(${support_target} ${support_sources})
    set_target_properties(${support_target} PROPERTIES CUDA_SEPARABLE_COMPILATION ON)
    target_link_libraries(${support_target} PUBLIC cdplab::starter)
  endif()

  set(exercise_targets "")
  set(all_present TRUE)
  foreach(suite_source IN LISTS suite_sources)
    get_filename_component(stem "${suite_source}" NAME_WE)
    string(REGEX REPLACE "_test$" "" stem "${stem}")
    set(exercise_source "${CDPLAB_EXERCISE_DIR}/${chapter}/${stem}.cu")
    set(test_name "${chapter}/${stem}")
    # Every exercise has a launch graph in the docs: a picture of why there is none when the file is missing.
    set_property(GLOBAL APPEND PROPERTY CDPLAB_FIGURE_EXERCISES "${chapter}/${stem}=${exercise_source}")
    if(NOT EXISTS "${exercise_source}")
      # A submission may lack a file: the grader reports it; the build goes on without it.
      message(STATUS "cdp-lab: ${test_name}: ${exercise_source} not found; not built")
      set(all_present FALSE)
      cdplab_index_add("${chapter}" "${stem}" "" "" "${exercise_source}" "" "" "" "" "" "" "")
      continue()
    endif()

    set(exercise_target "cdplab_exercise_${chapter_id}_${stem}")
    cdplab_exercise_library(${exercise_target} "${exercise_source}" "${CMAKE_CURRENT_BINARY_DIR}/ptx/${chapter}/${stem}"
                            "${support_target}" ptx)
    list(APPEND exercise_targets ${exercise_target})

    # The checks do not depend on the exercise: compiled once, shared by the suite and its
    # reference twin, and by every submission's tree through the grading kit.
    set(suite_target "suite_${chapter_id}_${stem}")
    set(checks_target "cdplab_checks_${chapter_id}_${stem}")
    cdplab_kit_checks(${checks_target} SOURCES "${suite_source}"
                      LIBRARIES cdplab::harness ${oracle_target} ${support_target})
    # An exercise whose lesson has host parts (cdplab/host_part.h) lists them in
    # <stem>_host_parts.cpp: the grading suite calls the student's through a process of their own
    # (grader/harness/host_parts/host_parts.h), which this tree builds from its exercise file.
    set(host_parts_table "${suite_dir}/${stem}_host_parts.cpp")
    set(host_parts_proxy "")
    set(host_parts_server "")
    if(EXISTS "${host_parts_table}")
      set(host_parts_proxy "cdplab_host_parts_proxy_${chapter_id}_${stem}")
      cdplab_kit_checks(${host_parts_proxy} SOURCES "${host_parts_table}" LIBRARIES cdplab::harness ${support_target})
      if(NOT CDPLAB_KIT_IN_USE OR NOT DEFINED CDPLAB_KIT_OBJECTS_${host_parts_proxy})
        target_compile_definitions(${host_parts_proxy} PRIVATE CDPLAB_HOST_PARTS_PROXY)
      endif()
      set(host_parts_server "cdplab_host_parts_${chapter_id}_${stem}")
      cdplab_host_parts_server(${host_parts_server} "${host_parts_table}" ${exercise_target})
    endif()
    cdplab_reference_suite(${chapter} ${stem} ${suite_target} ${checks_target} "${support_target}"
                           "${oracle_target}" "${host_parts_proxy}" reference reference_target)
    cdplab_add_suite(${suite_target} NAME "${test_name}" HOST_PTX "${ptx}" DEVICE_LIBRARIES ${support_target}
                     LIBRARIES ${checks_target} ${exercise_target} ${oracle_target})
    # One CTest test per check ("01-fundamentals/child_grids/<check>"): a crash or a hang in
    # one check cannot spoil the others; CTest's timeout backs up the suite's own watchdog.
    math(EXPR ctest_timeout "${CDPLAB_CHECK_TIMEOUT} + 15")
    # Checks that time the GPU run alone (RUN_SERIAL) when the grader runs checks side by side:
    # every check of a suite marked CDPLAB_SUITE_RUNS_ALONE, and each speed check ("speed ...").
    file(STRINGS "${suite_source}" runs_alone REGEX "^CDPLAB_SUITE_RUNS_ALONE")
    set(serial_pattern "^${test_name}/speed")
    if(runs_alone)
      set(serial_pattern "^${test_name}/")
    endif()
    cdplab_discover_tests(${suite_target} PREFIX "${test_name}/"
      LABELS gpu ${chapter} ${test_name} SERIAL_PATTERN "${serial_pattern}"
      PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT ${ctest_timeout})
    set(host_parts_executable "")
    if(host_parts_server)
      set(host_parts_executable "$<TARGET_FILE:${host_parts_server}>")
    endif()
    cdplab_index_add("${chapter}" "${stem}" "${suite_target}" "$<TARGET_FILE:${suite_target}>"
                     "${exercise_source}" "${ptx}"
                     "$<TARGET_FILE:${exercise_target}>" "${reference}" "${reference_target}" "${exercise_target}"
                     "${host_parts_executable}" "${host_parts_server}")
    cdplab_device_libraries(device_libraries ${support_target})
    set_property(GLOBAL APPEND PROPERTY CDPLAB_DEVICE_LIBRARIES_INDEX "\"${test_name}\": \"${device_libraries}\"")
  endforeach()

  set(driver_source "${PROJECT_SOURCE_DIR}/starter/drivers/${chapter}.cpp")
  if(EXISTS "${driver_source}" AND all_present AND exercise_targets)
    add_executable(demo_${chapter_id} "${driver_source}")
    target_link_libraries(demo_${chapter_id} PRIVATE ${exercise_targets})
    set_target_properties(demo_${chapter_id} PROPERTIES OUTPUT_NAME "demo-${chapter}")
    set_property(GLOBAL APPEND PROPERTY CDPLAB_DEMO_TARGETS demo_${chapter_id})
    set_property(GLOBAL APPEND PROPERTY CDPLAB_FIGURE_DEMOS "${chapter}=$<TARGET_FILE:demo_${chapter_id}>")
    set_property(GLOBAL APPEND PROPERTY CDPLAB_DRIVERS
      "\"${chapter}\": {\"target\": \"demo_${chapter_id}\", \"executable\": \"$<TARGET_FILE:demo_${chapter_id}>\"}")
  endif()

  # The benchmark measures the exercises of this build (build the solution preset for the
  # reference figures); not part of ALL: it is built when asked for.
  set(bench_source "${PROJECT_SOURCE_DIR}/grader/bench/${chapter}.cu")
  if(EXISTS "${bench_source}" AND all_present AND exercise_targets)
    add_executable(bench_${chapter_id} EXCLUDE_FROM_ALL "${bench_source}")
    set_target_properties(bench_${chapter_id} PROPERTIES OUTPUT_NAME "bench-${chapter}"
                          CUDA_SEPARABLE_COMPILATION ON)
    target_link_libraries(bench_${chapter_id} PRIVATE ${exercise_targets})
    set_property(GLOBAL APPEND PROPERTY CDPLAB_BENCHES
      "\"${chapter}\": {\"target\": \"bench_${chapter_id}\", \"executable\": \"$<TARGET_FILE:bench_${chapter_id}>\"}")
  endif()
endfunction()

# cdplab_exercise_library(<target> <source> <ptx_dir> <support_target> <ptx_out>): an exercise
# file compiled into a static library, and its PTX kept in <ptx_dir> (path in <ptx_out>).
#  - The PTX the rule checker reads, and the device code a check process links at run time
#    (grader/harness/device_code), is kept from the file's own compile (nvcc -keep): the source goes
#    through the compiler once. -lineinfo adds .loc directives, so that a rule's finding names the
#    student's source line; it does not change the code.
#  - Its kernels and device variables keep default visibility on the host side: a check process
#    finds each by its mangled name (dlsym) to send the host code's launches to the loaded code.
function(cdplab_exercise_library target source ptx_dir support_target ptx_out)
  add_library(${target} STATIC "${source}")
  set_target_properties(${target} PROPERTIES CUDA_SEPARABLE_COMPILATION ON)
  target_link_libraries(${target} PUBLIC cdplab::starter ${support_target})
  file(MAKE_DIRECTORY "${ptx_dir}")
  target_compile_options(${target} PRIVATE
    "$<$<COMPILE_LANGUAGE:CUDA>:-lineinfo;-keep;--keep-dir=${ptx_dir};--device-entity-has-hidden-visibility=false>")
  get_filename_component(stem "${source}" NAME_WE)
  set(${ptx_out} "${ptx_dir}/${stem}${CDPLAB_KEPT_PTX_SUFFIX}" PARENT_SCOPE)
  # Of what -keep leaves, only the PTX stays (the rest is several megabytes per exercise).
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND "${CMAKE_COMMAND}" "-DDIR=${ptx_dir}" -P "${PROJECT_SOURCE_DIR}/cmake/CdplabKeepPtxOnly.cmake"
    VERBATIM)
endfunction()

# cdplab_host_parts_server(<target> <table> <exercise_target>): the process that runs the student's
# host parts under grading (grader/harness/host_parts/host_parts.h): the exercise file, the table
# compiled to register its host parts, and the harness's main() for it. The CUDA calls a host part
# may make are answered and recorded by that main()'s stand-ins (link-time wrapped), and it finds a
# written variable's name by its address (exported symbols). Built with the exercise's code.
function(cdplab_host_parts_server target table exercise_target)
  add_executable(${target} "${table}")
  target_compile_definitions(${target} PRIVATE CDPLAB_HOST_PARTS_SERVE)
  target_link_libraries(${target} PRIVATE ${exercise_target} cdplab::host_parts_server)
  set_target_properties(${target} PROPERTIES ENABLE_EXPORTS ON)
  target_link_options(${target} PRIVATE
    "LINKER:--wrap=cudaDeviceGetLimit,--wrap=cudaDeviceSetLimit,--wrap=cudaGetLastError,--wrap=cudaPeekAtLastError"
    "LINKER:--wrap=cudaMemcpyToSymbol,--wrap=cudaMemcpyToSymbolAsync")
endfunction()

# cdplab_reference_suite: the suite's checks linked a second time, against solutions/: the
# "grading suite" of `cdplab grade`. It runs in the grader's box with the student's device code
# loaded (grader/harness/device_code/device_code.h) and, where the exercise has host parts, the
# student's host parts called through a process of their own (`host_parts_proxy`, the table
# compiled as proxies: grader/harness/host_parts/host_parts.h); everything else of the host side
# is the workbook's. Sets `out` to its path (a generator expression) and `target_out` to its
# target in this tree, or either to "" when there is none (one from a grading kit has no target
# here: the kit's tree builds it). A tree using a grading kit takes the kit's; a build of
# solutions/ is otherwise its own grading suite unless the exercise has host parts; a copy without solutions/
# (a student release) links the starters as released instead (below). None is part of ALL; the
# grading kit's target builds them all.
function(cdplab_reference_suite chapter stem suite_target checks_target support_target oracle_target
         host_parts_proxy out target_out)
  set(${out} "" PARENT_SCOPE)
  set(${target_out} "" PARENT_SCOPE)
  set(reference_source "${PROJECT_SOURCE_DIR}/solutions/${chapter}/${stem}.cu")
  # A student release has no solutions/ but the starters as released (starter/originals): their
  # host code is the workbook's, since no BEGIN SOLUTION region lies outside a host part
  # (docs/authoring.md), so a grading suite linked against them runs the same host code as one
  # linked against solutions/, and `cdplab check` grades there as `cdplab grade` does.
  if(NOT EXISTS "${reference_source}")
    set(reference_source "${PROJECT_SOURCE_DIR}/starter/originals/${chapter}/${stem}.cu")
  endif()
  file(REAL_PATH "${CDPLAB_EXERCISE_DIR}" exercise_dir)
  file(REAL_PATH "${PROJECT_SOURCE_DIR}/solutions" solutions_dir)
  # The kit's first: a grading runs its suites in the check box, which shows the kit's tree and
  # not the submission's.
  cdplab_kit_value(REFERENCE ${suite_target} from_kit)
  if(from_kit)
    set(${out} "${from_kit}" PARENT_SCOPE)
    return()
  endif()
  if(exercise_dir STREQUAL solutions_dir AND NOT host_parts_proxy)
    cdplab_kit_record_reference(${suite_target} ${suite_target})
    set(${out} "$<TARGET_FILE:${suite_target}>" PARENT_SCOPE)
    set(${target_out} "${suite_target}" PARENT_SCOPE)
    return()
  endif()
  if(NOT EXISTS "${reference_source}")
    return()
  endif()
  string(REGEX REPLACE "[^A-Za-z0-9]" "_" chapter_id "${chapter}")
  if(exercise_dir STREQUAL solutions_dir)
    set(reference_library "cdplab_exercise_${chapter_id}_${stem}")  # compiled once already
    set(reference_ptx "${CMAKE_CURRENT_BINARY_DIR}/ptx/${chapter}/${stem}/${stem}${CDPLAB_KEPT_PTX_SUFFIX}")
  else()
    set(reference_library "cdplab_reference_${chapter_id}_${stem}")
    cdplab_exercise_library(${reference_library} "${reference_source}"
                            "${CMAKE_CURRENT_BINARY_DIR}/ptx-reference/${chapter}/${stem}" "${support_target}"
                            reference_ptx)
    set_target_properties(${reference_library} PROPERTIES EXCLUDE_FROM_ALL ON)
  endif()
  set(grading_suite "grading_${suite_target}")
  # The suite's own name: its results are the suite's.
  cdplab_add_suite(${grading_suite} EXCLUDE_FROM_ALL NAME "${chapter}/${stem}" HOST_PTX "${reference_ptx}"
                   DEVICE_LIBRARIES ${support_target}
                   LIBRARIES ${checks_target} ${host_parts_proxy} ${reference_library} ${oracle_target})
  cdplab_kit_record_reference(${suite_target} ${grading_suite})
  set(${out} "$<TARGET_FILE:${grading_suite}>" PARENT_SCOPE)
  set(${target_out} "${grading_suite}" PARENT_SCOPE)
endfunction()

# One exercise of <build>/cdplab-index.json. "grading_suite" is the suite `cdplab grade` runs (the
# checks linked against solutions/, cdplab_reference_suite), "grading_suite_target" its target when
# this tree builds it (empty when it comes from a grading kit, whose tree builds it); both empty
# when there is none. "host_parts" is the process of the exercise's host parts built from this
# tree's exercise file ("host_parts_target" its target); empty when the exercise has none.
function(cdplab_index_add chapter stem target executable source ptx library grading_suite grading_suite_target
         library_target host_parts host_parts_target)
  set_property(GLOBAL APPEND PROPERTY CDPLAB_EXERCISE_INDEX
    "{\"chapter\": \"${chapter}\", \"stem\": \"${stem}\", \"test\": \"${chapter}/${stem}\", \"target\": \"${target}\", \"executable\": \"${executable}\", \"source\": \"${source}\", \"ptx\": \"${ptx}\", \"library\": \"${library}\", \"grading_suite\": \"${grading_suite}\", \"grading_suite_target\": \"${grading_suite_target}\", \"library_target\": \"${library_target}\", \"host_parts\": \"${host_parts}\", \"host_parts_target\": \"${host_parts_target}\"}")
endfunction()

# Writes <build>/cdplab-index.json: what this build tree holds, for the cdplab command line.
# "device_libraries" gives, per suite, the device libraries its exercise's device code is linked
# with at run time ('|' between them; grader/harness/device_code).
function(cdplab_write_exercise_index)
  get_property(device_libraries GLOBAL PROPERTY CDPLAB_DEVICE_LIBRARIES_INDEX)
  list(JOIN device_libraries ",\n    " device_libraries_json)
  get_property(entries GLOBAL PROPERTY CDPLAB_EXERCISE_INDEX)
  get_property(drivers GLOBAL PROPERTY CDPLAB_DRIVERS)
  get_property(benches GLOBAL PROPERTY CDPLAB_BENCHES)
  list(JOIN benches ",\n    " benches_json)
  list(JOIN entries ",\n    " entries_json)
  list(JOIN drivers ",\n    " drivers_json)
  file(GENERATE OUTPUT "${PROJECT_BINARY_DIR}/cdplab-index.json" CONTENT
"{
  \"exercise_dir\": \"${CDPLAB_EXERCISE_DIR}\",
  \"exercises\": [
    ${entries_json}
  ],
  \"drivers\": {
    ${drivers_json}
  },
  \"benches\": {
    ${benches_json}
  },
  \"device_libraries\": {
    ${device_libraries_json}
  }
}
")
endfunction()
