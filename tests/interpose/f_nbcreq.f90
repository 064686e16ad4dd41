! Fortran (use mpi: the same entry points as mpif.h) completion calls on tlmpi's requests, beyond
! f_nbc.f90's MPI_WAIT / MPI_WAITALL / MPI_TEST: MPI_IALLREDUCE, MPI_IALLGATHER and
! MPI_IREDUCE_SCATTER_BLOCK on "device" arrays (f_devalloc.c), 7 rounds, completed in turn by
! MPI_WAITANY, MPI_TESTANY, MPI_WAITSOME, MPI_TESTSOME, MPI_TESTALL, MPI_REQUEST_GET_STATUS +
! MPI_REQUEST_FREE / MPI_WAIT / MPI_TEST, and a refused MPI_CANCEL + MPI_WAITALL. Checks the 1-based
! indices, the handles left (MPI_REQUEST_NULL), the statuses tlmpi writes (MPI_ANY_SOURCE,
! MPI_ANY_TAG; MPI_SUCCESS in the multi-completion calls' MPI_ERROR) and the results. Were a Fortran
! completion call to bypass tlmpi, the MPI would wait for ever on a request only tlmpi completes (run
! under a timeout by fortran.sh) or the checks fail. Prints "f_nbcreq: OK" when all is right.
program f_nbcreq
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

  integer, parameter :: n = 5, rounds = 7
  integer :: rank, nranks, i, j, it, errs, ierr, idx, outc, left
  integer :: req(3), inds(3)
  integer :: st(MPI_STATUS_SIZE), sts(MPI_STATUS_SIZE, 3)
  logical :: flag, seen(3)
  integer, pointer :: a(:), b(:), g(:), rs(:), r(:)

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nranks, ierr)
  ! errors come back as codes (the refused MPI_CANCEL)
  call MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
  call c_f_pointer(f_dev_alloc(int(4 * n, c_long)), a, (/ n /))
  call c_f_pointer(f_dev_alloc(int(4 * n, c_long)), b, (/ n /))
  call c_f_pointer(f_dev_alloc(int(4 * n * nranks, c_long)), g, (/ n * nranks /))
  call c_f_pointer(f_dev_alloc(int(4 * n * nranks, c_long)), rs, (/ n * nranks /))
  call c_f_pointer(f_dev_alloc(int(4 * n, c_long)), r, (/ n /))
  errs = 0
  do it = 1, rounds
    a = (/ (rank * 10 + i + it, i = 1, n) /)
    rs = it
    b = -1
    g = -1
    r = -1
    call MPI_IALLREDUCE(a, b, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req(1), ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_IALLREDUCE ierr')
    call MPI_IALLGATHER(a, n, MPI_INTEGER, g, n, MPI_INTEGER, MPI_COMM_WORLD, req(2), ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_IALLGATHER ierr')
    call MPI_IREDUCE_SCATTER_BLOCK(rs, r, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req(3), ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_IREDUCE_SCATTER_BLOCK ierr')
    seen = .false.
    select case (it)
    case (1)
      do j = 1, 3
        st = -7
        call MPI_WAITANY(3, req, idx, st, ierr)
        call one_done(idx, st, .false., 'MPI_WAITANY')
      end do
      call MPI_WAITANY(3, req, idx, st, ierr)
      call check(idx == MPI_UNDEFINED, 'MPI_WAITANY on null requests: index MPI_UNDEFINED')
    case (2)
      left = 3
      do while (left > 0)
        st = -7
        call MPI_TESTANY(3, req, idx, flag, st, ierr)
        call check(ierr == MPI_SUCCESS, 'MPI_TESTANY ierr')
        if (flag) then
          call one_done(idx, st, .false., 'MPI_TESTANY')
          left = left - 1
        else
          call check(idx == MPI_UNDEFINED, 'MPI_TESTANY, not done: index MPI_UNDEFINED')
        end if
      end do
    case (3, 4)
      left = 3
      do while (left > 0)
        sts = -7
        if (it == 3) then
          call MPI_WAITSOME(3, req, outc, inds, sts, ierr)
          call check(outc >= 1, 'MPI_WAITSOME outcount')
        else
          call MPI_TESTSOME(3, req, outc, inds, sts, ierr)
          call check(outc >= 0, 'MPI_TESTSOME outcount')
        end if
        call check(ierr == MPI_SUCCESS, 'MPI_WAITSOME/TESTSOME ierr')
        do j = 1, min(max(outc, 0), 3)
          call one_done(inds(j), sts(:, j), .true., 'MPI_WAITSOME/TESTSOME')
        end do
        left = left - max(outc, 0)
        if (outc < 0) left = 0
      end do
      call MPI_TESTSOME(3, req, outc, inds, sts, ierr)
      call check(outc == MPI_UNDEFINED, 'MPI_TESTSOME on null requests: outcount MPI_UNDEFINED')
    case (5)
      flag = .false.
      do while (.not. flag)
        sts = -7
        call MPI_TESTALL(3, req, flag, sts, ierr)
        call check(ierr == MPI_SUCCESS, 'MPI_TESTALL ierr')
      end do
      do j = 1, 3
        call status_ok(sts(:, j), .true., 'MPI_TESTALL')
      end do
    case (6)
      do j = 1, 3
        flag = .false.
        do while (.not. flag)
          st = -7
          call MPI_REQUEST_GET_STATUS(req(j), flag, st, ierr)
          call check(ierr == MPI_SUCCESS, 'MPI_REQUEST_GET_STATUS ierr')
        end do
        call check(req(j) /= MPI_REQUEST_NULL, 'MPI_REQUEST_GET_STATUS leaves the request')
        call status_ok(st, .false., 'MPI_REQUEST_GET_STATUS')
      end do
      call MPI_REQUEST_FREE(req(1), ierr)
      call check(ierr == MPI_SUCCESS, 'MPI_REQUEST_FREE ierr')
      st = -7
      call MPI_WAIT(req(2), st, ierr)
      call status_ok(st, .false., 'MPI_WAIT')
      call MPI_TEST(req(3), flag, MPI_STATUS_IGNORE, ierr)
      call check(flag, 'MPI_TEST of a completed request: flag')
    case default
      ! cancelling a collective's request is erroneous: tlmpi refuses it (the MPI would accept it)
      call MPI_CANCEL(req(1), ierr)
      call check(ierr /= MPI_SUCCESS, 'MPI_CANCEL of a collective request must be refused')
      sts = -7
      call MPI_WAITALL(3, req, sts, ierr)
      call check(ierr == MPI_SUCCESS, 'MPI_WAITALL ierr')
      do j = 1, 3
        call status_ok(sts(:, j), .true., 'MPI_WAITALL')
      end do
    end select
    do i = 1, 3
      call check(req(i) == MPI_REQUEST_NULL, 'request left MPI_REQUEST_NULL')
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
    print '(a,i0)', 'f_nbcreq: OK rank ', rank
  else
    print '(a,i0,a,i0)', 'f_nbcreq: FAIL rank ', rank, ' errors ', errs
  end if
  call MPI_FINALIZE(ierr)

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    if (.not. ok) then
      errs = errs + 1
      print '(a,i0,a,i0,2a)', 'f_nbcreq: rank ', rank, ' round ', it, ': ', what
    end if
  end subroutine check

  subroutine status_ok(s, multi, what)
    integer, intent(in) :: s(MPI_STATUS_SIZE)
    logical, intent(in) :: multi
    character(*), intent(in) :: what
    call check(s(MPI_SOURCE) == MPI_ANY_SOURCE .and. s(MPI_TAG) == MPI_ANY_TAG, what // ' status')
    if (multi) call check(s(MPI_ERROR) == MPI_SUCCESS, what // ' status MPI_ERROR')
  end subroutine status_ok

  ! one request reported done at the 1-based index k
  subroutine one_done(k, s, multi, what)
    integer, intent(in) :: k
    integer, intent(in) :: s(MPI_STATUS_SIZE)
    logical, intent(in) :: multi
    character(*), intent(in) :: what
    if (k < 1 .or. k > 3) then
      call check(.false., what // ' index out of 1..3')
      return
    end if
    call check(.not. seen(k), what // ' index reported twice')
    seen(k) = .true.
    call check(req(k) == MPI_REQUEST_NULL, what // ' handle of the completed request not MPI_REQUEST_NULL')
    call status_ok(s, multi, what)
  end subroutine one_done
end program f_nbcreq
