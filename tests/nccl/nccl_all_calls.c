// SPDX-License-Identifier: GPL-2.0-only
/* Calls every NCCL function the recorder wraps, from one of WORLD_SIZE
   processes (RANK, WORLD_SIZE from the environment, as torchrun sets them),
   checks that the data moved, and writes what the recorder should have seen
   to DIR/expected.rank<R>.jsonl. Rank 0 hands unique ids to the others
   through files in DIR. Built against the test double (tests/nccl/). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuda.h"
#include "nccl.h"

static const char* g_dir;
static int g_rank, g_size;
static FILE* g_expected;
static CUstream g_s1, g_s2;

#define CHECK(cmd)                                                                         \
  do {                                                                                     \
    ncclResult_t r_ = (cmd);                                                               \
    if (r_ != ncclSuccess) {                                                               \
      fprintf(stderr, "rank %d: %s failed with %d (line %d)\n", g_rank, #cmd, (int)r_,     \
              __LINE__);                                                                   \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

static void Fail(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "rank %d: ", g_rank);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(1);
}

/* ---- unique ids through files ------------------------------------------------ */

static void ShareId(const char* name, ncclUniqueId* id) {
  char path[512], tmp[520];
  snprintf(path, sizeof(path), "%s/%s.id", g_dir, name);
  if (g_rank == 0) {
    CHECK(ncclGetUniqueId(id));
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE* f = fopen(tmp, "wb");
    if (!f || fwrite(id, sizeof(*id), 1, f) != 1 || fclose(f) != 0) Fail("cannot write %s", tmp);
    if (rename(tmp, path) != 0) Fail("cannot rename %s", tmp);
    return;
  }
  for (int i = 0; i < 60000; ++i) {
    FILE* f = fopen(path, "rb");
    if (f) {
      size_t n = fread(id, sizeof(*id), 1, f);
      fclose(f);
      if (n == 1) return;
    }
    usleep(1000);
  }
  Fail("no unique id at %s", path);
}

/* ---- what the recorder should see -------------------------------------------- */

enum { kMaxComms = 16 };
static struct {
  const char* label;
  ncclComm_t comm;
  long coll, p2p; /* sequence numbers so far */
} g_comms[kMaxComms];

static void Comm(const char* label, ncclComm_t comm, const char* name, int size, int rank,
                 const char* parent, int color, int key, const char* id_file, int device) {
  for (int i = 0; i < kMaxComms; ++i) {
    if (g_comms[i].label) continue;
    g_comms[i].label = label;
    g_comms[i].comm = comm;
    break;
  }
  fprintf(g_expected,
          "{\"comm\": \"%s\", \"name\": \"%s\", \"size\": %d, \"comm_rank\": %d, \"parent\": %s%s%s, "
          "\"color\": %d, \"key\": %d, \"id_file\": %s%s%s, \"device\": %d}\n",
          label, name, size, rank, parent ? "\"" : "", parent ? parent : "null",
          parent ? "\"" : "", color, key, id_file ? "\"" : "", id_file ? id_file : "null",
          id_file ? "\"" : "", device);
}

/* A destroyed handle's address can come back for the next communicator. */
static ncclResult_t Destroy(ncclComm_t comm) {
  for (int i = 0; i < kMaxComms; ++i)
    if (g_comms[i].comm == comm) g_comms[i].comm = NULL;
  return ncclCommDestroy(comm);
}

static const char* LabelOf(ncclComm_t comm, long** seq, int p2p) {
  for (int i = 0; i < kMaxComms; ++i)
    if (g_comms[i].label && g_comms[i].comm == comm) {
      *seq = p2p ? &g_comms[i].p2p : &g_comms[i].coll;
      return g_comms[i].label;
    }
  Fail("unknown communicator");
  return NULL;
}

/* One expected op. gpu_units: its GPU time in multiples of FAKE_NCCL_OP_NS
   (ops of a group on one stream share one span); -1: no GPU times. */
static void Op(const char* kind, ncclComm_t comm, size_t count, const char* type, size_t bytes,
               const char* red, int peer, CUstream stream, int group, int gpu_units,
               int captured) {
  long* seq;
  int p2p = !strcmp(kind, "ncclSend") || !strcmp(kind, "ncclRecv");
  const char* label = LabelOf(comm, &seq, p2p);
  fprintf(g_expected,
          "{\"kind\": \"%s\", \"comm\": \"%s\", \"count\": %zu, \"datatype\": \"%s\", "
          "\"bytes\": %zu, \"red_op\": \"%s\", \"peer\": %d, \"stream\": %llu, \"group\": %d, "
          "\"seq\": %ld, \"gpu_units\": %d, \"captured\": %s}\n",
          kind, label, count, type, bytes, red, peer, (unsigned long long)(uintptr_t)stream, group,
          (*seq)++, gpu_units, captured ? "true" : "false");
}

