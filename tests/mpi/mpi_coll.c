/*
 * mpi_coll: host-buffer correctness of the three intercepted collectives (MPI_Allgather,
 * MPI_Reduce_scatter_block, MPI_Allreduce and their _c forms) through tlmpi.
 *
 * For every case (datatype x op x in-place x communicator x collective) the intercepted MPI_* call
 * and the PMPI_* call run on the same fresh random inputs into freshly poisoned outputs. Checked:
 *  - both return MPI_SUCCESS,
 *  - the two outputs are bit-identical, including the bytes a derived type skips and a guard tail
 *    after the output (nothing may be written outside the result),
 *  - the packed result equals a host reference built without communication: every rank generates
 *    every rank's input from one shared random stream and folds them in rank order with
 *    PMPI_Reduce_local (inputs are chosen so that sums and products are exact in every order),
 *  - tlmpi_get_stats: every successful intercepted call was counted once, on the PASSTHROUGH path
 *    (host buffers), and no other path was used.
 * With more than 2 ranks (mpi_coll_np4) a reduced matrix runs: oversubscribed ranks make every
 * collective cost ~15 ms on the 2-core build host.
 */
#include "config.h"
#include "tlmpi.h"
#include "harness.h"

#include <math.h>

enum { K_SINT, K_UINT, K_FLOAT, K_BYTES };
enum { COLL_AG, COLL_RSB, COLL_AR };
static const char *const coll_names[] = { "Allgather", "Reduce_scatter_block", "Allreduce" };
static const tlmpi_coll_t coll_ids[] = { TLMPI_COLL_ALLGATHER, TLMPI_COLL_REDUCE_SCATTER_BLOCK,
                                         TLMPI_COLL_ALLREDUCE };

typedef struct {
    MPI_Datatype dt;
    const char *name;
    int kind;
    int base_size; /* size of the element type the buffer is filled with */
    int derived;   /* the MPI may reject it with a built-in op (MPICH 4.0.2 does in RSB) */
} dtype_t;

typedef struct {
    MPI_Op op;
    const char *name;
    int arith;     /* valid on floating point (SUM PROD MIN MAX) */
    int user;      /* created with MPI_Op_create */
} op_t;

typedef struct {
    MPI_Comm comm;
    const char *name;
    int size, rank;
} tcomm_t;

#define GUARD 16
#define MAX_DT 40

static dtype_t dts[MAX_DT];
static int n_dts;
static uint64_t expected_calls[3];
static long n_cases, n_rejected;
static MPI_Datatype dt_contig3, dt_vec;
static MPI_Op op_user_add, op_user_first;

static void add_dt(MPI_Datatype dt, const char *name, int kind, int base_size)
{
    dts[n_dts].dt = dt;
    dts[n_dts].name = name;
    dts[n_dts].kind = kind;
    dts[n_dts].base_size = base_size;
    n_dts++;
}

#define ADD_INT(_dt, _ctype, _signed) add_dt(_dt, #_dt, (_signed) ? K_SINT : K_UINT, (int)sizeof(_ctype))

static void init_dtypes(void)
{
    add_dt(MPI_CHAR, "MPI_CHAR", K_BYTES, 1); /* not valid for reductions: Allgather only */
    ADD_INT(MPI_SIGNED_CHAR, signed char, 1);
    ADD_INT(MPI_UNSIGNED_CHAR, unsigned char, 0);
    ADD_INT(MPI_INT8_T, int8_t, 1);
    ADD_INT(MPI_UINT8_T, uint8_t, 0);
    ADD_INT(MPI_INT16_T, int16_t, 1);
    ADD_INT(MPI_UINT16_T, uint16_t, 0);
    ADD_INT(MPI_INT32_T, int32_t, 1);
    ADD_INT(MPI_UINT32_T, uint32_t, 0);
    ADD_INT(MPI_INT64_T, int64_t, 1);
    ADD_INT(MPI_UINT64_T, uint64_t, 0);
    ADD_INT(MPI_SHORT, short, 1);
    ADD_INT(MPI_UNSIGNED_SHORT, unsigned short, 0);
    ADD_INT(MPI_INT, int, 1);
    ADD_INT(MPI_UNSIGNED, unsigned, 0);
    ADD_INT(MPI_LONG, long, 1);
    ADD_INT(MPI_UNSIGNED_LONG, unsigned long, 0);
    ADD_INT(MPI_LONG_LONG, long long, 1);
    ADD_INT(MPI_UNSIGNED_LONG_LONG, unsigned long long, 0);
    add_dt(MPI_FLOAT, "MPI_FLOAT", K_FLOAT, 4);
    add_dt(MPI_DOUBLE, "MPI_DOUBLE", K_FLOAT, 8);
}

