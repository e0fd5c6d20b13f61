/*
 * region.c - create, map and grow the raw file (see region.h and layout.h).
 */
#define _GNU_SOURCE
#include "region.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

char *ltp_base;
static char path[PATH_MAX + 64];
static char dirname_[PATH_MAX];

#define FIXED_SIZE                                                                                 \
    ((uint64_t)LTP_HEADER_SIZE + LTP_MAX_MODULES * sizeof(struct ltp_raw_module) +                 \
     LTP_MAX_SITES * sizeof(struct ltp_raw_site))
#define FILE_SIZE   (FIXED_SIZE + LTP_ARENA_SIZE)
#define ARENA_STEP  (1u << 20)
#define ARENA_START (2u << 20) /* reserved with the fixed sections */

static int reserve(int fd, uint64_t off, uint64_t len)
{
    int r = posix_fallocate(fd, (off_t)off, (off_t)len);
    if (r != 0) {
        errno = r;
        return -1;
    }
    return 0;
}

/* Create a new file for this process and map it; on success fills path[]. */
static char *create_mapping(void)
{
    int fd = -1;
    for (int n = 0; n < 1000 && fd < 0; n++) {
        snprintf(path, sizeof path, "%s/%ld-%d.ltraw", dirname_, (long)getpid(), n);
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST)
            return NULL;
    }
    if (fd < 0)
        return NULL;
    char *base = MAP_FAILED;
    if (ftruncate(fd, (off_t)FILE_SIZE) == 0 && reserve(fd, 0, FIXED_SIZE + ARENA_START) == 0)
        base = mmap(NULL, FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int saved = errno;
    close(fd); /* the mapping keeps the file; growth reopens it by name */
    if (base == MAP_FAILED) {
        unlink(path);
        errno = saved;
        return NULL;
    }
    return base;
}

static void read_file(const char *name, char *buf, size_t size, uint64_t *len)
{
    int fd = open(name, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, size - 1) : -1;
    if (fd >= 0)
        close(fd);
    buf[n > 0 ? n : 0] = '\0';
    if (len)
        *len = n > 0 ? (uint64_t)n : 0;
}

static void fill_header(struct ltp_raw_header *h)
{
    memcpy(h->magic, LTP_RAW_MAGIC, 8);
    h->version = LTP_RAW_VERSION;
    h->header_size = LTP_HEADER_SIZE;
    h->module_size = sizeof(struct ltp_raw_module);
    h->site_size = sizeof(struct ltp_raw_site);
    h->record_size = sizeof(struct ltp_raw_record);
    h->slot_size = sizeof(struct ltp_raw_slot);
    h->max_modules = LTP_MAX_MODULES;
    h->max_sites = LTP_MAX_SITES;
    h->max_frames = LTP_MAX_FRAMES;
    h->slots_per_chunk = LTP_SLOTS_PER_CHUNK;
    h->modules_off = LTP_HEADER_SIZE;
    h->sites_off = h->modules_off + LTP_MAX_MODULES * sizeof(struct ltp_raw_module);
    h->arena_off = h->sites_off + LTP_MAX_SITES * sizeof(struct ltp_raw_site);
    h->arena_size = LTP_ARENA_SIZE;
    h->file_size = FILE_SIZE;
    h->arena_committed = ARENA_START;
    h->pid = (uint64_t)getpid();
    h->ppid = (uint64_t)getppid();
    h->clock = (uint64_t)ltp_clock_kind;
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    h->start_real_ns = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
    h->start_mono_ns = ltp_mono_ns();
    h->start_ticks = ltp_now();
    ssize_t n = readlink("/proc/self/exe", h->exe, sizeof h->exe - 1);
    h->exe[n > 0 ? n : 0] = '\0';
    read_file("/proc/self/cmdline", h->cmdline, sizeof h->cmdline, &h->cmdline_len);
    h->nsites = 1; /* site 0 collects what overflows the site table */
}

int ltp_region_open(const char *dir)
{
    /* Absolute: the arena grows by reopening the file, perhaps after the program chdir()s. */
    if (!realpath(dir, dirname_))
        return -1;
    if (strlen(dirname_) >= sizeof dirname_ - 32) {
        errno = ENAMETOOLONG;
        return -1;
    }
    char *base = create_mapping();
    if (!base)
        return -1;
    ltp_base = base;
    fill_header(ltp_hdr());
    return 0;
}

uint64_t ltp_region_alloc(uint64_t size)
{
    struct ltp_raw_header *h = ltp_hdr();
    uint64_t off = (h->arena_used + 127) & ~(uint64_t)127;
    if (off + size > h->arena_size)
        return 0;
    if (off + size > h->arena_committed) {
        uint64_t want =
            (off + size - h->arena_committed + ARENA_STEP - 1) / ARENA_STEP * ARENA_STEP;
        if (h->arena_committed + want > h->arena_size)
            want = h->arena_size - h->arena_committed;
        int fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
            return 0;
        int r = reserve(fd, h->arena_off + h->arena_committed, want);
        close(fd);
        if (r != 0)
            return 0;
        h->arena_committed += want;
    }
    h->arena_used = off + size;
    return h->arena_off + off;
}

int ltp_region_fork_child(void)
{
    char *old = ltp_base;
    if (!old)
        return 0;
    struct ltp_raw_header *oh = (struct ltp_raw_header *)old;
    char *base = create_mapping();
    if (!base) {
        /* No file of its own: stop recording rather than write into the parent's. */
        ltp_base = NULL;
        munmap(old, FILE_SIZE);
        return -1;
    }
    ltp_base = base;
    struct ltp_raw_header *h = ltp_hdr();
    fill_header(h);
    h->flags = LTP_RAW_FORKED_CHILD;
    h->next_serial = oh->next_serial; /* lock owners recorded before the fork stay distinct */
    h->sample_period = oh->sample_period;
    h->pmu_available = oh->pmu_available;
    h->pmu_open_errno = oh->pmu_open_errno;
    h->pmu_pfm_error = oh->pmu_pfm_error;
    h->pmu_type = oh->pmu_type;
    h->pmu_config = oh->pmu_config;
    memcpy(h->pmu_event, oh->pmu_event, sizeof h->pmu_event);
    memcpy(h->pmu_reason, oh->pmu_reason, sizeof h->pmu_reason);
    h->nmodules = oh->nmodules;
    h->nsites = oh->nsites;
    memcpy(ltp_module(0), old + oh->modules_off, oh->nmodules * sizeof(struct ltp_raw_module));
    memcpy(ltp_site(0), old + oh->sites_off, oh->nsites * sizeof(struct ltp_raw_site));
    for (uint64_t i = 0; i < h->nsites; i++) { /* instances inherited, none created yet */
        struct ltp_raw_site *s = ltp_site(i);
        s->max_live = s->live;
        s->created = s->destroyed = 0;
    }
    munmap(old, FILE_SIZE);
    return 0;
}
