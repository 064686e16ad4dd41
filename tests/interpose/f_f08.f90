! Fortran 2008 bindings (use mpi_f08): MPI_Allreduce, MPI_Allgather, MPI_Reduce_scatter_block on
! host arrays, plus one large-count (MPI_COUNT_KIND) MPI_Allreduce, which MPICH maps to the C
! MPI_Allreduce_c. Prints "f_f08: OK" when the results are right; interception is proven by the
! TLMPI_STATS=1 lines printed at MPI_Finalize (see fortran.sh). mpi_f08's MPI_Init/MPI_Finalize
! call PMPI_ directly in MPICH 4.0.2: tlmpi must not depend on them.
program f_f08
  use mpi_f08
  implicit none
  integer :: rank, nranks, i, errs
  integer :: a(4), b(4)
  integer, allocatable :: g(:), rs(:)
  integer(kind=MPI_COUNT_KIND) :: n

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  errs = 0
  allocate(g(4 * nranks), rs(4 * nranks))
  a = [(rank * 10 + i, i = 1, 4)]
  call MPI_Allreduce(a, b, 4, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  do i = 1, 4
    if (b(i) /= 10 * nranks * (nranks - 1) / 2 + nranks * i) errs = errs + 1
  end do
  n = 4
  b = -1
  call MPI_Allreduce(a, b, n, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD)
  do i = 1, 4
    if (b(i) /= (nranks - 1) * 10 + i) errs = errs + 1
  end do
  call MPI_Allgather(a, 4, MPI_INTEGER, g, 4, MPI_INTEGER, MPI_COMM_WORLD)
  do i = 1, 4 * nranks
    if (g(i) /= ((i - 1) / 4) * 10 + mod(i - 1, 4) + 1) errs = errs + 1
  end do
  rs = 1
  call MPI_Reduce_scatter_block(rs, b, 4, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  do i = 1, 4
    if (b(i) /= nranks) errs = errs + 1
  end do
  if (errs == 0) then
    print '(a,i0)', 'f_f08: OK rank ', rank
  else
    print '(a,i0,a,i0)', 'f_f08: FAIL rank ', rank, ' errors ', errs
  end if
  call MPI_Finalize()
end program f_f08
