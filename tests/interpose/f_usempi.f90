! Fortran with use mpi: MPI_ALLREDUCE, MPI_ALLGATHER, MPI_REDUCE_SCATTER_BLOCK on host
! arrays. Prints "f_usempi: OK" when the results are right; interception is proven by the
! TLMPI_STATS=1 lines printed at MPI_Finalize (see fortran.sh).
program f_usempi
  use mpi
  implicit none

  integer :: rank, nranks, i, errs, ierr
  integer :: a(4), b(4)
  integer, allocatable :: g(:), rs(:)

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nranks, ierr)
  errs = 0
  allocate(g(4 * nranks), rs(4 * nranks))
  a = (/ (rank * 10 + i, i = 1, 4) /)
  call MPI_ALLREDUCE(a, b, 4, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  do i = 1, 4
    if (b(i) /= 10 * nranks * (nranks - 1) / 2 + nranks * i) errs = errs + 1
  end do
  call MPI_ALLREDUCE(MPI_IN_PLACE, a, 4, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  do i = 1, 4
    if (a(i) /= (nranks - 1) * 10 + i) errs = errs + 1
  end do
  a = (/ (rank * 10 + i, i = 1, 4) /)
  call MPI_ALLGATHER(a, 4, MPI_INTEGER, g, 4, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  do i = 1, 4 * nranks
    if (g(i) /= ((i - 1) / 4) * 10 + mod(i - 1, 4) + 1) errs = errs + 1
  end do
  rs = 1
  call MPI_REDUCE_SCATTER_BLOCK(rs, b, 4, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  do i = 1, 4
    if (b(i) /= nranks) errs = errs + 1
  end do
  if (errs == 0) then
    print '(a,i0)', 'f_usempi: OK rank ', rank
  else
    print '(a,i0,a,i0)', 'f_usempi: FAIL rank ', rank, ' errors ', errs
  end if
  call MPI_FINALIZE(ierr)
end program f_usempi