static void ExpectEqual(const char* what, double got, double want) {
  if (got != want) Fail("%s: got %g, want %g", what, got, want);
}

/* ---- the calls ---------------------------------------------------------------- */

static void Collectives(ncclComm_t world) {
  const int n = g_size, r = g_rank;
  /* All-reduce, float32 sum: each element sums the ranks' values. */
  float f[1024], fo[1024];
  for (int i = 0; i < 1024; ++i) f[i] = (float)(r + i);
  CHECK(ncclAllReduce(f, fo, 1024, ncclFloat32, ncclSum, world, g_s1));
  Op("ncclAllReduce", world, 1024, "float32", 4096, "Sum", -1, g_s1, 0, 1, 0);
  ExpectEqual("allreduce[5]", fo[5], (double)(n * 5 + n * (n - 1) / 2));

  int32_t b[256], bo[256];
  for (int i = 0; i < 256; ++i) b[i] = r * 1000 + i;
  CHECK(ncclBroadcast(b, bo, 256, ncclInt32, 1, world, g_s1));
  Op("ncclBroadcast", world, 256, "int32", 1024, "None", 1, g_s1, 0, 1, 0);
  ExpectEqual("broadcast[7]", bo[7], 1007);

  for (int i = 0; i < 256; ++i) b[i] = r * 1000 + i;
  CHECK(ncclBcast(b, 200, ncclInt32, 2, world, g_s2));
  Op("ncclBroadcast", world, 200, "int32", 800, "None", 2, g_s2, 0, 1, 0);
  ExpectEqual("bcast[3]", b[3], 2003);

  double d[64], dout[64] = {0};
  for (int i = 0; i < 64; ++i) d[i] = r * 10.0 + i;
  CHECK(ncclReduce(d, dout, 64, ncclFloat64, ncclMax, 3, world, g_s1));
  Op("ncclReduce", world, 64, "float64", 512, "Max", 3, g_s1, 0, 1, 0);
  if (r == 3) ExpectEqual("reduce max[1]", dout[1], (n - 1) * 10.0 + 1);

  uint8_t g[100], go[400];
  memset(g, r + 1, sizeof(g));
  CHECK(ncclAllGather(g, go, 100, ncclUint8, world, g_s1));
  Op("ncclAllGather", world, 100, "uint8", 100 * n, "None", -1, g_s1, 0, 1, 0);
  ExpectEqual("allgather[250]", go[250], 3);

  int64_t rs[64 * 4], rso[64];
  for (int i = 0; i < 64 * n; ++i) rs[i] = i;
  CHECK(ncclReduceScatter(rs, rso, 64, ncclInt64, ncclSum, world, g_s1));
  Op("ncclReduceScatter", world, 64, "int64", 64 * 8 * n, "Sum", -1, g_s1, 0, 1, 0);
  ExpectEqual("reducescatter[0]", (double)rso[0], (double)n * (r * 64));

  int32_t a[16 * 4], ao[16 * 4];
  for (int i = 0; i < 16 * n; ++i) a[i] = r * 100 + i / 16;
  CHECK(ncclAlltoAll(a, ao, 16, ncclInt32, world, g_s2));
  Op("ncclAlltoAll", world, 16, "int32", 16 * 4 * n, "None", -1, g_s2, 0, 1, 0);
  ExpectEqual("alltoall from 2", ao[16 * 2], 2 * 100 + r);

  float ga[32], gao[32 * 4];
  for (int i = 0; i < 32; ++i) ga[i] = (float)r;
  CHECK(ncclGather(ga, gao, 32, ncclFloat32, 0, world, g_s1));
  Op("ncclGather", world, 32, "float32", 32 * 4 * n, "None", 0, g_s1, 0, 1, 0);
  if (r == 0) ExpectEqual("gather block 3", gao[32 * 3], 3);

  float sc[32 * 4], sco[32];
  for (int i = 0; i < 32 * n; ++i) sc[i] = (float)(i / 32 + 10 * r);
  CHECK(ncclScatter(sc, sco, 32, ncclFloat32, 1, world, g_s1));
  Op("ncclScatter", world, 32, "float32", 32 * 4 * n, "None", 1, g_s1, 0, 1, 0);
  ExpectEqual("scatter", sco[0], r + 10);

  /* A compute kernel between two all-reduces: the gap lives on the GPU only. */
  fakecuStreamAddWork(g_s1, 50 * 1000 * 1000);
  CHECK(ncclAllReduce(f, fo, 1024, ncclFloat32, ncclAvg, world, g_s1));
  Op("ncclAllReduce", world, 1024, "float32", 4096, "Avg", -1, g_s1, 0, 1, 0);
}

