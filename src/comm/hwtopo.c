/*
 * hwtopo: GPU -> nearest RDMA NIC from hwloc (see hwtopo.h for the contract).
 *
 * Distances come from walking ->parent chains: hwloc_get_common_ancestor_obj() crashes on I/O
 * objects of different kinds (a PCI device and an OSDev) in hwloc 2.9, so it is not used.
 */
#include "config.h"
#include "hwtopo.h"
#include "env.h"
#include "log.h"

#ifdef HAVE_HWLOC
#include <hwloc.h>
#endif
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const dist_names[] = { "PIX", "PXB", "PHB", "NODE", "SYS", "NONE" };

const char *tlmpi_hwtopo_dist_name(tlmpi_hwtopo_dist_t dist)
{
    return (unsigned)dist <= TLMPI_HWTOPO_NONE ? dist_names[dist] : NULL;
}

#ifdef HAVE_HWLOC

/* TLMPI_HWLOC, defaulting to on when the env table was never loaded (unit tests, tools). */
static int hwtopo_enabled(void)
{
    return tlmpi_env_val[TLMPI_ENV_HWLOC].s == NULL || TLMPI_ENV_I(HWLOC) != 0;
}

/* Hex digits (1..max) then the separator sep ('\0' = end of string). */
static int hex_field(const char **p, char sep, int max, unsigned *v)
{
    int n = 0;

    for (*v = 0; isxdigit((unsigned char)**p) && n < max; (*p)++, n++) {
        int ch = tolower((unsigned char)**p);

        *v = *v * 16 + (unsigned)(isdigit(ch) ? ch - '0' : ch - 'a' + 10);
    }
    if (n == 0 || **p != sep) {
        return -1;
    }
    if (sep) {
        (*p)++;
    }
    return 0;
}

/* "dddd:bb:dd.f" (domain of up to 8 digits, as CUDA prints it) or "bb:dd.f"; any case. */
static int parse_busid(const char *s, unsigned *dom, unsigned *bus, unsigned *dev, unsigned *fn)
{
    const char *c = strchr(s, ':');

    *dom = 0;
    if (c && strchr(c + 1, ':') && hex_field(&s, ':', 8, dom) != 0) {
        return -1;
    }
    return hex_field(&s, ':', 2, bus) || hex_field(&s, '.', 2, dev) || hex_field(&s, '\0', 1, fn) ? -1 : 0;
}

#define HWTOPO_MAX 256 /* GPUs or NICs per machine; more are ignored with a warning */

static struct {
    pthread_mutex_t lock;
    int loaded;             /* 1 once a load was attempted (success or not) */
    hwloc_topology_t topo;  /* NULL if the load failed */
    int ngpu, nnic;
    hwloc_obj_t gpu[HWTOPO_MAX]; /* PCI devices, bus id order */
    hwloc_obj_t nic[HWTOPO_MAX]; /* OpenFabrics OSDevs, parent bus id order */
} hwt = { PTHREAD_MUTEX_INITIALIZER, 0, NULL, 0, 0, { NULL }, { NULL } };

static int pci_cmp(const struct hwloc_pcidev_attr_s *a, const struct hwloc_pcidev_attr_s *b)
{
    if (a->domain != b->domain) {
        return a->domain < b->domain ? -1 : 1;
    }
    if (a->bus != b->bus) {
        return a->bus < b->bus ? -1 : 1;
    }
    if (a->dev != b->dev) {
        return a->dev < b->dev ? -1 : 1;
    }
    return (a->func > b->func) - (a->func < b->func);
}

static int gpu_cmp(const void *x, const void *y)
{
    hwloc_obj_t a = *(const hwloc_obj_t *)x, b = *(const hwloc_obj_t *)y;

    return pci_cmp(&a->attr->pcidev, &b->attr->pcidev);
}

static int nic_cmp(const void *x, const void *y)
{
    hwloc_obj_t a = *(const hwloc_obj_t *)x, b = *(const hwloc_obj_t *)y;
    int c = pci_cmp(&a->parent->attr->pcidev, &b->parent->attr->pcidev);

    /* several ports of one PCI function (rare): order by name */
    return c ? c : strcmp(a->name ? a->name : "", b->name ? b->name : "");
}

