# SPDX-License-Identifier: GPL-2.0-only
# Writes OUT, a C++ file defining one string per asset in ASSETS, each given
# as NAME=PATH (kReportHtml=.../report.html, kUplotJs=.../vendor/uPlot.iife.min.js).
separate_arguments(ASSETS)
set(body "// Generated from views/report/ by embed.cmake; do not edit.\n#include \"dltrace/views/report.h\"\nnamespace dltrace::views {\n")
foreach(entry ${ASSETS})
  string(FIND "${entry}" "=" eq)
  string(SUBSTRING "${entry}" 0 ${eq} name)
  math(EXPR from "${eq} + 1")
  string(SUBSTRING "${entry}" ${from} -1 asset)
  file(READ ${asset} text)
  # Our own scripts lose their comment lines and indentation (the page
  # carries what runs, the source what explains); minified files stay as they are.
  if(asset MATCHES "\\.js$" AND NOT asset MATCHES "\\.min\\.js$")
    string(REGEX REPLACE "\n[ ]*//[^\n]*" "" text "${text}")
    string(REGEX REPLACE "\n[ ]+" "\n" text "${text}")
  endif()
  # Raw strings are split in pieces well below compilers' literal limits.
  string(APPEND body "const char* const ${name}[] = {\n")
  string(LENGTH "${text}" len)
  set(pos 0)
  while(pos LESS len)
    string(SUBSTRING "${text}" ${pos} 8000 piece)
    string(APPEND body "R\"dltrace_asset(${piece})dltrace_asset\",\n")
    math(EXPR pos "${pos} + 8000")
  endwhile()
  string(APPEND body "nullptr};\n")
endforeach()
string(APPEND body "}  // namespace dltrace::views\n")
file(WRITE ${OUT} "${body}")
