/*
 * raytrace - a legacy-style parallel ray tracer, modelled on SPLASH-2 Raytrace.
 *
 *   raytrace [-t THREADS] [-s SIZE] [-b BLOCK] [-o OBJECTS] [-r SAMPLES] [-d DEPTH] [-w FILE]
 *
 * The SIZE x SIZE image is cut into BLOCK x BLOCK tiles that wait in one global job pool, a
 * linked list under a mutex and a condition variable.  A worker takes a tile and traces its
 * four corners; a tile whose corners see different objects is split into four sub-tiles that
 * go back to the pool, the others are rendered (SAMPLES jittered rays per pixel, shadow rays,
 * reflections up to DEPTH bounces).  The pool therefore grows while it is drained, and a worker
 * that finds it empty sleeps on the condition variable until a tile arrives or the last one is
 * finished.
 *
 * Locks (all in `struct global_memory`, as SPLASH-2 keeps them, except the statistics lock):
 *   gm->ridlock   HOT.  Every ray traced takes it to get its ray id and to enter the global ray
 *                 statistics: the id counter, the per-kind and per-depth ray counts and the hit
 *                 counts of the object the ray hit: three or four cache lines written, one of
 *                 them chosen by the ray (SPLASH-2 Raytrace's bottleneck is this counter).
 *   gm->pool.lock WARM.  The job pool (plus its condition variable): once per tile and sub-tile;
 *                 hotter with a small BLOCK.
 *   gm->pidlock   COLD.  Hands out worker ids, once per thread.
 *   stats_lock    COLD.  Merges each worker's own counts at its end.
 *
 * Output (identical for every thread count and interleaving, checked by the program itself:
 * every pixel rendered once, the ray counters agree with the workers' own counts, sample
 * pixels re-rendered on one thread agree with the image):
 *   result: size=S samples=R depth=D objects=O rays=N probes=N shadow=N reflected=N
 *           tiles=N image=0x...
 *   stats: threads=T time=SECONDS initial_tiles=N rays_per_thread_min=N rays_per_thread_max=N
 *   throughput: RAYS_PER_SECOND ops/s
 * Exit status: 0 when the self-check passes, 1 when it fails, 2 on bad usage.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LOCKSTATS_MAIN /* this file holds lockstats.h's tables */
#include "lockstats.h"

#define MAX_THREADS 1024
#define MAX_OBJECTS 1024
#define MAX_DEPTH   8
#define LEAF        4 /* tiles this small are rendered, never split */

enum ray_kind { RAY_PROBE, RAY_PRIMARY, RAY_SHADOW, RAY_REFLECTED, RAY_KINDS };

struct vec {
    double x, y, z;
};

struct ray {
    struct vec o, d;
    long id;
    int kind, depth;
};

struct object {
    struct vec center;
    double radius, reflect;
    struct vec color;
};

/* Per-object hit counts, updated under gm->ridlock: 64 bytes per object, so that objects
 * rarely share a cache line. */
struct object_stats {
    long hits[RAY_KINDS];
    long spare[8 - RAY_KINDS];
};

struct job {
    struct job *next;
    int x, y, size;
};

struct workpool {
    pthread_mutex_t lock;
    pthread_cond_t work; /* a job was queued, or the last outstanding job finished */
    struct job *head, *tail;
    long queued;      /* jobs in the list */
    long outstanding; /* jobs in the list or being worked on */
    long sleepers;    /* workers waiting on `work` */
    long total;       /* jobs ever queued */
};

struct global_memory {
    pthread_mutex_t pidlock;
    int pid;
    pthread_mutex_t ridlock;
    long rid;
    struct workpool pool;
};

struct ray_stats {
    long kind[RAY_KINDS];
    long depth[MAX_DEPTH + 2];
};

static struct global_memory *gm;
static struct ray_stats raystats;
static struct object_stats *objstats;

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static long total_local_rays; /* sum of the workers' own counts, under stats_lock */
static long total_local_pixels;
static long *worker_rays; /* per worker id, for the load balance */

/* Read-only once the workers start. */
static struct object objects[MAX_OBJECTS];
static int nobjects = 8, image_size = 768, block_size = 32, samples = 8, max_depth = 2;
static unsigned char *image;   /* RGB */
static unsigned char *written; /* per pixel: how many times it was rendered */
static const struct vec light = {-0.4082482904638631, 0.8164965809277261, 0.4082482904638631};