static int is_nvidia_gpu(hwloc_obj_t o)
{
    unsigned cls = o->attr->pcidev.class_id;

    return o->attr->pcidev.vendor_id == 0x10de && (cls == 0x0300 || cls == 0x0302);
}

/* Caller holds hwt.lock. */
static void hwtopo_load_locked(void)
{
    hwloc_topology_t topo;
    hwloc_obj_t o = NULL;

    hwt.loaded = 1;
    if (hwloc_topology_init(&topo) != 0) {
        tlmpi_warn(TOPO, "hwloc_topology_init failed");
        return;
    }
    /* PCI devices and OSDevs are filtered out by default; keep those that matter (GPU, NIC,
     * bridges leading to them) */
    hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (hwloc_topology_load(topo) != 0) {
        tlmpi_warn(TOPO, "hwloc_topology_load failed; GPU/NIC locality unknown");
        hwloc_topology_destroy(topo);
        return;
    }
    hwt.topo = topo;
    hwt.ngpu = hwt.nnic = 0;
    while ((o = hwloc_get_next_pcidev(topo, o)) != NULL) {
        if (is_nvidia_gpu(o)) {
            if (hwt.ngpu == HWTOPO_MAX) {
                tlmpi_warn_once(TOPO, "more than %d GPUs; the rest are ignored", HWTOPO_MAX);
                break;
            }
            hwt.gpu[hwt.ngpu++] = o;
        }
    }
    o = NULL;
    while ((o = hwloc_get_next_osdev(topo, o)) != NULL) {
        /* a NIC without a PCI parent (soft RoCE, ...) has no locality: not a rail */
        if (o->attr->osdev.type != HWLOC_OBJ_OSDEV_OPENFABRICS || !o->parent ||
            o->parent->type != HWLOC_OBJ_PCI_DEVICE) {
            continue;
        }
        if (hwt.nnic == HWTOPO_MAX) {
            tlmpi_warn_once(TOPO, "more than %d NICs; the rest are ignored", HWTOPO_MAX);
            break;
        }
        hwt.nic[hwt.nnic++] = o;
    }
    qsort(hwt.gpu, (size_t)hwt.ngpu, sizeof(hwt.gpu[0]), gpu_cmp);
    qsort(hwt.nic, (size_t)hwt.nnic, sizeof(hwt.nic[0]), nic_cmp);
    tlmpi_debug(TOPO, "hwloc: %d GPUs, %d RDMA NICs%s%s", hwt.ngpu, hwt.nnic,
                getenv("HWLOC_XMLFILE") ? " from " : "",
                getenv("HWLOC_XMLFILE") ? getenv("HWLOC_XMLFILE") : "");
}

/* Loaded topology or NULL; takes the lock. Callers keep the lock while they use objects. */
static hwloc_topology_t hwtopo_get_locked(void)
{
    pthread_mutex_lock(&hwt.lock);
    if (!hwt.loaded) {
        hwtopo_load_locked();
    }
    return hwt.topo;
}

static int obj_depth(hwloc_obj_t o)
{
    int d = 0;

    for (; o->parent; o = o->parent) {
        d++;
    }
    return d;
}

static int is_pci_bridge(hwloc_obj_t o)
{
    return o->type == HWLOC_OBJ_BRIDGE && o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI;
}

/* Number of objects strictly between o and its ancestor anc that are PCI bridges. */
static int bridges_below(hwloc_obj_t o, hwloc_obj_t anc)
{
    int n = 0;

    for (o = o->parent; o && o != anc; o = o->parent) {
        n += is_pci_bridge(o);
    }
    return n;
}

/* OS index of the single NUMA node local to an object, -1 if none or several. */
static int numa_of(hwloc_topology_t topo, hwloc_obj_t o)
{
    hwloc_obj_t a = hwloc_get_non_io_ancestor_obj(topo, o);

    if (!a || !a->nodeset || hwloc_bitmap_weight(a->nodeset) != 1) {
        return -1;
    }
    return hwloc_bitmap_first(a->nodeset);
}

