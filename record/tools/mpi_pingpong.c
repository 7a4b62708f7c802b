// SPDX-License-Identifier: GPL-2.0-only
/* dltrace-mpi-pingpong: the MPI library's cost per small message, for
 * `dltrace calibrate` (run under mpirun with 2 ranks): rank 0 and rank 1
 * bounce an 8-byte message; prints "mpi_message_ns N", half the round trip
 * of the fastest of 5 batches of ROUNDS (argument, default 500). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) fprintf(stderr, "dltrace-mpi-pingpong: needs exactly 2 ranks, got %d\n", size);
    MPI_Finalize();
    return 2;
  }
  const int rounds = argc > 1 ? atoi(argv[1]) : 500;
  char buf[8] = {0};
  double best = 1e30;
  for (int batch = -1; batch < 5; ++batch) { /* batch -1: connection set-up and warm-up */
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    for (int i = 0; i < rounds; ++i) {
      if (rank == 0) {
        MPI_Send(buf, 8, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(buf, 8, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(buf, 8, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, 8, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
      }
    }
    t = MPI_Wtime() - t;
    if (batch >= 0 && t < best) best = t;
  }
  if (rank == 0) printf("mpi_message_ns %.1f\n", best / rounds / 2 * 1e9);
  MPI_Finalize();
  return 0;
}
