/*
 * layout.h - the profiler's raw file: what liblocktune-prof.so leaves behind for
 * `locktune profile` (locktune/profiler/raw.py reads it; keep the two in step).
 *
 * Every profiled process owns one file, <LOCKTUNE_PROF_DIR>/<pid>-<n>.ltraw, mapped
 * MAP_SHARED for the whole life of the process.  The counters *are* the file: a lock
 * operation updates the calling thread's own slot in place, and the kernel keeps the pages
 * when the process ends, whichever way it ends (return from main, exit() from any thread,
 * _exit(), a fatal signal, SIGKILL).  Nothing is flushed and no signal handler is installed;
 * the destructor only stamps the end time.
 *
 *   offset 0            header      struct ltp_raw_header (LTP_HEADER_SIZE bytes)
 *   modules_off         modules     LTP_MAX_MODULES x struct ltp_raw_module
 *   sites_off           sites       LTP_MAX_SITES x struct ltp_raw_site
 *   arena_off           arena       thread records and site-slot chunks, bump-allocated
 *
 * All numbers are little-endian 64-bit words (strings are NUL-terminated char arrays), so
 * the reader needs no padding rules.  An offset of 0 means "none".  Times are in ticks of
 * the clock named by header.clock (LTP_CLOCK_TSC: TSC cycles; LTP_CLOCK_MONO: nanoseconds).
 *
 * A thread record owns the slots of the sites its thread touched: slot(site) lives in the
 * chunk record.chunk[site / LTP_SLOTS_PER_CHUNK] at index site % LTP_SLOTS_PER_CHUNK.  A
 * record is recycled when its thread exits (counters are sums, so the next occupant adds
 * to them); slot.thread_gen tells a new occupant's first touch of a site.
 *
 * Timing.  Counts are exact.  Times are measured for every acquisition that waited (or
 * found the lock held), every trylock, timed lock and condition-wait return, for the first
 * LTP_EXACT_FIRST acquisitions of each site by each thread, for all of them where those first
 * ones held the lock LTP_LONG_TICKS or more on average (then two TSC reads cost little), and
 * otherwise for a random 1 in header.sample_period of the uncontended ones (two TSC reads
 * cost more than the whole uncontended lock/unlock pair).  slot.long_cs records the
 * decision (LTP_CS_*): it is taken once timed >= LTP_EXACT_FIRST (the other timed paths step
 * timed too).  A timed section of LTP_OUTLIER_TICKS or more (a long section among short ones,
 * or a preemption: both are time the lock was held) is an outlier (slot.outliers); a random
 * one is a sample like the others, so the estimate stays unbiased.  Where outliers are
 * frequent (LTP_OUTLIERS_LONG of them, and one in LTP_OUTLIER_RATE random samples or more)
 * the site times every section from then on, so that a few long samples do not carry its
 * estimate; an interrupt or a preemption in a sampled short section now and then does not
 * switch it (track.h, ltp_outlier).  An untimed section found with threads queued behind it,
 * or whose thread lost its CPU inside it (tripwire.h), is timed after all, from the one
 * clock reading an untimed mutex acquisition keeps (its entry), and a random one of that kind
 * is no sample; so is a section that starts right after its thread lost its CPU.  What is
 * estimated is then exactly what is sampled: sections that found the lock free, kept their
 * CPU and left it with nobody queued.
 * slot.timed counts the measured acquisitions, timed_free those picked at random; the
 * reader estimates the others from the random ones alone (the always-timed first ones are not a
 * fair sample: cold caches, page faults): cs = cs + (acquisitions - timed) * cs_free / timed_free.
 * Likewise for the outermost sections of a thread (record.*outer*).  With sample_period 1 nothing
 * is estimated.
 */
#ifndef LTP_LAYOUT_H
#define LTP_LAYOUT_H

#include <stdint.h>

