// SPDX-License-Identifier: GPL-2.0-only
/* Calls every MPI function the recorder wraps, in a fixed pattern, and writes
 * what it did (one JSON line per call) to DIR/expected.rank<R>.jsonl so the
 * test can compare the recording field by field. Needs an even rank count. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static FILE* g_log;
static int g_rank, g_size;

/* comm label -> members are logged once per comm as {"comm":L,"members":[...]} */
static void log_comm(const char* label, MPI_Comm comm) {
  MPI_Group wg, g;
  int n;
  MPI_Comm_size(comm, &n);
  MPI_Comm_group(MPI_COMM_WORLD, &wg);
  MPI_Comm_group(comm, &g);
  int* local = malloc(sizeof(int) * n);
  int* world = malloc(sizeof(int) * n);
  for (int i = 0; i < n; ++i) local[i] = i;
  MPI_Group_translate_ranks(g, n, local, wg, world);
  fprintf(g_log, "{\"comm\":\"%s\",\"members\":[", label);
  for (int i = 0; i < n; ++i) fprintf(g_log, "%s%d", i ? "," : "", world[i]);
  fprintf(g_log, "]}\n");
  MPI_Group_free(&g);
  MPI_Group_free(&wg);
  free(local);
  free(world);
}

static void op(const char* kind, const char* comm, int peer, int tag, long long bytes,
               long long count) {
  fprintf(g_log,
          "{\"kind\":\"%s\",\"comm\":\"%s\",\"peer\":%d,\"tag\":%d,\"bytes\":%lld,\"count\":%lld}\n",
          kind, comm, peer, tag, bytes, count);
}

/* op() with the datatype and reduction the recording must name (formats'
   names: "float32", "Max"). */
static void op_typed(const char* kind, long long bytes, long long count, const char* datatype,
                     const char* red_op) {
  fprintf(g_log,
          "{\"kind\":\"%s\",\"comm\":\"world\",\"peer\":-1,\"tag\":-1,\"bytes\":%lld,"
          "\"count\":%lld,\"datatype\":\"%s\",\"red_op\":\"%s\"}\n",
          kind, bytes, count, datatype, red_op);
}

/* rq[0]: MPI_Isend of COUNT ints of SEND to RIGHT; rq[1]: MPI_Irecv of as many
   into RECV from LEFT; both with TAG on MPI_COMM_WORLD, and both logged. */
static void post_int_pair(int* send, int* recv, int count, int right, int left, int tag,
                          MPI_Request rq[2]) {
  MPI_Isend(send, count, MPI_INT, right, tag, MPI_COMM_WORLD, &rq[0]);
  MPI_Irecv(recv, count, MPI_INT, left, tag, MPI_COMM_WORLD, &rq[1]);
  op("MPI_Isend", "world", right, tag, 4LL * count, count);
  op("MPI_Irecv", "world", left, tag, 4LL * count, count);
}

static void op_v(const char* kind, const char* comm, int peer, long long bytes, const long long* send,
                 const long long* recv, int n) {
  fprintf(g_log, "{\"kind\":\"%s\",\"comm\":\"%s\",\"peer\":%d,\"bytes\":%lld", kind, comm, peer,
          bytes);
  for (int side = 0; side < 2; ++side) {
    const long long* v = side ? recv : send;
    if (!v) continue;
    fprintf(g_log, ",\"%s\":[", side ? "peer_recv_bytes" : "peer_send_bytes");
    for (int i = 0; i < n; ++i) fprintf(g_log, "%s%lld", i ? "," : "", v[i]);
    fprintf(g_log, "]");
  }
  fprintf(g_log, "}\n");
}

