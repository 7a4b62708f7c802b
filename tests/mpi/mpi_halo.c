// SPDX-License-Identifier: GPL-2.0-only
/* dltrace-mpi-halo: a real nonblocking halo-exchange stencil to record.
 *
 * Ranks form a periodic 1-D chain; each owns ROWS x CELLS doubles of a
 * heat-diffusion grid (Jacobi iteration) with a halo of HALO columns on
 * each side. Per iteration every rank calls, in this order:
 *   MPI_Irecv from the left, MPI_Irecv from the right (HALO*ROWS doubles each),
 *   MPI_Isend to the left, MPI_Isend to the right,
 *   MPI_Waitall on the four,
 * then updates its cells (the compute), and every --reduce-every iterations
 * one MPI_Allreduce of the residual (1 double). stdout carries no timing. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ParseInt(const char* name, const char* v, int min, int* out) {
  char* end = NULL;
  long x = v ? strtol(v, &end, 10) : 0;
  if (!v || *end || x < min || x > 1 << 28) {
    fprintf(stderr, "dltrace-mpi-halo: %s wants an integer >= %d, got '%s'\n", name, min, v ? v : "");
    return 0;
  }
  *out = (int)x;
  return 1;
}

int main(int argc, char** argv) {
  int iterations = 20, cells = 2048, rows = 256, halo = 64, reduce_every = 1, sweeps = 4;
  for (int i = 1; i < argc; i += 2) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    int ok = 0;
    if (!strcmp(a, "--iterations")) ok = ParseInt(a, v, 1, &iterations);
    else if (!strcmp(a, "--cells")) ok = ParseInt(a, v, 1, &cells);
    else if (!strcmp(a, "--rows")) ok = ParseInt(a, v, 1, &rows);
    else if (!strcmp(a, "--halo")) ok = ParseInt(a, v, 1, &halo);
    else if (!strcmp(a, "--reduce-every")) ok = ParseInt(a, v, 0, &reduce_every);
    else if (!strcmp(a, "--sweeps")) ok = ParseInt(a, v, 0, &sweeps);
    else {
      fprintf(stderr,
              "usage: dltrace-mpi-halo [--iterations N] [--cells C] [--rows R] [--halo H]\n"
              "         [--reduce-every K] [--sweeps S]\n");
      return strcmp(a, "--help") ? 2 : 0;
    }
    if (!ok) return 2;
  }
  if (halo > cells) halo = cells;
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int left = (rank + size - 1) % size, right = (rank + 1) % size;
  const int width = cells + 2 * halo;  /* columns per row, halos included */
  double* u = calloc((size_t)rows * width, sizeof *u);
  double* next = calloc((size_t)rows * width, sizeof *next);
  double* out[2] = {malloc((size_t)rows * halo * sizeof(double)), malloc((size_t)rows * halo * sizeof(double))};
  double* in[2] = {malloc((size_t)rows * halo * sizeof(double)), malloc((size_t)rows * halo * sizeof(double))};
  if (!u || !next || !out[0] || !out[1] || !in[0] || !in[1]) {
    fprintf(stderr, "dltrace-mpi-halo: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cells; ++c)
      u[(size_t)r * width + halo + c] = sin(0.01 * (rank * cells + c)) * cos(0.02 * r);
  const int n = rows * halo;
  double residual = 0;
  for (int it = 0; it < iterations; ++it) {
    for (int r = 0; r < rows; ++r) {
      memcpy(out[0] + (size_t)r * halo, u + (size_t)r * width + halo, halo * sizeof(double));
      memcpy(out[1] + (size_t)r * halo, u + (size_t)r * width + cells, halo * sizeof(double));
    }
    MPI_Request req[4];
    MPI_Irecv(in[0], n, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &req[0]);
    MPI_Irecv(in[1], n, MPI_DOUBLE, right, 0, MPI_COMM_WORLD, &req[1]);
    MPI_Isend(out[0], n, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, &req[2]);
    MPI_Isend(out[1], n, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &req[3]);
    MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
    for (int r = 0; r < rows; ++r) {
      memcpy(u + (size_t)r * width, in[0] + (size_t)r * halo, halo * sizeof(double));
      memcpy(u + (size_t)r * width + halo + cells, in[1] + (size_t)r * halo, halo * sizeof(double));
    }
    /* Jacobi sweeps over the owned cells (the compute of the iteration). */
    double local = 0;
    for (int s = 0; s < sweeps; ++s) {
      local = 0;
      for (int r = 0; r < rows; ++r) {
        const int up = r ? r - 1 : r, down = r + 1 < rows ? r + 1 : r;
        for (int c = halo; c < halo + cells; ++c) {
          const size_t k = (size_t)r * width + c;
          const double v = 0.25 * (u[k - 1] + u[k + 1] + u[(size_t)up * width + c] + u[(size_t)down * width + c]);
          local += fabs(v - u[k]);
          next[k] = v;
        }
      }
      for (int r = 0; r < rows; ++r)
        memcpy(u + (size_t)r * width + halo, next + (size_t)r * width + halo, cells * sizeof(double));
    }
    if (reduce_every && (it + 1) % reduce_every == 0)
      MPI_Allreduce(&local, &residual, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  double sum = 0, total = 0;
  for (int r = 0; r < rows; ++r)
    for (int c = halo; c < halo + cells; ++c) sum += u[(size_t)r * width + c];
  MPI_Reduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("halo: %d ranks, %d iterations, residual %.6e, checksum %.6e\n", size, iterations, residual, total);
  free(u);
  free(next);
  free(out[0]);
  free(out[1]);
  free(in[0]);
  free(in[1]);
  MPI_Finalize();
  return 0;
}