#define LTP_RAW_MAGIC       "LTPROF01"
#define LTP_RAW_VERSION     3
#define LTP_HEADER_SIZE     65536
#define LTP_MAX_MODULES     512
#define LTP_MAX_SITES       4096
#define LTP_MAX_FRAMES      8
#define LTP_SLOTS_PER_CHUNK 64
#define LTP_CHUNKS          (LTP_MAX_SITES / LTP_SLOTS_PER_CHUNK)
#define LTP_ARENA_SIZE      (256u << 20)
#define LTP_EXACT_FIRST     256   /* acquisitions per thread and site always timed */
#define LTP_LONG_TICKS      1000  /* mean hold above which a site is always timed */
#define LTP_OUTLIER_TICKS   50000 /* a timed section this long: an outlier (track.h) */
#define LTP_OUTLIERS_LONG   8     /* outliers after which a site may be timed in full */
#define LTP_OUTLIER_RATE    1024  /* ... if one in this many random samples or more */
#define LTP_CALLSITES       8     /* per slot: 7 callers of lock/trylock/timedlock, + others */
#define LTP_CALLSITE_OTHER  (LTP_CALLSITES - 1) /* the bucket of callers past the table */

/* slot.long_cs: is every section of this site (in this thread) timed? */
#define LTP_CS_UNDECIDED 0 /* not yet LTP_EXACT_FIRST timed acquisitions */
#define LTP_CS_LONG      1 /* yes: the first sections were long */
#define LTP_CS_SHORT     2 /* no: sampled */
#define LTP_CS_OUTLIERS  3 /* yes: long random samples were frequent (ltp_outlier) */

/* header.flags */
#define LTP_RAW_FINISHED     1u /* the destructor ran: end_tsc/end_mono_ns are valid */
#define LTP_RAW_FORKED_CHILD 2u /* this process began as a fork() of a profiled one */
#define LTP_RAW_PMU_COUNTING 4u /* per-critical-section miss counting is active */

/* header.clock */
#define LTP_CLOCK_TSC  1
#define LTP_CLOCK_MONO 2

/* site.kind */
#define LTP_KIND_MUTEX  1
#define LTP_KIND_RWLOCK 2
#define LTP_KIND_SPIN   3
#define LTP_KIND_COND   4 /* a condition variable: its slot counts waits and signals */

/* site.origin: how the site's locks came to life */
#define LTP_ORIGIN_INIT   1 /* pthread_*_init(): frames are the init call's backtrace */
#define LTP_ORIGIN_STATIC 2 /* first used without init, in a module's static storage */
#define LTP_ORIGIN_FIRST                                                                           \
    3 /* first used without init, elsewhere (heap, stack): frames of                               \
         that first use */

/* site.attr: attributes seen at init (OR of every instance) */
#define LTP_ATTR_PSHARED    1u
#define LTP_ATTR_ROBUST     2u
#define LTP_ATTR_RECURSIVE  4u
#define LTP_ATTR_ERRORCHECK 8u
#define LTP_ATTR_PI         16u

