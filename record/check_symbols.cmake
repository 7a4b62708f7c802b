# SPDX-License-Identifier: GPL-2.0-only
# Fails the build when the interposer has an undefined, non-weak reference to
# an MPI symbol (it would not load into mpirun or a non-MPI process), when it
# needs libnccl or CUDA at link time, or when its exported symbols are not
# exactly the intercepted functions of the tables (tables/mpi.py with its
# Fortran names, tables/nccl.py) and the signal functions (signals.cc).
execute_process(COMMAND nm -D --undefined-only ${LIB} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nm failed on ${LIB}")
endif()
string(REGEX MATCHALL "[ \t]+U [^\n]*(MPI|ompi|mpi_|opal)[^\n]*" strong "${out}")
if(strong)
  message(FATAL_ERROR "libdltrace-record.so has strong MPI references (add them to src/mpi_weak.h):\n${strong}")
endif()
string(REGEX MATCHALL "[ \t]+[Uw] [^\n]*(nccl|cuda|cu[A-Z])[^\n]*" gpu "${out}")
if(gpu)
  message(FATAL_ERROR "libdltrace-record.so references NCCL or CUDA at link time (resolve them at run time):\n${gpu}")
endif()

# What the tables say is intercepted: every name gen_wrappers.py wrote
# (C and Fortran MPI names, NCCL names).
set(expected "")
string(REPLACE "," ";" SYMBOL_LISTS "${SYMBOL_LISTS}")
foreach(list_file ${SYMBOL_LISTS})
  file(STRINGS ${list_file} names)
  list(APPEND expected ${names})
endforeach()
# The program's signal handlers are chained behind the recorder's (signals.cc).
list(APPEND expected sigaction signal)
list(REMOVE_DUPLICATES expected)
list(SORT expected)

include(${CMAKE_CURRENT_LIST_DIR}/exported_symbols.cmake)
dltrace_exported_symbols(${LIB} exported)
if(NOT exported STREQUAL expected)
  set(extra ${exported})
  list(REMOVE_ITEM extra ${expected})
  set(missing ${expected})
  list(REMOVE_ITEM missing ${exported})
  message(FATAL_ERROR "libdltrace-record.so must export exactly the intercepted API.\n"
                      "exported but not in a table: ${extra}\nin a table but not exported: ${missing}")
endif()
list(LENGTH expected n)
message(STATUS "libdltrace-record.so exports exactly the ${n} intercepted functions")
