// SPDX-License-Identifier: GPL-2.0-only
/* dltrace-mpi-patterns: small MPI programs, one per pattern that MPI lets a
 * rank finish without its peer, for the lowering's completion semantics
 * (tests/mpi/test_patterns.py records each under mpirun and lowers it).
 *
 * --pattern NAME, per iteration:
 *   testall   every rank MPI_Irecv from both neighbours, MPI_Isend to both
 *             (BYTES each), then polls MPI_Testall, computing a little
 *             between polls, until all four completed
 *   split     MPI_Comm_split into A = world ranks 0..2 and B = 1..3; rank 1
 *             broadcasts on A (root) then joins B's broadcast, rank 2
 *             broadcasts on B (root) then joins A's: two communicators
 *             entered in different orders (BYTES each)
 *   eager     every rank MPI_Send to its right neighbour, then MPI_Recv from
 *             its left (BYTES, under Open MPI's eager limits): sends posted
 *             before the matching receives on every side
 *   probe     every rank MPI_Isend two messages to its right (256 + 32 r and
 *             128 + 16 r bytes, tags 1 and 2); receives the first after an
 *             MPI_Iprobe loop and the second after MPI_Probe, each sized by
 *             MPI_Get_count; then MPI_Waitall
 *   anysource ranks 1.. MPI_Send 100 (r + 1) bytes to rank 0, which receives
 *             them with MPI_ANY_SOURCE and answers each sender with 50 (r + 1)
 *             bytes (MPI_Send), which the sender MPI_Recv's
 * stdout carries no timing. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void Compute(long ns) {  // busy work the recorder sees as a gap
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do clock_gettime(CLOCK_MONOTONIC, &t);
  while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < ns);
}

static int Testall(int n, int rank, int bytes, char* buf) {
  int left = (rank + n - 1) % n, right = (rank + 1) % n;
  MPI_Request req[4];
  MPI_Irecv(buf, bytes, MPI_BYTE, left, 0, MPI_COMM_WORLD, &req[0]);
  MPI_Irecv(buf + bytes, bytes, MPI_BYTE, right, 1, MPI_COMM_WORLD, &req[1]);
  MPI_Isend(buf + 2 * bytes, bytes, MPI_BYTE, right, 0, MPI_COMM_WORLD, &req[2]);
  MPI_Isend(buf + 3 * bytes, bytes, MPI_BYTE, left, 1, MPI_COMM_WORLD, &req[3]);
  int done = 0;
  while (!done) {
    MPI_Testall(4, req, &done, MPI_STATUSES_IGNORE);
    if (!done) Compute(2000);
  }
  return 0;
}

static int Split(int rank, int bytes, char* buf, MPI_Comm a, MPI_Comm b) {
  /* A = world 0,1,2 (root world 1 = A rank 1); B = world 1,2,3 (root world 2 = B rank 1). */
  if (rank == 0) MPI_Bcast(buf, bytes, MPI_BYTE, 1, a);
  if (rank == 1) {
    MPI_Bcast(buf, bytes, MPI_BYTE, 1, a);
    MPI_Bcast(buf, bytes, MPI_BYTE, 1, b);
  }
  if (rank == 2) {
    MPI_Bcast(buf, bytes, MPI_BYTE, 1, b);
    MPI_Bcast(buf, bytes, MPI_BYTE, 1, a);
  }
  if (rank == 3) MPI_Bcast(buf, bytes, MPI_BYTE, 1, b);
  return 0;
}

