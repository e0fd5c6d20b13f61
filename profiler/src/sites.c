/*
 * sites.c - raw sites: find or create the site of a lock being born (see sites.h).
 *
 * Lookups are lock-free: `index` maps a site's hash to its number, and a number is
 * published (store-release) only after its site entry is complete.  Creation takes
 * site_lock; everything that may take the dynamic loader's lock (backtrace(), dladdr(),
 * reading a symbol table) runs before, never under it: a thread inside dlopen() holds the
 * loader lock while a library constructor initialises its locks.
 */
#define _GNU_SOURCE
#include "sites.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <string.h>

#include "layout.h"
#include "region.h"
#include "spin.h"
#include "symtab.h"
#include "thread.h"

#define INDEX_BITS 13 /* twice LTP_MAX_SITES */
#define INDEX_MASK ((1u << INDEX_BITS) - 1)

static uint32_t index_[1u << INDEX_BITS]; /* site number, 0: empty */
static int site_lock;
static struct ltp_symtab *symtabs[LTP_MAX_MODULES];
static uintptr_t self_lo, self_hi; /* this library's mapped range: its frames are skipped */

struct where {
    const char *path; /* module file (NULL: none) */
    uintptr_t base;   /* load bias */
};

struct frames {
    int n;
    void *pc[LTP_MAX_FRAMES];
    struct where mod[LTP_MAX_FRAMES];
};

static int find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    uintptr_t me = (uintptr_t)arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (me >= lo && me < hi) {
            self_lo = (uintptr_t)-1;
            self_hi = 0;
            for (int j = 0; j < info->dlpi_phnum; j++) {
                const ElfW(Phdr) *q = &info->dlpi_phdr[j];
                if (q->p_type != PT_LOAD)
                    continue;
                uintptr_t a = info->dlpi_addr + q->p_vaddr;
                if (a < self_lo)
                    self_lo = a;
                if (a + q->p_memsz > self_hi)
                    self_hi = a + q->p_memsz;
            }
            return 1;
        }
    }
    return 0;
}

void ltp_sites_setup(void)
{
    dl_iterate_phdr(find_self, (void *)(uintptr_t)ltp_sites_setup);
    void *warm[4];
    backtrace(warm, 4); /* loads libgcc_s now, not inside the first lock call */
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
}

static void where_is(const void *addr, struct where *w)
{
    Dl_info info;
    struct link_map *lm = NULL;
    w->path = NULL;
    w->base = 0;
    if (dladdr1(addr, &info, (void **)&lm, RTLD_DL_LINKMAP) && lm) {
        w->path = lm->l_name && lm->l_name[0] ? lm->l_name : ltp_hdr()->exe;
        w->base = lm->l_addr;
    }
}

/* The caller's frames, outside this library, innermost first. */
static void caller_frames(struct frames *f)
{
    void *buf[LTP_MAX_FRAMES + 8];
    int n = backtrace(buf, LTP_MAX_FRAMES + 8), i = 0;
    while (i < n && (uintptr_t)buf[i] >= self_lo && (uintptr_t)buf[i] < self_hi)
        i++;
    f->n = 0;
    for (; i < n && f->n < LTP_MAX_FRAMES; i++)
        f->pc[f->n++] = buf[i];
}

static void frames_where(struct frames *f)
{
    for (int i = 0; i < f->n; i++)
        where_is(f->pc[i], &f->mod[i]);
}

/* Module number + 1 of `w` (0: unknown).  Caller holds site_lock. */
static uint64_t module_number(const struct where *w)
{
    if (!w->path)
        return 0;
    struct ltp_raw_header *h = ltp_hdr();
    for (uint64_t i = 0; i < h->nmodules; i++) {
        struct ltp_raw_module *m = ltp_module(i);
        if (m->base == w->base && strncmp(m->path, w->path, sizeof m->path - 1) == 0)
            return i + 1;
    }
    if (h->nmodules >= LTP_MAX_MODULES)
        return 0;
    struct ltp_raw_module *m = ltp_module(h->nmodules);
    m->base = w->base;
    strncpy(m->path, w->path, sizeof m->path - 1);
    __atomic_store_n(&h->nmodules, h->nmodules + 1, __ATOMIC_RELEASE);
    return h->nmodules;
}

