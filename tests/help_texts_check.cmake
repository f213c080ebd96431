# Every program's --help: exit 0, a text on stdout, and no line wider than 100 columns (the flags'
# texts are wrapped to it; the prose is written to it). TOOLS: the programs, as a ;-list. The
# width is matched in the whole text, not line by line: a CMake list would join lines across an
# unmatched '[' or a trailing '\'.
string(REPEAT "[^\n]" 101 too_wide)
foreach(tool IN LISTS TOOLS)
  execute_process(COMMAND ${tool} --help RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${tool} --help exited ${rc}\n${err}")
  endif()
  if(out STREQUAL "")
    message(FATAL_ERROR "${tool} --help printed nothing on stdout")
  endif()
  string(REGEX MATCH "[^\n]*${too_wide}[^\n]*" line "${out}")
  if(NOT line STREQUAL "")
    string(LENGTH "${line}" width)
    message(FATAL_ERROR "${tool} --help: a line of ${width} columns (at most 100):\n${line}")
  endif()
endforeach()
