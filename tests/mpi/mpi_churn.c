/*
 * mpi_churn: communicator lifecycle. N cycles (argument 1, default 1000) of
 *   MPI_Comm_dup -> MPI_Comm_split -> use (MPI_Allreduce, a half-type MPI_Allreduce that takes
 *   tlmpi's own op, tlmpi_comm_query, which builds tlmpi's per-communicator state collectively:
 *   a node and a rail communicator plus a few collectives) -> MPI_Comm_free,
 * varying the free order, nesting dups, and leaving every 100th dup (with its tlmpi state) and
 * one split never freed: tlmpi must clean those up itself in MPI_Finalize (its MPI_COMM_SELF
 * attribute delete callback).
 *
 * Without valgrind this still catches leaked communicators: MPICH has a few thousand context ids,
 * and 1000 cycles create ~6000 communicators (4 of them tlmpi's per cycle), so leaking tlmpi's
 * node/rail communicators ends in "Too many communicators". tests/mpi/leak_churn.sh runs a short
 * version under valgrind for heap leaks.
 */
#include "config.h"
#include "tlmpi.h"
#include "harness.h"

#define KEEP_EVERY (cycles >= 500 ? 100 : 10)
#define MAX_KEPT 64

static uint16_t f16_from_small_int(int v)
{
    /* exact binary16 encoding of a small non-negative integer (0 <= v < 2048) */
    int e = 0, m;

    if (v == 0) {
        return 0;
    }
    for (m = v; m >= 2; m >>= 1) {
        e++;
    }
    return (uint16_t)(((e + 15) << 10) | ((v << (10 - e)) & 0x3ff));
}

static void check_query(MPI_Comm comm, const char *name, long cycle)
{
    tlmpi_comm_info_t info;
    int size, rank;
    tlmpi_status_t st;

    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    memset(&info, 0xff, sizeof(info));
    st = tlmpi_comm_query(comm, &info);
    TST_CHECK(st == TLMPI_OK, "cycle %ld: tlmpi_comm_query(%s) = %s", cycle, name, tlmpi_status_string(st));
    if (st == TLMPI_OK) {
        TST_CHECK(info.size == size && info.rank == rank && info.reason != NULL,
                  "cycle %ld: tlmpi_comm_query(%s): size %d rank %d, expected %d %d", cycle, name, info.size,
                  info.rank, size, rank);
        TST_CHECK(info.local_size >= 1 && info.local_rank >= 0 && info.local_rank < info.local_size &&
                  info.node_count >= 1 && info.node_index >= 0 && info.node_index < info.node_count,
                  "cycle %ld: tlmpi_comm_query(%s): inconsistent node layout", cycle, name);
        /* the state must be this comm's, not a freed comm's whose handle was reused (tlmpi caches
         * the last state per thread) */
        TST_CHECK(!info.regular || info.local_size * info.node_count == size,
                  "cycle %ld: tlmpi_comm_query(%s): %d nodes x %d ranks for a comm of %d (stale state?)", cycle,
                  name, info.node_count, info.local_size, size);
    }
}

int main(int argc, char **argv)
{
    long cycles = 1000, i;
    int n_kept = 0, k, v, sum, ssize;
    uint64_t expect_ar = 0, expect_hostop = 0;
    MPI_Comm kept[MAX_KEPT], d, s, dd, never_freed;
    tlmpi_stat_t st;

    tst_init("mpi_churn", &argc, &argv);
    if (argc > 1) {
        cycles = atol(argv[1]);
    }
    tlmpi_reset_stats();
    /* one comm created before the loop and never freed, with tlmpi state */
    MPI_Comm_split(MPI_COMM_WORLD, 0, tst_size - tst_rank, &never_freed);
    check_query(never_freed, "never_freed", -1);

    for (i = 0; i < cycles; i++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &d);
        /* with more than 2 ranks: halves; always: rank order flips from cycle to cycle */
        MPI_Comm_split(d, tst_size > 2 ? (int)((tst_rank + i) % 2) : 0, (i & 1) ? -tst_rank : tst_rank, &s);
        MPI_Comm_size(s, &ssize);

        v = tst_rank + (int)i;
        sum = -1;
        TST_CHECK(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, d) == MPI_SUCCESS, "cycle %ld: Allreduce", i);
        expect_ar++;
        TST_CHECK(sum == tst_size * (tst_size - 1) / 2 + tst_size * (int)i, "cycle %ld: sum %d", i, sum);
        check_query(d, "dup", i);
        check_query(s, "split", i);
        if (i % 4 == 1) {
            /* a one-rank comm between comms of other sizes: its handle is likely reused next */
            MPI_Comm one;

            MPI_Comm_split(d, tst_rank, 0, &one);
            check_query(one, "one-rank split", i);
            MPI_Comm_free(&one);
        }
        if (i % 7 == 0) {
            /* half type: tlmpi swaps in its own op (HOSTOP path) */
            uint16_t h = f16_from_small_int(3), hr = 0xffff;

            TST_CHECK(MPI_Allreduce(&h, &hr, 1, TLMPI_FLOAT16, MPI_SUM, s) == MPI_SUCCESS,
                      "cycle %ld: f16 Allreduce", i);
            expect_ar++;
            expect_hostop++;
            TST_CHECK(hr == f16_from_small_int(3 * ssize), "cycle %ld: f16 sum 0x%04x", i, hr);
        }
        if (i % 25 == 0) {
            MPI_Comm_dup(d, &dd); /* a dup of a dup: the attribute must not be copied */
            check_query(dd, "dup of dup", i);
            check_query(dd, "dup of dup (cached)", i);
            MPI_Comm_free(&dd);
        }
        if (i % 10 == 3) {
            /* free the parent first */
            if (i % KEEP_EVERY == KEEP_EVERY - 1 && n_kept < MAX_KEPT) {
                kept[n_kept++] = d;
            } else {
                MPI_Comm_free(&d);
            }
            MPI_Comm_free(&s);
        } else {
            MPI_Comm_free(&s);
            if (i % KEEP_EVERY == KEEP_EVERY - 1 && n_kept < MAX_KEPT) {
                kept[n_kept++] = d; /* never freed: finalize cleans up */
            } else {
                MPI_Comm_free(&d);
            }
        }
    }
    /* the kept comms still work */
    for (k = 0; k < n_kept; k++) {
        v = 1;
        TST_CHECK(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, kept[k]) == MPI_SUCCESS && sum == tst_size,
                  "kept comm %d: Allreduce", k);
        expect_ar++;
    }
    tlmpi_get_stats(TLMPI_COLL_ALLREDUCE, TLMPI_PATH_PASSTHROUGH, &st);
    TST_CHECK(st.calls == expect_ar - expect_hostop, "stats: allreduce passthrough %llu, expected %llu",
              (unsigned long long)st.calls, (unsigned long long)(expect_ar - expect_hostop));
    tlmpi_get_stats(TLMPI_COLL_ALLREDUCE, TLMPI_PATH_HOSTOP, &st);
    TST_CHECK(st.calls == expect_hostop, "stats: allreduce hostop %llu, expected %llu",
              (unsigned long long)st.calls, (unsigned long long)expect_hostop);
    if (tst_rank == 0) {
        printf("mpi_churn: %ld cycles, %d dups and 1 split left for MPI_Finalize\n", cycles, n_kept);
    }
    return tst_finish();
}
