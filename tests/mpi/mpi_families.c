// SPDX-License-Identifier: GPL-2.0-only
/* The MPI-3 families the recorder wraps beyond point-to-point and the classic
 * collectives, each in a fixed pattern whose bytes per rank the test
 * (tests/record/test_mpi_families.py) writes as closed forms: a halo exchange
 * with MPI_Neighbor_alltoallv over a periodic Cartesian ring, the other
 * neighbourhood collectives on Cartesian, graph and distributed-graph
 * communicators, Put/Get/Accumulate in fence, lock and post-start-complete-wait
 * epochs, every new nonblocking collective, Mprobe/Mrecv and Improbe/Imrecv,
 * and an intercommunicator with its merge.
 * usage: mpi_families N [neighbors-and-rma | unrecorded-receive]
 * (N elements; neighbors-and-rma runs only the neighbourhood and one-sided
 * parts, whose lowered bytes the test also writes in closed form;
 * unrecorded-receive only a receive the recorder cannot place) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int r, p;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  const int n = argc > 1 ? atoi(argv[1]) : 1000;
  const char* mode = argc > 2 ? argv[2] : "all";
  const int all = strcmp(mode, "all") == 0;
  const int left = (r + p - 1) % p, right = (r + 1) % p;
  double* a = calloc((size_t)(8 * n * p + 64), sizeof(double));
  double* b = calloc((size_t)(8 * n * p + 64), sizeof(double));
  int* counts = calloc((size_t)p, sizeof(int));
  int* counts2 = calloc((size_t)p, sizeof(int));
  int* displs = calloc((size_t)p, sizeof(int));
  int* displs2 = calloc((size_t)p, sizeof(int));
  MPI_Datatype* types = calloc((size_t)p, sizeof(MPI_Datatype));
  MPI_Request req[8];
  if (strcmp(mode, "unrecorded-receive") == 0) {
    /* probed through PMPI, where the recorder cannot see it: the receive is
     * counted as unrecorded, by name (30(r+1) bytes, not in the trace) */
    MPI_Message msg;
    MPI_Isend(a, 30 * (r + 1), MPI_BYTE, right, 9, MPI_COMM_WORLD, &req[0]);
    PMPI_Mprobe(left, 9, MPI_COMM_WORLD, &msg, MPI_STATUS_IGNORE);
    MPI_Mrecv(b, 30 * (left + 1), MPI_BYTE, &msg, MPI_STATUS_IGNORE);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    goto release;
  }

  /* 1. Halo exchange: Neighbor_alltoallv on a periodic ring (Cartesian, 1
   * dimension): n(r+1) doubles to each side. */
  MPI_Comm ring;
  int dims[1] = {p}, periods[1] = {1};
  MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
  int sc[2] = {n * (r + 1), n * (r + 1)}, sd[2] = {0, n * p};
  int rc[2] = {n * (left + 1), n * (right + 1)}, rd[2] = {0, n * p};
  MPI_Neighbor_alltoallv(a, sc, sd, MPI_DOUBLE, b, rc, rd, MPI_DOUBLE, ring);
  /* the same, nonblocking, and an allgather of n ints to both neighbours */
  MPI_Ineighbor_alltoallv(a, sc, sd, MPI_DOUBLE, b, rc, rd, MPI_DOUBLE, ring, &req[0]);
  MPI_Wait(&req[0], MPI_STATUS_IGNORE);
  MPI_Neighbor_allgather(a, n, MPI_INT, b, n, MPI_INT, ring);
  /* a 2 x (p/2) torus cut into rows by Cart_sub: an all-reduce of n doubles on each */
  MPI_Comm torus, row;
  int dims2[2] = {2, p / 2}, periods2[2] = {1, 1}, remain[2] = {0, 1};
  MPI_Cart_create(MPI_COMM_WORLD, 2, dims2, periods2, 0, &torus);
  MPI_Cart_sub(torus, remain, &row);
  if (all) MPI_Allreduce(a, b, n, MPI_DOUBLE, MPI_SUM, row);
  /* a directed ring as a distributed graph: n ints to the right only */
  MPI_Comm dring;
  int weight = 1;  /* (MPI_UNWEIGHTED is a pointer GCC's overread check rejects) */
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &left, &weight, 1, &right, &weight,
                                 MPI_INFO_NULL, 0, &dring);
  MPI_Neighbor_alltoall(a, n, MPI_INT, b, n, MPI_INT, dring);
  MPI_Ineighbor_alltoall(a, n, MPI_INT, b, n, MPI_INT, dring, &req[0]);
  MPI_Wait(&req[0], MPI_STATUS_IGNORE);

  /* 2. One-sided, fence epoch: Put n doubles to the right, Get n/2 doubles
   * from the left, Accumulate n ints into r+2. */
  MPI_Win win;
  MPI_Win_create(a, (MPI_Aint)(8 * n * p) * (MPI_Aint)sizeof(double), sizeof(double),
                 MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  MPI_Win_fence(0, win);
  MPI_Put(b, n, MPI_DOUBLE, right, 0, n, MPI_DOUBLE, win);
  MPI_Get(b + n, n / 2, MPI_DOUBLE, left, n, n / 2, MPI_DOUBLE, win);
  MPI_Accumulate(b, n, MPI_INT, (r + 2) % p, 2 * n, n, MPI_INT, MPI_SUM, win);
  MPI_Win_fence(0, win);
  /* lock epoch: 2n doubles to the right; then lock_all with a fetch-and-op
   * and a compare-and-swap on rank 0, flushed */
  MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
  MPI_Put(b, 2 * n, MPI_DOUBLE, right, 3 * n, 2 * n, MPI_DOUBLE, win);
  MPI_Win_unlock(right, win);
  long one = 1, got = 0;
  int cmp = 0, swp = r, old = 0;
  MPI_Win_lock_all(0, win);
  MPI_Fetch_and_op(&one, &got, MPI_LONG, 0, 0, MPI_SUM, win);
  MPI_Compare_and_swap(&swp, &cmp, &old, MPI_INT, 0, 1, win);
  MPI_Win_flush(0, win);
  MPI_Rput(b, n, MPI_DOUBLE, right, 5 * n, n, MPI_DOUBLE, win, &req[0]);
  MPI_Wait(&req[0], MPI_STATUS_IGNORE);
  MPI_Win_unlock_all(win);
  /* post-start-complete-wait: exposed to the left, accessing the right,
   * 3n bytes each */
  MPI_Group world_group, g_left, g_right;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  MPI_Group_incl(world_group, 1, &left, &g_left);
  MPI_Group_incl(world_group, 1, &right, &g_right);
  MPI_Win_post(g_left, 0, win);
  MPI_Win_start(g_right, 0, win);
  MPI_Put(b, 3 * n, MPI_BYTE, right, 0, 3 * n, MPI_BYTE, win);
  MPI_Win_complete(win);
  MPI_Win_wait(win);
  MPI_Win_free(&win);
  MPI_Group_free(&g_left);
  MPI_Group_free(&g_right);
  if (!all) goto done;

  /* 3. Every new nonblocking collective, on MPI_COMM_WORLD. */
  for (int i = 0; i < p; ++i) {
    counts[i] = i + 1;
    displs[i] = i * n;
    counts2[i] = r + i + 1;
    displs2[i] = i * 2 * p;
    types[i] = MPI_INT;
  }
  MPI_Igather(a, n, MPI_INT, b, n, MPI_INT, 0, MPI_COMM_WORLD, &req[0]);
  MPI_Igatherv(a, r + 1, MPI_INT, b, counts, displs, MPI_INT, 1, MPI_COMM_WORLD, &req[1]);
  MPI_Iscatter(a, n, MPI_INT, b, n, MPI_INT, 2 % p, MPI_COMM_WORLD, &req[2]);
  MPI_Iscatterv(a, counts, displs, MPI_INT, b, r + 1, MPI_INT, 3 % p, MPI_COMM_WORLD, &req[3]);
  MPI_Iallgatherv(a, r + 1, MPI_INT, b, counts, displs, MPI_INT, MPI_COMM_WORLD, &req[4]);
  MPI_Waitall(5, req, MPI_STATUSES_IGNORE);
  /* rank r sends r+j+1 ints to j, so receives j+r+1 from j */
  MPI_Ialltoallv(a, counts2, displs2, MPI_INT, b, counts2, displs2, MPI_INT, MPI_COMM_WORLD,
                 &req[0]);
  for (int i = 0; i < p; ++i) displs2[i] *= (int)sizeof(int);
  MPI_Ialltoallw(a, counts2, displs2, types, b, counts2, displs2, types, MPI_COMM_WORLD, &req[1]);
  MPI_Iscan(a, b, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req[2]);
  MPI_Iexscan(a, b, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req[3]);
  MPI_Waitall(4, req, MPI_STATUSES_IGNORE);

  /* 4. Matched probes: 100(r+1) bytes to the right, received with
   * Mprobe/Mrecv; then 50(r+1) bytes with Improbe/Imrecv. */
  MPI_Message msg;
  MPI_Status st;
  int len = 0, flag = 0;
  MPI_Isend(a, 100 * (r + 1), MPI_BYTE, right, 7, MPI_COMM_WORLD, &req[0]);
  MPI_Mprobe(MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &msg, &st);
  MPI_Get_count(&st, MPI_BYTE, &len);
  MPI_Mrecv(b, len, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
  MPI_Wait(&req[0], MPI_STATUS_IGNORE);
  MPI_Isend(a, 50 * (r + 1), MPI_BYTE, right, 8, MPI_COMM_WORLD, &req[0]);
  while (!flag) MPI_Improbe(left, 8, MPI_COMM_WORLD, &flag, &msg, &st);
  MPI_Get_count(&st, MPI_BYTE, &len);
  MPI_Imrecv(b, len, MPI_BYTE, &msg, &req[1]);
  MPI_Waitall(2, req, MPI_STATUSES_IGNORE);

  /* 5. Intercommunicator between even and odd ranks: local rank i sends
   * 10(r+1) ints to remote rank i; then merged, an all-reduce of n ints. */
  MPI_Comm half, inter, merged, dup, grp;
  MPI_Comm_split(MPI_COMM_WORLD, r % 2, r, &half);
  MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, r % 2 == 0 ? 1 : 0, 99, &inter);
  int lr;
  MPI_Comm_rank(half, &lr);
  MPI_Sendrecv(a, 10 * (r + 1), MPI_INT, lr, 5, b, 8 * n * p, MPI_INT, lr, 5, inter,
               MPI_STATUS_IGNORE);
  MPI_Intercomm_merge(inter, r % 2, &merged);
  MPI_Allreduce(a, b, n, MPI_INT, MPI_SUM, merged);
  /* a nonblocking duplicate and a group-made communicator, each used once */
  MPI_Comm_idup(MPI_COMM_WORLD, &dup, &req[0]);
  MPI_Wait(&req[0], MPI_STATUS_IGNORE);
  MPI_Bcast(a, n, MPI_DOUBLE, 0, dup);
  MPI_Comm_create_group(MPI_COMM_WORLD, world_group, 3, &grp);
  MPI_Barrier(grp);

  MPI_Comm_free(&grp);
  MPI_Comm_free(&dup);
  MPI_Comm_free(&merged);
  MPI_Comm_free(&inter);
  MPI_Comm_free(&half);
done:
  MPI_Group_free(&world_group);
  MPI_Comm_free(&dring);
  MPI_Comm_free(&row);
  MPI_Comm_free(&torus);
  MPI_Comm_free(&ring);
release:
  free(a);
  free(b);
  free(counts);
  free(counts2);
  free(displs);
  free(displs2);
  free(types);
  MPI_Finalize();
  return 0;
}
