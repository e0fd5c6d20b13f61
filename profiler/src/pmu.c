/*
 * pmu.c - hardware cache-miss counters through libpfm4 and perf_event_open.
 *
 * Event table (first match on the core PMU libpfm4 detects; `--pmu EVENT` overrides):
 *
 *   core PMU (libpfm4 name)   event                               why
 *   amd64_fam17h..fam19h_*    perf::PERF_COUNT_HW_CACHE_MISSES    AMD has no LLC_MISSES alias;
 *                                                                  the kernel maps the generic
 *                                                                  event to L3/DF misses
 *   intel (any)               LLC_MISSES                          architectural event
 *   anything else / none      perf::PERF_COUNT_HW_CACHE_MISSES    generic kernel event
 *
 * Reasons a probe fails, from the cheapest to fix to the hardest:
 *   PFM_ERR_NOTFOUND          the event name does not exist on this CPU (try another)
 *   EACCES / EPERM            perf_event_paranoid or capabilities forbid it
 *   ENOENT / ENODEV / EOPNOTSUPP   the kernel exposes no hardware PMU (virtual machine)
 */
#define _GNU_SOURCE
#include "pmu.h"

#include <errno.h>
#include <perfmon/pfmlib_perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static char version[32];

const char *ltp_pmu_libpfm_version(void)
{
    int v = pfm_get_version();
    snprintf(version, sizeof version, "%d.%d", PFM_MAJ_VERSION(v), PFM_MIN_VERSION(v));
    return version;
}

/* Name of the first present core (non-"perf") PMU libpfm4 detects, or "". */
static void core_pmu(char *out, size_t n)
{
    int i;
    out[0] = '\0';
    pfm_for_all_pmus (i) {
        pfm_pmu_info_t info;
        memset(&info, 0, sizeof info);
        info.size = sizeof info;
        if (pfm_get_pmu_info(i, &info) != PFM_SUCCESS || !info.is_present)
            continue;
        if (info.type != PFM_PMU_TYPE_CORE)
            continue;
        snprintf(out, n, "%s", info.name);
        return;
    }
}

const char *ltp_pmu_default_event(void)
{
    char pmu[64];
    if (pfm_initialize() != PFM_SUCCESS)
        return "perf::PERF_COUNT_HW_CACHE_MISSES";
    core_pmu(pmu, sizeof pmu);
    if (strncmp(pmu, "intel", 5) == 0 || strncmp(pmu, "ix86", 4) == 0)
        return "LLC_MISSES";
    return "perf::PERF_COUNT_HW_CACHE_MISSES";
}

static const char *errno_reason(int e)
{
    switch (e) {
    case ENOENT:
    case ENODEV:
    case EOPNOTSUPP:
        return "the kernel exposes no hardware PMU (typical of a virtual machine)";
    case EACCES:
    case EPERM:
        return "not permitted: lower /proc/sys/kernel/perf_event_paranoid or grant "
               "CAP_PERFMON";
    case EMFILE:
        return "out of file descriptors";
    case EINVAL:
        return "the kernel rejected the event encoding";
    default:
        return "perf_event_open failed";
    }
}

static volatile uint64_t sink;

int ltp_pmu_probe(const char *event, int walk, struct ltp_pmu_probe *p)
{
    memset(p, 0, sizeof *p);
    int r = pfm_initialize();
    if (r != PFM_SUCCESS) {
        p->pfm_error = r;
        snprintf(p->event, sizeof p->event, "%s", event ? event : "");
        snprintf(p->reason, sizeof p->reason, "libpfm4 initialisation failed: %s", pfm_strerror(r));
        return 0;
    }
    core_pmu(p->pfm_pmu, sizeof p->pfm_pmu);
    if (!event)
        event = ltp_pmu_default_event();
    snprintf(p->event, sizeof p->event, "%s", event);

    struct perf_event_attr attr;
    pfm_perf_encode_arg_t arg;
    char *fstr = NULL;
    memset(&attr, 0, sizeof attr);
    memset(&arg, 0, sizeof arg);
    arg.attr = &attr;
    arg.size = sizeof arg;
    arg.fstr = &fstr;
    /* PFM_PLM3: user level only (exclude_kernel), which paranoid=2 still permits. */
    r = pfm_get_os_event_encoding(event, PFM_PLM3, PFM_OS_PERF_EVENT, &arg);
    if (r != PFM_SUCCESS) {
        p->pfm_error = r;
        snprintf(p->reason, sizeof p->reason, "libpfm4 cannot encode event '%s': %s", event,
                 pfm_strerror(r));
        return 0;
    }
    snprintf(p->encoding, sizeof p->encoding, "%s", fstr ? fstr : "");
    free(fstr);
    p->type = attr.type;
    p->config = attr.config;
    p->config1 = attr.config1;

    attr.size = sizeof attr;
    attr.disabled = 1;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    int fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
    if (fd < 0) {
        p->open_errno = errno;
        snprintf(p->reason, sizeof p->reason, "perf_event_open(%s) failed with %s: %s", event,
                 strerrorname_np(errno) ? strerrorname_np(errno) : "?", errno_reason(errno));
        return 0;
    }
    /* Count over a walk of 8 MiB so the caller sees the counter move. */
    size_t len = walk ? 8u << 20 : 0;
    volatile unsigned char *buf = len ? malloc(len) : NULL;
    ioctl(fd, PERF_EVENT_IOC_RESET, 0);
    ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
    if (buf) {
        for (size_t i = 0; i < len; i += 64)
            buf[i] = (unsigned char)i;
        uint64_t s = 0;
        for (size_t i = 0; i < len; i += 64)
            s += buf[i];
        sink = s;
    }
    ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
    uint64_t v = 0;
    if (read(fd, &v, sizeof v) != (ssize_t)sizeof v) {
        p->open_errno = errno;
        snprintf(p->reason, sizeof p->reason, "reading the %s counter failed", event);
    } else {
        p->available = 1;
        p->sample_count = v;
    }
    free((void *)buf);
    close(fd);
    return 0;
}