static int Eager(int n, int rank, int bytes, char* buf) {
  MPI_Send(buf, bytes, MPI_BYTE, (rank + 1) % n, 0, MPI_COMM_WORLD);
  MPI_Recv(buf + bytes, bytes, MPI_BYTE, (rank + n - 1) % n, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return 0;
}

static int Probe(int n, int rank, char* buf) {
  int left = (rank + n - 1) % n, right = (rank + 1) % n;
  MPI_Request req[2];
  MPI_Isend(buf, 256 + 32 * rank, MPI_BYTE, right, 1, MPI_COMM_WORLD, &req[0]);
  MPI_Isend(buf + 4096, 128 + 16 * rank, MPI_BYTE, right, 2, MPI_COMM_WORLD, &req[1]);
  MPI_Status st;
  int flag = 0, count = 0;
  while (!flag) {
    MPI_Iprobe(left, 1, MPI_COMM_WORLD, &flag, &st);
    if (!flag) Compute(2000);
  }
  MPI_Get_count(&st, MPI_BYTE, &count);
  if (count != 256 + 32 * left) return 1;
  MPI_Recv(buf + 8192, count, MPI_BYTE, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Probe(left, 2, MPI_COMM_WORLD, &st);
  MPI_Get_count(&st, MPI_BYTE, &count);
  if (count != 128 + 16 * left) return 1;
  MPI_Recv(buf + 12288, count, MPI_BYTE, left, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
  return 0;
}

static int AnySource(int n, int rank, char* buf) {
  if (rank == 0) {
    for (int k = 1; k < n; ++k) {
      MPI_Status st;
      int count = 0;
      MPI_Recv(buf, 100 * n, MPI_BYTE, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, &st);
      MPI_Get_count(&st, MPI_BYTE, &count);
      if (count != 100 * (st.MPI_SOURCE + 1)) return 1;
      MPI_Send(buf, 50 * (st.MPI_SOURCE + 1), MPI_BYTE, st.MPI_SOURCE, 1, MPI_COMM_WORLD);
    }
    return 0;
  }
  Compute(20000L * (n - rank));  // later ranks first, most of the time
  MPI_Send(buf, 100 * (rank + 1), MPI_BYTE, 0, 0, MPI_COMM_WORLD);
  MPI_Recv(buf, 50 * (rank + 1), MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return 0;
}

int main(int argc, char** argv) {
  const char* pattern = NULL;
  int iterations = 5, bytes = 1024;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--pattern")) pattern = argv[i + 1];
    else if (!strcmp(argv[i], "--iterations")) iterations = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--bytes")) bytes = atoi(argv[i + 1]);
  }
  const char* known[] = {"testall", "split", "eager", "probe", "anysource"};
  int ok = 0;
  for (int k = 0; k < 5; ++k) ok = ok || (pattern && !strcmp(pattern, known[k]));
  if (!ok || iterations < 1 || bytes < 1 || bytes > 1 << 20) {
    fprintf(stderr, "usage: dltrace-mpi-patterns --pattern testall|split|eager|probe|anysource "
                    "[--iterations N] [--bytes B]\n");
    return 2;
  }
  MPI_Init(&argc, &argv);
  int n, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (!strcmp(pattern, "split") && n != 4) {
    if (rank == 0) fprintf(stderr, "dltrace-mpi-patterns: split wants 4 ranks, got %d\n", n);
    MPI_Finalize();
    return 2;
  }
  char* buf = calloc(1, (size_t)4 * bytes + 16384 + (size_t)100 * n);
  MPI_Comm a = MPI_COMM_NULL, b = MPI_COMM_NULL;
  if (!strcmp(pattern, "split")) {
    MPI_Comm_split(MPI_COMM_WORLD, rank <= 2 ? 0 : MPI_UNDEFINED, rank, &a);
    MPI_Comm_split(MPI_COMM_WORLD, rank >= 1 ? 0 : MPI_UNDEFINED, rank, &b);
  }
  int bad = 0;
  for (int it = 0; it < iterations && !bad; ++it) {
    Compute(200000);
    if (!strcmp(pattern, "testall")) bad = Testall(n, rank, bytes, buf);
    else if (!strcmp(pattern, "split")) bad = Split(rank, bytes, buf, a, b);
    else if (!strcmp(pattern, "eager")) bad = Eager(n, rank, bytes, buf);
    else if (!strcmp(pattern, "probe")) bad = Probe(n, rank, buf);
    else bad = AnySource(n, rank, buf);
  }
  if (bad) fprintf(stderr, "dltrace-mpi-patterns: rank %d: a message of the wrong size\n", rank);
  if (a != MPI_COMM_NULL) MPI_Comm_free(&a);
  if (b != MPI_COMM_NULL) MPI_Comm_free(&b);
  free(buf);
  MPI_Finalize();
  return bad;
}