/* Distance class and hop count between a GPU PCI device and a NIC OSDev (walking parents). */
static tlmpi_hwtopo_dist_t distance(hwloc_topology_t topo, hwloc_obj_t gpu, hwloc_obj_t nic, int *hops_p)
{
    hwloc_obj_t a = gpu, b = nic;
    int da = obj_depth(a), db = obj_depth(b), hops = 0;
    int na, nb;

    for (; da > db; da--, hops++) {
        a = a->parent;
    }
    for (; db > da; db--, hops++) {
        b = b->parent;
    }
    while (a != b) {
        a = a->parent;
        b = b->parent;
        hops += 2;
    }
    *hops_p = hops;
    if (is_pci_bridge(a)) {
        /* a switch appears as an upstream port plus one downstream port per slot: one bridge
         * between a device and the common upstream port is still "one switch" (NCCL's PIX) */
        return bridges_below(gpu, a) <= 1 && bridges_below(nic->parent, a) <= 1 ? TLMPI_HWTOPO_PIX
                                                                                 : TLMPI_HWTOPO_PXB;
    }
    if (a->type == HWLOC_OBJ_BRIDGE) {
        return TLMPI_HWTOPO_PHB;
    }
    na = numa_of(topo, gpu);
    nb = numa_of(topo, nic);
    return na >= 0 && na == nb ? TLMPI_HWTOPO_NODE : TLMPI_HWTOPO_SYS;
}

static void fmt_busid(hwloc_obj_t pci, char *buf, size_t len)
{
    snprintf(buf, len, "%04x:%02x:%02x.%x", pci->attr->pcidev.domain, pci->attr->pcidev.bus,
             pci->attr->pcidev.dev, pci->attr->pcidev.func);
}

tlmpi_status_t tlmpi_hwtopo_gpu_locality(const char *gpu_busid, tlmpi_hwtopo_info_t *info_p)
{
    tlmpi_status_t status = TLMPI_ERR_NOT_FOUND;
    hwloc_topology_t topo;
    hwloc_obj_t gpu = NULL, c;
    unsigned dom, bus, dev, fn;
    int i;

    if (!gpu_busid || !info_p || parse_busid(gpu_busid, &dom, &bus, &dev, &fn) != 0) {
        return TLMPI_ERR_INVALID_ARG;
    }
    if (!hwtopo_enabled()) {
        return TLMPI_ERR_NOT_FOUND;
    }
    memset(info_p, 0, sizeof(*info_p));
    info_p->rail_id = info_p->hops = info_p->numa_node = -1;
    info_p->dist = TLMPI_HWTOPO_NONE;
    topo = hwtopo_get_locked();
    if (!topo) {
        goto out;
    }
    gpu = hwloc_get_pcidev_by_busid(topo, dom, bus, dev, fn);
    if (!gpu) {
        tlmpi_debug(TOPO, "hwloc: no PCI device %s", gpu_busid);
        goto out;
    }
    fmt_busid(gpu, info_p->gpu_busid, sizeof(info_p->gpu_busid));
    for (c = gpu->io_first_child; c; c = c->next_sibling) {
        if (c->type == HWLOC_OBJ_OS_DEVICE && c->name && !strncmp(c->name, "cuda", 4)) {
            snprintf(info_p->gpu_osdev, sizeof(info_p->gpu_osdev), "%s", c->name);
        }
    }
    info_p->numa_node = numa_of(topo, gpu);
    info_p->nic_count = hwt.nnic;
    for (i = 0; i < hwt.nnic; i++) {
        int hops;
        tlmpi_hwtopo_dist_t d = distance(topo, gpu, hwt.nic[i], &hops);

        /* strict comparisons: equal candidates keep the lower rail id */
        if (d < info_p->dist || (d == info_p->dist && hops < info_p->hops)) {
            info_p->dist = d;
            info_p->hops = hops;
            info_p->rail_id = i;
        }
    }
    if (info_p->rail_id >= 0) {
        hwloc_obj_t nic = hwt.nic[info_p->rail_id];

        snprintf(info_p->nic, sizeof(info_p->nic), "%s", nic->name ? nic->name : "");
        fmt_busid(nic->parent, info_p->nic_busid, sizeof(info_p->nic_busid));
    }
    status = TLMPI_OK;
    tlmpi_debug(TOPO, "GPU %s numa %d -> NIC %s (rail %d, %s, %d hops)", info_p->gpu_busid,
                info_p->numa_node, info_p->nic[0] ? info_p->nic : "none", info_p->rail_id,
                dist_names[info_p->dist], info_p->hops);
out:
    pthread_mutex_unlock(&hwt.lock);
    return status;
}

