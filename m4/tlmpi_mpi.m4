dnl TLMPI_PROG_MPICC: use an MPI compiler wrapper as CC when CC is not set.
AC_DEFUN([TLMPI_PROG_MPICC], [
  tlmpi_mpicc_name=
  if test -z "$CC"; then
    AC_CHECK_PROGS([tlmpi_mpicc_name], [mpicc])
    test -n "$tlmpi_mpicc_name" && CC=$tlmpi_mpicc_name
  else
    tlmpi_mpicc_name=`basename "$CC" | cut -d' ' -f1`
  fi
])

dnl TLMPI_CHECK_MPI: mpi.h + PMPI link test, with pkg-config fallbacks (mpich, ompi-c).
AC_DEFUN([TLMPI_CHECK_MPI], [
  AC_ARG_VAR([MPIEXEC], [MPI launcher used by make check (default: derived from CC, else mpiexec)])
  tlmpi_mpi_how=CC
  AC_MSG_CHECKING([whether $CC compiles and links MPI programs])
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]],
      [[int x = 0; PMPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);]])],
    [AC_MSG_RESULT([yes])], [
      AC_MSG_RESULT([no])
      for tlmpi_pc in mpich ompi-c ompi mpi; do
        PKG_CHECK_EXISTS([$tlmpi_pc], [
          tlmpi_mpi_how="pkg-config $tlmpi_pc"
          CPPFLAGS="$CPPFLAGS `$PKG_CONFIG --cflags $tlmpi_pc`"
          LIBS="`$PKG_CONFIG --libs $tlmpi_pc` $LIBS"
          break])
      done
      AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]],
          [[int x = 0; PMPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);]])],
        [], [AC_MSG_ERROR([no usable MPI: set CC=mpicc or install an MPI with pkg-config files])])])
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]], [[
#ifndef MPICH_VERSION
#error not mpich
#endif
]])], [tlmpi_mpi_impl=MPICH],
  [AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]], [[
#ifndef OPEN_MPI
#error not ompi
#endif
]])], [tlmpi_mpi_impl=OpenMPI], [tlmpi_mpi_impl=unknown])])
  AM_CONDITIONAL([MPI_IS_MPICH], [test "x$tlmpi_mpi_impl" = xMPICH])
  AM_CONDITIONAL([MPI_IS_OMPI], [test "x$tlmpi_mpi_impl" = xOpenMPI])
  dnl Open MPI's Fortran bindings call PMPI_* directly: libtlmpi then carries its own Fortran entry
  dnl points (src/entry/mpi_fortran.c). Never under MPICH, whose Fortran wrappers call the C MPI_*
  dnl names (tlmpi's Fortran symbols would wrap those calls twice).
  if test "x$tlmpi_mpi_impl" = xOpenMPI; then
    AC_DEFINE([TLMPI_FORTRAN_ENTRY], [1], [libtlmpi defines the MPI's Fortran entry points of the intercepted calls (Open MPI)])
  fi
  AC_CHECK_FUNCS([PMPI_Allreduce_c PMPI_Allgather_c PMPI_Reduce_scatter_block_c], [tlmpi_have_mpi_c=yes], [tlmpi_have_mpi_c=no])
  AC_CHECK_FUNCS([PMPI_Iallreduce_c PMPI_Iallgather_c PMPI_Ireduce_scatter_block_c])
  dnl MPI-4 persistent collectives (MPICH 4.x, Open MPI 5): tlmpi interposes them where they exist
  AC_CHECK_FUNCS([PMPI_Allreduce_init PMPI_Allgather_init PMPI_Reduce_scatter_block_init],
                 [tlmpi_have_mpi_persist=yes], [tlmpi_have_mpi_persist=no])
  AC_CHECK_FUNCS([PMPI_Allreduce_init_c PMPI_Allgather_init_c PMPI_Reduce_scatter_block_init_c])
  dnl the siblings (MPI_Allgatherv, MPI_Reduce_scatter, MPI_Bcast, MPI_Reduce, MPI_Alltoall): the same forms
  AC_CHECK_FUNCS([PMPI_Allgatherv_c PMPI_Reduce_scatter_c PMPI_Bcast_c PMPI_Reduce_c PMPI_Alltoall_c])
  AC_CHECK_FUNCS([PMPI_Iallgatherv_c PMPI_Ireduce_scatter_c PMPI_Ibcast_c PMPI_Ireduce_c PMPI_Ialltoall_c])
  AC_CHECK_FUNCS([PMPI_Allgatherv_init PMPI_Reduce_scatter_init PMPI_Bcast_init PMPI_Reduce_init PMPI_Alltoall_init])
  AC_CHECK_FUNCS([PMPI_Allgatherv_init_c PMPI_Reduce_scatter_init_c PMPI_Bcast_init_c PMPI_Reduce_init_c PMPI_Alltoall_init_c])
  dnl MPICH's extended generalized requests: the MPI's own completion calls then poll tlmpi's requests
  AC_CHECK_FUNCS([PMPIX_Grequest_start])
  if test -z "$MPIEXEC"; then
    case "$tlmpi_mpicc_name" in
      mpicc.*) AC_PATH_PROGS([MPIEXEC], [mpiexec.${tlmpi_mpicc_name#mpicc.}]) ;;
    esac
  fi
  dnl a bare name given by the user (MPIEXEC=mpiexec.mpich) is resolved, not replaced by mpiexec
  case "$MPIEXEC" in
    "") AC_PATH_PROGS([MPIEXEC], [mpiexec mpirun]) ;;
    */*|*" "*) ;;
    *) tlmpi_mpiexec_name=$MPIEXEC; AC_PATH_PROGS([MPIEXEC], [$tlmpi_mpiexec_name]) ;;
  esac
])