static _Noreturn void die(const char *what)
{
    fprintf(stderr, "raytrace: %s: %s\n", what, strerror(errno));
    exit(1);
}

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static double unit(uint64_t *state) /* uniform in [0, 1) */
{
    return (double)(splitmix64(state) >> 11) * (1.0 / 9007199254740992.0);
}

static struct vec v_add(struct vec a, struct vec b)
{
    return (struct vec){a.x + b.x, a.y + b.y, a.z + b.z};
}

static struct vec v_sub(struct vec a, struct vec b)
{
    return (struct vec){a.x - b.x, a.y - b.y, a.z - b.z};
}

static struct vec v_scale(struct vec a, double k)
{
    return (struct vec){a.x * k, a.y * k, a.z * k};
}

static double v_dot(struct vec a, struct vec b)
{
    return a.x * b.x + a.y * b.y + a.z * b.z;
}

static struct vec v_norm(struct vec a)
{
    return v_scale(a, 1.0 / sqrt(v_dot(a, a)));
}

/* A large ground sphere, then OBJECTS - 1 spheres scattered in front of the camera. */
static void make_scene(void)
{
    uint64_t seed = 42;
    objects[0] = (struct object){{0, -1000.5, -3}, 1000, 0.2, {0.6, 0.6, 0.5}};
    for (int i = 1; i < nobjects; i++) {
        struct object *o = &objects[i];
        o->radius = 0.08 + 0.25 * unit(&seed);
        o->center.x = -2.0 + 4.0 * unit(&seed);
        o->center.y = -0.5 + o->radius + 1.2 * unit(&seed);
        o->center.z = -2.0 - 4.0 * unit(&seed);
        o->reflect = unit(&seed) < 0.3 ? 0.5 : 0.0;
        o->color =
            (struct vec){0.2 + 0.8 * unit(&seed), 0.2 + 0.8 * unit(&seed), 0.2 + 0.8 * unit(&seed)};
    }
}

/* The nearest object the ray hits (its index, distance in *t), or -1. */
static int intersect(const struct ray *r, double *t)
{
    int hit = -1;
    double best = INFINITY;
    for (int i = 0; i < nobjects; i++) {
        struct vec oc = v_sub(r->o, objects[i].center);
        double b = v_dot(oc, r->d);
        double c = v_dot(oc, oc) - objects[i].radius * objects[i].radius;
        double disc = b * b - c;
        if (disc < 0)
            continue;
        double s = sqrt(disc), x = -b - s;
        if (x < 1e-6)
            x = -b + s;
        if (x > 1e-6 && x < best) {
            best = x;
            hit = i;
        }
    }
    *t = best;
    return hit;
}

/* Number the ray and account for it in the global ray statistics (the hot lock). */
static void record_ray(struct ray *r, int hit)
{
    pthread_mutex_lock(&gm->ridlock);
    r->id = gm->rid++;
    raystats.kind[r->kind]++;
    raystats.depth[r->depth]++;
    if (hit >= 0)
        objstats[hit].hits[r->kind]++;
    pthread_mutex_unlock(&gm->ridlock);
}

static struct vec trace(struct ray *r, long *rays)
{
    double t;
    int hit = intersect(r, &t);
    record_ray(r, hit);
    ++*rays;
    if (hit < 0) { /* sky */
        double k = 0.5 * (r->d.y + 1.0);
        return v_add(v_scale((struct vec){1, 1, 1}, 1.0 - k),
                     v_scale((struct vec){0.5, 0.7, 1.0}, k));
    }
    const struct object *obj = &objects[hit];
    struct vec p = v_add(r->o, v_scale(r->d, t));
    struct vec n = v_norm(v_sub(p, obj->center));
    p = v_add(p, v_scale(n, 1e-4)); /* leave the surface: no self-shadowing */
    double diffuse = v_dot(n, light);
    if (diffuse > 0) {
        struct ray shadow = {p, light, 0, RAY_SHADOW, r->depth + 1};
        double ts;
        int blocker = intersect(&shadow, &ts);
        record_ray(&shadow, blocker);
        ++*rays;
        if (blocker >= 0)
            diffuse = 0;
    } else {
        diffuse = 0;
    }
    struct vec color = v_scale(obj->color, 0.15 + 0.85 * diffuse);
    if (obj->reflect > 0 && r->depth < max_depth) {
        struct ray refl = {p, v_norm(v_sub(r->d, v_scale(n, 2 * v_dot(r->d, n)))), 0, RAY_REFLECTED,
                           r->depth + 1};
        struct vec c = trace(&refl, rays);
        color = v_add(v_scale(color, 1 - obj->reflect), v_scale(c, obj->reflect));
    }
    return color;
}

