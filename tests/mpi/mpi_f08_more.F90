! SPDX-License-Identifier: GPL-2.0-only
! Fortran (use mpi_f08) calls the C/Fortran twins leave out, for the recorder's
! Fortran wrappers: MPI_Init_thread, Comm_split_type, Cart_create, Scan,
! Exscan, Ibcast, Ibarrier with Testany, Issend, Iprobe, Testsome, Test and
! Ireduce_scatter_block. Each rank passes 4 integers to its right neighbour.
program mpi_f08_more
  use mpi_f08
  implicit none
  integer :: provided, rank, nranks, idx, outcount, idxs(2), x(4), y(4)
  logical :: flag
  type(MPI_Request) :: rq(2)
  type(MPI_Status) :: st, sts(2)
  type(MPI_Comm) :: cart, shm
  call MPI_Init_thread(MPI_THREAD_FUNNELED, provided)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  x = rank
  call MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, shm)
  call MPI_Cart_create(MPI_COMM_WORLD, 1, [nranks], [.true.], .false., cart)
  call MPI_Scan(x, y, 4, MPI_INTEGER, MPI_SUM, cart)
  call MPI_Exscan(x, y, 4, MPI_INTEGER, MPI_MAX, shm)
  call MPI_Ibcast(x, 4, MPI_INTEGER, 0, MPI_COMM_WORLD, rq(1))
  call MPI_Wait(rq(1), st)
  call MPI_Ibarrier(MPI_COMM_WORLD, rq(1))
  flag = .false.
  do while (.not. flag)
    call MPI_Testany(1, rq, idx, flag, st)
  end do
  call MPI_Issend(x, 4, MPI_INTEGER, mod(rank + 1, nranks), 3, MPI_COMM_WORLD, rq(1))
  flag = .false.
  do while (.not. flag)
    call MPI_Iprobe(MPI_ANY_SOURCE, 3, MPI_COMM_WORLD, flag, st)
  end do
  call MPI_Irecv(y, 4, MPI_INTEGER, st%MPI_SOURCE, 3, MPI_COMM_WORLD, rq(2))
  outcount = 0
  idx = 0
  do while (idx < 2)
    call MPI_Testsome(2, rq, outcount, idxs, sts)
    if (outcount /= MPI_UNDEFINED) idx = idx + outcount
  end do
  call MPI_Ireduce_scatter_block(x, y, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, rq(1))
  call MPI_Test(rq(1), flag, st)
  if (.not. flag) call MPI_Wait(rq(1), MPI_STATUS_IGNORE)
  call MPI_Comm_free(cart)
  call MPI_Comm_free(shm)
  if (rank == 0) write(*, '(A,I0)') 'done ', y(1)
  call MPI_Finalize()
end program mpi_f08_more
