# SPDX-License-Identifier: GPL-2.0-only
# dltrace_exported_symbols(LIB VAR): the sorted names LIB's dynamic symbol
# table defines (version nodes left out), for the export checks
# check_symbols.cmake and check_profiler_symbols.cmake.
function(dltrace_exported_symbols lib var)
  execute_process(COMMAND nm -D --defined-only ${lib} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nm failed on ${lib}")
  endif()
  string(REGEX MATCHALL "[ \t][A-Za-z] [^\n]+" rows "${out}")
  set(exported "")
  foreach(row ${rows})
    string(REGEX REPLACE "^[ \t][A-Za-z] " "" name "${row}")
    # Version nodes (e.g. an unnamed one) are not functions.
    if(NOT row MATCHES "^[ \t]A ")
      list(APPEND exported ${name})
    endif()
  endforeach()
  list(SORT exported)
  set(${var} ${exported} PARENT_SCOPE)
endfunction()