/* Camera at the origin looking down -z; (px, py) in pixels, y downwards. */
static struct ray primary_ray(double px, double py, int kind)
{
    double u = (2 * px / image_size - 1), v = (1 - 2 * py / image_size);
    struct ray r = {{0, 0.3, 0}, v_norm((struct vec){u, v - 0.15, -1.5}), 0, kind, 0};
    return r;
}

static unsigned char to_byte(double c)
{
    return (unsigned char)(c <= 0 ? 0 : c >= 1 ? 255 : (int)(c * 255 + 0.5));
}

static void render_pixel(int x, int y, unsigned char rgb[3], long *rays)
{
    struct vec sum = {0, 0, 0};
    uint64_t seed = ((uint64_t)y << 32) | (uint64_t)x;
    for (int s = 0; s < samples; s++) {
        double jx = samples > 1 ? unit(&seed) : 0.5, jy = samples > 1 ? unit(&seed) : 0.5;
        struct ray r = primary_ray(x + jx, y + jy, RAY_PRIMARY);
        sum = v_add(sum, trace(&r, rays));
    }
    sum = v_scale(sum, 1.0 / samples);
    rgb[0] = to_byte(sum.x);
    rgb[1] = to_byte(sum.y);
    rgb[2] = to_byte(sum.z);
}

/* Does the tile show more than one object (or object and sky) at its corners? */
static int tile_is_mixed(const struct job *j, long *rays)
{
    int last = j->size - 1, first = -2, mixed = 0;
    for (int c = 0; c < 4; c++) {
        int x = j->x + (c & 1 ? last : 0), y = j->y + (c & 2 ? last : 0);
        if (x >= image_size)
            x = image_size - 1;
        if (y >= image_size)
            y = image_size - 1;
        struct ray r = primary_ray(x + 0.5, y + 0.5, RAY_PROBE);
        double t;
        int hit = intersect(&r, &t);
        record_ray(&r, hit);
        ++*rays;
        if (first == -2)
            first = hit;
        else if (hit != first)
            mixed = 1;
    }
    return mixed;
}

static void put_job(struct workpool *wp, int x, int y, int size)
{
    struct job *j = malloc(sizeof *j);
    if (j == NULL)
        die("malloc");
    j->next = NULL;
    j->x = x;
    j->y = y;
    j->size = size;

    pthread_mutex_lock(&wp->lock);
    if (wp->tail != NULL)
        wp->tail->next = j;
    else
        wp->head = j;
    wp->tail = j;
    wp->queued++;
    wp->outstanding++;
    wp->total++;
    if (wp->sleepers > 0)
        pthread_cond_signal(&wp->work);
    pthread_mutex_unlock(&wp->lock);
}

/* The next job, or NULL when the pool is empty and nobody can add to it any more. */
static struct job *get_job(struct workpool *wp)
{
    struct job *j;

    pthread_mutex_lock(&wp->lock);
    while (wp->head == NULL) {
        if (wp->outstanding == 0) {
            pthread_mutex_unlock(&wp->lock);
            return NULL;
        }
        wp->sleepers++;
        pthread_cond_wait(&wp->work, &wp->lock);
        wp->sleepers--;
    }
    j = wp->head;
    wp->head = j->next;
    if (wp->head == NULL)
        wp->tail = NULL;
    wp->queued--;
    pthread_mutex_unlock(&wp->lock);
    return j;
}

static void job_done(struct workpool *wp)
{
    pthread_mutex_lock(&wp->lock);
    if (--wp->outstanding == 0 && wp->sleepers > 0)
        pthread_cond_broadcast(&wp->work);
    pthread_mutex_unlock(&wp->lock);
}

