// SPDX-License-Identifier: GPL-2.0-only
/* A ring exchange on persistent requests: each rank sets up one send to its
 * right neighbour and one receive from its left, then starts them ITERS
 * times, alternately with MPI_Startall + MPI_Waitall and with two MPI_Start
 * + MPI_Wait, checking every received block. Prints one line per rank.
 * usage: mpirun -np N dltrace-mpi-persistent-ring [iters [doubles]] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int iters = argc > 1 ? atoi(argv[1]) : 10;
  int count = argc > 2 ? atoi(argv[2]) : 1000;
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  double* send = malloc(sizeof(double) * (size_t)count);
  double* recv = malloc(sizeof(double) * (size_t)count);
  MPI_Request rq[2];
  MPI_Send_init(send, count, MPI_DOUBLE, right, 5, MPI_COMM_WORLD, &rq[0]);
  MPI_Recv_init(recv, count, MPI_DOUBLE, left, 5, MPI_COMM_WORLD, &rq[1]);
  int bad = 0;
  for (int it = 0; it < iters; ++it) {
    for (int i = 0; i < count; ++i) send[i] = rank * 1000.0 + it;
    if (it % 2 == 0) {
      MPI_Startall(2, rq);
      MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    } else {
      MPI_Start(&rq[1]);
      MPI_Start(&rq[0]);
      MPI_Status st;
      MPI_Wait(&rq[1], &st);
      MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    }
    for (int i = 0; i < count; ++i) bad += recv[i] != left * 1000.0 + it;
  }
  MPI_Request_free(&rq[0]);
  MPI_Request_free(&rq[1]);
  printf("rank %d: %d exchanges, %d wrong values\n", rank, iters, bad);
  free(send);
  free(recv);
  MPI_Finalize();
  return bad != 0;
}
