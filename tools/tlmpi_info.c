/*
 * tlmpi_info: what this build of tlmpi has and what it can see at run time.
 *   tlmpi_info                 version, build features, runtime capabilities, every TLMPI_* variable
 *   tlmpi_info --env-markdown  the Markdown of docs/ENV.md (no MPI needed)
 *   tlmpi_info --help          usage (exit 0)
 *   mpiexec -n N tlmpi_info --topo   tlmpi's view of MPI_COMM_WORLD per rank (nodes, rails, GPU) and
 *                              its plan (tiers, algorithms, the node tier's transport)
 */
#include "config.h"
#include "tlmpi.h"
#include "env.h"
#include "cudawrap.h"
#include "ncclwrap.h"
#include "devcomm.h"
#include "tier.h"
#ifdef HAVE_CUDA
#include "kernels.h"
#endif

#include <stdio.h>
#include <string.h>

extern char **environ;

static int print_topo(int *argc, char ***argv)
{
    tlmpi_comm_info_t info;
    int rank, size, r;
    tlmpi_status_t st;
    char plan[2048] = "";

    MPI_Init(argc, argv);
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    st = tlmpi_comm_query(MPI_COMM_WORLD, &info);
    if (st == TLMPI_OK && tlmpi_comm_describe(MPI_COMM_WORLD, plan, sizeof(plan)) != TLMPI_OK) {
        plan[0] = '\0';
    }
    for (r = 0; r < size; r++) {
        PMPI_Barrier(MPI_COMM_WORLD);
        if (r != rank) {
            continue;
        }
        if (st != TLMPI_OK) {
            printf("rank %d: tlmpi_comm_query failed: %s\n", rank, tlmpi_status_string(st));
        } else if (!info.eligible && info.node_count == 0) {
            printf("rank %d/%d: not accelerated (%s)\n", rank, size, info.reason);
        } else {
            printf("rank %d/%d: node %d of %d, local rank %d of %d, rail rank %d of %d, regular %d, "
                   "gpu %d, rail id %d, eligible %d%s%s\n",
                   rank, size, info.node_index, info.node_count, info.local_rank, info.local_size,
                   info.rail_rank, info.rail_size, info.regular, info.gpu_device, info.rail_id,
                   info.eligible, info.eligible ? "" : ": ", info.reason);
            if (plan[0]) {
                printf("rank %d/%d: plan %s\n", rank, size, plan);
            }
        }
        fflush(stdout);
    }
    MPI_Finalize();
    return st == TLMPI_OK ? 0 : 1;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: tlmpi_info [--env-markdown | --topo | --help]\n"
               "What this build of tlmpi has and what it sees at run time.\n"
               "  (no option)      version, build features (CUDA, NCCL headers, hwloc, MPI), GPUs and the\n"
               "                   NCCL library found at run time, the devcomm transport, and every TLMPI_*\n"
               "                   variable with its current value (no MPI_Init; docs/ENV.md explains them)\n"
               "  --topo           run under mpiexec (mpiexec -n N tlmpi_info --topo): per rank tlmpi's view\n"
               "                   of MPI_COMM_WORLD (node, local rank, rail, GPU, eligibility) and its plan\n"
               "                   (tiers, algorithms, the node tier's transport)\n"
               "  --env-markdown   the Markdown table of TLMPI_* variables (docs/ENV.md is generated from it)\n"
               "  -h, --help       this help\n");
}

int main(int argc, char **argv)
{
    const char *why_gpu, *why_nccl;
    int rt, drv, ngpu, nccl_ok, nv;

    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "--topo")) {
        return print_topo(&argc, &argv);
    }
    tlmpi_env_load(NULL, environ);
    if (argc > 1 && !strcmp(argv[1], "--env-markdown")) {
        tlmpi_env_markdown(stdout);
        return 0;
    }
    if (argc > 1) {
        fprintf(stderr, "tlmpi_info: unknown argument '%s'\n", argv[1]);
        usage(stderr);
        return 2;
    }
    printf("tlmpi %s\n", tlmpi_version());
    printf("build: %s\n", TLMPI_BUILD_CONFIG);
