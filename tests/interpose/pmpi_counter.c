/*
 * pmpi_counter: a minimal PMPI tool, the way profilers and I/O tools (Darshan, mpiP, Score-P) are
 * built, for tests/interpose/stack.sh (a test fixture, never installed; stack.sh builds it as
 * libpmpi_counter.so). It defines MPI_Allreduce, MPI_Allgather, MPI_Reduce_scatter_block,
 * MPI_Iallreduce, MPI_Wait and MPI_Test, counts each call and forwards it to PMPI_*; MPI_Finalize
 * prints the counts of the rank (or, where the program's MPI_Finalize does not reach the C name, as
 * Open MPI's Fortran bindings call PMPI_Finalize, the library's destructor at exit, with the rank the
 * first counted call found; -1 if none was counted):
 *   pmpi_counter: rank R: allreduce N allgather N reduce_scatter_block N iallreduce N wait N test N
 */
#include <mpi.h>
#include <stdio.h>

static unsigned long n_allreduce, n_allgather, n_rsb, n_iallreduce, n_wait, n_test;
static int rank = -1, printed;

/* one more call: the counter, and the rank at the first */
static void counted(unsigned long *n)
{
    if (rank < 0) {
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    }
    ++*n;
}

static void print_counts(void)
{
    if (printed) {
        return;
    }
    printed = 1;
    printf("pmpi_counter: rank %d: allreduce %lu allgather %lu reduce_scatter_block %lu iallreduce %lu wait %lu "
           "test %lu\n", rank, n_allreduce, n_allgather, n_rsb, n_iallreduce, n_wait, n_test);
    fflush(stdout);
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    counted(&n_allreduce);
    return PMPI_Allreduce(sbuf, rbuf, count, dt, op, comm);
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
                  MPI_Comm comm)
{
    counted(&n_allgather);
    return PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm);
}

int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    counted(&n_rsb);
    return PMPI_Reduce_scatter_block(sbuf, rbuf, rcount, dt, op, comm);
}

int MPI_Iallreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                   MPI_Request *req)
{
    counted(&n_iallreduce);
    return PMPI_Iallreduce(sbuf, rbuf, count, dt, op, comm, req);
}

int MPI_Wait(MPI_Request *req, MPI_Status *st)
{
    counted(&n_wait);
    return PMPI_Wait(req, st);
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *st)
{
    counted(&n_test);
    return PMPI_Test(req, flag, st);
}

int MPI_Finalize(void)
{
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    print_counts();
    return PMPI_Finalize();
}

__attribute__((destructor)) static void counter_exit(void)
{
    print_counts();
}
