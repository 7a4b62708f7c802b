# Fails the build when the interposer has an undefined, non-weak reference to
# an MPI symbol (it would not load into mpirun or a non-MPI process), when it
# needs libnccl or CUDA at link time, or when its exported symbols are not
# exactly the intercepted functions of the tables (mpi_functions.h and its
# Fortran names, nccl_abi.h) and the signal functions (signals.cc).
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

# What the tables say is intercepted.
file(READ ${NCCL_TABLE} nccl_text)
string(FIND "${nccl_text}" "#define DLTRACE_NCCL_FUNCTIONS" begin)
string(FIND "${nccl_text}" "#define DLTRACE_NCCL_HELPERS" end)
math(EXPR length "${end} - ${begin}")
string(SUBSTRING "${nccl_text}" ${begin} ${length} nccl_text)
string(REGEX MATCHALL "X\\((nccl[A-Za-z]+)," nccl_rows "${nccl_text}")
string(REGEX REPLACE "X\\(([A-Za-z]+)," "\\1" expected "${nccl_rows}")
if(WITH_MPI)
  file(READ ${MPI_TABLE} mpi_text)
  string(REGEX MATCHALL "X\\((MPI_[A-Za-z_]+)," mpi_rows "${mpi_text}")
  string(REGEX REPLACE "X\\(([A-Za-z_]+)," "\\1" mpi_names "${mpi_rows}")
  list(APPEND expected ${mpi_names})
  # Every Fortran name of every row (gen_mpi_fortran.py lists them).
  file(STRINGS ${MPI_FORTRAN_SYMBOLS} fortran_names)
  list(APPEND expected ${fortran_names})
endif()
# The program's signal handlers are chained behind the recorder's (signals.cc).
list(APPEND expected sigaction signal)
list(REMOVE_DUPLICATES expected)
list(SORT expected)

execute_process(COMMAND nm -D --defined-only ${LIB} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nm failed on ${LIB}")
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
