! SPDX-License-Identifier: GPL-2.0-only
! The Fortran twin of mpi_twin.c: the same calls in the same order, through
! mpif.h (-DDLTRACE_MPIFH), `use mpi` (default) or `use mpi_f08`
! (-DDLTRACE_F08), so that the recorder's Fortran wrappers can be checked
! against its C ones: same ops, counts, bytes, peers, communicators, and the
! same output line. Needs an even rank count.
program mpi_twin
#if defined(DLTRACE_MPIFH)
  implicit none
  include 'mpif.h'
#elif defined(DLTRACE_F08)
  use mpi_f08
  implicit none
#else
  use mpi
  implicit none
#endif
  integer, parameter :: n = 16
#if defined(DLTRACE_F08)
  type(MPI_Status) :: st, sts(2)
  type(MPI_Request) :: rq(2), prq(2)
  type(MPI_Comm) :: sub, dup, ring
  type(MPI_Datatype) :: types(32)
  type(MPI_Win) :: win
  type(MPI_Message) :: msg
#else
  integer :: st(MPI_STATUS_SIZE), sts(MPI_STATUS_SIZE, 2)
  integer :: rq(2), prq(2)
  integer :: sub, dup, ring
  integer :: types(32)
  integer :: win, msg
#endif
  integer(kind=MPI_ADDRESS_KIND) :: winsize, disp
  integer :: dims(1)
  logical :: periods(1)
  integer :: ierr, rank, nranks, partner, right, left, i, k, idx
  integer(8) :: check
  logical :: flag
  double precision :: a(n), b(n), c(n)
  integer :: ia(2), ib(64), ic(64)
  integer :: scounts(32), sdispls(32), rcounts(32), rdispls(32), wdispls(32), outcount, idxs(2)
  integer :: iv(1024), iw(1024)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  if (mod(nranks, 2) /= 0 .or. nranks > 32) then
    if (rank == 0) write(*, '(A)') 'mpi_twin: needs an even rank count up to 32'
    call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  end if
  partner = ieor(rank, 1)
  right = mod(rank + 1, nranks)
  left = mod(rank + nranks - 1, nranks)
  do i = 1, n
    a(i) = rank * 100 + i
  end do
  check = 0

  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  ! blocking, even ranks send first
  if (mod(rank, 2) == 0) then
    call MPI_Send(a, n, MPI_DOUBLE_PRECISION, partner, 7, MPI_COMM_WORLD, ierr)
    call MPI_Recv(b, n, MPI_DOUBLE_PRECISION, partner, 7, MPI_COMM_WORLD, st, ierr)
  else
    call MPI_Recv(b, n, MPI_DOUBLE_PRECISION, partner, 7, MPI_COMM_WORLD, st, ierr)
    call MPI_Send(a, n, MPI_DOUBLE_PRECISION, partner, 7, MPI_COMM_WORLD, ierr)
  end if
  check = check + nint(sum(b), 8)
  call MPI_Sendrecv(a, n, MPI_DOUBLE_PRECISION, right, 8, b, n, MPI_DOUBLE_PRECISION, left, 8, &
                    MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  check = check + nint(sum(b), 8)
  ! nonblocking: Waitall, Waitany (1-based indices), Testall
  call MPI_Irecv(b, n, MPI_DOUBLE_PRECISION, left, 9, MPI_COMM_WORLD, rq(1), ierr)
  call MPI_Isend(a, n, MPI_DOUBLE_PRECISION, right, 9, MPI_COMM_WORLD, rq(2), ierr)
  call MPI_Waitall(2, rq, MPI_STATUSES_IGNORE, ierr)
  check = check + nint(sum(b), 8)
  call MPI_Irecv(b, n / 2, MPI_DOUBLE_PRECISION, partner, 10, MPI_COMM_WORLD, rq(1), ierr)
  call MPI_Isend(a, n / 2, MPI_DOUBLE_PRECISION, partner, 10, MPI_COMM_WORLD, rq(2), ierr)
  do k = 1, 2
    call MPI_Waitany(2, rq, idx, st, ierr)
  end do
  check = check + nint(sum(b(1:n / 2)), 8)
  call MPI_Irecv(b, n, MPI_DOUBLE_PRECISION, left, 11, MPI_COMM_WORLD, rq(1), ierr)
  call MPI_Isend(a, n, MPI_DOUBLE_PRECISION, right, 11, MPI_COMM_WORLD, rq(2), ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_Testall(2, rq, flag, sts, ierr)
  end do
  check = check + nint(sum(b), 8)
  ! collectives
  c = a
  call MPI_Bcast(c, n, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
  check = check + nint(sum(c), 8)
  call MPI_Reduce(a, c, n, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  call MPI_Allreduce(a, c, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_Allreduce(MPI_IN_PLACE, c, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  check = check + nint(sum(c), 8)
  ia(1) = rank
  ia(2) = 2 * rank
  call MPI_Allgather(ia, 2, MPI_INTEGER, ib, 2, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call MPI_Alltoall(ib, 1, MPI_INTEGER, ic, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  check = check + sum(ib(1:2 * nranks)) + sum(ic(1:nranks))
  ! a split communicator: even and odd ranks
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, sub, ierr)
  call MPI_Allreduce(a, c, n, MPI_DOUBLE_PRECISION, MPI_SUM, sub, ierr)
  call MPI_Bcast(ia, 2, MPI_INTEGER, 0, sub, ierr)
  check = check + nint(sum(c), 8) + sum(ia)
  call MPI_Comm_free(sub, ierr)
  ! persistent requests around the ring
  call MPI_Send_init(a, n, MPI_DOUBLE_PRECISION, right, 12, MPI_COMM_WORLD, prq(1), ierr)
  call MPI_Recv_init(b, n, MPI_DOUBLE_PRECISION, left, 12, MPI_COMM_WORLD, prq(2), ierr)
  do k = 1, 3
    call MPI_Startall(2, prq, ierr)
    call MPI_Waitall(2, prq, sts, ierr)
    check = check + nint(sum(b), 8)
  end do
  call MPI_Start(prq(2), ierr)
  call MPI_Start(prq(1), ierr)
  call MPI_Wait(prq(2), st, ierr)
  call MPI_Wait(prq(1), MPI_STATUS_IGNORE, ierr)
  call MPI_Request_free(prq(1), ierr)
  call MPI_Request_free(prq(2), ierr)
  ! v and w forms: rank r sends i + 1 integers to rank i and gets r + 1 from each
  do i = 1, nranks
    scounts(i) = i
    sdispls(i) = (i - 1) * 32
    rcounts(i) = rank + 1
    rdispls(i) = (i - 1) * 32
    wdispls(i) = (i - 1) * 128
    types(i) = MPI_INTEGER
  end do
  do i = 1, 1024
    iv(i) = rank * 1000 + i
  end do
  iw = 0
  call MPI_Alltoallv(iv, scounts, sdispls, MPI_INTEGER, iw, rcounts, rdispls, MPI_INTEGER, &
                     MPI_COMM_WORLD, ierr)
  check = check + sum(iw)
  iw = 0
  call MPI_Alltoallw(iv, scounts, wdispls, types, iw, rcounts, wdispls, types, MPI_COMM_WORLD, ierr)
  check = check + sum(iw)
  do i = 1, nranks
    rcounts(i) = 2
    rdispls(i) = (i - 1) * 2
  end do
  call MPI_Gatherv(ia, 2, MPI_INTEGER, ib, rcounts, rdispls, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call MPI_Scatterv(ib, rcounts, rdispls, MPI_INTEGER, ia, 2, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  check = check + sum(ia)
  do i = 1, nranks
    rcounts(i) = 2
  end do
  call MPI_Reduce_scatter(a, c, rcounts, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  check = check + nint(c(1) + c(2), 8)
  ! a duplicate, a replace, a probed receive, Waitsome
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  call MPI_Barrier(dup, ierr)
  call MPI_Comm_free(dup, ierr)
  b = a
  call MPI_Sendrecv_replace(b, n, MPI_DOUBLE_PRECISION, right, 13, left, 13, MPI_COMM_WORLD, st, ierr)
  check = check + nint(sum(b), 8)
  call MPI_Isend(a, 4, MPI_DOUBLE_PRECISION, partner, 14, MPI_COMM_WORLD, rq(1), ierr)
  call MPI_Probe(partner, 14, MPI_COMM_WORLD, st, ierr)
  call MPI_Recv(b, 4, MPI_DOUBLE_PRECISION, partner, 14, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call MPI_Wait(rq(1), st, ierr)
  check = check + nint(sum(b(1:4)), 8)
  call MPI_Irecv(b, n, MPI_DOUBLE_PRECISION, left, 15, MPI_COMM_WORLD, rq(1), ierr)
  call MPI_Isend(a, n, MPI_DOUBLE_PRECISION, right, 15, MPI_COMM_WORLD, rq(2), ierr)
  k = 0
  do while (k < 2)
    call MPI_Waitsome(2, rq, outcount, idxs, sts, ierr)
    k = k + outcount
  end do
  check = check + nint(sum(b), 8)
  call MPI_Iallreduce(a, c, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, rq(1), ierr)
  call MPI_Wait(rq(1), MPI_STATUS_IGNORE, ierr)
  check = check + nint(sum(c), 8)
  ! one-sided in a fence epoch, a matched probe, a neighbourhood exchange
  winsize = 8 * n
  call MPI_Win_create(c, winsize, 8, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  disp = 0
  call MPI_Put(a, 4, MPI_DOUBLE_PRECISION, right, disp, 4, MPI_DOUBLE_PRECISION, win, ierr)
  disp = 8
  call MPI_Get(b, 2, MPI_DOUBLE_PRECISION, left, disp, 2, MPI_DOUBLE_PRECISION, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  call MPI_Win_free(win, ierr)
  check = check + nint(sum(c(1:4)), 8) + nint(sum(b(1:2)), 8)
  call MPI_Isend(a, 3, MPI_DOUBLE_PRECISION, partner, 16, MPI_COMM_WORLD, rq(1), ierr)
  call MPI_Mprobe(partner, 16, MPI_COMM_WORLD, msg, st, ierr)
  call MPI_Mrecv(b, 3, MPI_DOUBLE_PRECISION, msg, st, ierr)
  call MPI_Wait(rq(1), st, ierr)
  check = check + nint(sum(b(1:3)), 8)
  dims(1) = nranks
  periods(1) = .true.
  call MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, .false., ring, ierr)
  call MPI_Neighbor_alltoall(a, 2, MPI_DOUBLE_PRECISION, b, 2, MPI_DOUBLE_PRECISION, ring, ierr)
  check = check + nint(sum(b(1:4)), 8)
  call MPI_Comm_free(ring, ierr)
  write(*, '(A,I0,A,I0)') 'rank ', rank, ' checksum ', check
  call MPI_Finalize(ierr)
end program mpi_twin
