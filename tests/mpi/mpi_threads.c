// SPDX-License-Identifier: GPL-2.0-only
/* MPI_THREAD_MULTIPLE: THREADS threads per rank, each exchanging ITERS
 * messages with the partner rank on its own duplicated communicator, after
 * a fork()ed child (which makes no MPI calls) has exited through exit().
 * usage: mpi_threads THREADS ITERS; needs an even rank count. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static int g_iters, g_partner;
static MPI_Comm g_comms[64];

static void* worker(void* arg) {
  long t = (long)arg;
  int out[16] = {0}, in[16];
  for (int i = 0; i < g_iters; ++i) {
    MPI_Sendrecv(out, 16, MPI_INT, g_partner, (int)t, in, 16, MPI_INT, g_partner, (int)t,
                 g_comms[t], MPI_STATUS_IGNORE);
    MPI_Allreduce(out, in, 4, MPI_INT, MPI_SUM, g_comms[t]);
  }
  return NULL;
}

int main(int argc, char** argv) {
  int provided, rank, size;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (provided < MPI_THREAD_MULTIPLE) {
    if (rank == 0) printf("SKIP: MPI_THREAD_MULTIPLE not provided\n");
    MPI_Finalize();
    return 0;
  }
  int threads = argc > 1 ? atoi(argv[1]) : 4;
  g_iters = argc > 2 ? atoi(argv[2]) : 100;
  g_partner = rank ^ 1;
  pid_t child = fork();
  if (child == 0) exit(0); /* runs atexit handlers in the child */
  waitpid(child, NULL, 0);
  for (int t = 0; t < threads; ++t) MPI_Comm_dup(MPI_COMM_WORLD, &g_comms[t]);
  pthread_t th[64];
  for (long t = 0; t < threads; ++t) pthread_create(&th[t], NULL, worker, (void*)t);
  for (int t = 0; t < threads; ++t) pthread_join(th[t], NULL);
  for (int t = 0; t < threads; ++t) MPI_Comm_free(&g_comms[t]);
  if (rank == 0) printf("threads done: %d threads x %d iterations\n", threads, g_iters);
  MPI_Finalize();
  return 0;
}
