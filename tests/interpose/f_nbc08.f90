! Fortran 2008 bindings (use mpi_f08: entry points of their own, mpi_*_f08_ under Open MPI)
! non-blocking collectives on tlmpi's requests: MPI_Iallreduce (in round 2 with MPI_IN_PLACE),
! MPI_Iallgather and MPI_Ireduce_scatter_block on "device" arrays (f_devalloc.c), 10 rounds, completed
! in turn by MPI_Waitall, MPI_Wait, MPI_Test, MPI_Waitany, MPI_Testany, MPI_Waitsome, MPI_Testsome,
! MPI_Testall, MPI_Request_get_status + MPI_Request_free, and a refused MPI_Cancel + MPI_Waitall.
! Some calls pass ierror, some leave it out (optional in mpi_f08). Checks the 1-based indices, the
! handles left (MPI_REQUEST_NULL), the statuses tlmpi writes (MPI_ANY_SOURCE, MPI_ANY_TAG; MPI_SUCCESS
! in the multi-completion calls' MPI_ERROR) and the results. Were a call to bypass tlmpi, the MPI
! would wait for ever on a request only tlmpi completes (fortran.sh runs it under a timeout) or the
! checks fail. Prints "f_nbc08: OK" when all is right.
program f_nbc08
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

  integer, parameter :: n = 5, rounds = 10
  integer :: rank, nranks, i, j, it, errs, ierr, idx, outc, left
  integer :: inds(3)
  type(MPI_Request) :: req(3)
  type(MPI_Status) :: st, sts(3)
  logical :: flag, seen(3)
  integer, pointer :: a(:), b(:), g(:), rs(:), r(:)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN)
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
    if (it == 2) then
      b = a
      call MPI_Iallreduce(MPI_IN_PLACE, b, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req(1), ierr)
    else
      call MPI_Iallreduce(a, b, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req(1), ierr)
    end if
    call check(ierr == MPI_SUCCESS, 'MPI_Iallreduce ierror')
    call MPI_Iallgather(a, n, MPI_INTEGER, g, n, MPI_INTEGER, MPI_COMM_WORLD, req(2))
    call MPI_Ireduce_scatter_block(rs, r, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req(3), ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_Ireduce_scatter_block ierror')
    seen = .false.
    select case (it)
    case (1)
      call clear_all()
      call MPI_Waitall(3, req, sts, ierr)
      call check(ierr == MPI_SUCCESS, 'MPI_Waitall ierror')
      do j = 1, 3
        call status_ok(sts(j), .true., 'MPI_Waitall')
      end do
    case (2)
      call clear(st)
      call MPI_Wait(req(3), st)
      call status_ok(st, .false., 'MPI_Wait')
      call MPI_Wait(req(1), MPI_STATUS_IGNORE, ierr)
      call MPI_Wait(req(2), MPI_STATUS_IGNORE)
    case (3)
      do i = 1, 3
        flag = .false.
        do while (.not. flag)
          call clear(st)
          call MPI_Test(req(i), flag, st)
        end do
        call status_ok(st, .false., 'MPI_Test')
      end do
    case (4)
      do j = 1, 3
        call clear(st)
        call MPI_Waitany(3, req, idx, st, ierr)
        call one_done(idx, st, .false., 'MPI_Waitany')
      end do
      call MPI_Waitany(3, req, idx, MPI_STATUS_IGNORE)
      call check(idx == MPI_UNDEFINED, 'MPI_Waitany on null requests: index MPI_UNDEFINED')
    case (5)
      left = 3
      do while (left > 0)
        call clear(st)
        call MPI_Testany(3, req, idx, flag, st)
        if (flag) then
          call one_done(idx, st, .false., 'MPI_Testany')
          left = left - 1
        else
          call check(idx == MPI_UNDEFINED, 'MPI_Testany, not done: index MPI_UNDEFINED')
        end if
      end do
    case (6, 7)
      left = 3
      do while (left > 0)
        call clear_all()
        if (it == 6) then
          call MPI_Waitsome(3, req, outc, inds, sts, ierr)
          call check(outc >= 1, 'MPI_Waitsome outcount')
        else
          call MPI_Testsome(3, req, outc, inds, sts, ierr)
          call check(outc >= 0, 'MPI_Testsome outcount')
        end if
        call check(ierr == MPI_SUCCESS, 'MPI_Waitsome/Testsome ierror')
        do j = 1, min(max(outc, 0), 3)
          call one_done(inds(j), sts(j), .true., 'MPI_Waitsome/Testsome')
        end do
        left = left - max(outc, 0)
        if (outc < 0) left = 0
      end do
      call MPI_Waitsome(3, req, outc, inds, MPI_STATUSES_IGNORE)
      call check(outc == MPI_UNDEFINED, 'MPI_Waitsome on null requests: outcount MPI_UNDEFINED')
    case (8)
      flag = .false.
      do while (.not. flag)
        call clear_all()
        call MPI_Testall(3, req, flag, sts)
      end do
      do j = 1, 3
        call status_ok(sts(j), .true., 'MPI_Testall')
      end do
    case (9)
      do j = 1, 3
        flag = .false.
        do while (.not. flag)
          call clear(st)
          call MPI_Request_get_status(req(j), flag, st, ierr)
          call check(ierr == MPI_SUCCESS, 'MPI_Request_get_status ierror')
        end do
        call check(req(j) /= MPI_REQUEST_NULL, 'MPI_Request_get_status leaves the request')
        call status_ok(st, .false., 'MPI_Request_get_status')
      end do
      call MPI_Request_free(req(1), ierr)
      call check(ierr == MPI_SUCCESS, 'MPI_Request_free ierror')
      call MPI_Request_free(req(2))
      call MPI_Wait(req(3), MPI_STATUS_IGNORE)
    case default
      ! cancelling a collective's request is erroneous: tlmpi refuses it (the MPI would accept it)
      call MPI_Cancel(req(2), ierr)
      call check(ierr /= MPI_SUCCESS, 'MPI_Cancel of a collective request must be refused')
      call MPI_Waitall(3, req, MPI_STATUSES_IGNORE)
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
    print '(a,i0)', 'f_nbc08: OK rank ', rank
  else
    print '(a,i0,a,i0)', 'f_nbc08: FAIL rank ', rank, ' errors ', errs
  end if
  call MPI_Finalize()

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    if (.not. ok) then
      errs = errs + 1
      print '(a,i0,a,i0,2a)', 'f_nbc08: rank ', rank, ' round ', it, ': ', what
    end if
  end subroutine check

  subroutine clear(s)
    type(MPI_Status), intent(out) :: s
    s%MPI_SOURCE = -7
    s%MPI_TAG = -7
    s%MPI_ERROR = -7
  end subroutine clear

  subroutine clear_all()
    integer :: k
    do k = 1, 3
      call clear(sts(k))
    end do
  end subroutine clear_all

  subroutine status_ok(s, multi, what)
    type(MPI_Status), intent(in) :: s
    logical, intent(in) :: multi
    character(*), intent(in) :: what
    call check(s%MPI_SOURCE == MPI_ANY_SOURCE .and. s%MPI_TAG == MPI_ANY_TAG, what // ' status')
    if (multi) call check(s%MPI_ERROR == MPI_SUCCESS, what // ' status MPI_ERROR')
  end subroutine status_ok

  ! one request reported done at the 1-based index k
  subroutine one_done(k, s, multi, what)
    integer, intent(in) :: k
    type(MPI_Status), intent(in) :: s
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
end program f_nbc08