static const dtype_t *find_dt(MPI_Datatype dt)
{
    int i;

    for (i = 0; i < n_dts; i++) {
        if (dts[i].dt == dt) {
            return &dts[i];
        }
    }
    return NULL;
}

/* ---- test data: value classes that keep every fold order exact and free of signed overflow ---- */
enum { V_ANY, V_SUM, V_PROD, V_BOOL };

static int value_class(MPI_Op op)
{
    if (op == MPI_SUM || op == op_user_add) {
        return V_SUM;
    }
    if (op == MPI_PROD) {
        return V_PROD;
    }
    if (op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR) {
        return V_BOOL;
    }
    return V_ANY;
}

static void store_int(unsigned char *p, int size, int64_t v)
{
    int8_t a = (int8_t)v;
    int16_t b = (int16_t)v;
    int32_t c = (int32_t)v;

    switch (size) {
    case 1: memcpy(p, &a, 1); break;
    case 2: memcpy(p, &b, 2); break;
    case 4: memcpy(p, &c, 4); break;
    default: memcpy(p, &v, 8); break;
    }
}

static void gen(const dtype_t *d, int vclass, unsigned char *p, size_t bytes)
{
    static const double prod_vals[] = { 0.5, -0.5, 1.0, -1.0, 1.5, -1.5, 2.0, -2.0 };
    size_t i, n = bytes / (size_t)d->base_size;

    if (d->kind == K_BYTES) {
        tst_rand_bytes(p, bytes);
        return;
    }
    for (i = 0; i < n; i++, p += d->base_size) {
        if (d->kind == K_FLOAT) {
            double v;

            if (vclass == V_SUM) {
                v = (double)tst_rand_range(-512, 512) / 8.0;
            } else if (vclass == V_PROD) {
                v = prod_vals[tst_rand() % 8];
            } else {
                v = ldexp((double)(tst_rand() >> 11) / 9007199254740992.0 - 0.5, (int)tst_rand_range(-30, 30));
            }
            if (d->base_size == 4) {
                float f = (float)v;
                memcpy(p, &f, 4);
            } else {
                memcpy(p, &v, 8);
            }
        } else {
            int64_t v;

            switch (vclass) {
            case V_SUM:
                /* unsigned 8/16-bit sums stay below 256: Open MPI 4.1.4's op/avx component
                 * saturates them (e.g. 200 + 100 = 255 in Reduce_scatter_block) instead of wrapping
                 * around as C does; OMPI_MCA_op=^avx gives the right result. Wider unsigned sums
                 * wrap around on every MPI. */
                if (d->kind == K_SINT) {
                    v = tst_rand_range(-20, 20);
                } else {
                    v = d->base_size <= 2 ? tst_rand_range(0, 60) : (int64_t)tst_rand();
                }
                break;
            case V_PROD: v = d->kind == K_SINT ? tst_rand_range(-3, 3) : (int64_t)tst_rand(); break;
            case V_BOOL: v = tst_rand_range(0, 2); break;
            default: v = (int64_t)tst_rand(); break;
            }
            store_int(p, d->base_size, v);
        }
    }
}

/* ---- the calls ---- */
static int do_call(int pmpi, int large, int coll, const void *s, void *r, int count, MPI_Datatype dt,
                   MPI_Op op, MPI_Comm comm)
{
    int scount = s == MPI_IN_PLACE ? 0 : count;
    MPI_Datatype stype = s == MPI_IN_PLACE ? MPI_DATATYPE_NULL : dt; /* ignored with MPI_IN_PLACE */

#ifdef HAVE_PMPI_ALLREDUCE_C
    if (large) {
        switch (coll) {
        case COLL_AG:
            return pmpi ? PMPI_Allgather_c(s, scount, stype, r, count, dt, comm)
                        : MPI_Allgather_c(s, scount, stype, r, count, dt, comm);
        case COLL_RSB:
            return pmpi ? PMPI_Reduce_scatter_block_c(s, r, count, dt, op, comm)
                        : MPI_Reduce_scatter_block_c(s, r, count, dt, op, comm);
        default:
            return pmpi ? PMPI_Allreduce_c(s, r, count, dt, op, comm) : MPI_Allreduce_c(s, r, count, dt, op, comm);
        }
    }
#else
    (void)large;
#endif
    switch (coll) {
    case COLL_AG:
        return pmpi ? PMPI_Allgather(s, scount, stype, r, count, dt, comm)
                    : MPI_Allgather(s, scount, stype, r, count, dt, comm);
    case COLL_RSB:
        return pmpi ? PMPI_Reduce_scatter_block(s, r, count, dt, op, comm)
                    : MPI_Reduce_scatter_block(s, r, count, dt, op, comm);
    default:
        return pmpi ? PMPI_Allreduce(s, r, count, dt, op, comm) : MPI_Allreduce(s, r, count, dt, op, comm);
    }
}