#ifdef HAVE_NCCL
    printf("build: NCCL headers %d\n", NCCL_VERSION_CODE);
#endif
    ngpu = tlmpi_gpu_probe(&why_gpu);
    tlmpi_gpu_versions(&rt, &drv);
    nccl_ok = tlmpi_nccl_load(&why_nccl);
    nv = tlmpi_nccl_runtime_version();
    printf("runtime: GPUs %d (%s), CUDA runtime %d, driver %d\n", ngpu, ngpu ? "ok" : why_gpu, rt, drv);
    printf("runtime: NCCL library %s (%d)\n", nccl_ok ? "loaded" : why_nccl, nv);
#ifdef HAVE_CUDA
    {
        /* the node tier's devcomm transport needs the kernels' NCCL headers = the runtime library */
        int dv = tlmpi_cuda_devcomm_version();
        const char *missing = "";
        char b[16], r[16];

        tlmpi_devcomm_version_string(dv, b, sizeof(b));
        tlmpi_devcomm_version_string(nv, r, sizeof(r));
        if (!dv) {
            printf("runtime: devcomm transport: no (the kernels were built without the NCCL Device API)\n");
        } else if (nv != dv) {
            printf("runtime: devcomm transport: no (kernels built against NCCL %s, runtime NCCL %s)\n", b, nccl_ok ? r : "none");
        } else if (!tlmpi_nccl_have_devcomm_api(&missing)) {
            printf("runtime: devcomm transport: no (libnccl lacks %s)\n", missing);
        } else {
            char rule[160];

            printf("runtime: devcomm transport: NCCL %s, where a communicator's ranks have distinct GPUs%s\n", b,
                   tlmpi_devcomm_nccl_rule(nv, 1, rule, sizeof(rule)) ? "" : " and are 2+ on one node");
        }
    }
#endif
    /* per collective: taken over or not (TLMPI_COLLS), and the tiers that serve it on device buffers
     * (each tier's supports() on a contiguous float sum whose buffers are on the device, with every
     * capability a communicator can have: what the plan can pick from) */
    printf("\ncollectives (device buffers: the tiers that serve them, best first):\n");
    for (int c = 0; c < TLMPI_COLL_COUNT; c++) {
        static int dummy[2];
        tlmpi_call_t call;
        char tiers[160] = "";
        size_t o = 0;

        memset(&call, 0, sizeof(call));
        call.coll = (tlmpi_coll_t)c;
        call.dt = TLMPI_DT_F32;
        call.dt_size = 4;
        call.opc = TLMPI_OP_SUM;
        call.contiguous = 1;
        call.sbuf = &dummy[0];
        call.rbuf = &dummy[1];
        call.smem = call.rmem = TLMPI_MEM_DEVICE;
        call.local_size = 2;
        for (int t = 0; t < TLMPI_TIER_COUNT && o < sizeof(tiers); t++) {
            if (tlmpi_tiers[t]->supports(&call, ~0u & ~(TLMPI_CAP_SHARED_GPU | TLMPI_CAP_NODE_SLOW))) {
                o += (size_t)snprintf(tiers + o, sizeof(tiers) - o, "%s%s", o ? ", " : "", tlmpi_tiers[t]->name);
            }
        }
        printf("  %-22s %-4s %s\n", tlmpi_coll_name((tlmpi_coll_t)c),
               tlmpi_env_list_has(TLMPI_ENV_S(COLLS), tlmpi_coll_name((tlmpi_coll_t)c)) ? "on" : "off", tiers);
    }
    printf("\nenvironment (TLMPI_*):\n");
    tlmpi_env_dump(stdout);
    return 0;
}