static uint32_t lookup(uint64_t hash)
{
    for (uint32_t i = 0; i <= INDEX_MASK; i++) {
        uint32_t s = __atomic_load_n(&index_[(hash + i) & INDEX_MASK], __ATOMIC_ACQUIRE);
        if (s == 0)
            return 0;
        if (ltp_site(s)->hash == hash)
            return s;
    }
    return 0;
}

struct origin {
    int kind, origin;
    uint32_t attr;
    const struct frames *frames;
    struct where addr_mod;
    uint64_t addr_vaddr, sym_vaddr;
};

/* Find or create the site with `hash`.  Caller holds nothing. */
static uint32_t intern(uint64_t hash, const struct origin *o)
{
    uint32_t s = lookup(hash);
    if (s)
        return s;
    ltp_spin_lock(&site_lock);
    s = lookup(hash);
    if (!s) {
        struct ltp_raw_header *h = ltp_hdr();
        if (h->nsites >= LTP_MAX_SITES) {
            h->sites_overflow++;
            ltp_spin_unlock(&site_lock);
            return 0;
        }
        s = (uint32_t)h->nsites;
        struct ltp_raw_site *e = ltp_site(s);
        e->hash = hash;
        e->kind = (uint64_t)o->kind;
        e->origin = (uint64_t)o->origin;
        e->attr = o->attr;
        e->nframes = o->frames ? (uint64_t)o->frames->n : 0;
        for (uint64_t i = 0; i < e->nframes; i++) {
            e->frame_module[i] = module_number(&o->frames->mod[i]);
            e->frame_vaddr[i] = (uintptr_t)o->frames->pc[i] - o->frames->mod[i].base;
        }
        e->addr_module = module_number(&o->addr_mod);
        e->addr_vaddr = o->addr_vaddr;
        e->sym_vaddr = o->sym_vaddr;
        e->ready = 1;
        /* release: the entry is complete before its number can be found */
        __atomic_store_n(&h->nsites, h->nsites + 1, __ATOMIC_RELEASE);
        for (uint32_t i = 0;; i++) {
            uint32_t *slot = &index_[(hash + i) & INDEX_MASK];
            if (*slot == 0) {
                __atomic_store_n(slot, s, __ATOMIC_RELEASE);
                break;
            }
        }
    }
    ltp_spin_unlock(&site_lock);
    return s;
}

static uint64_t frames_hash(uint64_t h, const struct frames *f)
{
    for (int i = 0; i < f->n; i++)
        h = mix(h, (uintptr_t)f->pc[i]);
    return h;
}

uint32_t ltp_site_init(int kind, uint32_t attr, const void *lock)
{
    if (!ltp_base)
        return 0;
    int saved = ltp_busy_enter();
    struct frames f;
    caller_frames(&f);
    uint64_t hash = frames_hash(mix(LTP_ORIGIN_INIT, (uint64_t)kind), &f);
    uint32_t s = lookup(hash);
    if (!s) {
        struct origin o = {.kind = kind, .origin = LTP_ORIGIN_INIT, .attr = attr, .frames = &f};
        frames_where(&f);
        where_is(lock, &o.addr_mod);
        o.addr_vaddr = o.addr_mod.path ? (uintptr_t)lock - o.addr_mod.base : 0;
        s = intern(hash, &o);
    }
    if (s && attr)
        __atomic_fetch_or(&ltp_site(s)->attr, (uint64_t)attr, __ATOMIC_RELAXED);
    ltp_busy_exit(saved);
    return s;
}

