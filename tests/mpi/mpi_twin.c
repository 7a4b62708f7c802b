// SPDX-License-Identifier: GPL-2.0-only
/* The C twin of mpi_twin.F90: the same calls in the same order and the same
 * output line, so the recorder's Fortran wrappers can be checked against its
 * C ones. Needs an even rank count. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>

enum { n = 16 };

static long long Sum(const double* v, int count) {
  double s = 0;
  for (int i = 0; i < count; ++i) s += v[i];
  return llround(s);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (nranks % 2 || nranks > 32) {
    if (rank == 0) printf("mpi_twin: needs an even rank count up to 32\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int partner = rank ^ 1, right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
  double a[n], b[n], c[n];
  int ia[2], ib[64], ic[64];
  for (int i = 0; i < n; ++i) a[i] = rank * 100 + i + 1;
  long long check = 0;
  MPI_Status st, sts[2];
  MPI_Request rq[2], prq[2];
  MPI_Comm sub, dup;
  int idx, flag;
  int scounts[32], sdispls[32], rcounts[32], rdispls[32], wdispls[32], outcount, idxs[2];
  int iv[1024], iw[1024];
  MPI_Datatype types[32];

  MPI_Barrier(MPI_COMM_WORLD);
  if (rank % 2 == 0) {
    MPI_Send(a, n, MPI_DOUBLE, partner, 7, MPI_COMM_WORLD);
    MPI_Recv(b, n, MPI_DOUBLE, partner, 7, MPI_COMM_WORLD, &st);
  } else {
    MPI_Recv(b, n, MPI_DOUBLE, partner, 7, MPI_COMM_WORLD, &st);
    MPI_Send(a, n, MPI_DOUBLE, partner, 7, MPI_COMM_WORLD);
  }
  check += Sum(b, n);
  MPI_Sendrecv(a, n, MPI_DOUBLE, right, 8, b, n, MPI_DOUBLE, left, 8, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  check += Sum(b, n);
  MPI_Irecv(b, n, MPI_DOUBLE, left, 9, MPI_COMM_WORLD, &rq[0]);
  MPI_Isend(a, n, MPI_DOUBLE, right, 9, MPI_COMM_WORLD, &rq[1]);
  MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
  check += Sum(b, n);
  MPI_Irecv(b, n / 2, MPI_DOUBLE, partner, 10, MPI_COMM_WORLD, &rq[0]);
  MPI_Isend(a, n / 2, MPI_DOUBLE, partner, 10, MPI_COMM_WORLD, &rq[1]);
  for (int k = 0; k < 2; ++k) MPI_Waitany(2, rq, &idx, &st);
  check += Sum(b, n / 2);
  MPI_Irecv(b, n, MPI_DOUBLE, left, 11, MPI_COMM_WORLD, &rq[0]);
  MPI_Isend(a, n, MPI_DOUBLE, right, 11, MPI_COMM_WORLD, &rq[1]);
  flag = 0;
  while (!flag) MPI_Testall(2, rq, &flag, sts);
  check += Sum(b, n);

  for (int i = 0; i < n; ++i) c[i] = a[i];
  MPI_Bcast(c, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  check += Sum(c, n);
  MPI_Reduce(a, c, n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Allreduce(a, c, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, c, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  check += Sum(c, n);
  ia[0] = rank;
  ia[1] = 2 * rank;
  MPI_Allgather(ia, 2, MPI_INT, ib, 2, MPI_INT, MPI_COMM_WORLD);
  MPI_Alltoall(ib, 1, MPI_INT, ic, 1, MPI_INT, MPI_COMM_WORLD);
  for (int i = 0; i < 2 * nranks; ++i) check += ib[i];
  for (int i = 0; i < nranks; ++i) check += ic[i];

  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &sub);
  MPI_Allreduce(a, c, n, MPI_DOUBLE, MPI_SUM, sub);
  MPI_Bcast(ia, 2, MPI_INT, 0, sub);
  check += Sum(c, n) + ia[0] + ia[1];
  MPI_Comm_free(&sub);

  MPI_Send_init(a, n, MPI_DOUBLE, right, 12, MPI_COMM_WORLD, &prq[0]);
  MPI_Recv_init(b, n, MPI_DOUBLE, left, 12, MPI_COMM_WORLD, &prq[1]);
  for (int k = 0; k < 3; ++k) {
    MPI_Startall(2, prq);
    MPI_Waitall(2, prq, sts);
    check += Sum(b, n);
  }
  MPI_Start(&prq[1]);
  MPI_Start(&prq[0]);
  MPI_Wait(&prq[1], &st);
  MPI_Wait(&prq[0], MPI_STATUS_IGNORE);
  MPI_Request_free(&prq[0]);
  MPI_Request_free(&prq[1]);
  /* v and w forms: rank r sends i + 1 integers to rank i and gets r + 1 from each */
  for (int i = 0; i < nranks; ++i) {
    scounts[i] = i + 1;
    sdispls[i] = i * 32;
    rcounts[i] = rank + 1;
    rdispls[i] = i * 32;
    wdispls[i] = i * 128;
    types[i] = MPI_INT;
  }
  for (int i = 0; i < 1024; ++i) iv[i] = rank * 1000 + i + 1;
  for (int i = 0; i < 1024; ++i) iw[i] = 0;
  MPI_Alltoallv(iv, scounts, sdispls, MPI_INT, iw, rcounts, rdispls, MPI_INT, MPI_COMM_WORLD);
  for (int i = 0; i < 1024; ++i) check += iw[i];
  for (int i = 0; i < 1024; ++i) iw[i] = 0;
  MPI_Alltoallw(iv, scounts, wdispls, types, iw, rcounts, wdispls, types, MPI_COMM_WORLD);
  for (int i = 0; i < 1024; ++i) check += iw[i];
  for (int i = 0; i < nranks; ++i) {
    rcounts[i] = 2;
    rdispls[i] = i * 2;
  }
  MPI_Gatherv(ia, 2, MPI_INT, ib, rcounts, rdispls, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Scatterv(ib, rcounts, rdispls, MPI_INT, ia, 2, MPI_INT, 0, MPI_COMM_WORLD);
  check += ia[0] + ia[1];
  MPI_Reduce_scatter(a, c, rcounts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  check += llround(c[0] + c[1]);

  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Barrier(dup);
  MPI_Comm_free(&dup);
  for (int i = 0; i < n; ++i) b[i] = a[i];
  MPI_Sendrecv_replace(b, n, MPI_DOUBLE, right, 13, left, 13, MPI_COMM_WORLD, &st);
  check += Sum(b, n);
  MPI_Isend(a, 4, MPI_DOUBLE, partner, 14, MPI_COMM_WORLD, &rq[0]);
  MPI_Probe(partner, 14, MPI_COMM_WORLD, &st);
  MPI_Recv(b, 4, MPI_DOUBLE, partner, 14, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Wait(&rq[0], &st);
  check += Sum(b, 4);
  MPI_Irecv(b, n, MPI_DOUBLE, left, 15, MPI_COMM_WORLD, &rq[0]);
  MPI_Isend(a, n, MPI_DOUBLE, right, 15, MPI_COMM_WORLD, &rq[1]);
  for (int k = 0; k < 2; k += outcount) MPI_Waitsome(2, rq, &outcount, idxs, sts);
  check += Sum(b, n);
  MPI_Iallreduce(a, c, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &rq[0]);
  MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
  check += Sum(c, n);
  /* one-sided in a fence epoch, a matched probe, a neighbourhood exchange */
  MPI_Win win;
  MPI_Win_create(c, n * (MPI_Aint)sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD,
                 &win);
  MPI_Win_fence(0, win);
  MPI_Put(a, 4, MPI_DOUBLE, right, 0, 4, MPI_DOUBLE, win);
  MPI_Get(b, 2, MPI_DOUBLE, left, 8, 2, MPI_DOUBLE, win);
  MPI_Win_fence(0, win);
  MPI_Win_free(&win);
  check += Sum(c, 4) + Sum(b, 2);
  MPI_Message msg;
  MPI_Isend(a, 3, MPI_DOUBLE, partner, 16, MPI_COMM_WORLD, &rq[0]);
  MPI_Mprobe(partner, 16, MPI_COMM_WORLD, &msg, &st);
  MPI_Mrecv(b, 3, MPI_DOUBLE, &msg, &st);
  MPI_Wait(&rq[0], &st);
  check += Sum(b, 3);
  MPI_Comm ring;
  int dims[1] = {nranks}, periods[1] = {1};
  MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
  MPI_Neighbor_alltoall(a, 2, MPI_DOUBLE, b, 2, MPI_DOUBLE, ring);
  check += Sum(b, 4);
  MPI_Comm_free(&ring);
  printf("rank %d checksum %lld\n", rank, check);
  MPI_Finalize();
  return 0;
}
