// SPDX-License-Identifier: GPL-2.0-only
/* A deliberately wrong MPI interposer, standing where the recorder stands,
 * for the argument check's own test (tests/record/test_mpi_argcheck.py): it
 * must fail on exactly these two faults.
 *   MPI_Isend   hands PMPI a copy of the program's buffer (same bytes, another
 *               address: the kind of change that looks harmless);
 *   MPI_Waitall gives the program back its first request as it was before
 *               PMPI completed and freed it.
 * Everything else goes to the MPI library untouched. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

int MPI_Isend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
              MPI_Request* request) {
  int size = 0;
  PMPI_Type_size(datatype, &size);
  const size_t bytes = (size_t)(count > 0 ? count : 0) * (size_t)size;
  void* copy = malloc(bytes + 1); /* never freed: the send may read it after we return */
  if (bytes) memcpy(copy, buf, bytes);
  return PMPI_Isend(copy, count, datatype, dest, tag, comm, request);
}

int MPI_Waitall(int count, MPI_Request* array_of_requests, MPI_Status* array_of_statuses) {
  const MPI_Request first = count > 0 ? array_of_requests[0] : MPI_REQUEST_NULL;
  const int rc = PMPI_Waitall(count, array_of_requests, array_of_statuses);
  if (count > 0) array_of_requests[0] = first;
  return rc;
}