/* Pack count elements of dt into a contiguous byte string (compares data, not the holes). */
static void *pack(const void *buf, int count, MPI_Datatype dt, MPI_Comm comm, int *len_p)
{
    int size = 0, pos = 0;
    void *out;

    PMPI_Pack_size(count, dt, comm, &size);
    out = tst_malloc((size_t)size);
    PMPI_Pack(buf, count, dt, out, size, &pos, comm);
    *len_p = pos;
    return out;
}

static void run_case(const tcomm_t *tc, const dtype_t *d, const op_t *o, int coll, int inplace, int count,
                     int large)
{
    MPI_Aint lb, ext;
    int P = tc->size, me = tc->rank, r, pass, rc[2], plen, rlen, vclass;
    size_t in_elems, in_bytes, out_bytes, cmp_bytes, rbuf_bytes;
    unsigned char *inputs, *rbuf[2], *sbuf, *ref, *tail, poison;
    void *packed_out, *packed_ref;
    MPI_Op op = o ? o->op : MPI_OP_NULL;
    char what[256], e0[MPI_MAX_ERROR_STRING + 40], e1[MPI_MAX_ERROR_STRING + 40];

    n_cases++;
    snprintf(what, sizeof(what), "%s%s comm=%s dt=%s op=%s inplace=%d count=%d", coll_names[coll],
             large ? "_c" : "", tc->name, d->name, o ? o->name : "-", inplace, count);
    PMPI_Type_get_extent(d->dt, &lb, &ext);
    vclass = value_class(op);
    /* elements each rank contributes, and the result size */
    in_elems = (size_t)count * (coll == COLL_RSB ? (size_t)P : 1);
    in_bytes = in_elems * (size_t)ext;
    out_bytes = (size_t)count * (size_t)ext * (coll == COLL_AG ? (size_t)P : 1);
    rbuf_bytes = (inplace && coll == COLL_RSB ? in_bytes : out_bytes) + GUARD;
    cmp_bytes = out_bytes; /* in-place RSB: only the first block is defined afterwards */

    inputs = tst_malloc((size_t)P * in_bytes);
    for (r = 0; r < P; r++) {
        gen(d, vclass, inputs + (size_t)r * in_bytes, in_bytes);
    }
    poison = (unsigned char)(tst_rand() >> 56) | 1;
    sbuf = tst_malloc(in_bytes);
    for (pass = 0; pass < 2; pass++) {
        rbuf[pass] = tst_malloc(rbuf_bytes);
        memset(rbuf[pass], poison, rbuf_bytes);
        memcpy(sbuf, inputs + (size_t)me * in_bytes, in_bytes);
        if (inplace) {
            if (coll == COLL_AG) {
                memcpy(rbuf[pass] + (size_t)me * in_bytes, sbuf, in_bytes);
            } else {
                memcpy(rbuf[pass], sbuf, in_bytes);
            }
        }
        rc[pass] = do_call(pass, large, coll, inplace ? MPI_IN_PLACE : sbuf, rbuf[pass], count, d->dt, op, tc->comm);
    }
    if (rc[0] == MPI_SUCCESS) {
        expected_calls[coll]++;
    }
    if (d->derived && o && !o->user && rc[0] != MPI_SUCCESS && rc[1] != MPI_SUCCESS) {
        int c0, c1;

        /* MPICH 4.0.2 rejects derived types with built-in ops in Reduce_scatter_block (MPI_ERR_OP)
         * while Allreduce accepts them: the same error from MPI_ and PMPI_ is a correct pass-through */
        PMPI_Error_class(rc[0], &c0);
        PMPI_Error_class(rc[1], &c1);
        TST_CHECK(c0 == c1, "%s: MPI_ error class %d, PMPI_ error class %d", what, c0, c1);
        if (!n_rejected++ && tst_rank == 0) {
            printf("mpi_coll: note: this MPI rejects %s (%s); MPI_ returns the same error\n", what,
                   tst_err_string(rc[1], e1));
        }
        goto out;
    }
    TST_CHECK(rc[0] == MPI_SUCCESS && rc[1] == MPI_SUCCESS, "%s: MPI rc %s, PMPI rc %s", what,
              tst_err_string(rc[0], e0), tst_err_string(rc[1], e1));
    TST_CHECK(memcmp(rbuf[0], rbuf[1], cmp_bytes) == 0, "%s: MPI_ and PMPI_ results differ", what);
    tail = rbuf[0] + rbuf_bytes - GUARD;
    for (r = 0; r < GUARD && tail[r] == poison; r++) {
    }
    TST_CHECK(r == GUARD, "%s: MPI_ wrote past the end of the result", what);
    if (rc[0] == MPI_SUCCESS && count > 0) {
        /* host reference */
        if (coll == COLL_AG) {
            ref = inputs; /* the concatenation in rank order */
        } else {
            ref = tst_malloc(in_bytes);
            memcpy(ref, inputs + (size_t)(P - 1) * in_bytes, in_bytes);
            for (r = P - 2; r >= 0; r--) {
                PMPI_Reduce_local(inputs + (size_t)r * in_bytes, ref, (int)in_elems, d->dt, op);
            }
        }
        packed_out = pack(rbuf[0], coll == COLL_AG ? count * P : count, d->dt, tc->comm, &plen);
        packed_ref = pack(ref + (coll == COLL_RSB ? (size_t)me * (size_t)count * (size_t)ext : 0),
                          coll == COLL_AG ? count * P : count, d->dt, tc->comm, &rlen);
        TST_CHECK(plen == rlen && memcmp(packed_out, packed_ref, (size_t)plen) == 0,
                  "%s: result differs from the host reference", what);
        free(packed_out);
        free(packed_ref);
        if (ref != inputs) {
            free(ref);
        }
    }
out:
    free(rbuf[0]);
    free(rbuf[1]);
    free(sbuf);
    free(inputs);
}