static void do_job(const struct job *j, long *rays, long *pixels)
{
    if (j->size > LEAF && tile_is_mixed(j, rays)) {
        int half = j->size / 2;
        for (int c = 0; c < 4; c++) {
            int x = j->x + (c & 1 ? half : 0), y = j->y + (c & 2 ? half : 0);
            if (x < image_size && y < image_size)
                put_job(&gm->pool, x, y, half);
        }
        return;
    }
    for (int y = j->y; y < j->y + j->size && y < image_size; y++)
        for (int x = j->x; x < j->x + j->size && x < image_size; x++) {
            size_t at = (size_t)y * image_size + x;
            render_pixel(x, y, &image[3 * at], rays);
            written[at]++;
            ++*pixels;
        }
}

static void *worker(void *arg)
{
    long rays = 0, pixels = 0;
    struct job *j;
    int pid;

    (void)arg;
    pthread_mutex_lock(&gm->pidlock);
    pid = gm->pid++;
    pthread_mutex_unlock(&gm->pidlock);

    while ((j = get_job(&gm->pool)) != NULL) {
        do_job(j, &rays, &pixels);
        free(j);
        job_done(&gm->pool);
    }

    pthread_mutex_lock(&stats_lock);
    total_local_rays += rays;
    total_local_pixels += pixels;
    worker_rays[pid] = rays;
    pthread_mutex_unlock(&stats_lock);
    return NULL;
}

static uint64_t fnv1a(uint64_t h, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3u;
    return h;
}

static int write_ppm(const char *path)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        return -1;
    fprintf(f, "P6\n%d %d\n255\n", image_size, image_size);
    size_t n = (size_t)image_size * image_size * 3;
    if (fwrite(image, 1, n, f) != n) {
        int saved = errno;
        fclose(f);
        errno = saved;
        return -1;
    }
    return fclose(f);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int int_arg(const char *s, int min, int max, const char *what)
{
    char *end;
    long v;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || *s == '\0' || *end != '\0' || v < min || v > max) {
        fprintf(stderr, "raytrace: %s must be an integer in [%d, %d], not '%s'\n", what, min, max,
                s);
        exit(2);
    }
    return (int)v;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: raytrace [-t THREADS] [-s SIZE] [-b BLOCK] [-o OBJECTS] [-r SAMPLES] "
               "[-d DEPTH]\n"
               "  -t THREADS  worker threads (default 4)\n"
               "  -s SIZE     image width and height in pixels (default 768)\n"
               "  -b BLOCK    initial tile size; smaller makes the job pool hotter (default 32)\n"
               "  -o OBJECTS  spheres in the scene; fewer makes the ray-id lock hotter (default "
               "8)\n"
               "  -r SAMPLES  rays per pixel (default 8)\n"
               "  -d DEPTH    reflection bounces (default 2)\n"
               "  -w FILE     also write the image to FILE (binary PPM)\n");
}

