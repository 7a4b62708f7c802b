// SPDX-License-Identifier: GPL-2.0-only
/* dltrace-mpi-clock: the program's own CLOCK_MONOTONIC around each of its MPI
 * calls, to check the recorder's times against a clock it does not read.
 * Prints one line per call, "<kind> <before_ns> <after_ns>", for MPI_Init and
 * ITERS rounds of MPI_Barrier, MPI_Allreduce and an MPI_Isend/MPI_Irecv pair
 * completed by MPI_Waitall, with a pause of PAUSE_MS every 100 rounds (so
 * that the run spans several flushes).
 * usage: dltrace-mpi-clock [iters [pause_ms]]   (defaults 2000, 30); 2 ranks */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char** argv) {
  long long init0 = Now();
  MPI_Init(&argc, &argv);
  long long init1 = Now();
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int iters = argc > 1 ? atoi(argv[1]) : 2000;
  int pause_ms = argc > 2 ? atoi(argv[2]) : 30;
  int peer = rank ^ 1;
  double in = 1, out = 0;
  if (rank == 0) printf("MPI_Init %lld %lld\n", init0, init1);
  for (int i = 0; i < iters; ++i) {
    long long t0 = Now();
    MPI_Barrier(MPI_COMM_WORLD);
    long long t1 = Now();
    MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    long long t2 = Now();
    MPI_Request r[2];
    MPI_Irecv(&out, 1, MPI_DOUBLE, peer, 7, MPI_COMM_WORLD, &r[0]);
    MPI_Isend(&in, 1, MPI_DOUBLE, peer, 7, MPI_COMM_WORLD, &r[1]);
    long long t3 = Now();
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    long long t4 = Now();
    if (rank == 0)
      printf("MPI_Barrier %lld %lld\nMPI_Allreduce %lld %lld\nissue %lld %lld\nwait %lld %lld\n",
             t0, t1, t1, t2, t2, t3, t3, t4);
    if (i % 100 == 99) {
      struct timespec p = {0, pause_ms * 1000000L};
      nanosleep(&p, NULL);
    }
  }
  MPI_Finalize();
  return 0;
}