int main(int argc, char** argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  if (argc < 2 || g_size % 2) {
    if (g_rank == 0) fprintf(stderr, "usage: mpirun -np EVEN mpi_all_calls OUTDIR\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  char path[4096];
  snprintf(path, sizeof(path), "%s/expected.rank%d.jsonl", argv[1], g_rank);
  g_log = fopen(path, "w");
  const int r = g_rank, n = g_size, partner = r ^ 1, right = (r + 1) % n, left = (r + n - 1) % n;
  const int even = r % 2 == 0;
  op("MPI_Init", "-", -1, -1, 0, 0);
  log_comm("world", MPI_COMM_WORLD);
  double d[64] = {0}, d2[64];
  int iv[64] = {0}, iv2[4096];
  float f[4096] = {0}, f2[4096];
  MPI_Status st;
  MPI_Request rq[4];

  MPI_Barrier(MPI_COMM_WORLD);
  op("MPI_Barrier", "world", -1, -1, 0, 0);

  /* blocking point-to-point with the partner, even ranks send first */
  if (even) {
    MPI_Send(d, 10, MPI_DOUBLE, partner, 1, MPI_COMM_WORLD); op("MPI_Send", "world", partner, 1, 80, 10);
    MPI_Recv(d2, 10, MPI_DOUBLE, partner, 1, MPI_COMM_WORLD, &st); op("MPI_Recv", "world", partner, 1, 80, 10);
    MPI_Ssend(iv, 5, MPI_INT, partner, 2, MPI_COMM_WORLD); op("MPI_Ssend", "world", partner, 2, 20, 5);
  } else {
    /* ANY_SOURCE/ANY_TAG with a larger buffer: the recorder keeps what arrived */
    MPI_Recv(d2, 64, MPI_DOUBLE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    op("MPI_Recv", "world", partner, 1, 80, 10);
    MPI_Send(d, 10, MPI_DOUBLE, partner, 1, MPI_COMM_WORLD); op("MPI_Send", "world", partner, 1, 80, 10);
    MPI_Recv(iv2, 5, MPI_INT, partner, 2, MPI_COMM_WORLD, &st); op("MPI_Recv", "world", partner, 2, 20, 5);
  }
  int bufsize = 1 << 16;
  void* bbuf = malloc(bufsize);
  MPI_Buffer_attach(bbuf, bufsize);
  if (even) {
    MPI_Bsend(iv, 3, MPI_INT, partner, 3, MPI_COMM_WORLD); op("MPI_Bsend", "world", partner, 3, 12, 3);
  } else {
    MPI_Recv(iv2, 3, MPI_INT, partner, 3, MPI_COMM_WORLD, &st); op("MPI_Recv", "world", partner, 3, 12, 3);
  }
  MPI_Buffer_detach(&bbuf, &bufsize);
  free(bbuf);
  /* Rsend needs the receive posted first */
  if (!even) {
    MPI_Irecv(iv2, 7, MPI_INT, partner, 4, MPI_COMM_WORLD, &rq[0]); op("MPI_Irecv", "world", partner, 4, 28, 7);
  }
  MPI_Barrier(MPI_COMM_WORLD); op("MPI_Barrier", "world", -1, -1, 0, 0);
  if (even) {
    MPI_Rsend(iv, 7, MPI_INT, partner, 4, MPI_COMM_WORLD); op("MPI_Rsend", "world", partner, 4, 28, 7);
  } else {
    MPI_Wait(&rq[0], &st); op("MPI_Wait", "-", -1, -1, 0, 1);
  }

  /* combined send-receive around the ring */
  long long sb[64] = {0}, rb[64] = {0};
  MPI_Sendrecv(f, 8, MPI_FLOAT, right, 5, f2, 8, MPI_FLOAT, left, 5, MPI_COMM_WORLD, &st);
  memset(sb, 0, sizeof(sb)); memset(rb, 0, sizeof(rb)); sb[right] = 32; rb[left] = 32;
  op_v("MPI_Sendrecv", "world", right, 32, sb, rb, n);
  MPI_Sendrecv_replace(d, 4, MPI_DOUBLE, right, 6, left, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  sb[right] = 32; rb[left] = 32;
  op_v("MPI_Sendrecv_replace", "world", right, 32, sb, rb, n);

  /* nonblocking, completed by each wait/test flavour */
  MPI_Isend(f, 4, MPI_FLOAT, right, 7, MPI_COMM_WORLD, &rq[0]);
  MPI_Irecv(f2, 4, MPI_FLOAT, left, 7, MPI_COMM_WORLD, &rq[1]);
  /* A status array of the program's own (BLACS passes one to Waitall and
     Testall): MPI fills it, and the recorder must leave it so. */
  MPI_Status sts[2];
  MPI_Waitall(2, rq, sts);
  if (sts[1].MPI_SOURCE != left || sts[1].MPI_TAG != 7) {
    fprintf(stderr, "MPI_Waitall's status: source %d tag %d, not %d and 7\n", sts[1].MPI_SOURCE,
            sts[1].MPI_TAG, left);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  op("MPI_Isend", "world", right, 7, 16, 4); op("MPI_Irecv", "world", left, 7, 16, 4);
  op("MPI_Waitall", "-", -1, -1, 0, 2);

  MPI_Issend(iv, 2, MPI_INT, right, 8, MPI_COMM_WORLD, &rq[0]);
  MPI_Irecv(iv2, 2, MPI_INT, left, 8, MPI_COMM_WORLD, &rq[1]);
  op("MPI_Issend", "world", right, 8, 8, 2); op("MPI_Irecv", "world", left, 8, 8, 2);
  for (int k = 0; k < 2; ++k) {
    int idx;
    MPI_Waitany(2, rq, &idx, &st); op("MPI_Waitany", "-", -1, -1, 0, 2);
  }
  post_int_pair(iv, iv2, 3, right, left, 9, rq);
  for (int done = 0; done < 2;) {
    int outc, idx[2];
    MPI_Waitsome(2, rq, &outc, idx, sts); op("MPI_Waitsome", "-", -1, -1, 0, 2);
    done += outc;
  }
  post_int_pair(iv, iv2, 1, right, left, 10, rq);
  for (int k = 0; k < 2; ++k)
    for (int flag = 0; !flag;) {
      MPI_Test(&rq[k], &flag, &st); op("MPI_Test", "-", -1, -1, 0, 1);
    }
  post_int_pair(iv, iv2, 1, right, left, 11, rq);
  for (int flag = 0; !flag;) {
    MPI_Testall(2, rq, &flag, sts); op("MPI_Testall", "-", -1, -1, 0, 2);
  }
  post_int_pair(iv, iv2, 1, right, left, 12, rq);
  for (int done = 0; done < 2;) {
    int idx, flag;
    MPI_Testany(2, rq, &idx, &flag, &st); op("MPI_Testany", "-", -1, -1, 0, 2);
    if (flag && idx != MPI_UNDEFINED) done++;
  }
  post_int_pair(iv, iv2, 1, right, left, 13, rq);
  for (int done = 0; done < 2;) {
    int outc, idx[2];
    MPI_Testsome(2, rq, &outc, idx, MPI_STATUSES_IGNORE); op("MPI_Testsome", "-", -1, -1, 0, 2);
    if (outc != MPI_UNDEFINED) done += outc;
  }

  /* probes */
  char bytes[64] = {0};
  if (even) {
    MPI_Send(bytes, 12, MPI_BYTE, partner, 14, MPI_COMM_WORLD); op("MPI_Send", "world", partner, 14, 12, 12);
    MPI_Send(bytes, 13, MPI_BYTE, partner, 15, MPI_COMM_WORLD); op("MPI_Send", "world", partner, 15, 13, 13);
  } else {
    MPI_Probe(partner, 14, MPI_COMM_WORLD, &st); op("MPI_Probe", "world", partner, 14, 12, 0);
    MPI_Recv(bytes, 12, MPI_BYTE, partner, 14, MPI_COMM_WORLD, &st); op("MPI_Recv", "world", partner, 14, 12, 12);
    for (int flag = 0; !flag;) {
      MPI_Iprobe(partner, 15, MPI_COMM_WORLD, &flag, &st);
      op("MPI_Iprobe", "world", partner, 15, flag ? 13 : 0, 0);
    }
    MPI_Recv(bytes, 13, MPI_BYTE, partner, 15, MPI_COMM_WORLD, &st); op("MPI_Recv", "world", partner, 15, 13, 13);
  }

  /* blocking collectives */
  MPI_Bcast(iv, 10, MPI_INT, 0, MPI_COMM_WORLD); op("MPI_Bcast", "world", 0, -1, 40, 10);
  MPI_Reduce(d, d2, 5, MPI_DOUBLE, MPI_SUM, 1, MPI_COMM_WORLD); op("MPI_Reduce", "world", 1, -1, 40, 5);
  MPI_Allreduce(f, f2, 1000, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD); op("MPI_Allreduce", "world", -1, -1, 4000, 1000);
  MPI_Allreduce(MPI_IN_PLACE, f, 100, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); op("MPI_Allreduce", "world", -1, -1, 400, 100);
  /* The fast path's caches (record/README): each call changes the datatype
     or the reduction of the one before, or repeats it (a cache hit). */
  MPI_Allreduce(f, f2, 4, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD); op_typed("MPI_Allreduce", 16, 4, "float32", "Max");
  MPI_Allreduce(f, f2, 4, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD); op_typed("MPI_Allreduce", 16, 4, "float32", "Max");
  MPI_Allreduce(iv, iv2, 3, MPI_INT, MPI_MIN, MPI_COMM_WORLD); op_typed("MPI_Allreduce", 12, 3, "int32", "Min");
  MPI_Allreduce(iv, iv2, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD); op_typed("MPI_Allreduce", 12, 3, "int32", "Sum");
  MPI_Allreduce(d, d2, 2, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD); op_typed("MPI_Allreduce", 16, 2, "float64", "Min");
  MPI_Allreduce(d, d2, 2, MPI_DOUBLE, MPI_PROD, MPI_COMM_WORLD); op_typed("MPI_Allreduce", 16, 2, "float64", "Prod");
  MPI_Allreduce(d, d2, 0, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); op_typed("MPI_Allreduce", 0, 0, "float64", "Sum");
  MPI_Gather(iv, 3, MPI_INT, iv2, 3, MPI_INT, 0, MPI_COMM_WORLD); op("MPI_Gather", "world", 0, -1, 12LL * n, 3);
  MPI_Scatter(d, 2, MPI_DOUBLE, d2, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD); op("MPI_Scatter", "world", 0, -1, 16LL * n, 2);
  MPI_Allgather(iv, 2, MPI_INT, iv2, 2, MPI_INT, MPI_COMM_WORLD); op("MPI_Allgather", "world", -1, -1, 8LL * n, 2);
  MPI_Alltoall(d, 1, MPI_DOUBLE, d2, 1, MPI_DOUBLE, MPI_COMM_WORLD); op("MPI_Alltoall", "world", -1, -1, 8LL * n, 1);
  int counts[64], displs[64], rcounts[64], rdispls[64];
  long long per[64] = {0}, per2[64] = {0}, total = 0;
  for (int i = 0, off = 0; i < n; ++i) {
    counts[i] = i + 1; displs[i] = off; off += i + 1; per[i] = 4LL * (i + 1); total += per[i];
  }
  MPI_Gatherv(iv, r + 1, MPI_INT, iv2, counts, displs, MPI_INT, 0, MPI_COMM_WORLD);
  if (r == 0) op_v("MPI_Gatherv", "world", 0, total, NULL, per, n);
  else op_v("MPI_Gatherv", "world", 0, 4LL * (r + 1), NULL, NULL, n);
  MPI_Scatterv(iv, counts, displs, MPI_INT, iv2, r + 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (r == 0) op_v("MPI_Scatterv", "world", 0, total, per, NULL, n);
  else op_v("MPI_Scatterv", "world", 0, 4LL * (r + 1), NULL, NULL, n);
  MPI_Allgatherv(iv, r + 1, MPI_INT, iv2, counts, displs, MPI_INT, MPI_COMM_WORLD);
  op_v("MPI_Allgatherv", "world", -1, total, NULL, per, n);
  long long stotal = 0;
  for (int i = 0, off = 0; i < n; ++i) {
    rcounts[i] = r + 1; rdispls[i] = off; off += r + 1; per2[i] = 4LL * (r + 1);
  }
  for (int i = 0; i < n; ++i) stotal += per[i];
  MPI_Alltoallv(iv2, counts, displs, MPI_INT, f2, rcounts, rdispls, MPI_INT, MPI_COMM_WORLD);
  op_v("MPI_Alltoallv", "world", -1, stotal, per, per2, n);
  MPI_Datatype types[64];
  int bdispls[64], brdispls[64];
  for (int i = 0; i < n; ++i) { types[i] = MPI_INT; bdispls[i] = displs[i] * 4; brdispls[i] = rdispls[i] * 4; }
  MPI_Alltoallw(iv2, counts, bdispls, types, f2, rcounts, brdispls, types, MPI_COMM_WORLD);
  op_v("MPI_Alltoallw", "world", -1, stotal, per, per2, n);
  MPI_Reduce_scatter(f, f2, counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  op_v("MPI_Reduce_scatter", "world", -1, total, NULL, per, n);
  MPI_Reduce_scatter_block(f, f2, 3, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  op("MPI_Reduce_scatter_block", "world", -1, -1, 12LL * n, 3);
  MPI_Scan(iv, iv2, 7, MPI_INT, MPI_SUM, MPI_COMM_WORLD); op("MPI_Scan", "world", -1, -1, 28, 7);
  MPI_Exscan(iv, iv2, 7, MPI_INT, MPI_SUM, MPI_COMM_WORLD); op("MPI_Exscan", "world", -1, -1, 28, 7);

  /* nonblocking collectives, each completed by MPI_Wait */
#define NB(call, ...) do { call; MPI_Wait(&rq[0], MPI_STATUS_IGNORE); __VA_ARGS__; op("MPI_Wait", "-", -1, -1, 0, 1); } while (0)
  NB(MPI_Ibarrier(MPI_COMM_WORLD, &rq[0]), op("MPI_Ibarrier", "world", -1, -1, 0, 0));
  NB(MPI_Ibcast(d, 3, MPI_DOUBLE, 1, MPI_COMM_WORLD, &rq[0]), op("MPI_Ibcast", "world", 1, -1, 24, 3));
  NB(MPI_Ireduce(f, f2, 9, MPI_FLOAT, MPI_MIN, 0, MPI_COMM_WORLD, &rq[0]), op("MPI_Ireduce", "world", 0, -1, 36, 9));
  NB(MPI_Iallreduce(f, f2, 256, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &rq[0]), op("MPI_Iallreduce", "world", -1, -1, 1024, 256));
  NB(MPI_Iallgather(iv, 2, MPI_INT, iv2, 2, MPI_INT, MPI_COMM_WORLD, &rq[0]), op("MPI_Iallgather", "world", -1, -1, 8LL * n, 2));
  NB(MPI_Ialltoall(iv, 1, MPI_INT, iv2, 1, MPI_INT, MPI_COMM_WORLD, &rq[0]), op("MPI_Ialltoall", "world", -1, -1, 4LL * n, 1));
  NB(MPI_Ireduce_scatter(f, f2, counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &rq[0]), op_v("MPI_Ireduce_scatter", "world", -1, total, NULL, per, n));
  NB(MPI_Ireduce_scatter_block(f, f2, 2, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &rq[0]), op("MPI_Ireduce_scatter_block", "world", -1, -1, 8LL * n, 2));

  /* communicators */
  MPI_Comm dup, split, shared, half, cart;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup); log_comm("dup", dup);
  MPI_Allreduce(d, d2, 2, MPI_DOUBLE, MPI_SUM, dup); op("MPI_Allreduce", "dup", -1, -1, 16, 2);
  MPI_Comm_split(MPI_COMM_WORLD, r % 2, n - r, &split); log_comm("split", split);
  MPI_Allreduce(d, d2, 3, MPI_DOUBLE, MPI_SUM, split); op("MPI_Allreduce", "split", -1, -1, 24, 3);
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, r, MPI_INFO_NULL, &shared); log_comm("shared", shared);
  MPI_Barrier(shared); op("MPI_Barrier", "shared", -1, -1, 0, 0);
  MPI_Group wg, hg;
  MPI_Comm_group(MPI_COMM_WORLD, &wg);
  int range[1][3] = {{0, n / 2 - 1, 1}};
  MPI_Group_range_incl(wg, 1, range, &hg);
  MPI_Comm_create(MPI_COMM_WORLD, hg, &half);
  if (half != MPI_COMM_NULL) {
    log_comm("half", half);
    MPI_Bcast(iv, 1, MPI_INT, 0, half); op("MPI_Bcast", "half", 0, -1, 4, 1);
  }
  int dims[1] = {n}, periods[1] = {1};
  MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart); log_comm("cart", cart);
  MPI_Sendrecv(iv, 1, MPI_INT, right, 16, iv2, 1, MPI_INT, left, 16, cart, &st);
  memset(sb, 0, sizeof(sb)); memset(rb, 0, sizeof(rb)); sb[right] = 4; rb[left] = 4;
  op_v("MPI_Sendrecv", "cart", right, 4, sb, rb, n);
  MPI_Comm_free(&dup);
  MPI_Comm_free(&split);
  MPI_Comm_free(&shared);
  if (half != MPI_COMM_NULL) MPI_Comm_free(&half);
  MPI_Comm_free(&cart);
  MPI_Group_free(&hg);
  MPI_Group_free(&wg);

  op("MPI_Finalize", "-", -1, -1, 0, 0);
  fclose(g_log);
  MPI_Finalize();
  return 0;
}
