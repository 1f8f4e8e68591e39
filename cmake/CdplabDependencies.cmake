# Third-party libraries: the installed package first (Debian: doctest-dev, libcli11-dev,
# nlohmann-json3-dev, libtomlplusplus-dev), a pinned download as the fallback for machines
# that have internet access but not the packages.
include(FetchContent)

function(cdplab_require package target)
  cmake_parse_arguments(ARG "" "GIT_REPOSITORY;GIT_TAG" "" ${ARGN})
  find_package(${package} QUIET CONFIG)
  if(TARGET ${target})
    message(STATUS "cdp-lab: ${package} ${${package}_VERSION} (installed)")
    return()
  endif()
  message(STATUS "cdp-lab: ${package} not installed; fetching ${ARG_GIT_TAG}")
  FetchContent_Declare(${package} GIT_REPOSITORY ${ARG_GIT_REPOSITORY} GIT_TAG ${ARG_GIT_TAG}
                       GIT_SHALLOW TRUE)
  FetchContent_MakeAvailable(${package})
  if(NOT TARGET ${target})
    message(FATAL_ERROR "cdp-lab: ${package} provides no target ${target}")
  endif()
endfunction()

cdplab_require(doctest doctest::doctest
  GIT_REPOSITORY https://github.com/doctest/doctest.git GIT_TAG v2.4.9)

# The suites write their results as JSON, so every build needs nlohmann_json.
cdplab_require(nlohmann_json nlohmann_json::nlohmann_json
  GIT_REPOSITORY https://github.com/nlohmann/json.git GIT_TAG v3.11.2)

if(CDPLAB_BUILD_TOOLS)
  cdplab_require(CLI11 CLI11::CLI11
    GIT_REPOSITORY https://github.com/CLIUtils/CLI11.git GIT_TAG v2.1.2)
  cdplab_require(tomlplusplus tomlplusplus::tomlplusplus
    GIT_REPOSITORY https://github.com/marzer/tomlplusplus.git GIT_TAG v3.3.0)
  # The class grader reads submissions' archives member by member (grader/core/batch/archive.h).
  # Debian: libarchive-dev. The fallback builds the reader alone, with zlib for .tar.gz and .zip.
  find_package(LibArchive QUIET)
  if(TARGET LibArchive::LibArchive)
    message(STATUS "cdp-lab: libarchive ${LibArchive_VERSION} (installed)")
  else()
    message(STATUS "cdp-lab: libarchive not installed; fetching v3.6.2")
    foreach(option ENABLE_TEST ENABLE_TAR ENABLE_CPIO ENABLE_CAT ENABLE_UNZIP ENABLE_OPENSSL ENABLE_MBEDTLS
                   ENABLE_NETTLE ENABLE_LIBB2 ENABLE_LZ4 ENABLE_LZO ENABLE_LZMA ENABLE_ZSTD ENABLE_BZip2
                   ENABLE_LIBXML2 ENABLE_EXPAT ENABLE_PCREPOSIX ENABLE_ICONV ENABLE_ACL ENABLE_XATTR ENABLE_INSTALL)
      set(${option} OFF CACHE BOOL "" FORCE)
    endforeach()
    FetchContent_Declare(libarchive GIT_REPOSITORY https://github.com/libarchive/libarchive.git GIT_TAG v3.6.2
                         GIT_SHALLOW TRUE)
    FetchContent_MakeAvailable(libarchive)
    add_library(LibArchive::LibArchive ALIAS archive_static)
    target_include_directories(archive_static INTERFACE "${libarchive_SOURCE_DIR}/libarchive")
  endif()
endif()

# doctest_discover_tests(): from the installed package, or from the fetched sources.
if(NOT COMMAND doctest_discover_tests)
  if(DEFINED doctest_SOURCE_DIR)
    include("${doctest_SOURCE_DIR}/scripts/cmake/doctest.cmake")
  else()
    include("${doctest_DIR}/doctest.cmake")
  endif()
endif()

# cdplab_discover_tests(<target> [PREFIX p] [LABELS l...] [SERIAL_PATTERN regex] [PROPERTIES k v...]):
# every TEST_CASE of a doctest executable becomes one CTest test, run in its own process; those
# whose names match SERIAL_PATTERN never run beside other tests (RUN_SERIAL).
# Labels are set by an include file of our own that CTest reads after the discovered tests:
# doctest's PROPERTIES pass through a generated script that flattens a list value.
function(cdplab_discover_tests target)
  cmake_parse_arguments(ARG "" "PREFIX;SERIAL_PATTERN" "LABELS;PROPERTIES" ${ARGN})
  doctest_discover_tests(${target} TEST_PREFIX "${ARG_PREFIX}" TEST_LIST ${target}_TESTS
                         PROPERTIES ${ARG_PROPERTIES})
  if(ARG_LABELS)
    set(labels_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_labels.cmake")
    set(serial "")
    if(ARG_SERIAL_PATTERN)  # the tests whose names match run alone (RUN_SERIAL)
      string(CONCAT serial
        "  set(serial_tests \${${target}_TESTS})\n"
        "  list(FILTER serial_tests INCLUDE REGEX \"${ARG_SERIAL_PATTERN}\")\n"
        "  if(serial_tests)\n"
        "    set_tests_properties(\${serial_tests} PROPERTIES RUN_SERIAL TRUE)\n"
        "  endif()\n")
    endif()
    file(WRITE "${labels_file}"
      "if(${target}_TESTS)\n"
      "  set_tests_properties(\${${target}_TESTS} PROPERTIES LABELS \"${ARG_LABELS}\")\n"
      "${serial}"
      "endif()\n")
    set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${labels_file}")
  endif()
endfunction()