/* ---- user-defined ops ---- */
static void user_add(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    const int *a = in;
    int *b = inout, i, n = *len;
    MPI_Aint lb, ext;

    /* also used on contiguous(3, MPI_INT): scale the element count by the ints per element */
    PMPI_Type_get_extent(*dt, &lb, &ext);
    n *= (int)(ext / (MPI_Aint)sizeof(int));
    for (i = 0; i < n; i++) {
        b[i] = (int)((unsigned)a[i] + (unsigned)b[i]);
    }
}

/* f(a, b) = a: associative, not commutative; the reduction returns rank 0's data */
static void user_first(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    MPI_Aint lb, ext;

    PMPI_Type_get_extent(*dt, &lb, &ext);
    memcpy(inout, in, (size_t)*len * (size_t)ext);
}

static int pick_count(void)
{
    static const int counts[] = { 1, 2, 5, 64, 333, 1000 };

    return counts[tst_rand() % (sizeof(counts) / sizeof(counts[0]))];
}

static void check_stats(void)
{
    int c, p;
    tlmpi_stat_t s;

    for (c = 0; c < 3; c++) {
        for (p = 0; p < TLMPI_PATH_COUNT; p++) {
            TST_CHECK(tlmpi_get_stats(coll_ids[c], (tlmpi_path_t)p, &s) == TLMPI_OK, "tlmpi_get_stats failed");
            if (p == TLMPI_PATH_PASSTHROUGH) {
                TST_CHECK(s.calls == expected_calls[c], "stats: %s passthrough calls %llu, expected %llu",
                          coll_names[c], (unsigned long long)s.calls, (unsigned long long)expected_calls[c]);
            } else {
                TST_CHECK(s.calls == 0, "stats: %s took path %s %llu times (host buffers must pass through)",
                          coll_names[c], tlmpi_path_name((tlmpi_path_t)p), (unsigned long long)s.calls);
            }
        }
    }
}

