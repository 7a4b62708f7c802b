# Fails the build when the interposer has an undefined, non-weak reference to
# an MPI symbol (it would not load into mpirun or a non-MPI process).
execute_process(COMMAND nm -D --undefined-only ${LIB} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nm failed on ${LIB}")
endif()
string(REGEX MATCHALL "[ \t]+U [^\n]*(MPI|ompi|mpi_|opal)[^\n]*" strong "${out}")
if(strong)
  message(FATAL_ERROR "libdltrace-record.so has strong MPI references (add them to src/mpi_weak.h):\n${strong}")
endif()