static const struct ltp_symtab *symtab_of(uint64_t module)
{
    if (module == 0 || module > LTP_MAX_MODULES)
        return NULL;
    struct ltp_symtab **slot = &symtabs[module - 1];
    struct ltp_symtab *t = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (t)
        return t;
    t = ltp_symtab_load(ltp_module(module - 1)->path);
    struct ltp_symtab *expected = NULL;
    /* acq_rel: publish our table, or see the one another thread published first */
    if (t &&
        !__atomic_compare_exchange_n(slot, &expected, t, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        t = expected; /* (ours leaks: a few kilobytes, once) */
    return t;
}

uint32_t ltp_site_first_use(int kind, const void *lock)
{
    if (!ltp_base)
        return 0;
    int saved = ltp_busy_enter();
    struct origin o = {.kind = kind};
    struct frames f;
    uint64_t hash;
    where_is(lock, &o.addr_mod);
    if (o.addr_mod.path) {
        /* In a module's static storage: the site is the variable that holds it. */
        o.origin = LTP_ORIGIN_STATIC;
        o.addr_vaddr = (uintptr_t)lock - o.addr_mod.base;
        ltp_spin_lock(&site_lock);
        uint64_t module = module_number(&o.addr_mod);
        ltp_spin_unlock(&site_lock);
        o.sym_vaddr = ltp_symtab_find(symtab_of(module), o.addr_vaddr);
        hash = mix(mix(mix(LTP_ORIGIN_STATIC, (uint64_t)kind), o.addr_mod.base),
                   o.sym_vaddr ? o.sym_vaddr : o.addr_vaddr);
    } else {
        /* On the heap or a stack, never initialised: sited by its first use. */
        o.origin = LTP_ORIGIN_FIRST;
        caller_frames(&f);
        o.frames = &f;
        hash = frames_hash(mix(LTP_ORIGIN_FIRST, (uint64_t)kind), &f);
        if (!lookup(hash))
            frames_where(&f);
    }
    uint32_t s = intern(hash, &o);
    ltp_busy_exit(saved);
    return s;
}

void ltp_site_born(uint32_t site)
{
    if (!ltp_base)
        return;
    struct ltp_raw_site *s = ltp_site(site);
    int64_t live = __atomic_add_fetch(&s->live, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&s->created, 1, __ATOMIC_RELAXED);
    int64_t max = __atomic_load_n(&s->max_live, __ATOMIC_RELAXED);
    while (live > max && !__atomic_compare_exchange_n(&s->max_live, &max, live, 1, __ATOMIC_RELAXED,
                                                      __ATOMIC_RELAXED))
        ;
}

void ltp_site_died(uint32_t site)
{
    if (!ltp_base)
        return;
    struct ltp_raw_site *s = ltp_site(site);
    __atomic_sub_fetch(&s->live, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&s->destroyed, 1, __ATOMIC_RELAXED);
}

/* For fork(): 1 tries to take the site lock (returns whether it did), 0 releases it, -1
 * resets it in the child. */
int ltp_site_lock_for_fork(int how)
{
    if (how > 0)
        return ltp_spin_trylock(&site_lock, 1000);
    if (how == 0)
        ltp_spin_unlock(&site_lock);
    else
        __atomic_store_n(&site_lock, 0, __ATOMIC_RELAXED);
    return 0;
}

uint64_t ltp_site_module_of(const void *addr, uint64_t *vaddr)
{
    struct where w;
    uint64_t module = 0;
    *vaddr = (uintptr_t)addr;
    if (!ltp_base)
        return 0;
    int saved = ltp_busy_enter();
    where_is(addr, &w);
    if (w.path) {
        *vaddr = (uintptr_t)addr - w.base;
        ltp_spin_lock(&site_lock);
        module = module_number(&w);
        ltp_spin_unlock(&site_lock);
    }
    ltp_busy_exit(saved);
    return module;
}
