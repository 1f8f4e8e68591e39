# Draws the pictures of the documentation and writes the page that shows them (figures.md). The
# lessons show their exercises' launch graphs from images/ too: expected-CHAPTER-STEM.svg (what
# the lesson expects) beside launch-graph-CHAPTER-STEM.svg (what this build compiled).
# Run by the docs_figures target as `cmake -DINPUT=<figures-input.cmake> -P make-figures.cmake`;
# INPUT sets:
#   FIGURE_OUT    the folder to write: figures.md and images/ (emptied first)
#   RECORDED_DIR  docs/figures: pictures recorded on a GPU, <chapter>/*.svg and <chapter>/source.txt,
#                 the reference solutions' launch graphs, launch-graphs/<chapter>-<stem>.svg, and
#                 the launch trees their checks made, launch-trees/<chapter>-<stem>.svg and source.txt,
#                 and when their grids ran, timelines/<chapter>-<stem>.svg and source.txt
#   RECORD_DIR    if not empty, pictures drawn on this machine's GPU are recorded there too (and, in
#                 a build of solutions/, the launch graphs)
#   EXERCISE_DIR  the exercises this build compiles (solutions/ for reference pictures)
#   DEMOS         chapter=demo program, one per chapter that has a demo (none in a build of the
#                 students' chapters/: the page shows the recorded pictures instead)
#   EXERCISES     chapter/stem=exercise source, one per exercise of the build
#   CLI, DOT      the cdplab command line and Graphviz dot (either may be empty: no launch graphs)
#   DEMO_TIMEOUT  seconds a demo may run
#
# A demo draws its pictures only on a GPU. Where it cannot run, the page shows the pictures last
# recorded on a GPU and says so; it never passes them off as drawn by this build.
include("${INPUT}")

file(REMOVE_RECURSE "${FIGURE_OUT}")
file(MAKE_DIRECTORY "${FIGURE_OUT}/images" "${FIGURE_OUT}/demo-output" "${FIGURE_OUT}/launch-graphs")
get_filename_component(exercise_folder "${EXERCISE_DIR}" NAME)
string(TIMESTAMP today "%Y-%m-%d" UTC)

set(device "")
execute_process(COMMAND nvidia-smi --query-gpu=name --format=csv,noheader
                TIMEOUT 20 RESULT_VARIABLE smi_status OUTPUT_VARIABLE smi_output ERROR_QUIET)
if(smi_status STREQUAL "0")
  string(REGEX REPLACE "\n.*" "" device "${smi_output}")
  string(STRIP "${device}" device)
endif()
if(device STREQUAL "")
  set(device "a GPU")
endif()

# The chapters, in build order, from the exercise list.
set(chapters "")
foreach(entry IN LISTS EXERCISES)
  string(REGEX REPLACE "/.*" "" chapter "${entry}")
  list(APPEND chapters "${chapter}")
endforeach()
list(REMOVE_DUPLICATES chapters)

