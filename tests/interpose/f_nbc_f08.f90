! Fortran (use mpi_f08) non-blocking collectives on device buffers: MPI_IALLREDUCE, MPI_IALLGATHER and
! MPI_IREDUCE_SCATTER_BLOCK on arrays from f_dev_alloc (f_devalloc.c: cudaMalloc), completed by
! MPI_WAIT, MPI_WAITALL and MPI_TEST loops from Fortran. The requests are tlmpi's own: were a
! Fortran completion call to bypass tlmpi, the MPI would wait for them for ever (fortran.sh runs
! this under a timeout). Prints "f_nbc: OK" when every result is right.
program f_nbc_f08
  use mpi_f08
  use iso_c_binding
  implicit none
  interface
    function f_dev_alloc(n) bind(c, name='f_dev_alloc')
      import :: c_ptr, c_long
      integer(c_long), value :: n
      type(c_ptr) :: f_dev_alloc
    end function f_dev_alloc
  end interface

  integer, parameter :: n = 5
  integer :: rank, nranks, i, it, errs, ierr
  type(MPI_Request) :: req(3)
  logical :: flag
  integer, pointer :: a(:), b(:), g(:), rs(:), r(:)

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nranks, ierr)
  call c_f_pointer(f_dev_alloc(int(4 * n, c_long)), a, (/ n /))
  call c_f_pointer(f_dev_alloc(int(4 * n, c_long)), b, (/ n /))
  call c_f_pointer(f_dev_alloc(int(4 * n * nranks, c_long)), g, (/ n * nranks /))
  call c_f_pointer(f_dev_alloc(int(4 * n * nranks, c_long)), rs, (/ n * nranks /))
  call c_f_pointer(f_dev_alloc(int(4 * n, c_long)), r, (/ n /))
  errs = 0
  do it = 1, 3
    a = (/ (rank * 10 + i + it, i = 1, n) /)
    rs = it
    b = -1
    g = -1
    r = -1
    call MPI_IALLREDUCE(a, b, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req(1), ierr)
    call MPI_IALLGATHER(a, n, MPI_INTEGER, g, n, MPI_INTEGER, MPI_COMM_WORLD, req(2), ierr)
    call MPI_IREDUCE_SCATTER_BLOCK(rs, r, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req(3), ierr)
    select case (it)
    case (1)
      call MPI_WAITALL(3, req, MPI_STATUSES_IGNORE, ierr)
    case (2)
      call MPI_WAIT(req(3), MPI_STATUS_IGNORE, ierr)
      call MPI_WAIT(req(1), MPI_STATUS_IGNORE, ierr)
      call MPI_WAIT(req(2), MPI_STATUS_IGNORE, ierr)
    case default
      do i = 1, 3
        flag = .false.
        do while (.not. flag)
          call MPI_TEST(req(i), flag, MPI_STATUS_IGNORE, ierr)
        end do
      end do
    end select
    do i = 1, 3
      if (req(i) /= MPI_REQUEST_NULL) errs = errs + 1
    end do
    do i = 1, n
      if (b(i) /= 10 * nranks * (nranks - 1) / 2 + nranks * (i + it)) errs = errs + 1
      if (r(i) /= nranks * it) errs = errs + 1
    end do
    do i = 1, n * nranks
      if (g(i) /= ((i - 1) / n) * 10 + mod(i - 1, n) + 1 + it) errs = errs + 1
    end do
  end do
  if (errs == 0) then
    print '(a,i0)', 'f_nbc_f08: OK rank ', rank
  else
    print '(a,i0,a,i0)', 'f_nbc_f08: FAIL rank ', rank, ' errors ', errs
  end if
  call MPI_FINALIZE(ierr)
end program f_nbc_f08