int main(int argc, char **argv)
{
    int nthreads = 4, opt, err, failed = 0;
    const char *ppm_path = NULL;
    pthread_t *threads;

    while ((opt = getopt(argc, argv, "t:s:b:o:r:d:w:h")) != -1) {
        switch (opt) {
        case 't':
            nthreads = int_arg(optarg, 1, MAX_THREADS, "THREADS");
            break;
        case 's':
            image_size = int_arg(optarg, 1, 16384, "SIZE");
            break;
        case 'b':
            block_size = int_arg(optarg, 1, 16384, "BLOCK");
            break;
        case 'o':
            nobjects = int_arg(optarg, 1, MAX_OBJECTS, "OBJECTS");
            break;
        case 'r':
            samples = int_arg(optarg, 1, 1024, "SAMPLES");
            break;
        case 'd':
            max_depth = int_arg(optarg, 0, MAX_DEPTH, "DEPTH");
            break;
        case 'w':
            ppm_path = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc) {
        usage(stderr);
        return 2;
    }

    gm = calloc(1, sizeof *gm);
    objstats = calloc((size_t)nobjects, sizeof *objstats);
    image = calloc((size_t)image_size * image_size, 3);
    written = calloc((size_t)image_size * image_size, 1);
    threads = calloc((size_t)nthreads, sizeof *threads);
    worker_rays = calloc((size_t)nthreads, sizeof *worker_rays);
    if (gm == NULL || objstats == NULL || image == NULL || written == NULL || threads == NULL ||
        worker_rays == NULL)
        die("calloc");
    if ((err = pthread_mutex_init(&gm->pidlock, NULL)) != 0 ||
        (err = pthread_mutex_init(&gm->ridlock, NULL)) != 0 ||
        (err = pthread_mutex_init(&gm->pool.lock, NULL)) != 0 ||
        (err = pthread_cond_init(&gm->pool.work, NULL)) != 0) {
        errno = err;
        die("pthread_mutex_init");
    }
    LOCKSTATS_NAME(&gm->ridlock, "ridlock");
    LOCKSTATS_NAME(&gm->pool.lock, "pool.lock");
    LOCKSTATS_NAME(&gm->pidlock, "pidlock");
    LOCKSTATS_NAME(&stats_lock, "stats_lock");
    make_scene();

    for (int y = 0; y < image_size; y += block_size)
        for (int x = 0; x < image_size; x += block_size)
            put_job(&gm->pool, x, y, block_size);
    long initial_jobs = gm->pool.total;

    double t0 = now();
    for (int i = 0; i < nthreads; i++) {
        if ((err = pthread_create(&threads[i], NULL, worker, NULL)) != 0) {
            errno = err;
            die("pthread_create");
        }
    }
    for (int i = 0; i < nthreads; i++)
        pthread_join(threads[i], NULL);
    double elapsed = now() - t0;
    LOCKSTATS_REPORT((uint64_t)(elapsed * 1e9), nthreads);

    /* Self-check. */
    long npixels = (long)image_size * image_size, once = 0, sum_kinds = 0;
    for (long i = 0; i < npixels; i++)
        once += written[i] == 1;
    for (int k = 0; k < RAY_KINDS; k++)
        sum_kinds += raystats.kind[k];
    if (once != npixels || total_local_pixels != npixels) {
        fprintf(stderr, "raytrace: self-check failed: %ld of %ld pixels rendered exactly once\n",
                once, npixels);
        failed = 1;
    }
    if (gm->rid != total_local_rays || sum_kinds != total_local_rays) {
        fprintf(stderr,
                "raytrace: self-check failed: %ld ray ids, %ld rays counted by kind, %ld "
                "rays traced\n",
                gm->rid, sum_kinds, total_local_rays);
        failed = 1;
    }
    if (gm->pool.outstanding != 0 || gm->pool.queued != 0 || gm->pool.head != NULL) {
        fprintf(stderr, "raytrace: self-check failed: job pool not empty at the end\n");
        failed = 1;
    }
    uint64_t checksum = fnv1a(0xcbf29ce484222325u, image, (size_t)npixels * 3);
    long rays_before_check = gm->rid, spare = 0;
    for (long i = 0; i < npixels; i += 97) { /* re-render sample pixels on one thread */
        unsigned char rgb[3];
        render_pixel((int)(i % image_size), (int)(i / image_size), rgb, &spare);
        if (memcmp(rgb, &image[3 * i], 3) != 0) {
            fprintf(stderr,
                    "raytrace: self-check failed: pixel (%ld, %ld) differs when "
                    "re-rendered\n",
                    i % image_size, i / image_size);
            failed = 1;
            break;
        }
    }

    if (ppm_path != NULL && write_ppm(ppm_path) != 0) {
        fprintf(stderr, "raytrace: %s: %s\n", ppm_path, strerror(errno));
        failed = 1;
    }

    printf("result: size=%d samples=%d depth=%d objects=%d rays=%ld probes=%ld shadow=%ld "
           "reflected=%ld tiles=%ld image=0x%016llx\n",
           image_size, samples, max_depth, nobjects, rays_before_check, raystats.kind[RAY_PROBE],
           raystats.kind[RAY_SHADOW], raystats.kind[RAY_REFLECTED], gm->pool.total,
           (unsigned long long)checksum);
    long least = worker_rays[0], most = worker_rays[0];
    for (int i = 1; i < nthreads; i++) {
        least = worker_rays[i] < least ? worker_rays[i] : least;
        most = worker_rays[i] > most ? worker_rays[i] : most;
    }
    printf("stats: threads=%d time=%.6f initial_tiles=%ld rays_per_thread_min=%ld "
           "rays_per_thread_max=%ld\n",
           nthreads, elapsed, initial_jobs, least, most);
    printf("throughput: %.0f ops/s\n", elapsed > 0 ? (double)rays_before_check / elapsed : 0.0);
    return failed;
}