static void Groups(ncclComm_t world) {
  const int n = g_size, r = g_rank;
  int next = (r + 1) % n, prev = (r + n - 1) % n;
  /* A ring exchange: one group of a send and a receive. */
  int32_t out[100], in[100];
  for (int i = 0; i < 100; ++i) out[i] = r;
  CHECK(ncclGroupStart());
  CHECK(ncclSend(out, 100, ncclInt32, next, world, g_s2));
  CHECK(ncclRecv(in, 100, ncclInt32, prev, world, g_s2));
  CHECK(ncclGroupEnd());
  Op("ncclSend", world, 100, "int32", 400, "None", next, g_s2, 1, 2, 0);
  Op("ncclRecv", world, 100, "int32", 400, "None", prev, g_s2, 1, 2, 0);
  ExpectEqual("ring receive", in[0], prev);

  /* Nested groups count as one: four ops, two streams. */
  float f[256], fo[256];
  uint16_t h[8], ho[8 * 4];
  for (int i = 0; i < 256; ++i) f[i] = 1.0f;
  for (int i = 0; i < 8; ++i) h[i] = (uint16_t)(r + 1);
  CHECK(ncclGroupStart());
  CHECK(ncclAllReduce(f, fo, 256, ncclFloat32, ncclSum, world, g_s1));
  CHECK(ncclGroupStart());
  CHECK(ncclSend(out, 50, ncclInt32, prev, world, g_s2));
  CHECK(ncclRecv(in, 50, ncclInt32, next, world, g_s2));
  CHECK(ncclGroupEnd());
  CHECK(ncclAllGather(h, ho, 8, ncclFloat16, world, g_s1));
  CHECK(ncclGroupEnd());
  Op("ncclAllReduce", world, 256, "float32", 1024, "Sum", -1, g_s1, 2, 2, 0);
  Op("ncclSend", world, 50, "int32", 200, "None", prev, g_s2, 2, 2, 0);
  Op("ncclRecv", world, 50, "int32", 200, "None", next, g_s2, 2, 2, 0);
  Op("ncclAllGather", world, 8, "float16", 16 * n, "None", -1, g_s1, 2, 2, 0);
  ExpectEqual("grouped allreduce", fo[0], n);
  ExpectEqual("grouped receive", in[0], next);
  ExpectEqual("grouped allgather", ho[8 * 3], 4);
}