int main(int argc, char **argv)
{
    static const op_t int_ops[] = {
        { MPI_SUM, "SUM", 1, 0 }, { MPI_PROD, "PROD", 1, 0 }, { MPI_MIN, "MIN", 1, 0 },
        { MPI_MAX, "MAX", 1, 0 }, { MPI_BAND, "BAND", 0, 0 }, { MPI_BXOR, "BXOR", 0, 0 },
        { MPI_LAND, "LAND", 0, 0 },
    };
    op_t user_ops[2];
    tcomm_t comms[3];
    int n_comms, ci, di, oi, coll, inplace, reduced, i;
    MPI_Comm split, dup;

    tst_init("mpi_coll", &argc, &argv);
    init_dtypes();
    tlmpi_reset_stats();
    reduced = tst_size > 2;

    /* communicators: world, a split with reversed rank order (two halves with >2 ranks), a dup */
    MPI_Comm_split(MPI_COMM_WORLD, reduced ? tst_rank % 2 : 0, tst_size - tst_rank, &split);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    comms[0].comm = MPI_COMM_WORLD;
    comms[0].name = "world";
    comms[1].comm = split;
    comms[1].name = "split";
    comms[2].comm = dup;
    comms[2].name = "dup";
    n_comms = reduced ? 2 : 3;
    for (ci = 0; ci < 3; ci++) {
        MPI_Comm_size(comms[ci].comm, &comms[ci].size);
        MPI_Comm_rank(comms[ci].comm, &comms[ci].rank);
    }
    tst_rng_sync();

    /* 1. predefined datatypes x ops x in-place x comms x collectives */
    for (ci = 0; ci < n_comms; ci++) {
        for (di = 0; di < n_dts; di++) {
            const dtype_t *d = &dts[di];

            if (reduced && d->dt != MPI_INT && d->dt != MPI_DOUBLE && d->dt != MPI_UNSIGNED_CHAR &&
                d->dt != MPI_INT64_T) {
                continue;
            }
            for (coll = 0; coll < 3; coll++) {
                if (coll == COLL_AG) {
                    for (inplace = 0; inplace < 2; inplace++) {
                        if (!reduced || inplace == (di & 1)) {
                            run_case(&comms[ci], d, NULL, coll, inplace, pick_count(), 0);
                        }
                    }
                    continue;
                }
                if (d->kind == K_BYTES) {
                    continue; /* MPI_CHAR is not a reduction type */
                }
                for (oi = 0; oi < (int)(sizeof(int_ops) / sizeof(int_ops[0])); oi++) {
                    const op_t *o = &int_ops[oi];

                    if ((d->kind == K_FLOAT && !o->arith) ||
                        (reduced && o->op != MPI_SUM && o->op != MPI_MAX)) {
                        continue;
                    }
                    for (inplace = 0; inplace < 2; inplace++) {
                        if (!reduced || inplace == ((oi + coll + ci) & 1)) {
                            run_case(&comms[ci], d, o, coll, inplace, pick_count(), 0);
                        }
                    }
                }
            }
        }
    }

    /* 2. count == 0 on every collective */
    for (coll = 0; coll < 3; coll++) {
        for (inplace = 0; inplace < 2; inplace++) {
            run_case(&comms[0], find_dt(MPI_INT), &int_ops[0], coll, inplace, 0, 0);
        }
    }

    /* 3. derived datatypes: contiguous(3, int) and vector(2, 1, 2, double) (holes between elements) */
    {
        dtype_t contig = { MPI_DATATYPE_NULL, "contiguous(3,MPI_INT)", K_SINT, (int)sizeof(int), 1 };
        dtype_t vec = { MPI_DATATYPE_NULL, "vector(2,1,2,MPI_DOUBLE)", K_FLOAT, 8, 1 };

        MPI_Type_contiguous(3, MPI_INT, &dt_contig3);
        MPI_Type_commit(&dt_contig3);
        MPI_Type_vector(2, 1, 2, MPI_DOUBLE, &dt_vec);
        MPI_Type_commit(&dt_vec);
        contig.dt = dt_contig3;
        vec.dt = dt_vec;
        for (coll = 0; coll < 3; coll++) {
            for (inplace = 0; inplace < 2; inplace++) {
                if (reduced && inplace != (coll & 1)) {
                    continue;
                }
                run_case(&comms[0], &contig, &int_ops[0], coll, inplace, pick_count(), 0);
                run_case(&comms[reduced ? 0 : 2], &vec, &int_ops[reduced ? 3 : 0], coll, inplace, pick_count(), 0);
                if (!reduced) {
                    run_case(&comms[1], &contig, &int_ops[3], coll, inplace, pick_count(), 0);
                }
            }
        }
    }

    /* 4. user-defined ops (commutative and not) on MPI_INT and on the derived type */
    MPI_Op_create(user_add, 1, &op_user_add);
    MPI_Op_create(user_first, 0, &op_user_first);
    memset(user_ops, 0, sizeof(user_ops));
    user_ops[0].user = user_ops[1].user = 1;
    user_ops[0].op = op_user_add;
    user_ops[0].name = "user_add";
    user_ops[1].op = op_user_first;
    user_ops[1].name = "user_first(noncommutative)";
    for (coll = COLL_RSB; coll <= COLL_AR; coll++) {
        for (i = 0; i < 2; i++) {
            for (inplace = 0; inplace < 2; inplace++) {
                dtype_t contig = { dt_contig3, "contiguous(3,MPI_INT)", K_SINT, (int)sizeof(int), 1 };

                if (reduced && inplace != i) {
                    continue;
                }
                run_case(&comms[1], find_dt(MPI_INT), &user_ops[i], coll, inplace, pick_count(), 0);
                if (!reduced) {
                    run_case(&comms[0], &contig, &user_ops[i], coll, inplace, pick_count(), 0);
                }
            }
        }
    }

    /* 5. half-precision types are moved (not reduced) by Allgather: plain pass-through */
    {
        dtype_t h[3] = {
            { TLMPI_FLOAT16, "TLMPI_FLOAT16", K_BYTES, 2, 0 },
            { TLMPI_BFLOAT16, "TLMPI_BFLOAT16", K_BYTES, 2, 0 },
#ifdef MPIX_C_FLOAT16
            { MPIX_C_FLOAT16, "MPIX_C_FLOAT16", K_BYTES, 2, 0 },
#endif
        };
        int nh = 2;
#ifdef MPIX_C_FLOAT16
        nh = 3;
#endif
        for (i = 0; i < nh; i++) {
            TST_CHECK(h[i].dt != MPI_DATATYPE_NULL, "%s is MPI_DATATYPE_NULL", h[i].name);
            if (h[i].dt != MPI_DATATYPE_NULL) {
                run_case(&comms[0], &h[i], NULL, COLL_AG, i & 1, pick_count(), 0);
            }
        }
    }

    /* 6. MPI-4 large-count entry points */
#if defined(HAVE_PMPI_ALLREDUCE_C) && defined(HAVE_PMPI_ALLGATHER_C) && defined(HAVE_PMPI_REDUCE_SCATTER_BLOCK_C)
    for (coll = 0; coll < 3; coll++) {
        for (inplace = 0; inplace < 2; inplace++) {
            if (reduced && inplace != (coll & 1)) {
                continue;
            }
            run_case(&comms[0], find_dt(MPI_INT64_T), &int_ops[0], coll, inplace, pick_count(), 1);
            run_case(&comms[reduced ? 1 : 2], find_dt(MPI_DOUBLE), &int_ops[3], coll, inplace, pick_count(), 1);
            if (!reduced) {
                run_case(&comms[1], find_dt(MPI_UINT8_T), &int_ops[1], coll, inplace, pick_count(), 1);
            }
        }
    }
    if (tst_rank == 0) {
        printf("mpi_coll: MPI-4 large-count (_c) entry points tested\n");
    }
#else
    if (tst_rank == 0) {
        printf("mpi_coll: this MPI has no MPI-4 large-count (_c) collectives; not tested\n");
    }
#endif

    check_stats();
    if (tst_rank == 0) {
        printf("mpi_coll: %ld cases (%ld rejected alike by MPI_ and PMPI_); passthrough calls %llu allgather, %llu reduce_scatter_block, %llu allreduce\n",
               n_cases, n_rejected, (unsigned long long)expected_calls[COLL_AG], (unsigned long long)expected_calls[COLL_RSB],
               (unsigned long long)expected_calls[COLL_AR]);
    }
    MPI_Op_free(&op_user_add);
    MPI_Op_free(&op_user_first);
    MPI_Type_free(&dt_contig3);
    MPI_Type_free(&dt_vec);
    MPI_Comm_free(&split);
    MPI_Comm_free(&dup);
    return tst_finish();
}