int ltp_pmu_thread_open(const struct ltp_pmu_probe *p, struct ltp_pmu_thread *t, char *why,
                        unsigned long why_len)
{
    t->fd = -1;
    t->page = NULL;
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = p->type;
    attr.config = p->config;
    attr.config1 = p->config1;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    int fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) {
        snprintf(why, why_len, "perf_event_open(%s) failed with %s: %s", p->event,
                 strerrorname_np(errno) ? strerrorname_np(errno) : "?", errno_reason(errno));
        return -1;
    }
    long pagesize = sysconf(_SC_PAGESIZE);
    void *page = mmap(NULL, (size_t)pagesize, PROT_READ, MAP_SHARED, fd, 0);
    if (page == MAP_FAILED) {
        snprintf(why, why_len, "mmap of the %s counter page failed: %s", p->event,
                 strerrorname_np(errno) ? strerrorname_np(errno) : "?");
        close(fd);
        return -1;
    }
    struct perf_event_mmap_page *pc = page;
    if (!pc->cap_usr_rdpmc || pc->index == 0) {
        snprintf(why, why_len,
                 "the %s counter opens, but the kernel does not let user space read it with "
                 "RDPMC (see /sys/bus/event_source/devices/cpu/rdpmc); reading it through "
                 "read() would cost about a microsecond per critical section",
                 p->event);
        munmap(page, (size_t)pagesize);
        close(fd);
        return -1;
    }
    t->fd = fd;
    t->page = pc;
    return 0;
}

void ltp_pmu_thread_close(struct ltp_pmu_thread *t)
{
    if (t->fd < 0)
        return;
    munmap(t->page, (size_t)sysconf(_SC_PAGESIZE));
    close(t->fd);
    t->fd = -1;
    t->page = NULL;
}

#if defined(__x86_64__) || defined(__i386__)
static inline uint64_t rdpmc(uint32_t counter)
{
    uint32_t lo, hi;
    __asm__ volatile("rdpmc" : "=a"(lo), "=d"(hi) : "c"(counter));
    return (uint64_t)hi << 32 | lo;
}
#endif

uint64_t ltp_pmu_thread_read(const struct ltp_pmu_thread *t)
{
#if defined(__x86_64__) || defined(__i386__)
    /* The kernel's protocol (include/uapi/linux/perf_event.h): retry while `lock` (a
     * sequence count) changes; the compiler barriers keep the reads inside the window. */
    volatile struct perf_event_mmap_page *pc = t->page;
    uint32_t seq, idx;
    uint64_t count;
    do {
        seq = pc->lock;
        __asm__ volatile("" ::: "memory");
        idx = pc->index;
        count = (uint64_t)pc->offset;
        if (pc->cap_usr_rdpmc && idx) {
            unsigned width = pc->pmc_width;
            int64_t pmc = (int64_t)rdpmc(idx - 1);
            pmc <<= 64 - width; /* sign-extend the counter's width */
            pmc >>= 64 - width;
            count += (uint64_t)pmc;
        }
        __asm__ volatile("" ::: "memory");
    } while (pc->lock != seq);
    return count;
#else
    (void)t;
    return 0;
#endif
}
