! Fortran (use mpi) MPI_BCAST, MPI_REDUCE, MPI_ALLGATHERV (uneven counts), MPI_REDUCE_SCATTER
! (uneven counts), MPI_ALLTOALL, MPI_IBCAST and MPI_IALLGATHERV (completed by MPI_WAIT) on arrays
! from f_dev_alloc (f_devalloc.c: cudaMalloc, the fake CUDA runtime under make check). tlmpi serves
! them through host staging (fortran.sh checks its TLMPI_STATS lines). Prints "f_siblings: OK" when
! every result is right.
program f_siblings
  use mpi
  use iso_c_binding
  implicit none
  interface
    function f_dev_alloc(n) bind(c, name='f_dev_alloc')
      import :: c_ptr, c_long
      integer(c_long), value :: n
      type(c_ptr) :: f_dev_alloc
    end function f_dev_alloc
  end interface

  integer, parameter :: n = 6
  integer :: rank, nranks, i, j, k, tot, errs, last, ierr, req
  integer, allocatable :: counts(:), displs(:)
  integer, pointer :: a(:), b(:), g(:), s(:), t(:)

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nranks, ierr)
  allocate(counts(nranks), displs(nranks))
  tot = 0
  do i = 1, nranks
    counts(i) = i          ! rank i-1 holds i elements
    displs(i) = tot
    tot = tot + i
  end do
  call c_f_pointer(f_dev_alloc(int(4 * n, c_long)), a, (/ n /))
  call c_f_pointer(f_dev_alloc(int(4 * n, c_long)), b, (/ n /))
  call c_f_pointer(f_dev_alloc(int(4 * tot, c_long)), g, (/ tot /))
  call c_f_pointer(f_dev_alloc(int(4 * n * nranks, c_long)), s, (/ n * nranks /))
  call c_f_pointer(f_dev_alloc(int(4 * n * nranks, c_long)), t, (/ n * nranks /))
  errs = 0
  last = 0

  ! bcast from the last rank, then its non-blocking form from rank 0
  a = (/ (rank * 100 + i, i = 1, n) /)
  call MPI_BCAST(a, n, MPI_INTEGER, nranks - 1, MPI_COMM_WORLD, ierr)
  do i = 1, n
    if (a(i) /= (nranks - 1) * 100 + i) errs = errs + 1
  end do
  a = (/ (rank * 100 + i, i = 1, n) /)
  call MPI_IBCAST(a, n, MPI_INTEGER, 0, MPI_COMM_WORLD, req, ierr)
  call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
  do i = 1, n
    if (a(i) /= i) errs = errs + 1
  end do
  if (errs /= last) print '(a,i0,a,i0)', 'f_siblings: bcast errors ', errs - last, ' rank ', rank
  last = errs
  ! reduce to rank 0
  a = (/ (rank + i, i = 1, n) /)
  b = -1
  call MPI_REDUCE(a, b, n, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  do i = 1, n
    if (rank == 0 .and. b(i) /= nranks * (nranks - 1) / 2 + nranks * i) errs = errs + 1
    if (rank /= 0 .and. b(i) /= -1) errs = errs + 1
  end do
  if (errs /= last) print '(a,i0,a,i0)', 'f_siblings: reduce errors ', errs - last, ' rank ', rank
  last = errs
  ! allgatherv: rank r contributes r+1 elements of value 10 r + j; then the non-blocking form
  do k = 1, 2
    a = (/ (rank * 10 + i, i = 1, n) /)
    g = -1
    if (k == 1) then
      call MPI_ALLGATHERV(a, rank + 1, MPI_INTEGER, g, counts, displs, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    else
      call MPI_IALLGATHERV(a, rank + 1, MPI_INTEGER, g, counts, displs, MPI_INTEGER, MPI_COMM_WORLD, req, ierr)
      call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
    end if
    do i = 1, nranks
      do j = 1, i
        if (g(displs(i) + j) /= (i - 1) * 10 + j) errs = errs + 1
      end do
    end do
  end do
  if (errs /= last) print '(a,i0,a,i0)', 'f_siblings: allgatherv errors ', errs - last, ' rank ', rank
  last = errs
  ! reduce_scatter: every rank sends 1, 2, 3, ... ; rank r gets r+1 sums
  g = (/ (i, i = 1, tot) /)
  b = -1
  call MPI_REDUCE_SCATTER(g, b, counts, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  do j = 1, rank + 1
    if (b(j) /= nranks * (displs(rank + 1) + j)) errs = errs + 1
  end do
  if (errs /= last) print '(a,i0,a,i0)', 'f_siblings: reduce_scatter errors ', errs - last, ' rank ', rank
  last = errs
  ! alltoall: block j of rank r holds 100 r + j
  do j = 1, nranks
    s((j - 1) * n + 1 : j * n) = rank * 100 + j
  end do
  t = -1
  call MPI_ALLTOALL(s, n, MPI_INTEGER, t, n, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  do j = 1, nranks
    do i = 1, n
      if (t((j - 1) * n + i) /= (j - 1) * 100 + rank + 1) errs = errs + 1
    end do
  end do
  if (errs /= last) print '(a,i0,a,i0)', 'f_siblings: alltoall errors ', errs - last, ' rank ', rank
  last = errs
  if (errs == 0) then
    print '(a,i0)', 'f_siblings: OK rank ', rank
  else
    print '(a,i0,a,i0)', 'f_siblings: FAIL rank ', rank, ' errors ', errs
  end if
  call MPI_FINALIZE(ierr)
end program f_siblings
