// SPDX-License-Identifier: GPL-2.0-only
/* dltrace-mpi-overhead: mean time per MPI_Allreduce call for a tiny (8 B) and
 * a large (1 MB) message, to measure what the recorder adds per call.
 *
 * Prints figures; it asserts nothing. Rank 0 prints one line per size,
 *   allreduce_8B_ns <mean ns per call>
 *   allreduce_1MB_ns <mean ns per call>
 * where the mean is the slowest rank's (a collective finishes with it), and
 *   allreduce_8B_thread_cpu_ns <CPU time of the calling thread per call>
 *   allreduce_8B_process_cpu_ns <CPU time of the whole process per call>
 * (the same for 1MB; rank 0's: with one rank and no waiting on a peer, CPU
 * time per call is a figure a loaded machine moves much less than wall time;
 * the process's includes what the recorder's threads did during the loop)
 *   max_rss_kb <rank 0's peak resident memory>
 * usage: dltrace-mpi-overhead [small_iters [large_iters [warmup_iters]]]
 * (defaults 200000, 200, 1000; the large loop warms up warmup/100 + 1). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static double Seconds(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct Timing {
  double wall;        /* mean seconds per call, slowest rank */
  double thread_cpu;  /* this rank's calling thread, per call */
  double process_cpu; /* this rank's whole process, per call */
};

static long ArgOr(int argc, char** argv, int i, long fallback) {
  if (argc <= i) return fallback;
  char* end = NULL;
  long v = strtol(argv[i], &end, 10);
  if (end == argv[i] || *end || v < 0) {
    fprintf(stderr, "dltrace-mpi-overhead: argument %d wants a count >= 0, got '%s'\n", i,
            argv[i]);
    exit(2);
  }
  return v;
}

/* Mean seconds per call on the slowest rank, known on rank 0. */
static struct Timing TimeAllreduce(const void* send, void* recv, int count, MPI_Datatype type,
                                   long warmup, long iters) {
  for (long i = 0; i < warmup; ++i)
    MPI_Allreduce(send, recv, count, type, MPI_SUM, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  double cpu0 = Seconds(CLOCK_THREAD_CPUTIME_ID), proc0 = Seconds(CLOCK_PROCESS_CPUTIME_ID);
  double start = MPI_Wtime();
  for (long i = 0; i < iters; ++i)
    MPI_Allreduce(send, recv, count, type, MPI_SUM, MPI_COMM_WORLD);
  double n = iters > 0 ? (double)iters : 1.0;
  double mean = iters > 0 ? (MPI_Wtime() - start) / n : 0.0;
  struct Timing t = {0, (Seconds(CLOCK_THREAD_CPUTIME_ID) - cpu0) / n,
                     (Seconds(CLOCK_PROCESS_CPUTIME_ID) - proc0) / n};
  if (iters <= 0) t.thread_cpu = t.process_cpu = 0;
  MPI_Reduce(&mean, &t.wall, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  return t;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long small_iters = ArgOr(argc, argv, 1, 200000);
  long large_iters = ArgOr(argc, argv, 2, 200);
  long warmup = ArgOr(argc, argv, 3, 1000);

  double small_send = 1.0, small_recv = 0.0;
  struct Timing small = TimeAllreduce(&small_send, &small_recv, 1, MPI_DOUBLE, warmup, small_iters);

  enum { kLargeFloats = (1 << 20) / sizeof(float) };
  float* large_send = malloc(sizeof(float) * kLargeFloats);
  float* large_recv = malloc(sizeof(float) * kLargeFloats);
  if (!large_send || !large_recv) {
    fprintf(stderr, "dltrace-mpi-overhead: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (int i = 0; i < kLargeFloats; ++i) large_send[i] = (float)(i % 1024);
  struct Timing large = TimeAllreduce(large_send, large_recv, kLargeFloats, MPI_FLOAT, warmup / 100 + 1,
                               large_iters);

  if (rank == 0) {
    printf("ranks %d\n", size);
    printf("allreduce_8B_iters %ld\n", small_iters);
    printf("allreduce_8B_ns %.1f\n", small.wall * 1e9);
    printf("allreduce_8B_thread_cpu_ns %.1f\n", small.thread_cpu * 1e9);
    printf("allreduce_8B_process_cpu_ns %.1f\n", small.process_cpu * 1e9);
    printf("allreduce_1MB_iters %ld\n", large_iters);
    printf("allreduce_1MB_ns %.1f\n", large.wall * 1e9);
    printf("allreduce_1MB_thread_cpu_ns %.1f\n", large.thread_cpu * 1e9);
    printf("allreduce_1MB_process_cpu_ns %.1f\n", large.process_cpu * 1e9);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("max_rss_kb %ld\n", ru.ru_maxrss);
  }
  free(large_send);
  free(large_recv);
  MPI_Finalize();
  return 0;
}