int tlmpi_hwtopo_gpu_count(void)
{
    int n;

    if (!hwtopo_enabled()) {
        return 0;
    }
    n = hwtopo_get_locked() ? hwt.ngpu : 0;
    pthread_mutex_unlock(&hwt.lock);
    return n;
}

int tlmpi_hwtopo_nic_count(void)
{
    int n;

    if (!hwtopo_enabled()) {
        return 0;
    }
    n = hwtopo_get_locked() ? hwt.nnic : 0;
    pthread_mutex_unlock(&hwt.lock);
    return n;
}

/* The name of GPU or NIC number index (in bus id order): the GPU's bus id or the NIC's name. */
static tlmpi_status_t hwtopo_name(int is_nic, int index, char *buf, size_t len)
{
    tlmpi_status_t status = TLMPI_ERR_NOT_FOUND;

    if (!buf || !len) {
        return TLMPI_ERR_INVALID_ARG;
    }
    buf[0] = '\0';
    if (!hwtopo_enabled()) {
        return status;
    }
    if (hwtopo_get_locked() && index >= 0 && index < (is_nic ? hwt.nnic : hwt.ngpu)) {
        if (is_nic) {
            snprintf(buf, len, "%s", hwt.nic[index]->name ? hwt.nic[index]->name : "");
        } else {
            fmt_busid(hwt.gpu[index], buf, len);
        }
        status = TLMPI_OK;
    }
    pthread_mutex_unlock(&hwt.lock);
    return status;
}

tlmpi_status_t tlmpi_hwtopo_gpu_busid(int index, char *buf, size_t len)
{
    return hwtopo_name(0, index, buf, len);
}

tlmpi_status_t tlmpi_hwtopo_nic_name(int index, char *buf, size_t len)
{
    return hwtopo_name(1, index, buf, len);
}

void tlmpi_hwtopo_reset(void)
{
    pthread_mutex_lock(&hwt.lock);
    if (hwt.topo) {
        hwloc_topology_destroy(hwt.topo);
    }
    hwt.topo = NULL;
    hwt.loaded = 0;
    hwt.ngpu = hwt.nnic = 0;
    pthread_mutex_unlock(&hwt.lock);
}

#else /* !HAVE_HWLOC */

tlmpi_status_t tlmpi_hwtopo_gpu_locality(const char *gpu_busid, tlmpi_hwtopo_info_t *info_p)
{
    (void)gpu_busid;
    (void)info_p;
    return TLMPI_ERR_NOT_FOUND;
}

int tlmpi_hwtopo_gpu_count(void)
{
    return 0;
}

int tlmpi_hwtopo_nic_count(void)
{
    return 0;
}

tlmpi_status_t tlmpi_hwtopo_gpu_busid(int index, char *buf, size_t len)
{
    (void)index;
    if (buf && len) {
        buf[0] = '\0';
    }
    return TLMPI_ERR_NOT_FOUND;
}

tlmpi_status_t tlmpi_hwtopo_nic_name(int index, char *buf, size_t len)
{
    return tlmpi_hwtopo_gpu_busid(index, buf, len);
}

void tlmpi_hwtopo_reset(void)
{
}

#endif /* HAVE_HWLOC */