struct ltp_raw_header {
    char magic[8];
    uint64_t version;
    uint64_t header_size, module_size, site_size, record_size, slot_size;
    uint64_t max_modules, max_sites, max_frames, slots_per_chunk;
    uint64_t modules_off, sites_off, arena_off, arena_size, file_size;
    uint64_t pid, ppid;
    uint64_t flags;
    uint64_t clock; /* LTP_CLOCK_* */
    uint64_t start_ticks, start_mono_ns, start_real_ns;
    uint64_t end_ticks, end_mono_ns;
    uint64_t arena_used;      /* bytes handed out, from arena_off */
    uint64_t arena_committed; /* bytes of the arena backed by fallocate() */
    uint64_t nmodules, nsites;
    uint64_t records;         /* offset of the first thread record (list through .next) */
    uint64_t free_records;    /* offset of the first free record (list through .free_next) */
    uint64_t next_serial;     /* thread serials handed out (each occupancy gets one) */
    uint64_t threads_created; /* pthread_create() calls that succeeded */
    uint64_t threads_live, threads_max_live;
    uint64_t threads_untracked; /* no record could be allocated (arena full) */
    uint64_t locks_untracked;   /* lock table full: operations passed through */
    uint64_t sites_overflow;    /* site table full: counted under site 0 */
    uint64_t pmu_available, pmu_open_errno, pmu_pfm_error, pmu_type, pmu_config;
    uint64_t pmu_thread_failures; /* threads whose counter could not be opened */
    uint64_t sample_period;       /* 1: every section timed; N: see the file comment */
    uint64_t exact_first;         /* LTP_EXACT_FIRST */
    uint64_t sample_bias;         /* ticks taken out of each random sample's cs (track.h),
                                   * an int64_t: it may be negative */
    uint64_t tripwire;            /* 1: sections that lost their CPU are seen (tripwire.h) */
    uint64_t sample_bias_hold;    /* ... out of its hold (int64_t) */
    uint64_t sample_bias_rounds;  /* calibration rounds (interpose.c); 0: no correction */
    uint64_t timed_bias;          /* a timed section's cs less its pair's whole cost, in ticks
                                   * (int64_t, negative): the wrappers' own instructions
                                   * outside its window (interpose.c, calibration) */
    uint64_t reserved[23];
    char pmu_event[128];
    char pmu_reason[256];
    char exe[1024];
    uint64_t cmdline_len;
    char cmdline[4096];        /* NUL-separated, as /proc/self/cmdline (truncated) */
    char tripwire_reason[256]; /* why there is no tripwire (tripwire.h), when there is none */
};

struct ltp_raw_module {
    uint64_t base; /* load bias (link_map l_addr): vaddr = address - base */
    uint64_t reserved[3];
    char path[480];
};

struct ltp_raw_site {
    uint64_t hash;
    uint64_t ready; /* 1 once the entry is complete */
    uint64_t kind, origin, nframes, attr;
    uint64_t addr_module, addr_vaddr; /* first instance's address: module index + 1, vaddr */
    uint64_t sym_vaddr;               /* static sites: start of the enclosing symbol */
    int64_t live, max_live;           /* instances alive now / at most */
    uint64_t created, destroyed;
    uint64_t frame_module[LTP_MAX_FRAMES]; /* module index + 1 (0: unknown) */
    uint64_t frame_vaddr[LTP_MAX_FRAMES];
    uint64_t reserved[3];
};

/* One caller of lock, trylock, timedlock (or a condition wait, whose return starts a
 * section) for one site in one thread: the wrapper's return address, and that caller's
 * share of the slot's counters, with the same meaning (timed, *_free: "Timing" above).
 * The first LTP_CALLSITE_OTHER distinct callers get an entry each; later ones are summed in
 * callsite[LTP_CALLSITE_OTHER] (its ra stays 0), which the report names "other callers". */
struct ltp_raw_callsite {
    uint64_t ra;            /* return address in the caller (0: free entry) */
    uint64_t module, vaddr; /* ra as module index + 1 (0: unknown) and vaddr in it */
    uint64_t acquisitions, contended, timed;
    uint64_t wait, hold, cs; /* over timed acquisitions (time-outs add wait and cs) */
    uint64_t timed_free, hold_free, cs_free; /* timed at random */
};