static void Communicators(ncclComm_t world, int device) {
  const int r = g_rank;
  float f[64], fo[64];
  for (int i = 0; i < 64; ++i) f[i] = 1.0f;

  /* Split by parity, keys reversing the order. */
  ncclComm_t half;
  CHECK(ncclCommSplit(world, r % 2, -r, &half, NULL));
  int half_rank = r < 2 ? 1 : 0; /* keys -r: the higher old rank comes first */
  Comm("half", half, "split", 2, half_rank, "world", r % 2, -r, NULL, device);
  CHECK(ncclAllReduce(f, fo, 64, ncclFloat32, ncclSum, half, g_s1));
  Op("ncclAllReduce", half, 64, "float32", 256, "Sum", -1, g_s1, 0, 1, 0);
  ExpectEqual("half allreduce", fo[0], 2);

  /* Rank 3 opts out of the second split. */
  ncclComm_t three = NULL;
  CHECK(ncclCommSplit(world, r == 3 ? NCCL_SPLIT_NOCOLOR : 7, 0, &three, NULL));
  if (r == 3) {
    if (three) Fail("NOCOLOR gave a communicator");
  } else {
    Comm("three", three, "split", 3, r, "world", 7, 0, NULL, device);
    CHECK(ncclAllReduce(f, fo, 64, ncclFloat32, ncclSum, three, g_s1));
    Op("ncclAllReduce", three, 64, "float32", 256, "Sum", -1, g_s1, 0, 1, 0);
    ExpectEqual("three allreduce", fo[0], 3);
  }

  /* Shrink away rank 1: only the others call it. */
  if (r != 1) {
    int excluded[1] = {1};
    ncclComm_t shrunk;
    CHECK(ncclCommShrink(world, excluded, 1, &shrunk, NULL, 0));
    Comm("shrunk", shrunk, "shrink", 3, r > 1 ? r - 1 : r, "world", 0, 0, NULL, device);
    int32_t v[4] = {r, r, r, r};
    CHECK(ncclBroadcast(v, v, 4, ncclInt32, 2, shrunk, g_s1));
    Op("ncclBroadcast", shrunk, 4, "int32", 16, "None", 2, g_s1, 0, 1, 0);
    ExpectEqual("shrunk broadcast", v[0], 3);
    CHECK(Destroy(shrunk));
  }

  /* A communicator with a config, one from two ids, and one made alone. */
  ncclUniqueId id;
  ShareId("config", &id);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 1;
  ncclComm_t cfg;
  CHECK(ncclCommInitRankConfig(&cfg, g_size, id, r, &config));
  Comm("config", cfg, "init_config", g_size, r, NULL, 0, 0, "config", device);
  CHECK(ncclAllReduce(f, fo, 64, ncclFloat32, ncclMin, cfg, g_s2));
  Op("ncclAllReduce", cfg, 64, "float32", 256, "Min", -1, g_s2, 0, 1, 0);

  ncclUniqueId ids[2];
  ShareId("scalable0", &ids[0]);
  ShareId("scalable1", &ids[1]);
  ncclComm_t scal;
  CHECK(ncclCommInitRankScalable(&scal, g_size, r, 2, ids, NULL));
  Comm("scalable", scal, "init_scalable", g_size, r, NULL, 0, 0, "scalable0", device);
  CHECK(ncclReduce(f, fo, 64, ncclFloat32, ncclProd, 0, scal, g_s1));
  Op("ncclReduce", scal, 64, "float32", 256, "Prod", 0, g_s1, 0, 1, 0);

  ncclComm_t alone;
  int devlist[1] = {device};
  CHECK(ncclCommInitAll(&alone, 1, devlist));
  Comm("alone", alone, "init_all", 1, 0, NULL, 0, 0, NULL, device);
  CHECK(ncclAllReduce(f, fo, 64, ncclFloat32, ncclSum, alone, g_s2));
  Op("ncclAllReduce", alone, 64, "float32", 256, "Sum", -1, g_s2, 0, 1, 0);

  /* Captured into a CUDA graph: recorded, marked, and no events on the stream. */
  CUgraph graph;
  if (cuStreamBeginCapture(g_s2, CU_STREAM_CAPTURE_MODE_GLOBAL) != CUDA_SUCCESS) Fail("capture");
  CHECK(ncclAllReduce(f, fo, 64, ncclFloat32, ncclMax, world, g_s2));
  if (cuStreamEndCapture(g_s2, &graph) != CUDA_SUCCESS) Fail("end capture");
  Op("ncclAllReduce", world, 64, "float32", 256, "Max", -1, g_s2, 0, -1, 1);
  if (fakecuEventsRecordedDuringCapture() != 0) Fail("events were recorded during capture");

  CHECK(ncclCommFinalize(cfg));
  CHECK(Destroy(cfg));
  CHECK(Destroy(scal));
  for (int i = 0; i < kMaxComms; ++i)
    if (g_comms[i].comm == alone) g_comms[i].comm = NULL;
  CHECK(ncclCommAbort(alone));
  CHECK(Destroy(half));
  if (three) CHECK(Destroy(three));
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DIR (RANK and WORLD_SIZE in the environment)\n", argv[0]);
    return 2;
  }
  g_dir = argv[1];
  const char* rank = getenv("RANK");
  const char* size = getenv("WORLD_SIZE");
  if (!rank || !size) Fail("RANK and WORLD_SIZE must be set");
  g_rank = atoi(rank);
  g_size = atoi(size);
  if (g_size != 4) Fail("this program wants 4 ranks, not %d", g_size);
  char path[512];
  snprintf(path, sizeof(path), "%s/expected.rank%d.jsonl", g_dir, g_rank);
  g_expected = fopen(path, "w");
  if (!g_expected) Fail("cannot write %s", path);

  cuInit(0);
  CUdevice device;
  cuCtxGetDevice(&device);
  if (cuStreamCreate(&g_s1, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
      cuStreamCreate(&g_s2, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
    Fail("cannot create streams");

  ncclUniqueId id;
  ShareId("world", &id);
  ncclComm_t world;
  CHECK(ncclCommInitRank(&world, g_size, id, g_rank));
  Comm("world", world, "init", g_size, g_rank, NULL, 0, 0, "world", device);

  Collectives(world);
  Groups(world);
  Communicators(world, device);
  CHECK(Destroy(world));
  if (fclose(g_expected) != 0) Fail("cannot write %s", path);
  return 0;
}
