// SPDX-License-Identifier: GPL-2.0-only
/* dltrace-mpi-loop: N 8-byte MPI_Allreduce calls on a duplicate of
 * MPI_COMM_WORLD, then MPI_Finalize; with "kill", a SIGKILL to itself right
 * after the N-th call instead (what the recorder's raw file, DLTRACE_RAW,
 * must survive: the trace then holds exactly N calls once recovered).
 * usage: dltrace-mpi-loop N [exit|kill] */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  if (argc < 2 || (argc > 2 && strcmp(argv[2], "exit") && strcmp(argv[2], "kill"))) {
    fprintf(stderr, "usage: dltrace-mpi-loop N [exit|kill]\n");
    return 2;
  }
  long n = strtol(argv[1], NULL, 10);
  MPI_Init(&argc, &argv);
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  double send = 1.0, recv = 0.0;
  for (long i = 0; i < n; ++i) MPI_Allreduce(&send, &recv, 1, MPI_DOUBLE, MPI_SUM, comm);
  if (argc > 2 && !strcmp(argv[2], "kill")) raise(SIGKILL);
  MPI_Comm_free(&comm);
  MPI_Finalize();
  return 0;
}
