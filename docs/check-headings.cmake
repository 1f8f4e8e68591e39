# A test of the rendered documentation: no heading of any page shows an HTML tag as text (a code
# span inside a Markdown heading renders as "(<tt>file.cu</tt>)" in some of Doxygen's output).
# Run as: cmake -DHTML_DIR=<build>/docs/html -P check-headings.cmake
if(NOT EXISTS "${HTML_DIR}/index.html")
  message("CDPLAB_TEST_SKIPPED: ${HTML_DIR} has no pages: build the 'docs' target first")
  return()
endif()
file(GLOB pages "${HTML_DIR}/*.html")
set(found "")
foreach(page IN LISTS pages)
  file(READ "${page}" html)
  string(REPLACE "\n" " " html "${html}")  # a heading's text may start on the line after its tag
  string(REPLACE ";" "," html "${html}")    # "&lt;" would split a CMake list: "&lt,", "&gt," below
  string(REGEX MATCHALL "<h[1-6][^>]*>([^<]|<[^/]|</[^h])*</h[1-6]>|<div class=\"title\">[^<]*</div>|<title>[^<]*</title>"
         headings "${html}")
  foreach(heading IN LISTS headings)
    if(heading MATCHES "&lt,/?[a-zA-Z]+[^&]*&gt,")
      get_filename_component(name "${page}" NAME)
      string(APPEND found "  ${name}: ${heading}\n")
    endif()
  endforeach()
endforeach()
# The navigation tree repeats every heading as text.
file(GLOB trees "${HTML_DIR}/navtree*.js")
foreach(tree IN LISTS trees)
  file(READ "${tree}" text)
  string(REPLACE ";" "," text "${text}")
  string(REGEX MATCHALL "\"[^\"]*&lt,/?[a-zA-Z]+[^&\"]*&gt,[^\"]*\"" entries "${text}")
  foreach(entry IN LISTS entries)
    get_filename_component(name "${tree}" NAME)
    string(APPEND found "  ${name}: ${entry}\n")
  endforeach()
endforeach()
if(found)
  message(FATAL_ERROR "headings that show HTML tags as text (a code span or tag in a page heading):\n${found}")
endif()
list(LENGTH pages count)
message(STATUS "${count} pages, no heading shows an HTML tag as text")