set(page "# Pictures {#figures}

The pictures of the workbook, made by the build that made these pages. Each chapter's demo
program (`cdplab run CHAPTER`) draws what the exercises computed: run on a GPU, it uses the
exercises of the build, here those in `${exercise_folder}/`. The launch graphs show which
kernel launches which, and into which stream, as the grader reads them from the compiled code
(`cdplab rules FILE --dot`, drawn with Graphviz).
")

# A picture that is a line of text: where a launch graph cannot be drawn, it says why.
function(write_note_picture file text)
  string(REPLACE "&" "&amp;" text "${text}")
  string(REPLACE "<" "&lt;" text "${text}")
  string(LENGTH "${text}" length)
  math(EXPR width "${length} * 7 + 20")
  file(WRITE "${file}" "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"${width}\" height=\"30\">"
                       "<text x=\"10\" y=\"20\" font-family=\"sans-serif\" font-size=\"12\">${text}</text></svg>\n")
endfunction()

# Where the pictures recorded in `dir` come from, as its source.txt says ("an earlier run" without one).
function(recorded_source dir out)
  set(source "an earlier run")
  if(EXISTS "${dir}/source.txt")
    file(READ "${dir}/source.txt" source)
    string(STRIP "${source}" source)
  endif()
  set(${out} "${source}" PARENT_SCOPE)
endfunction()

# The pictures of the chapter's exercises that a GPU run recorded in RECORDED_DIR/<folder>
# (<chapter>-<stem>.svg), copied into images/ as <prefix>-<chapter>-<stem>.svg under a heading and
# a text in which SOURCE stands for where they were recorded. Nothing where none was recorded.
function(add_recorded_pictures chapter folder prefix heading)
  string(JOIN "" text ${ARGN})
  set(stems "")
  foreach(entry IN LISTS EXERCISES)
    if(entry MATCHES "^${chapter}/([^=]*)=")
      set(stem "${CMAKE_MATCH_1}")  # ${} is read before if() matches: not in the same condition
      if(EXISTS "${RECORDED_DIR}/${folder}/${chapter}-${stem}.svg")
        list(APPEND stems "${stem}")
      endif()
    endif()
  endforeach()
  if(NOT stems)
    return()
  endif()
  recorded_source("${RECORDED_DIR}/${folder}" source)
  string(REPLACE "SOURCE" "${source}" text "${text}")
  set(added "\n### ${heading}\n\n${text}\n")
  foreach(stem IN LISTS stems)
    # <chapter>-<stem>.svg, then -2.svg, -3.svg ... where more than one check of it is shown.
    file(GLOB more RELATIVE "${RECORDED_DIR}/${folder}" "${RECORDED_DIR}/${folder}/${chapter}-${stem}-[0-9].svg")
    list(SORT more)
    foreach(name IN ITEMS "${chapter}-${stem}.svg" ${more})
      file(COPY_FILE "${RECORDED_DIR}/${folder}/${name}" "${FIGURE_OUT}/images/${prefix}-${name}")
      string(APPEND added "\n\\image html ${prefix}-${name} \"${stem}.cu\"\n")
    endforeach()
  endforeach()
  set(page "${page}${added}" PARENT_SCOPE)
endfunction()

# Copies `svgs` into images/ as <chapter>-<name> and adds them to the page.
function(add_pictures chapter svgs)
  foreach(svg IN LISTS svgs)
    get_filename_component(name "${svg}" NAME)
    file(COPY_FILE "${svg}" "${FIGURE_OUT}/images/${chapter}-${name}")
    string(APPEND page "\n\\image html ${chapter}-${name} \"${name}\"\n")
  endforeach()
  set(page "${page}" PARENT_SCOPE)
endfunction()

foreach(chapter IN LISTS chapters)
  string(APPEND page "\n## ${chapter}\n")

  # The demo's pictures: drawn now, or recorded earlier on a GPU.
  set(demo "")
  foreach(entry IN LISTS DEMOS)
    if(entry MATCHES "^${chapter}=(.*)$")
      set(demo "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  if(NOT demo STREQUAL "")
    set(drawn_dir "${FIGURE_OUT}/demo-output/${chapter}")
    execute_process(COMMAND "${demo}" --out "${drawn_dir}" TIMEOUT ${DEMO_TIMEOUT}
                    RESULT_VARIABLE demo_status OUTPUT_VARIABLE demo_output ERROR_VARIABLE demo_output)
    file(GLOB drawn "${drawn_dir}/*.svg")
    file(GLOB recorded "${RECORDED_DIR}/${chapter}/*.svg")
    list(SORT drawn)
    list(SORT recorded)
    # Why the demo drew nothing, if it did not: its first line says (no GPU, a failed exercise).
    string(REGEX REPLACE "\n.*" "" first_line "${demo_output}")
    string(REGEX REPLACE "[`'\\@<>]" "" first_line "${first_line}")  # plain text inside backticks
    if(first_line STREQUAL "")
      set(first_line "exit status ${demo_status}")
    endif()
    if(demo_status STREQUAL "0" AND drawn)
      string(APPEND page "\nDrawn by `demo-${chapter}` while these pages were built, on ${device}, from the "
                         "exercises in `${exercise_folder}/`.\n")
      add_pictures("${chapter}" "${drawn}")
      if(NOT RECORD_DIR STREQUAL "")
        file(REMOVE_RECURSE "${RECORD_DIR}/${chapter}")
        file(MAKE_DIRECTORY "${RECORD_DIR}/${chapter}")
        foreach(svg IN LISTS drawn)
          file(COPY "${svg}" DESTINATION "${RECORD_DIR}/${chapter}")
        endforeach()
        file(WRITE "${RECORD_DIR}/${chapter}/source.txt"
             "drawn by `demo-${chapter}` from the reference solutions, on ${device}, on ${today}\n")
      endif()
    elseif(recorded)
      recorded_source("${RECORDED_DIR}/${chapter}" source)
      string(APPEND page "\nThe demo could not draw while these pages were built (`${first_line}`). These "
                         "pictures were recorded instead: ${source}.\n")
      add_pictures("${chapter}" "${recorded}")
    else()
      string(APPEND page "\nNo pictures: the demo drew none while these pages were built (`${first_line}`), "
                         "and none are recorded.\n")
    endif()
  else()
    # A build of the students' chapters/: the pictures recorded from the reference solutions.
    file(GLOB recorded "${RECORDED_DIR}/${chapter}/*.svg")
    list(SORT recorded)
    if(recorded)
      set(source "an earlier run")
      if(EXISTS "${RECORDED_DIR}/${chapter}/source.txt")
        file(READ "${RECORDED_DIR}/${chapter}/source.txt" source)
        string(STRIP "${source}" source)
      endif()
      string(APPEND page "\nThe pictures of the reference solutions, ${source}. `cdplab run ${chapter}` draws "
                         "your own.\n")
      add_pictures("${chapter}" "${recorded}")
    endif()
  endif()

  # The launch graph of every exercise of the chapter, on this page and on its lesson, where
  # expected-CHAPTER-STEM.svg (the reference solution's, recorded in RECORDED_DIR/launch-graphs)
  # stands beside launch-graph-CHAPTER-STEM.svg (this build's). Both files always exist: where a
  # graph cannot be drawn, a picture says why, so that a lesson never shows a missing image.
  string(APPEND page "\n### Launch graphs\n")
  foreach(entry IN LISTS EXERCISES)
    if(NOT entry MATCHES "^${chapter}/([^=]*)=(.*)$")
      continue()
    endif()
    set(stem "${CMAKE_MATCH_1}")
    set(source "${CMAKE_MATCH_2}")
    set(image "launch-graph-${chapter}-${stem}.svg")
    set(expected "${RECORDED_DIR}/launch-graphs/${chapter}-${stem}.svg")
    if(EXISTS "${expected}")
      file(COPY_FILE "${expected}" "${FIGURE_OUT}/images/expected-${chapter}-${stem}.svg")
    else()
      write_note_picture("${FIGURE_OUT}/images/expected-${chapter}-${stem}.svg" "no recorded launch graph")
    endif()
    set(why "")
    if(CLI STREQUAL "" OR DOT STREQUAL "")
      set(why "this build has no cdplab command line or no Graphviz")
    else()
      execute_process(COMMAND "${CLI}" rules --dot "${source}" TIMEOUT 120
                      RESULT_VARIABLE rules_status OUTPUT_VARIABLE dot_text ERROR_VARIABLE rules_error)
      if(NOT dot_text MATCHES "^digraph")
        string(REGEX REPLACE "\n.*" "" rules_error "${rules_error}")
        string(REGEX REPLACE "[`'\\@<>&]" "" rules_error "${rules_error}")
        set(why "`cdplab rules` said: ${rules_error}")
      else()
        set(dot_file "${FIGURE_OUT}/launch-graphs/${chapter}-${stem}.dot")
        file(WRITE "${dot_file}" "${dot_text}")
        execute_process(COMMAND "${DOT}" -Tsvg -o "${FIGURE_OUT}/images/${image}" "${dot_file}" TIMEOUT 60
                        RESULT_VARIABLE dot_status ERROR_VARIABLE dot_error)
        if(NOT dot_status STREQUAL "0")
          set(why "Graphviz could not draw it")
        elseif(NOT RECORD_DIR STREQUAL "" AND exercise_folder STREQUAL "solutions")  # what lessons expect
          file(MAKE_DIRECTORY "${RECORD_DIR}/launch-graphs")
          file(COPY_FILE "${FIGURE_OUT}/images/${image}" "${RECORD_DIR}/launch-graphs/${chapter}-${stem}.svg")
        endif()
      endif()
    endif()
    if(why STREQUAL "")
      string(APPEND page "\n\\image html ${image} \"${stem}.cu\"\n")
    else()
      string(APPEND page "\n`${stem}.cu`: no launch graph (${why}).\n")
      string(REPLACE "`" "" why "${why}")
      write_note_picture("${FIGURE_OUT}/images/${image}" "${stem}.cu: no launch graph (${why})")
    endif()
  endforeach()

  # --launch-trees, recorded in RECORDED_DIR/launch-trees): the launch tree a student's failing
  # check is shown beside.
  add_recorded_pictures("${chapter}" launch-trees launch-tree "Launch trees"
    "What the reference solutions' checks launched on the GPU, counted by the grader as they ran (SOURCE): which "
    "kernel launched which, how many grids, into which streams. `cdplab check` shows yours under a failed check.")
  # When the reference solutions' grids ran (cdplab grade solutions --timelines, recorded in
  # RECORDED_DIR/timelines): the timeline of the check that judges the order of grids, else of
  # the one that ran the most, as the grader recorded it on the GPU named in each picture.
  add_recorded_pictures("${chapter}" timelines timeline "Timelines"
    "When the reference solutions' grids ran in one check, recorded by the grader (SOURCE): a row per place grids "
    "were launched into, grids side by side stacked. `cdplab check EXERCISE --timeline` shows yours.")
endforeach()

file(WRITE "${FIGURE_OUT}/figures.md" "${page}")