struct ltp_raw_slot {
    /* first cache line: what every acquisition and release touches */
    uint64_t thread_gen; /* serial of the last toucher */
    uint64_t acquisitions, contended;
    uint64_t timed;               /* acquisitions whose times were measured (see "Timing" above) */
    uint64_t hold, cs;            /* over timed acquisitions */
    uint64_t long_cs;             /* LTP_CS_*: whether every section here is timed */
    uint64_t remote_acquisitions; /* timed ones where the lock came from another thread */
    /* second cache line */
    uint64_t remote_hold, wait, max_hold;
    uint64_t timed_free, hold_free, cs_free; /* timed at random (sampled, did not wait) */
    uint64_t trylock_failures, timeouts;
    /* third cache line */
    uint64_t read_acquisitions;
    uint64_t cond_waits, cond_wait; /* condition waits (a mutex: waits releasing it; a
                                       condition variable: waits on it) and their time */
    uint64_t misses;        /* hardware counter, lock entry -> release (timed acquisitions) */
    uint64_t threads;       /* distinct threads that touched the site */
    uint64_t owner_changes; /* exclusive acquisitions by another thread than the last one
                               (written only when the owner changes: track.h ltp_handover) */
    uint64_t callsite_hint; /* index in callsite[] of the last caller seen (track.h) */
    uint64_t outliers;      /* timed sections of LTP_OUTLIER_TICKS or more (track.h) */
    /* fourth cache line: condition variables only (LTP_KIND_COND; cond_waits, cond_wait and
     * timeouts above count its waits, their time and the timed waits that timed out) */
    uint64_t timed_waits;         /* pthread_cond_timedwait / clockwait calls */
    uint64_t signals, broadcasts; /* pthread_cond_signal / broadcast calls */
    uint64_t signals_unwaited;    /* ... that found no thread waiting (glibc's own test) */
    uint64_t broadcasts_unwaited;
    uint64_t max_cond_wait; /* longest wait, ticks */
    /* timed sections whose thread lost its CPU inside (tripwire.h), and their hold: a
     * preemption is not a long section, so the long/short decision leaves them out */
    uint64_t lost_cpu, lost_hold;
    /* then the places the lock is taken from (not for LTP_KIND_COND) */
    struct ltp_raw_callsite callsite[LTP_CALLSITES];
};

struct ltp_raw_record {
    uint64_t next;      /* next record (offset), list of all records */
    uint64_t free_next; /* next free record (offset) */
    uint64_t serial;    /* current occupant (0: free) */
    uint64_t tid;
    uint64_t start_ticks, last_ticks;
    uint64_t time;      /* lifetimes of past occupants, ticks */
    uint64_t occupants; /* threads that lived in this record */
    uint64_t cs_outer;  /* time inside at least one critical section, ticks (timed) */
    uint64_t outer_sections, outer_timed;   /* outermost sections: all / timed */
    uint64_t outer_random, cs_outer_random; /* timed at random: count, ticks */
    uint64_t clock_noise;       /* negative time differences (migration across skewed clocks) */
    uint64_t foreign_unlocks;   /* unlocks of a lock this thread was not seen to hold */
    uint64_t held_overflow;     /* acquisitions beyond the tracked nesting depth */
    uint32_t chunk[LTP_CHUNKS]; /* chunk offsets / 64 (0: none) */
    /* From /proc schedstat when an occupant exits (and for those alive at the end): time
     * on a CPU, and time runnable but waiting for one (preempted).  The reader uses their
     * ratio to add the preemption that sampled-out sections suffered. */
    uint64_t cpu_ns, run_delay_ns, sched_reads;
    uint64_t pad[13];
};

/* locktune/profiler/raw.py reads these layouts: keep it in step (it checks the sizes). */
_Static_assert(sizeof(struct ltp_raw_header) <= LTP_HEADER_SIZE, "header too large");
_Static_assert(__builtin_offsetof(struct ltp_raw_header, pmu_event) == 592, "header numbers");
_Static_assert(sizeof(struct ltp_raw_module) == 512, "module entry size");
_Static_assert(sizeof(struct ltp_raw_site) == 256, "site entry size");
_Static_assert(sizeof(struct ltp_raw_callsite) == 96, "callsite size");
_Static_assert(sizeof(struct ltp_raw_slot) == 256 + LTP_CALLSITES * 96, "slot size");
_Static_assert(sizeof(struct ltp_raw_record) == 512, "record size");

#endif
