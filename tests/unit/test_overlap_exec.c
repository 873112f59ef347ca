/* The overlap executor (runtime/src/overlap_exec.c) without a GPU.  Every
 * rank lives in this process on its own fake device: "device memory" is host
 * memory, and streams are deferred FIFO queues that pump() runs, so a wait on
 * a peer's flag really blocks until that peer has enqueued (and its stream
 * executed) the write.  pump() runs them in sweeps, in a seeded random order,
 * or letting one device run as far ahead as it can: the orders that would
 * expose a missing barrier, flag or event.  The caller's GEMM (with
 * chunk_overlap's accumulate: c = a x B + acc) and reduction are host ops on
 * the executor's streams that compute on the CPU with small integers stored
 * as uint16 (the executor is told f16, so it moves 2-byte elements), which
 * keeps the reference exact. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fgrt_overlap.h"
#include "internal.h"

/* ---- the fake driver ---- */

enum { MAXDEV = 6 };   /* the ranks of the largest world below (MAXW) */

typedef enum { Q_COPY, Q_WRITE, Q_WAIT_FLAG, Q_RECORD, Q_WAIT_EVENT, Q_HOST, Q_GATE } qkind;

struct fstream;

typedef struct qop {
    struct qop *next;
    qkind kind;
    void *dst;                 /* Q_COPY */
    const void *src;
    size_t bytes;
    uint32_t *flag;            /* Q_WRITE, Q_WAIT_FLAG */
    uint32_t value;
    struct fstream *on;        /* Q_WAIT_EVENT: the stream of the awaited record ... */
    unsigned long long seq;    /* ... and its place there */
    void (*fn)(void *);        /* Q_HOST: fn(arg), then arg is freed */
    void *arg;
    const volatile int *gate;  /* Q_GATE: blocks while *gate is 0 */
} qop;

typedef struct fstream {
    struct fdev *dev;
    struct fstream *next_all;  /* every stream the device made: kept until teardown, so a
                                  wait on a destroyed stream's record never dangles */
    qop *head, *tail;
    unsigned long long enqueued, executed;
    bool destroyed;
} fstream;

/* An event is its latest record: {stream, that record's place}; a wait
 * takes it by value when enqueued (as cuStreamWaitEvent does). */
typedef struct fevent {
    struct fdev *dev;
    struct fevent *next;       /* the device's live events */
    fstream *s;                /* NULL: never recorded (a wait on it passes) */
    unsigned long long seq;
} fevent;

/* Device memory: the executor's allocations, and the caller's buffers. */
typedef struct region {
    struct region *next;
    char *p;
    size_t bytes;
    struct fdev *dev;
    bool caller;               /* the test's buffer, not counted as the executor's */
} region;

typedef struct fdev {
    fg_driver base;
    fstream legacy;            /* the NULL stream */
    fstream *streams;
    fevent *events;
    int live_streams, live_events, live_allocs;
    int stream_creates, event_creates, allocs, copies;   /* successful calls */
    int enable_peers, ipc_exports, ipc_opens, closes;
    int loads, unloads, launches;   /* the generated reduction's module and launches */
    int busy_destroyed;        /* streams destroyed with work still queued */
    /* injected failures: the call fails once this many have succeeded (-1: never) */
    int fail_alloc_after, fail_stream_after, fail_event_after, fail_copy_after;
    fg_status enable_peer_status;
    bool export_fails;
} fdev;

static fdev *devs[MAXDEV];
static int ndevs;
static region *regions;
static bool eager;             /* pump after every enqueue, as well as when asked */
/* How pump() runs the streams: in sweeps, each stream as far as it goes;
 * one op at a time of a stream drawn at random (xorshift state `shuffle`);
 * or one op at a time of the first device that can move, in the order
 * favor, favor + 1, ... (mod ndevs), so that device runs as far ahead of the
 * others as the executor lets it; within a device, the newest stream first
 * (its GEMM streams before its copy stream) or the oldest first. */
static enum { S_SWEEP, S_RANDOM, S_PRIORITY, S_PRIORITY_OLDEST } sched;
static unsigned long long shuffle;
static int favor;
static int misuse;             /* driver calls the executor must never make */
static char misuse_why[256];

__attribute__((format(printf, 1, 2))) static fg_status bad(const char *fmt, ...)
{
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (!misuse++)
        snprintf(misuse_why, sizeof misuse_why, "%s", why);
    return fg_fail(FG_ERR_INVALID_ARGUMENT, "fake driver: %s", why);
}

static fdev *D(fg_driver *d) { return (fdev *)d; }

static region *find_region(const void *p, size_t bytes)
{
    const uintptr_t a = (uintptr_t)p;
    for (region *r = regions; r; r = r->next) {
        const uintptr_t b = (uintptr_t)r->p;
        if (a >= b && bytes <= r->bytes && a - b <= r->bytes - bytes)
            return r;
    }
    return NULL;
}

/* The stream `s` of device f (NULL: its legacy stream), or NULL. */
static fstream *stream_of(fdev *f, void *s)
{
    if (!s)
        return &f->legacy;
    for (fstream *x = f->streams; x; x = x->next_all)
        if (x == s)
            return x->destroyed ? NULL : x;
    return NULL;
}

static fevent *event_of(fdev *f, void *e)
{
    for (fevent *x = f->events; x; x = x->next)
        if (x == e)
            return x;
    return NULL;
}

/* Whether the head of s can run now. */
static bool ready(const fstream *s)
{
    const qop *q = s->head;
    if (!q)
        return false;
    switch (q->kind) {
    case Q_WAIT_FLAG:   /* as the backends' stream waits compare */
        return s->dev->base.caps.info.backend == FG_BACKEND_HIP
                   ? *q->flag >= q->value
                   : (int32_t)(*q->flag - q->value) >= 0;
    case Q_WAIT_EVENT: return q->on->executed >= q->seq;
    case Q_GATE: return *q->gate != 0;
    default: return true;
    }
}

/* Runs the head of s if it can; false when s is empty or blocked. */
static bool step(fstream *s)
{
    if (!ready(s))
        return false;
    qop *q = s->head;
    switch (q->kind) {
    case Q_COPY: memmove(q->dst, q->src, q->bytes); break;
    case Q_WRITE: *q->flag = q->value; break;
    case Q_HOST: q->fn(q->arg); break;
    default: break;
    }
    s->head = q->next;
    if (!s->head)
        s->tail = NULL;
    s->executed++;
    free(q->arg);
    free(q);
    return true;
}

/* Reservoir sampling: the k-th ready stream seen becomes the pick with odds 1/k. */
static void consider(fstream *s, fstream **pick, unsigned long long *seen)
{
    if (!ready(s))
        return;
    shuffle ^= shuffle << 13, shuffle ^= shuffle >> 7, shuffle ^= shuffle << 17;
    if (shuffle % ++*seen == 0)
        *pick = s;
}

/* One op of a stream drawn at random among those that can run; false when
 * none can. */
static bool step_random(void)
{
    fstream *pick = NULL;
    unsigned long long seen = 0;
    for (int i = 0; i < ndevs; i++) {
        consider(&devs[i]->legacy, &pick, &seen);
        for (fstream *s = devs[i]->streams; s; s = s->next_all)
            consider(s, &pick, &seen);
    }
    return pick && step(pick);
}

/* One op of the oldest stream from s on (the list is newest first) that can move. */
static bool step_oldest(fstream *s)
{
    return s && (step_oldest(s->next_all) || step(s));
}

/* One op of the first device, in priority order, that can move. */
static bool step_priority(bool oldest_first)
{
    for (int k = 0; k < ndevs; k++) {
        fdev *f = devs[(favor + k) % ndevs];
        if (step(&f->legacy))
            return true;
        if (oldest_first) {
            if (step_oldest(f->streams))
                return true;
            continue;
        }
        for (fstream *s = f->streams; s; s = s->next_all)
            if (step(s))
                return true;
    }
    return false;
}

/* Every stream of every device, until nothing moves (see sched). */
static void pump(void)
{
    static bool running;
    if (running)
        return;
    running = true;
    bool moved;
    do {
        moved = false;
        if (sched != S_SWEEP) {
            moved = sched == S_RANDOM ? step_random() : step_priority(sched == S_PRIORITY_OLDEST);
            continue;
        }
        for (int i = 0; i < ndevs; i++) {
            while (step(&devs[i]->legacy))
                moved = true;
            for (fstream *s = devs[i]->streams; s; s = s->next_all)
                while (step(s))
                    moved = true;
        }
    } while (moved);
    running = false;
}

static void push(fstream *s, qop op)
{
    qop *q = malloc(sizeof *q);
    cr_assert(q);
    *q = op;
    q->next = NULL;
    if (s->tail)
        s->tail->next = q;
    else
        s->head = q;
    s->tail = q;
    s->enqueued++;
    if (eager)
        pump();
}

/* Anything queued on any stream of f (destroyed streams included). */
static bool fake_busy(fdev *f)
{
    pump();
    if (f->legacy.head)
        return true;
    for (fstream *s = f->streams; s; s = s->next_all)
        if (s->head)
            return true;
    return false;
}

static void f_close(fg_driver *d) { D(d)->closes++; }

static fg_status f_alloc(fg_driver *d, size_t n, void **p)
{
    fdev *f = D(d);
    if (f->fail_alloc_after >= 0 && f->allocs >= f->fail_alloc_after)
        return fg_fail(FG_ERR_OUT_OF_MEMORY, "fake: device %d is out of memory", d->ordinal);
    region *r = calloc(1, sizeof *r);
    cr_assert(r);
    r->p = calloc(1, n ? n : 1);
    cr_assert(r->p);
    r->bytes = n, r->dev = f, r->next = regions, regions = r;
    f->allocs++, f->live_allocs++;
    *p = r->p;
    return FG_OK;
}

static fg_status f_free(fg_driver *d, void *p)
{
    for (region **r = &regions; *r; r = &(*r)->next)
        if ((*r)->p == p && (*r)->dev == D(d) && !(*r)->caller) {
            region *dead = *r;
            *r = dead->next;
            free(dead->p);
            free(dead);
            D(d)->live_allocs--;
            return FG_OK;
        }
    return bad("free of %p: no allocation of device %d", p, d->ordinal);
}

static fg_status f_zero(fg_driver *d, void *p, size_t n)
{
    const region *r = find_region(p, n);
    if (!r || r->dev != D(d))
        return bad("zero of %zu bytes at %p: not device %d's memory", n, p, d->ordinal);
    memset(p, 0, n);
    return FG_OK;
}

static fg_status f_copy(fg_driver *d, void *dst, const void *src, size_t n, bool to_device)
{
    const void *dev = to_device ? dst : src;
    const region *r = find_region(dev, n);
    if (!r || r->dev != D(d))
        return bad("copy of %zu bytes: %p is not device %d's memory", n, dev, d->ordinal);
    memcpy(dst, src, n);
    return FG_OK;
}

static fg_status f_ok(fg_driver *d) { (void)d; return FG_OK; }

static fg_status f_stream_create(fg_driver *d, void **out)
{
    fdev *f = D(d);
    if (f->fail_stream_after >= 0 && f->stream_creates >= f->fail_stream_after)
        return fg_fail(FG_ERR_DRIVER, "fake: stream_create failed");
    fstream *s = calloc(1, sizeof *s);
    cr_assert(s);
    s->dev = f, s->next_all = f->streams, f->streams = s;
    f->stream_creates++, f->live_streams++;
    *out = s;
    return FG_OK;
}

static void f_stream_destroy(fg_driver *d, void *s)
{
    fstream *x = stream_of(D(d), s);
    if (!x || x == &D(d)->legacy) {
        bad("stream_destroy of %p: no live stream of device %d", s, d->ordinal);
        return;
    }
    if (x->head)   /* CUDA would finish the work; the executor should have drained it */
        D(d)->busy_destroyed++;
    x->destroyed = true;
    D(d)->live_streams--;
}

static fg_status f_stream_idle(fg_driver *d, void *s, bool *idle)
{
    fstream *x = stream_of(D(d), s);
    if (!x)
        return bad("stream_idle of %p: no live stream of device %d", s, d->ordinal);
    pump();
    *idle = x->head == NULL;
    return FG_OK;
}

static fg_status f_event_create(fg_driver *d, void **out)
{
    fdev *f = D(d);
    if (f->fail_event_after >= 0 && f->event_creates >= f->fail_event_after)
        return fg_fail(FG_ERR_DRIVER, "fake: event_create failed");
    fevent *e = calloc(1, sizeof *e);
    cr_assert(e);
    e->dev = f, e->next = f->events, f->events = e;
    f->event_creates++, f->live_events++;
    *out = e;
    return FG_OK;
}

static void f_event_destroy(fg_driver *d, void *e)
{
    for (fevent **x = &D(d)->events; *x; x = &(*x)->next)
        if (*x == e) {
            *x = (*x)->next;
            free(e);
            D(d)->live_events--;
            return;
        }
    bad("event_destroy of %p: no live event of device %d", e, d->ordinal);
}

static fg_status f_event_record(fg_driver *d, void *e, void *s)
{
    fevent *ev = event_of(D(d), e);
    fstream *x = stream_of(D(d), s);
    if (!ev || !x)
        return bad("event_record of %p on %p: not device %d's", e, s, d->ordinal);
    ev->s = x, ev->seq = x->enqueued + 1;   /* the record pushed next */
    push(x, (qop){.kind = Q_RECORD});
    return FG_OK;
}

static fg_status f_stream_wait_event(fg_driver *d, void *s, void *e)
{
    fevent *ev = event_of(D(d), e);
    fstream *x = stream_of(D(d), s);
    if (!ev || !x)
        return bad("stream_wait_event of %p on %p: not device %d's", e, s, d->ordinal);
    if (ev->s)
        push(x, (qop){.kind = Q_WAIT_EVENT, .on = ev->s, .seq = ev->seq});
    return FG_OK;
}

static fg_status f_copy_async(fg_driver *d, void *dst, const void *src, size_t n, void *s)
{
    fdev *f = D(d);
    fstream *x = stream_of(f, s);
    if (!x)
        return bad("copy_async on %p: no live stream of device %d", s, d->ordinal);
    if (f->fail_copy_after >= 0 && f->copies >= f->fail_copy_after)
        return fg_fail(FG_ERR_DRIVER, "fake: copy_async failed on device %d", d->ordinal);
    if (!find_region(dst, n) || !find_region(src, n))   /* any device's: peer memory */
        return bad("copy_async of %zu bytes %p -> %p: outside device memory", n, src, dst);
    f->copies++;
    push(x, (qop){.kind = Q_COPY, .dst = dst, .src = src, .bytes = n});
    return FG_OK;
}

/* A flag is a word of the device's own memory (an allocation, not the caller's). */
static uint32_t *local_flag(fdev *f, const void *flag)
{
    const region *r = find_region(flag, sizeof(uint32_t));
    return r && r->dev == f && !r->caller && (uintptr_t)flag % 4 == 0
               ? (uint32_t *)(uintptr_t)flag
               : NULL;
}

/* Device memory into the host's, in stream order. */
static fg_status f_read_async(fg_driver *d, void *host, const void *src, size_t n, void *s)
{
    fstream *x = stream_of(D(d), s);
    const region *r = find_region(src, n);
    if (!x || !r || r->dev != D(d))
        return bad("read_async of %zu bytes from %p on %p: not device %d's", n, src, s,
                   d->ordinal);
    push(x, (qop){.kind = Q_COPY, .dst = host, .src = src, .bytes = n});
    return FG_OK;
}

/* Runs the queues; a stream that still cannot finish would block a real
 * synchronize for ever: an error here. */
static fg_status f_sync(fg_driver *d, void *s)
{
    fstream *x = stream_of(D(d), s);
    if (!x)
        return bad("sync of %p: no live stream of device %d", s, d->ordinal);
    pump();
    if (x->head)
        return bad("sync of a stream of device %d that cannot finish", d->ordinal);
    return FG_OK;
}

static fg_status f_write_flag(fg_driver *d, void *s, void *flag, unsigned value)
{
    fstream *x = stream_of(D(d), s);
    uint32_t *w = local_flag(D(d), flag);
    if (!x || !w)
        return bad("write_flag %p on %p: not device %d's", flag, s, d->ordinal);
    push(x, (qop){.kind = Q_WRITE, .flag = w, .value = value});
    return FG_OK;
}

static fg_status f_wait_flag(fg_driver *d, void *s, const void *flag, unsigned value)
{
    fstream *x = stream_of(D(d), s);
    uint32_t *w = local_flag(D(d), flag);
    if (!x || !w)
        return bad("wait_flag %p on %p: not device %d's", flag, s, d->ordinal);
    push(x, (qop){.kind = Q_WAIT_FLAG, .flag = w, .value = value});
    return FG_OK;
}

static fg_status f_ipc_export(fg_driver *d, const void *p, void *handle, size_t *offset)
{
    fdev *f = D(d);
    f->ipc_exports++;
    if (f->export_fails)
        return fg_fail(FG_ERR_DRIVER, "fake: no IPC on device %d", d->ordinal);
    const region *r = find_region(p, 1);
    if (!r || r->dev != f)
        return bad("ipc_export of %p: not device %d's memory", p, d->ordinal);
    memset(handle, 0xab, FG_IPC_HANDLE_BYTES);
    *offset = (size_t)((const char *)p - r->p);
    return FG_OK;
}

/* One process: the executor must use the raw pointers, never IPC. */
static fg_status f_ipc_open(fg_driver *d, const void *h, void **base)
{
    (void)h, (void)base;
    D(d)->ipc_opens++;
    return bad("ipc_open on device %d within one process", d->ordinal);
}

static void f_ipc_close(fg_driver *d, void *base)
{
    bad("ipc_close of %p on device %d: nothing was opened", base, d->ordinal);
}

static fg_status f_enable_peer(fg_driver *d, int ordinal)
{
    fdev *f = D(d);
    f->enable_peers++;
    if (ordinal == d->ordinal || ordinal < 0 || ordinal >= ndevs)
        return bad("enable_peer of device %d from device %d", ordinal, d->ordinal);
    if (f->enable_peer_status != FG_OK)
        return fg_fail(f->enable_peer_status, "fake: device %d cannot reach device %d",
                       d->ordinal, ordinal);
    return FG_OK;
}

/* The generated reduction (fg_overlap_reduce_bind): its "module" is the
 * registry image, its "function" the symbol, whose _w<world> gives the
 * world size as the compiled kernel has it; a launch sums on the stream in
 * the test's uint16 arithmetic, in rank order as the kernel does. */
static fg_status f_load(fg_driver *d, const void *image, const char *symbol, void **module,
                        void **fn)
{
    D(d)->loads++;
    *module = (void *)image, *fn = (void *)symbol;
    return FG_OK;
}

static void f_unload(fg_driver *d, void *module)
{
    (void)module;
    D(d)->unloads++;
}

static fg_status f_configure(fg_driver *d, void *fn, const fg_launch_cfg *c, bool nonportable)
{
    (void)d, (void)fn, (void)c, (void)nonportable;
    return FG_OK;
}

static fg_status f_occupancy(fg_driver *d, void *fn, const fg_launch_cfg *c, int *resident)
{
    (void)d, (void)fn, (void)c;
    *resident = 16;
    return FG_OK;
}

typedef struct gen_reduce {
    const uint16_t *own, *recv;
    uint16_t *out;
    unsigned world, rank;
    long long elems;
} gen_reduce;

static void run_generated_reduce(void *p)
{
    const gen_reduce *j = p;
    for (long long e = 0; e < j->elems; e++) {
        uint32_t acc = 0;
        for (unsigned q = 0; q < j->world; q++)
            acc += q == j->rank ? j->own[e] : j->recv[(size_t)q * j->elems + e];
        j->out[e] = (uint16_t)acc;
    }
}

/* One 128 x 128 block of the generated overlap GEMM's portable form, as a
 * host op: c's 128 rows from `row`, columns from `col`, = a x w^T (small
 * integers, wrapping as uint16), then the drain's count: done[row /
 * done_rows] grows by 1 (fgrt.h's contract: n / 128 a whole tile row), where
 * done is set. */
typedef struct gemm_block {
    const uint16_t *a, *w;
    uint16_t *c;
    unsigned *done;
    long long row, col, n, k, done_rows;
} gemm_block;

static void run_gemm_block(void *p)
{
    const gemm_block *g = p;
    for (long long r = g->row; r < g->row + FG_GEMM_TILE_ROWS; r++)
        for (long long j = g->col; j < g->col + FG_GEMM_DONE_COLS; j++) {
            uint32_t acc = 0;
            for (long long l = 0; l < g->k; l++)
                acc += (uint32_t)g->a[r * g->k + l] * g->w[j * g->k + l];
            g->c[r * g->n + j] = (uint16_t)acc;
        }
    if (g->done)
        g->done[g->row / g->done_rows] += 1;
}

/* The portable overlap GEMM's launch (ops.c's parameters: a, w, c, m, the
 * tile order, flags, ... done at 13, done_rows at 14; n and k from its
 * name): a host op a 128 x 128 block, tile rows in the tile order, so
 * other streams run between them and see a piece's count grow in steps.
 * Drained only: a feed (flags, the fused AG+GEMM) is not emulated. */
static fg_status launch_gemm(fdev *f, fstream *x, const char *sym, void **params)
{
    gemm_block g = {0};
    const int *order;
    const void *flags;
    int m, done_rows;
    const char *nk = strstr(sym, "_n");
    memcpy(&g.a, params[0], sizeof g.a);
    memcpy(&g.w, params[1], sizeof g.w);
    memcpy(&g.c, params[2], sizeof g.c);
    memcpy(&m, params[3], sizeof m);
    memcpy(&order, params[4], sizeof order);
    memcpy(&flags, params[5], sizeof flags);
    memcpy(&g.done, params[13], sizeof g.done);
    memcpy(&done_rows, params[14], sizeof done_rows);
    const long long tiles = m / FG_GEMM_TILE_ROWS;
    if (!nk || sscanf(nk, "_n%lld_k%lld", &g.n, &g.k) != 2 || g.n % FG_GEMM_DONE_COLS ||
        !order || flags || m % FG_GEMM_TILE_ROWS || !find_region(g.c, (size_t)m * g.n * 2) ||
        !find_region(g.a, (size_t)m * g.k * 2) || !find_region(g.w, (size_t)g.n * g.k * 2) ||
        !find_region(order, (size_t)tiles * sizeof *order) ||
        (g.done && (done_rows < FG_GEMM_TILE_ROWS || m % done_rows ||
                    !find_region(g.done, (size_t)(m / done_rows) * sizeof *g.done))))
        return bad("overlap GEMM launch %s on device %d: not the drained portable form's "
                   "arguments", sym, f->base.ordinal);
    g.done_rows = done_rows;
    f->launches++;
    for (long long t = 0; t < tiles; t++)
        for (long long col = 0; col < g.n; col += FG_GEMM_DONE_COLS) {
            gemm_block *j = malloc(sizeof *j);
            cr_assert(j);
            *j = g;
            j->row = (long long)order[t] * FG_GEMM_TILE_ROWS, j->col = col;
            push(x, (qop){.kind = Q_HOST, .fn = run_gemm_block, .arg = j});
        }
    return FG_OK;
}

static fg_status f_launch(fg_driver *d, void *fn, const fg_launch_cfg *c, void *stream,
                          void **params)
{
    (void)c;
    fstream *x = stream_of(D(d), stream);
    const char *sym = fn, *w = sym ? strrchr(sym, 'w') : NULL;
    if (x && sym && strncmp(sym, "overlap_gemm_", 13) == 0)
        return launch_gemm(D(d), x, sym, params);
    if (!x || !w || strncmp(sym, "overlap_reduce_", 15) != 0)
        return bad("launch of %s on %p: not the reduction or the overlap GEMM on a stream of "
                   "device %d", sym ? sym : "(null)", stream, d->ordinal);
    gen_reduce *j = malloc(sizeof *j);
    cr_assert(j);
    int rank, vecs;
    memcpy(&j->own, params[0], sizeof j->own);
    memcpy(&j->recv, params[1], sizeof j->recv);
    memcpy(&j->out, params[2], sizeof j->out);
    memcpy(&rank, params[3], sizeof rank);
    memcpy(&vecs, params[4], sizeof vecs);
    j->world = (unsigned)atoi(w + 1), j->rank = (unsigned)rank;
    j->elems = (long long)vecs * 8;   /* 16-byte vectors of 2-byte elements */
    if (!find_region(j->own, (size_t)j->elems * 2) || !find_region(j->out, (size_t)j->elems * 2) ||
        !find_region(j->recv, (size_t)j->world * j->elems * 2)) {
        free(j);
        return bad("reduction launch on device %d outside device memory", d->ordinal);
    }
    D(d)->launches++;
    push(x, (qop){.kind = Q_HOST, .fn = run_generated_reduce, .arg = j});
    return FG_OK;
}

static const fg_driver_ops fake_ops = {
    .close = f_close, .alloc = f_alloc, .zero = f_zero, .free = f_free, .copy = f_copy,
    .sync = f_sync, .make_current = f_ok, .load = f_load, .unload = f_unload,
    .configure = f_configure, .occupancy = f_occupancy, .launch = f_launch,
    .stream_create = f_stream_create, .stream_destroy = f_stream_destroy,
    .stream_idle = f_stream_idle, .event_create = f_event_create,
    .event_destroy = f_event_destroy, .event_record = f_event_record,
    .stream_wait_event = f_stream_wait_event, .copy_async = f_copy_async,
    .read_async = f_read_async, .write_flag = f_write_flag, .wait_flag = f_wait_flag, .ipc_export = f_ipc_export,
    .ipc_open = f_ipc_open, .ipc_close = f_ipc_close, .enable_peer = f_enable_peer,
};

/* A backend without the executor's ops (a HIP runtime lacking stream memory operations or IPC). */
static const fg_driver_ops plain_ops = {
    .close = f_close, .alloc = f_alloc, .zero = f_zero, .free = f_free, .copy = f_copy,
    .sync = f_sync, .make_current = f_ok,
};

static fdev *fake_open(const fg_driver_ops *ops)
{
    cr_assert(ndevs < MAXDEV);
    fdev *f = calloc(1, sizeof *f);
    cr_assert(f);
    f->base.ops = ops;
    f->base.ordinal = ndevs;
    f->base.caps.max_grid_x = 1 << 30;
    f->base.caps.info = (fg_device_info){.backend = FG_BACKEND_CUDA, .arch = FG_REG_ARCH_SM90A,
                                         .name = "fake", .arch_name = "sm_90",
                                         .compute_units = 4};
    f->legacy.dev = f;
    f->fail_alloc_after = f->fail_stream_after = f->fail_event_after = f->fail_copy_after = -1;
    devs[ndevs++] = f;
    return f;
}

/* Device memory of the caller's (not counted against the executor). */
static void *dev_buffer(fdev *f, size_t bytes)
{
    region *r = calloc(1, sizeof *r);
    cr_assert(r);
    r->p = calloc(1, bytes);
    cr_assert(r->p);
    r->bytes = bytes, r->dev = f, r->caller = true, r->next = regions, regions = r;
    return r->p;
}

/* Host work on a stream of f (the caller's or, from a callback, the executor's). */
static fg_status fake_host(fdev *f, void *stream, void (*fn)(void *), void *arg)
{
    fstream *x = stream_of(f, stream);
    if (!x) {
        free(arg);
        return bad("host op on %p: no live stream of device %d", stream, f->base.ordinal);
    }
    push(x, (qop){.kind = Q_HOST, .fn = fn, .arg = arg});
    return FG_OK;
}

static void fake_gate(fdev *f, void *stream, const volatile int *gate)
{
    fstream *x = stream_of(f, stream);
    cr_assert(x);
    push(x, (qop){.kind = Q_GATE, .gate = gate});
}

static void free_queue(fstream *s)
{
    while (s->head) {
        qop *q = s->head;
        s->head = q->next;
        free(q->arg);
        free(q);
    }
    s->tail = NULL;
}

static void fake_teardown(void)
{
    for (int i = 0; i < ndevs; i++) {
        fdev *f = devs[i];
        free_queue(&f->legacy);
        while (f->streams) {
            fstream *s = f->streams;
            f->streams = s->next_all;
            free_queue(s);
            free(s);
        }
        while (f->events) {
            fevent *e = f->events;
            f->events = e->next;
            free(e);
        }
        free(f);
        devs[i] = NULL;
    }
    while (regions) {
        region *r = regions;
        regions = r->next;
        free(r->p);
        free(r);
    }
    ndevs = 0, eager = false, sched = S_SWEEP, shuffle = 0, favor = 0;
    misuse = 0, misuse_why[0] = '\0';
}

TestSuite(overlap_exec, .fini = fake_teardown, .timeout = 60);

/* ---- the ranks ---- */

/* a row block of ROWS x N f16 is 192 bytes: whole 16-byte vectors, as the
 * generated reduction needs; ROWS splits into 2, 3 and 4 chunk_overlap pieces */
enum { MAXW = 6, ROWS = 12, N = 8, K = 7, CALLS = 3 };
/* No GEMM or sum here reaches it, nor wraps uint16: a product term is below
 * 17 x 13, a row of A x B below K of them (1344), an RS sum below MAXW x 1344. */
#define POISON 0xBEEF
_Static_assert(MAXW * K * 16 * 12 < POISON, "the sums stay below POISON");

typedef struct rank {
    fdev *dev;
    fg_context *ctx;
    fgrt_overlap *x;
    fgrt_overlap_args args;
    uint16_t *a, *c, *out;      /* the caller's device buffers */
    uint16_t B[CALLS][K * N];   /* this rank's B of each call: the callback's own */
    unsigned call;              /* the call being enqueued (picks B and the log slot) */
    uint16_t *log;              /* [CALLS][m, N]: what each call's GEMMs computed, as they ran */
    uint16_t *rlog;             /* [CALLS][m / world, N]: what each call's reduction computed */
    uint16_t *staged;           /* [CALLS][m, K]: inputs the caller's stream writes into a */
    uint16_t *snap;             /* the output as the caller's stream saw it after each call */
    uint16_t *poison;           /* POISON, [m, max(K, N)]: what the caller's stream poisons
                                   a and c with */
    void *caller;               /* a stream of the caller's (NULL: not made yet) */
    volatile int gate;
    int gemm_fail_after;        /* the callback fails once this many succeeded (-1: never) */
    int gemms, accs, reduces, acrosses, bad_cb;   /* accs: GEMMs that added a running sum */
} rank_t;

typedef struct world {
    unsigned n;
    fgrt_collective coll;
    fgrt_schedule sched;
    long long m;
    unsigned fixed;             /* ranks (bits) whose inputs stay those of call 0 */
    rank_t r[MAXW];
} world;

static const char *coll_name(fgrt_collective c)
{
    return c == FGRT_AG_GEMM ? "ag_gemm" : "gemm_rs";
}

static uint16_t a_val(unsigned call, unsigned rank, long long i, long long l)
{
    return (uint16_t)((call * 5 + rank * 3 + (unsigned)i * 7 + (unsigned)l * 11) % 17);
}

static uint16_t b_val(unsigned call, unsigned rank, long long l, long long j)
{
    return (uint16_t)(((unsigned)l * 3 + (unsigned)j * 5 + rank * 2 + call * 4 + 1) % 13);
}

/* Rank `rank`'s a as the caller writes it for call `call`: AG its shard
 * (row block `rank` of the gathered A), RS the whole A. */
static uint16_t input(const world *w, unsigned call, unsigned rank, long long i, long long l)
{
    const unsigned owner = w->coll == FGRT_AG_GEMM ? (unsigned)(i / ROWS) : rank;
    return a_val(w->fixed >> owner & 1 ? 0 : call, owner, i, l);
}

/* AG: row i of rank r's C = gathered A x B_r.  RS: row i of rank r's block
 * of the sum over p of A_p x B_p. */
static uint16_t expected(const world *w, unsigned call, unsigned r, long long i, long long j)
{
    uint32_t acc = 0;
    if (w->coll == FGRT_AG_GEMM) {
        for (long long l = 0; l < K; l++)
            acc += (uint32_t)input(w, call, (unsigned)(i / ROWS), i, l) *
                   w->r[r].B[call][l * N + j];
        return (uint16_t)acc;
    }
    for (unsigned p = 0; p < w->n; p++)
        for (long long l = 0; l < K; l++)
            acc += (uint32_t)input(w, call, p, r * ROWS + i, l) * w->r[p].B[call][l * N + j];
    return (uint16_t)acc;
}

/* What rank i's GEMM of row `row` computed in call `call`: AG gathered A x
 * B; RS its own partial A x B, or under chunk_overlap the ring's running sum
 * of block d: the partials of ranks d + 1, d + 2, ..., i (all of them at
 * the own block, whose sum is expected()). */
static uint16_t logged(const world *w, unsigned call, unsigned i, long long row, long long j)
{
    const bool ring = w->coll == FGRT_GEMM_RS && w->sched == FGRT_CHUNK_OVERLAP;
    uint32_t acc = 0;
    for (unsigned p = ring ? (unsigned)(row / ROWS + 1) % w->n : i;; p = (p + 1) % w->n) {
        for (long long l = 0; l < K; l++)
            acc += (uint32_t)input(w, call, p, row, l) * w->r[p].B[call][l * N + j];
        if (p == i)
            return (uint16_t)acc;
    }
}

/* ---- the caller's callbacks: host ops on the executor's stream ---- */

typedef struct gemm_job {
    const uint16_t *a, *b, *acc;   /* acc: NULL, or the running sum added (chunk_overlap RS) */
    uint16_t *c, *log;   /* log: the same rows of the call's log */
    long long rows;
} gemm_job;

/* c = a x B + acc, in uint32 then stored as uint16 as expected() does (no
 * sum here wraps: see POISON) */
static void run_gemm(void *p)
{
    const gemm_job *g = p;
    for (long long i = 0; i < g->rows; i++)
        for (long long j = 0; j < N; j++) {
            uint32_t acc = g->acc ? g->acc[i * N + j] : 0;
            for (long long l = 0; l < K; l++)
                acc += (uint32_t)g->a[i * K + l] * g->b[l * N + j];
            g->c[i * N + j] = g->log[i * N + j] = (uint16_t)acc;
        }
}

/* Whole rows of `base` [m, width], `rows` of them from p on. */
static bool rows_of(const uint16_t *base, long long m, long long width, const void *p,
                    long long rows)
{
    const uintptr_t b = (uintptr_t)base, q = (uintptr_t)p, row = (uintptr_t)width * 2;
    return q >= b && (q - b) % row == 0 && rows > 0 &&
           (q - b) / row + (uintptr_t)rows <= (uintptr_t)m;
}

/* The rows one GEMM of the schedule covers: all of m (serial_ce), a row
 * block, or (chunk_overlap) a piece of one; AG's own block stays whole. */
static bool gemm_rows_ok(const rank_t *r, long long first, long long rows)
{
    const fgrt_overlap_args *a = &r->args;
    switch (a->schedule) {
    case FGRT_SERIAL_CE: return first == 0 && rows == a->m;
    case FGRT_SHARD_OVERLAP: return first % ROWS == 0 && rows == ROWS;
    case FGRT_CHUNK_OVERLAP:
        if (a->collective == FGRT_AG_GEMM && first == (long long)a->rank * ROWS && rows == ROWS)
            return true;
        return rows == ROWS / (long long)a->chunks && first % rows == 0;
    default: return false;
    }
}

/* Checks what the executor passes: a's rows; c the same rows of c, or (RS
 * chunk_overlap, the own block: the sum is complete) of out; acc only in RS
 * chunk_overlap, in the executor's own memory (a receive slot), and there
 * at every step but the first, where the block's running sum starts (block
 * rank - 1). */
static int cb_gemm(void *user, void *stream, const void *a, const void *acc, void *c,
                   long long rows)
{
    rank_t *r = user;
    const long long m = r->args.m;
    const bool ring = r->args.collective == FGRT_GEMM_RS && r->args.schedule == FGRT_CHUNK_OVERLAP;
    if (!stream || !rows_of(r->a, m, K, a, rows)) {
        r->bad_cb++;
        return 1;
    }
    const long long first = ((const uint16_t *)a - r->a) / K;
    const unsigned block = (unsigned)(first / ROWS), w = r->args.world;
    const bool own = ring && block == r->args.rank;
    const region *ar = acc ? find_region(acc, (size_t)rows * N * 2) : NULL;
    if (!gemm_rows_ok(r, first, rows) ||
        (own ? (uint16_t *)c != r->out + (first - (long long)block * ROWS) * N
             : (uint16_t *)c != r->c + first * N) ||
        (ring ? !acc != ((block + 1) % w == r->args.rank) : acc != NULL) ||
        (acc && (!ar || ar->dev != r->dev || ar->caller))) {
        r->bad_cb++;
        return 1;
    }
    if (r->gemm_fail_after >= 0 && r->gemms >= r->gemm_fail_after)
        return 1;
    gemm_job *g = malloc(sizeof *g);
    cr_assert(g);
    uint16_t *log = r->log + (size_t)r->call * m * N + first * N;
    *g = (gemm_job){.a = a, .b = r->B[r->call], .acc = acc, .c = c, .log = log, .rows = rows};
    r->gemms++, r->accs += acc != NULL;
    return fake_host(r->dev, stream, run_gemm, g) == FG_OK ? 0 : 1;
}

typedef struct reduce_job {
    const uint16_t *own, *recv;
    uint16_t *out, *log;
    unsigned world, rank;
    long long elems;
} reduce_job;

static void run_reduce(void *p)
{
    const reduce_job *j = p;
    for (long long e = 0; e < j->elems; e++) {
        uint32_t acc = j->own[e];
        for (unsigned q = 0; q < j->world; q++)
            if (q != j->rank)
                acc += j->recv[(size_t)q * j->elems + e];
        j->out[e] = j->log[e] = (uint16_t)acc;
    }
}

/* Whether p is `bytes` of the executor's own memory on r's device. */
static bool executors(const rank_t *r, const void *p, size_t bytes)
{
    const region *x = find_region(p, bytes);
    return x && x->dev == r->dev && !x->caller;
}

/* Flat: the rank's own block of its partials and every receive slot into the
 * caller's out.  The hierarchical plan's (nodes of g): a block of the rank's
 * column (the blocks at its place), its node's g slots, into the executor's
 * node sums. */
static int cb_reduce(void *user, void *stream, const void *own, const void *recv, void *out,
                     unsigned world, unsigned rank, long long elems)
{
    rank_t *r = user;
    const unsigned g = r->args.node_ranks;
    /* the hierarchical plan's last: its node's sum plus the other nodes', into out */
    const bool across = g && out == r->out;
    const bool own_ok =
        across ? executors(r, own, (size_t)elems * 2)
        : g    ? rows_of(r->c, r->args.m, N, own, ROWS) &&
                  ((const uint16_t *)own - r->c) / (ROWS * N) % g == rank
               : own == r->c + (size_t)rank * ROWS * N;
    const unsigned want_world = across ? r->args.world / g : g ? g : r->args.world;
    const unsigned want_rank = across ? r->args.rank / g : g ? r->args.rank % g : r->args.rank;
    if (!stream || world != want_world || rank != want_rank || elems != ROWS * N || !own_ok ||
        (g && !across ? !executors(r, out, (size_t)elems * 2) : out != r->out) ||
        !executors(r, recv, (size_t)world * elems * 2)) {
        r->bad_cb++;
        return 1;
    }
    reduce_job *j = malloc(sizeof *j);
    cr_assert(j);
    /* (the hierarchical plan's node sums are checked through out, by the total) */
    *j = (reduce_job){.own = own, .recv = recv, .out = out,
                      .log = g ? out : r->rlog + (size_t)r->call * elems, .world = world,
                      .rank = rank, .elems = elems};
    r->reduces++;
    return fake_host(r->dev, stream, run_reduce, j) == FG_OK ? 0 : 1;
}

/* The hierarchical plan's step between nodes, as NCCL's: each member posts
 * what it sends, waits until every member of its place has, takes what
 * member node - s sent it (AG: that member's block, into its rows of A;
 * RS: that node's sum of its block), and waits until every member has, so
 * no source is overwritten before it was read (a step ends on every member
 * together).  One rendezvous per place, call and step. */
typedef struct across_meet {
    const void *src[MAXW];           /* what member i sends: AG its own block, RS a sum */
    int arrived, left;
    volatile int all_arrived, all_left;
} across_meet;
static across_meet meets[MAXW][CALLS][MAXW];
static bool across_aborted;   /* the engine aborted its NCCL: every meet open, nothing moved */

/* What an engine does when a rank of another node failed: NCCL's abort.
 * Every member still waiting passes, and no data moves. */
static void abort_meets(void)
{
    across_aborted = true;
    for (unsigned p = 0; p < MAXW; p++)
        for (unsigned c = 0; c < CALLS; c++)
            for (unsigned s = 0; s < MAXW; s++)
                meets[p][c][s].all_arrived = meets[p][c][s].all_left = 1;
}

typedef struct across_job {
    across_meet *meet;
    fgrt_collective c;
    unsigned nodes, node, step;
    void *blocks[MAXW];
    void *out;
    long long elems;
} across_job;

static void across_post(void *p)
{
    const across_job *j = p;
    j->meet->src[j->node] = j->blocks[j->c == FGRT_AG_GEMM ? j->node
                                                          : (j->node + j->step) % j->nodes];
    if (++j->meet->arrived == (int)j->nodes)
        j->meet->all_arrived = 1;
}

static void across_take(void *p)
{
    const across_job *j = p;
    const unsigned from = (j->node + j->nodes - j->step) % j->nodes;
    uint16_t *to = j->c == FGRT_AG_GEMM ? j->blocks[from] : j->out;
    for (long long e = 0; !across_aborted && e < j->elems; e++)
        to[e] = ((const uint16_t *)j->meet->src[from])[e];
    if (++j->meet->left == (int)j->nodes)
        j->meet->all_left = 1;
}

/* Checks what the executor passes: a step 1 .. nodes - 1; AG the rows of A
 * at this rank's place in every node (its own block among them); RS its
 * node sums (contiguous, its own memory) and a block of its own memory to
 * receive into. */
static int cb_across(void *user, void *stream, fgrt_collective c, unsigned nodes, unsigned node,
                     unsigned step, void *const *blocks, void *out, long long elems)
{
    rank_t *r = user;
    const unsigned g = r->args.node_ranks, place = r->args.rank % g;
    const bool ag = c == FGRT_AG_GEMM;
    bool ok = stream && g && c == r->args.collective && nodes == r->args.world / g &&
              node == r->args.rank / g && elems == ROWS * (ag ? K : N) && step >= 1 &&
              step < nodes && (ag ? !out : executors(r, out, (size_t)elems * 2));
    for (unsigned i = 0; ok && i < nodes; i++)
        ok = ag ? blocks[i] == r->a + ((size_t)i * g + place) * ROWS * K
                : blocks[i] == (uint16_t *)blocks[0] + (size_t)i * elems &&
                      executors(r, blocks[i], (size_t)elems * 2);
    if (!ok) {
        r->bad_cb++;
        return 1;
    }
    across_meet *meet = &meets[place][r->call][step];
    across_job *post = malloc(sizeof *post), *take = malloc(sizeof *take);
    cr_assert(post && take);
    *post = (across_job){.meet = meet, .c = c, .nodes = nodes, .node = node, .step = step,
                         .out = out, .elems = elems};
    memcpy(post->blocks, blocks, nodes * sizeof *blocks);
    *take = *post;
    r->acrosses++;
    cr_assert_eq(fake_host(r->dev, stream, across_post, post), FG_OK);
    fake_gate(r->dev, stream, &meet->all_arrived);
    cr_assert_eq(fake_host(r->dev, stream, across_take, take), FG_OK);
    fake_gate(r->dev, stream, &meet->all_left);
    return 0;
}

typedef struct copy_job {
    void *dst;
    const void *src;
    size_t bytes;
} copy_job;

static void run_copy(void *p)
{
    const copy_job *j = p;
    memcpy(j->dst, j->src, j->bytes);
}

static void on_stream_copy(rank_t *r, void *stream, void *dst, const void *src, size_t bytes)
{
    copy_job *j = malloc(sizeof *j);
    cr_assert(j);
    *j = (copy_job){dst, src, bytes};
    cr_assert_eq(fake_host(r->dev, stream, run_copy, j), FG_OK);
}

/* ---- a world of ranks, one fake device each ---- */

/* RS without a reduce callback: the registry's overlap_reduce entries, as
 * `generate` emits them (a fixed grid, keyed by world size). */
static bool use_generated;
static unsigned use_lanes;   /* fgrt_overlap_args.lanes of world_open's ranks */
static unsigned use_nodes;   /* fgrt_overlap_args.node_ranks of world_open's ranks */
/* RS with neither a reduce callback nor the generated reduction in the
 * registry: what chunk_overlap, whose GEMMs add the partials, must accept. */
static bool no_reduction;
static const unsigned char generated_image[16] = {1};
static const size_t generated_image_size = sizeof generated_image;
#define GENERATED(w)                                                                               \
    {.name = "overlap_reduce_sm90a_f16_w" #w, .family = "overlap_reduce", .op = "overlap_reduce", \
     .arch = FG_REG_ARCH_SM90A, .dtype = FG_REG_F16, .ndims = 1, .dims = {w},                      \
     .grid_rule = FG_REG_GRID_FIXED, .grid = {64, 1, 1}, .block = {256, 1, 1},                     \
     .cluster = {1, 1, 1}, .image = generated_image, .image_size = &generated_image_size}
static const fg_kernel_entry generated[] = {GENERATED(2), GENERATED(3), GENERATED(4),
                                             GENERATED(5), GENERATED(6)};

/* n ranks of collective c under schedule s, `chunks` passed to create as
 * it is (chunk_overlap: 2..4, which ROWS splits into; else 0 or 1). */
static void world_open(world *w, unsigned n, fgrt_collective c, fgrt_schedule s, unsigned chunks,
                       double timeout, bool connect)
{
    memset(w, 0, sizeof *w);
    memset(meets, 0, sizeof meets);
    across_aborted = false;
    w->n = n, w->coll = c, w->sched = s, w->m = (long long)ROWS * n;
    const bool rs = c == FGRT_GEMM_RS;
    for (unsigned i = 0; i < n; i++) {
        rank_t *r = &w->r[i];
        r->dev = fake_open(&fake_ops);
        /* a context with no kernels (the executor needs only the driver), or
         * with the generated reductions when the test asks for them */
        cr_assert_eq(fg_context_create(&r->dev->base, NULL, use_generated ? generated : NULL,
                                       use_generated ? sizeof generated / sizeof generated[0] : 0,
                                       &r->ctx),
                     FG_OK, "%s", fg_last_error());
        r->a = dev_buffer(r->dev, (size_t)w->m * K * 2);
        r->c = dev_buffer(r->dev, (size_t)w->m * N * 2);
        r->out = rs ? dev_buffer(r->dev, (size_t)ROWS * N * 2) : NULL;
        r->staged = calloc((size_t)CALLS * w->m * K, 2);
        r->snap = calloc((size_t)CALLS * w->m * N, 2);
        r->poison = malloc((size_t)w->m * (K > N ? K : N) * 2);
        r->log = calloc((size_t)CALLS * w->m * N, 2);
        r->rlog = calloc((size_t)CALLS * ROWS * N, 2);
        cr_assert(r->staged && r->snap && r->poison && r->log && r->rlog);
        for (long long e = 0; e < w->m * (K > N ? K : N); e++)
            r->poison[e] = POISON;
        r->gemm_fail_after = -1;
        for (long long l = 0; l < K; l++)
            for (long long j = 0; j < N; j++)
                for (unsigned call = 0; call < CALLS; call++)
                    r->B[call][l * N + j] = b_val(call, i, l, j);
        r->args = (fgrt_overlap_args){
            .collective = c, .schedule = s, .world = n, .rank = i, .chunks = chunks,
            .lanes = use_lanes, .m = w->m,
            .n = N, .k = K, .dtype = FG_REG_F16, .a = r->a, .c = r->c, .out = r->out,
            .gemm = cb_gemm, .reduce = rs && !use_generated && !no_reduction ? cb_reduce : NULL,
            .user = r, .timeout_s = timeout, .node_ranks = use_nodes, .across = cb_across};
        cr_assert_eq(fgrt_overlap_create(r->ctx, &r->args, &r->x), FG_OK, "rank %u: %s", i,
                     fg_last_error());
    }
    if (!connect)
        return;
    fgrt_overlap_handle h[MAXW];
    for (unsigned i = 0; i < n; i++)
        cr_assert_eq(fgrt_overlap_export(w->r[i].x, &h[i]), FG_OK);
    for (unsigned i = 0; i < n; i++) {
        cr_assert_eq(fgrt_overlap_connect(w->r[i].x, h), FG_OK, "rank %u: %s", i,
                     fg_last_error());
        /* one process: peer access to every other device (the node's), no IPC */
        cr_assert_eq(w->r[i].dev->enable_peers, (int)(use_nodes ? use_nodes : n) - 1);
        cr_assert_eq(w->r[i].dev->ipc_opens, 0);
    }
}

/* Destroys everything and checks that nothing the executor made outlives it. */
static void world_close(world *w)
{
    for (unsigned i = 0; i < w->n; i++)
        fgrt_overlap_destroy(w->r[i].x);
    for (unsigned i = 0; i < w->n; i++) {
        rank_t *r = &w->r[i];
        if (r->caller)
            fake_ops.stream_destroy(&r->dev->base, r->caller);
        cr_assert_eq(r->dev->live_allocs, 0, "rank %u leaks %d allocations", i,
                     r->dev->live_allocs);
        cr_assert_eq(r->dev->live_streams, 0, "rank %u leaks %d streams", i,
                     r->dev->live_streams);
        cr_assert_eq(r->dev->live_events, 0, "rank %u leaks %d events", i, r->dev->live_events);
        cr_assert_eq(r->dev->busy_destroyed, 0, "rank %u destroyed %d busy streams", i,
                     r->dev->busy_destroyed);
        cr_assert_eq(r->bad_cb, 0, "rank %u: a callback got bad arguments", i);
        fg_shutdown(r->ctx);
        cr_assert_eq(r->dev->closes, 1);
        free(r->staged);
        free(r->snap);
        free(r->poison);
        free(r->log);
        free(r->rlog);
    }
    cr_assert_eq(misuse, 0, "%d misuses of the driver, the first: %s", misuse, misuse_why);
}

/* The caller's side of one call on rank i: outputs and peer-written input
 * blocks poisoned, its inputs written (through its stream, behind a closed
 * gate, when gated), the call enqueued, and a snapshot of the output behind
 * it on the same stream. */
static void start_call(world *w, unsigned call, unsigned i, void *stream, bool gated)
{
    rank_t *r = &w->r[i];
    const bool ag = w->coll == FGRT_AG_GEMM;
    const long long first = ag ? (long long)i * ROWS : 0, rows = ag ? ROWS : w->m;
    for (long long e = 0; e < w->m * K; e++)
        r->a[e] = POISON;
    for (long long e = 0; e < w->m * N; e++)
        r->c[e] = POISON, r->snap[e] = POISON;
    for (long long e = 0; r->out && e < ROWS * N; e++)
        r->out[e] = POISON;
    uint16_t *in = gated ? r->staged : r->a;
    for (long long row = first; row < first + rows; row++)
        for (long long l = 0; l < K; l++)
            in[row * K + l] = input(w, call, i, row, l);
    if (gated) {
        r->gate = 0;
        fake_gate(r->dev, stream, &r->gate);
        on_stream_copy(r, stream, r->a + first * K, r->staged + first * K,
                       (size_t)rows * K * 2);
    }
    r->call = call;
    const fg_status st = fgrt_overlap_run(r->x, stream);
    cr_assert_eq(st, FG_OK, "call %u rank %u: %s: %s", call, i, fg_status_string(st),
                 fg_last_error());
    on_stream_copy(r, stream, r->snap, ag ? r->c : r->out, (size_t)(ag ? w->m : ROWS) * N * 2);
}

/* Rank i's output of call `call` (started with start_call) against the reference. */
static void check_rank(const world *w, unsigned call, unsigned i, const char *what)
{
    const bool ag = w->coll == FGRT_AG_GEMM;
    const rank_t *r = &w->r[i];
    const uint16_t *got = ag ? r->c : r->out;
    for (long long row = 0; row < (ag ? w->m : ROWS); row++)
        for (long long j = 0; j < N; j++) {
            const uint16_t want = expected(w, call, i, row, j);
            cr_assert_eq(got[row * N + j], want, "%s call %u rank %u [%lld,%lld]: %#x, want %#x",
                         what, call, i, row, j, got[row * N + j], want);
            /* the caller's stream ran its later work after the call */
            cr_assert_eq(r->snap[row * N + j], want,
                         "%s call %u rank %u [%lld,%lld]: the caller's stream saw %#x", what,
                         call, i, row, j, r->snap[row * N + j]);
        }
    if (ag)   /* every peer's shard landed in its block of the gathered A */
        for (long long e = 0; e < w->m * K; e++)
            cr_assert_eq(r->a[e], input(w, call, i, e / K, e % K),
                         "%s call %u rank %u: gathered A [%lld,%lld]", what, call, i, e / K,
                         e % K);
}

static void check_call(const world *w, unsigned call, const char *what)
{
    for (unsigned i = 0; i < w->n; i++)
        check_rank(w, call, i, what);
}

/* How the fake runs its streams in a test (see sched): param is the favored
 * device of S_PRIORITY and S_PRIORITY_OLDEST, the seed's index of S_RANDOM. */
typedef struct mode {
    bool eager;
    int sched;
    unsigned param;
} mode;

static const mode modes[] = {
    {false, S_SWEEP, 0},           {true, S_SWEEP, 0},           {false, S_PRIORITY, 0},
    {false, S_PRIORITY, 1},        {false, S_PRIORITY, 2},       {true, S_PRIORITY, 1},
    {false, S_PRIORITY_OLDEST, 0}, {false, S_PRIORITY_OLDEST, 1}, {false, S_PRIORITY_OLDEST, 2},
    {true, S_PRIORITY_OLDEST, 0},  {false, S_RANDOM, 1},         {false, S_RANDOM, 2},
    {false, S_RANDOM, 3},          {true, S_RANDOM, 4},
};

static void set_mode(const mode *m)
{
    eager = m->eager;
    sched = m->sched;
    favor = (int)m->param % ndevs;
    shuffle = (m->param + 1) * 0x9E3779B97F4A7C15ULL;   /* never 0 */
}

static const char *mode_name(const mode *m)
{
    static char buf[96];
    static const char *const names[] = {"sweeps", "random order, seed", "priority to device",
                                        "priority (oldest stream first) to device"};
    snprintf(buf, sizeof buf, "%s %u%s", names[m->sched], m->param, m->eager ? ", eager" : "");
    return buf;
}

/* CALLS calls with new inputs each: the ranks enqueue one after another, so
 * the earlier ones block on the later ones' flags; call 0 on the legacy
 * stream, call 1 on a stream of the caller's, call 2 behind a closed gate
 * on that stream with its inputs written by the stream itself. */
static void three_calls(fgrt_collective c, fgrt_schedule s, unsigned n, unsigned chunks,
                        const mode *md)
{
    char what[160];
    snprintf(what, sizeof what, "%s %s world %u chunks %u nodes of %u, %s", coll_name(c),
             fgrt_schedule_name(s), n, chunks, use_nodes ? use_nodes : n, mode_name(md));
    world w;
    world_open(&w, n, c, s, chunks, 5.0, true);
    set_mode(md);
    for (unsigned i = 0; i < n; i++)
        cr_assert_eq(fake_ops.stream_create(&w.r[i].dev->base, &w.r[i].caller), FG_OK);
    for (unsigned call = 0; call < CALLS; call++) {
        for (unsigned i = 0; i < n; i++) {
            start_call(&w, call, i, call == 0 ? NULL : w.r[i].caller, call == 2);
            if (i + 1 < n)   /* rank 0 cannot get past its opening barrier yet */
                cr_assert(fake_busy(w.r[0].dev), "%s call %u: rank 0 ran ahead of rank %u",
                          what, call, n - 1);
        }
        for (unsigned i = 0; i < n; i++)
            w.r[i].gate = 1;
        for (unsigned i = 0; i < n; i++) {
            const fg_status st = fgrt_overlap_wait(w.r[i].x);
            cr_assert_eq(st, FG_OK, "%s call %u rank %u: %s: %s", what, call, i,
                         fg_status_string(st), fg_last_error());
        }
        for (unsigned i = 0; i < n; i++)
            cr_assert_not(fake_busy(w.r[i].dev), "%s call %u rank %u: work left", what, call, i);
        check_call(&w, call, what);
    }
    /* each row block (or piece) multiplied once per call; chunk_overlap's RS
     * adds the running sum in all but its first step, and reduces nothing */
    const bool chunked = s == FGRT_CHUNK_OVERLAP, reduced = c == FGRT_GEMM_RS && !chunked;
    const int per_call = !chunked ? (s == FGRT_SHARD_OVERLAP ? (int)n : 1)
                         : c == FGRT_AG_GEMM ? 1 + (int)((n - 1) * chunks)
                                             : (int)(n * chunks);
    const int accs = chunked && c == FGRT_GEMM_RS ? (int)((n - 1) * chunks) : 0;
    /* the hierarchical plan sums each block of its column, one a node, then
     * the nodes' sums of its own; RS steps between nodes to every other */
    const int nodes = use_nodes ? (int)(n / use_nodes) : 0;
    const int sums = reduced ? CALLS * (use_nodes ? nodes + 1 : 1) : 0;
    const int acrosses = CALLS * (use_nodes ? nodes - 1 : 0);
    for (unsigned i = 0; i < n; i++) {
        cr_assert_eq(w.r[i].acrosses, acrosses, "%s rank %u", what, i);
        cr_assert_eq(w.r[i].gemms, CALLS * per_call, "%s rank %u: %d GEMMs", what, i,
                     w.r[i].gemms);
        cr_assert_eq(w.r[i].accs, CALLS * accs, "%s rank %u: %d GEMMs added a sum", what, i,
                     w.r[i].accs);
        cr_assert_eq(w.r[i].reduces + w.r[i].dev->launches, sums, "%s rank %u", what, i);
        cr_assert_eq(w.r[i].dev->launches, use_generated ? sums : 0,
                     "%s rank %u: the generated reduction's launches", what, i);
        /* the hierarchical plan's two sizes of sum: nodes of g, and over the nodes */
        const int kernels = use_nodes && nodes != (int)use_nodes ? 2 : 1;
        cr_assert_eq(w.r[i].dev->loads, use_generated && reduced ? kernels : 0,
                     "%s rank %u: the generated reduction's loads", what, i);
    }
    world_close(&w);
    fake_teardown();
}

typedef void (*scenario)(fgrt_collective, fgrt_schedule, unsigned, unsigned, const mode *);

/* serial_ce (chunks 0) and shard_overlap (chunks 1: both mean "no pieces") */
static void all_schedules(scenario fn, fgrt_collective c)
{
    for (unsigned n = 2; n <= MAXW; n++)
        for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
            fn(c, FGRT_SERIAL_CE, n, 0, &modes[i]);
            fn(c, FGRT_SHARD_OVERLAP, n, 1, &modes[i]);
        }
}

/* chunk_overlap with every piece count ROWS splits into, up to 4 */
static void all_chunked(scenario fn, fgrt_collective c)
{
    for (unsigned n = 2; n <= MAXW; n++)
        for (unsigned chunks = 2; chunks <= 4; chunks++)
            for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
                fn(c, FGRT_CHUNK_OVERLAP, n, chunks, &modes[i]);
}

Test(overlap_exec, ag_gemm_matches_the_reference_call_after_call)
{
    all_schedules(three_calls, FGRT_AG_GEMM);
}

Test(overlap_exec, gemm_rs_matches_the_reference_call_after_call)
{
    all_schedules(three_calls, FGRT_GEMM_RS);
}

/* The same with no reduce callback: the executor binds the registry's
 * generated reduction (one load per executor) and launches it once per call,
 * behind the peers' partials. */
Test(overlap_exec, gemm_rs_with_the_generated_reduction)
{
    use_generated = true;
    all_schedules(three_calls, FGRT_GEMM_RS);
    use_generated = false;
}

/* chunk_overlap: every piece's push flagged on its own, every piece's GEMM
 * behind its flag; RS's ring adds the partials in its GEMMs, so the reduce
 * callback given here is never called (three_calls counts its calls). */
Test(overlap_exec, ag_gemm_chunk_overlap_matches_the_reference_call_after_call)
{
    all_chunked(three_calls, FGRT_AG_GEMM);
}

Test(overlap_exec, gemm_rs_chunk_overlap_matches_the_reference_call_after_call)
{
    all_chunked(three_calls, FGRT_GEMM_RS);
}

/* The 2D order: every rank pushes to each peer on a copy lane of its own
 * (world - 1 lanes), and chunk_overlap's AG pieces on as many lanes as a
 * rank has copies, up to the 8 allowed (with one peer, its pieces at
 * once); every result exact,
 * call after call, in every mode of the fake driver.  The executor makes
 * one stream per lane more. */
Test(overlap_exec, pushes_on_several_copy_lanes_match_the_reference)
{
    for (unsigned n = 2; n <= MAXW; n++)
        for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
            use_lanes = n - 1;
            for (int c = FGRT_AG_GEMM; c <= FGRT_GEMM_RS; c++) {
                three_calls((fgrt_collective)c, FGRT_SERIAL_CE, n, 0, &modes[i]);
                three_calls((fgrt_collective)c, FGRT_SHARD_OVERLAP, n, 1, &modes[i]);
            }
            use_lanes = 2 * (n - 1) <= FGRT_MAX_LANES ? 2 * (n - 1) : FGRT_MAX_LANES;
            three_calls(FGRT_AG_GEMM, FGRT_CHUNK_OVERLAP, n, 2, &modes[i]);
        }
    use_lanes = 3;
    world w;
    world_open(&w, 4, FGRT_AG_GEMM, FGRT_SHARD_OVERLAP, 1, 5.0, false);
    for (unsigned i = 0; i < 4; i++)   /* 2 GEMM streams, 3 lanes, the host's */
        cr_assert_eq(w.r[i].dev->stream_creates, 6, "rank %u", i);
    world_close(&w);
    fake_teardown();
    use_lanes = 0;
}

/* CALLS calls enqueued back to back on each caller's stream, which poisons
 * the outputs and the peers' blocks, writes the inputs and snapshots the
 * output around each call; no host wait in between.  All is enqueued behind
 * closed gates, then the streams run: a rank that gets ahead must still not
 * push call e+1's data over what a slower peer has not consumed of call e
 * (the opening barrier's job). */
static void pipelined(fgrt_collective c, fgrt_schedule s, unsigned n, unsigned chunks,
                      const mode *md)
{
    char what[160];
    snprintf(what, sizeof what, "pipelined %s %s world %u chunks %u, %s", coll_name(c),
             fgrt_schedule_name(s), n, chunks, mode_name(md));
    world w;
    world_open(&w, n, c, s, chunks, 5.0, true);
    set_mode(md);
    const bool ag = c == FGRT_AG_GEMM;
    const long long out_elems = (ag ? w.m : ROWS) * N;
    for (unsigned i = 0; i < n; i++) {
        rank_t *r = &w.r[i];
        cr_assert_eq(fake_ops.stream_create(&r->dev->base, &r->caller), FG_OK);
        r->gate = 0;
        fake_gate(r->dev, r->caller, &r->gate);
        const long long first = ag ? (long long)i * ROWS : 0, rows = ag ? ROWS : w.m;
        for (unsigned call = 0; call < CALLS; call++) {
            uint16_t *in = r->staged + (size_t)call * w.m * K;
            for (long long row = first; row < first + rows; row++)
                for (long long l = 0; l < K; l++)
                    in[row * K + l] = input(&w, call, i, row, l);
            on_stream_copy(r, r->caller, r->a, r->poison, (size_t)w.m * K * 2);
            on_stream_copy(r, r->caller, r->c, r->poison, (size_t)w.m * N * 2);
            if (r->out)
                on_stream_copy(r, r->caller, r->out, r->poison, (size_t)ROWS * N * 2);
            on_stream_copy(r, r->caller, r->a + first * K, in + first * K, (size_t)rows * K * 2);
            r->call = call;
            const fg_status st = fgrt_overlap_run(r->x, r->caller);
            cr_assert_eq(st, FG_OK, "%s call %u rank %u: %s", what, call, i, fg_last_error());
            on_stream_copy(r, r->caller, r->snap + (size_t)call * out_elems, ag ? r->c : r->out,
                           (size_t)out_elems * 2);
        }
    }
    for (unsigned i = 0; i < n; i++)
        w.r[i].gate = 1;
    for (unsigned i = 0; i < n; i++) {
        const fg_status st = fgrt_overlap_wait(w.r[i].x);
        cr_assert_eq(st, FG_OK, "%s rank %u: %s: %s", what, i, fg_status_string(st),
                     fg_last_error());
    }
    for (unsigned i = 0; i < n; i++)
        cr_assert_not(fake_busy(w.r[i].dev), "%s rank %u: work left", what, i);
    for (unsigned i = 0; i < n; i++)
        for (unsigned call = 0; call < CALLS; call++)
            for (long long e = 0; e < out_elems; e++) {
                const uint16_t got = w.r[i].snap[(size_t)call * out_elems + e];
                const uint16_t want = expected(&w, call, i, e / N, e % N);
                cr_assert_eq(got, want, "%s call %u rank %u [%lld,%lld]: %#x, want %#x", what,
                             call, i, e / N, e % N, got, want);
            }
    world_close(&w);
    fake_teardown();
}

Test(overlap_exec, ag_gemm_pipelined_on_the_callers_stream)
{
    all_schedules(pipelined, FGRT_AG_GEMM);
}

Test(overlap_exec, gemm_rs_pipelined_on_the_callers_stream)
{
    all_schedules(pipelined, FGRT_GEMM_RS);
}

Test(overlap_exec, ag_gemm_chunk_overlap_pipelined_on_the_callers_stream)
{
    all_chunked(pipelined, FGRT_AG_GEMM);
}

Test(overlap_exec, gemm_rs_chunk_overlap_pipelined_on_the_callers_stream)
{
    all_chunked(pipelined, FGRT_GEMM_RS);
}

/* RS chunk_overlap with no reduce callback and no generated reduction in the
 * registry: create binds nothing and the calls still sum; with the generated
 * reduction in the registry it neither loads nor launches it (three_calls
 * counts both). */
Test(overlap_exec, gemm_rs_chunk_overlap_needs_no_reduction)
{
    no_reduction = true;
    all_chunked(three_calls, FGRT_GEMM_RS);
    all_chunked(pipelined, FGRT_GEMM_RS);
    no_reduction = false;
    use_generated = true;
    all_chunked(three_calls, FGRT_GEMM_RS);
    use_generated = false;
}

/* Calls that a rank starts on streams not ordered after its previous call
 * (legal where its own inputs stay as they are): then only the opening
 * barrier keeps call e+1's pushes and GEMMs behind call e on every rank.
 * Rank 0 writes new inputs for every call, in order on one stream; the
 * other ranks keep theirs and alternate between two unordered streams; B
 * changes every call.  A later call may overwrite the outputs before the
 * caller could read them, so what each call's GEMMs and reduction computed
 * is checked from the callbacks' logs, taken as they ran. */
static void unordered(fgrt_collective c, fgrt_schedule s, unsigned n, unsigned chunks,
                      const mode *md)
{
    char what[160];
    snprintf(what, sizeof what, "unordered %s %s world %u chunks %u, %s", coll_name(c),
             fgrt_schedule_name(s), n, chunks, mode_name(md));
    world w;
    world_open(&w, n, c, s, chunks, 5.0, true);
    set_mode(md);
    w.fixed = ((1u << n) - 1) & ~1u;
    const bool ag = c == FGRT_AG_GEMM;
    void *other[MAXW] = {NULL};
    for (unsigned i = 0; i < n; i++) {
        rank_t *r = &w.r[i];
        const long long first = ag ? (long long)i * ROWS : 0, rows = ag ? ROWS : w.m;
        r->gate = 0;
        cr_assert_eq(fake_ops.stream_create(&r->dev->base, &r->caller), FG_OK);
        fake_gate(r->dev, r->caller, &r->gate);
        if (i) {
            cr_assert_eq(fake_ops.stream_create(&r->dev->base, &other[i]), FG_OK);
            fake_gate(r->dev, other[i], &r->gate);
            for (long long row = first; row < first + rows; row++)
                for (long long l = 0; l < K; l++)
                    r->a[row * K + l] = input(&w, 0, i, row, l);
        }
        for (unsigned call = 0; call < CALLS; call++) {
            if (i == 0) {
                uint16_t *in = r->staged + (size_t)call * w.m * K;
                for (long long row = first; row < first + rows; row++)
                    for (long long l = 0; l < K; l++)
                        in[row * K + l] = input(&w, call, i, row, l);
                on_stream_copy(r, r->caller, r->a + first * K, in + first * K,
                               (size_t)rows * K * 2);
            }
            r->call = call;
            const fg_status st = fgrt_overlap_run(r->x, i && call % 2 ? other[i] : r->caller);
            cr_assert_eq(st, FG_OK, "%s call %u rank %u: %s", what, call, i, fg_last_error());
        }
    }
    for (unsigned i = 0; i < n; i++)
        w.r[i].gate = 1;
    for (unsigned i = 0; i < n; i++) {
        const fg_status st = fgrt_overlap_wait(w.r[i].x);
        cr_assert_eq(st, FG_OK, "%s rank %u: %s: %s", what, i, fg_status_string(st),
                     fg_last_error());
    }
    for (unsigned i = 0; i < n; i++) {
        const rank_t *r = &w.r[i];
        cr_assert_not(fake_busy(r->dev), "%s rank %u: work left", what, i);
        for (unsigned call = 0; call < CALLS; call++) {
            const uint16_t *log = r->log + (size_t)call * w.m * N;
            const uint16_t *rlog = r->rlog + (size_t)call * ROWS * N;
            for (long long row = 0; row < w.m; row++)
                for (long long j = 0; j < N; j++)
                    cr_assert_eq(log[row * N + j], logged(&w, call, i, row, j),
                                 "%s call %u rank %u: GEMM row %lld col %lld", what, call, i,
                                 row, j);
            for (long long e = 0; !ag && s != FGRT_CHUNK_OVERLAP && e < ROWS * N; e++)
                cr_assert_eq(rlog[e], expected(&w, call, i, e / N, e % N),
                             "%s call %u rank %u: reduced [%lld,%lld]", what, call, i, e / N,
                             e % N);
        }
        if (other[i])
            fake_ops.stream_destroy(&r->dev->base, other[i]);
    }
    world_close(&w);
    fake_teardown();
}

Test(overlap_exec, ag_gemm_calls_on_unordered_streams)
{
    all_schedules(unordered, FGRT_AG_GEMM);
}

Test(overlap_exec, gemm_rs_calls_on_unordered_streams)
{
    all_schedules(unordered, FGRT_GEMM_RS);
}

/* The ring's receive slots and partials are rewritten every call: only the
 * opening barrier keeps call e+1's pushes off what call e's GEMMs read. */
Test(overlap_exec, ag_gemm_chunk_overlap_calls_on_unordered_streams)
{
    all_chunked(unordered, FGRT_AG_GEMM);
}

Test(overlap_exec, gemm_rs_chunk_overlap_calls_on_unordered_streams)
{
    all_chunked(unordered, FGRT_GEMM_RS);
}

/* Exports that cannot make IPC handles still serve ranks of one process. */
Test(overlap_exec, one_process_needs_no_ipc)
{
    world w;
    world_open(&w, 2, FGRT_GEMM_RS, FGRT_SHARD_OVERLAP, 1, 5.0, false);
    w.r[0].dev->export_fails = w.r[1].dev->export_fails = true;
    fgrt_overlap_handle h[2];
    for (unsigned i = 0; i < 2; i++)
        cr_assert_eq(fgrt_overlap_export(w.r[i].x, &h[i]), FG_OK);
    cr_assert_gt(w.r[0].dev->ipc_exports, 0, "export tried IPC");
    for (unsigned i = 0; i < 2; i++)
        cr_assert_eq(fgrt_overlap_connect(w.r[i].x, h), FG_OK, "%s", fg_last_error());
    for (unsigned i = 0; i < 2; i++)
        start_call(&w, 0, i, NULL, false);
    for (unsigned i = 0; i < 2; i++)
        cr_assert_eq(fgrt_overlap_wait(w.r[i].x), FG_OK, "%s", fg_last_error());
    pump();
    check_call(&w, 0, "no ipc");
    world_close(&w);
}

/* ---- failures: a time limit, never a hang ---- */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* fgrt_overlap_wait on rank i: status `want` within [min_s, max_s), with
 * the rank's streams drained (its waits released); fg_last_error() is the
 * wait's message. */
static void wait_fails(world *w, unsigned i, fg_status want, double min_s, double max_s)
{
    const double t0 = now_s();
    const fg_status st = fgrt_overlap_wait(w->r[i].x);
    const double dt = now_s() - t0;
    cr_assert_eq(st, want, "rank %u: %s: %s", i, fg_status_string(st), fg_last_error());
    cr_assert(dt >= min_s && dt < max_s, "rank %u waited %.3f s", i, dt);
    cr_assert_not(fake_busy(w->r[i].dev), "rank %u: its waits were released, yet work is left",
                  i);
}

/* fgrt_overlap_wait on rank i: FG_ERR_TIMEOUT after the limit (0.05 s) and
 * well within 1 s, naming `missing`, with the rank's streams drained. */
static void expect_timeout(world *w, unsigned i, const char *missing)
{
    wait_fails(w, i, FG_ERR_TIMEOUT, 0.05, 1.0);
    cr_assert(strstr(fg_last_error(), missing), "want \"%s\" in: %s", missing, fg_last_error());
}

/* The same, and `absent` (NULL: nothing) not named: a flag that did come,
 * or (" piece") chunk_overlap's naming under another schedule. */
static void expect_timeout_without(world *w, unsigned i, const char *missing, const char *absent)
{
    expect_timeout(w, i, missing);
    cr_assert(!absent || !strstr(fg_last_error(), absent), "want no \"%s\" in: %s", absent,
              fg_last_error());
}

/* fgrt_overlap_wait on rank i after rank `failed` set its failure mark:
 * FG_ERR_PEER_FAILED at once (within the time limit, not after it), naming
 * that rank and `missing` (NULL: every flag came) but not `absent`, with the
 * rank's streams drained. */
static void expect_peer_failed(world *w, unsigned i, unsigned failed, const char *missing,
                               const char *absent)
{
    wait_fails(w, i, FG_ERR_PEER_FAILED, 0.0, 0.05);   /* (the mark was there: not the limit) */
    char who[48];
    snprintf(who, sizeof who, "rank %u failed or gave up", failed);
    cr_assert(strstr(fg_last_error(), who), "want \"%s\" in: %s", who, fg_last_error());
    cr_assert(missing ? strstr(fg_last_error(), missing) != NULL
                      : strstr(fg_last_error(), "waited for") == NULL,
              "want %s\"%s\" in: %s", missing ? "" : "no ", missing ? missing : "waited for",
              fg_last_error());
    cr_assert(!absent || !strstr(fg_last_error(), absent), "want no \"%s\" in: %s", absent,
              fg_last_error());
    /* and it stays failed */
    cr_assert_eq(fgrt_overlap_run(w->r[i].x, NULL), FG_ERR_PEER_FAILED, "%s", fg_last_error());
}

Test(overlap_exec, a_peer_that_never_runs_is_a_timeout)
{
    world w;
    world_open(&w, 2, FGRT_AG_GEMM, FGRT_SHARD_OVERLAP, 1, 0.05, true);
    start_call(&w, 0, 0, NULL, false);
    expect_timeout(&w, 0, "rank 1's start");
    /* the executor stays failed */
    cr_assert_eq(fgrt_overlap_run(w.r[0].x, NULL), FG_ERR_TIMEOUT, "%s", fg_last_error());
    cr_assert(strstr(fg_last_error(), "an earlier call failed"), "%s", fg_last_error());
    cr_assert_eq(fgrt_overlap_wait(w.r[0].x), FG_ERR_TIMEOUT);
    /* rank 1 never ran: nothing of its is queued, but it learns that rank 0
     * gave up (its release could have let pushes into rank 1's buffers) */
    cr_assert_not(fake_busy(w.r[1].dev));
    expect_peer_failed(&w, 1, 0, NULL, NULL);
    world_close(&w);
}

/* Three ranks: rank 0 gives up on rank 2, which never runs; rank 1 learns
 * it from rank 0's mark and gives up too, passing the mark on, so rank 2
 * learns that rank 0 failed first (not rank 1, which only followed). */
Test(overlap_exec, a_mark_is_passed_on_with_the_rank_that_failed_first)
{
    world w;
    world_open(&w, 3, FGRT_AG_GEMM, FGRT_SHARD_OVERLAP, 1, 0.05, true);
    start_call(&w, 0, 0, NULL, false);
    start_call(&w, 0, 1, NULL, false);
    expect_timeout(&w, 0, "rank 2's start");
    expect_peer_failed(&w, 1, 0, "rank 2's start", NULL);
    expect_peer_failed(&w, 2, 0, NULL, NULL);
    world_close(&w);
}

/* Destroy without a wait, on a call that can never finish: it drains within
 * its time limit, releasing the waits, and destroys no stream with work left. */
Test(overlap_exec, destroy_drains_a_call_that_cannot_finish)
{
    for (int c = 0; c < 2; c++) {
        world w;
        world_open(&w, 2, (fgrt_collective)c, FGRT_SHARD_OVERLAP, 1, 0.05, true);
        start_call(&w, 0, 0, NULL, false);
        cr_assert(fake_busy(w.r[0].dev), "rank 0 waits for rank 1");
        const double t0 = now_s();
        fgrt_overlap_destroy(w.r[0].x);
        const double dt = now_s() - t0;
        w.r[0].x = NULL;
        cr_assert_lt(dt, 1.0, "destroy took %.3f s", dt);
        cr_assert_eq(w.r[0].dev->busy_destroyed, 0, "destroyed a stream with work queued");
        cr_assert_not(fake_busy(w.r[0].dev));
        world_close(&w);
        fake_teardown();
    }
}

/* Rank 0's copy_async fails once `after` copies succeeded: its run fails,
 * rank 1's run succeeds and its wait times out on the flag rank 0 never set
 * (naming `missing`, not `absent`). */
static void copy_failure(fgrt_collective c, fgrt_schedule s, unsigned chunks, int after,
                         const char *missing, const char *absent)
{
    world w;
    world_open(&w, 2, c, s, chunks, 0.05, true);
    w.r[0].dev->fail_copy_after = after;
    rank_t *r0 = &w.r[0];
    for (long long e = 0; e < w.m * K; e++)   /* its inputs (start_call insists on success) */
        r0->a[e] = input(&w, 0, 0, e / K, e % K);
    fg_status st = fgrt_overlap_run(r0->x, NULL);
    cr_assert_eq(st, FG_ERR_DRIVER, "%s after %d copies: %s: %s", coll_name(c), after,
                 fg_status_string(st), fg_last_error());
    cr_assert(strstr(fg_last_error(), "copy_async failed"), "%s", fg_last_error());
    cr_assert_eq(r0->dev->copies, after);
    /* the enqueue failure released rank 0's own waits: nothing of its is left */
    cr_assert_not(fake_busy(r0->dev), "after %d copies: rank 0 still has work queued", after);
    start_call(&w, 0, 1, NULL, false);
    expect_timeout_without(&w, 1, missing, absent);
    /* rank 0 stays failed */
    cr_assert_not(fake_busy(r0->dev));
    cr_assert_eq(fgrt_overlap_wait(r0->x), FG_ERR_DRIVER, "%s", fg_last_error());
    cr_assert_eq(fgrt_overlap_run(r0->x, NULL), FG_ERR_DRIVER);
    world_close(&w);
    fake_teardown();
}

Test(overlap_exec, a_failed_copy_fails_the_run_and_times_the_peer_out)
{
    /* rank 0's copies in serial_ce at world 2: its start flag to rank 1, its
     * data (AG its shard, RS its partial of rank 1's block), then sent(1),
     * named without chunk_overlap's pieces */
    for (int c = 0; c < 2; c++) {
        copy_failure((fgrt_collective)c, FGRT_SERIAL_CE, 0, 0, "rank 0's start", NULL);
        copy_failure((fgrt_collective)c, FGRT_SERIAL_CE, 0, 1, "rank 0's sent(1)", " piece");
        copy_failure((fgrt_collective)c, FGRT_SERIAL_CE, 1, 2, "rank 0's sent(1)", " piece");
    }
}

/* How rank 1 names piece j of what rank 0 pushed to it under chunk_overlap
 * at world 2: AG "sent(1) piece j"; RS's ring has one step there, step 0. */
static const char *piece_name(fgrt_collective c, unsigned j, char *buf, size_t len)
{
    snprintf(buf, len, "sent(1) %spiece %u at", c == FGRT_GEMM_RS ? "step 0 " : "", j);
    return buf;
}

/* chunk_overlap at world 2: rank 0's start flag, then per piece j its data
 * (AG the piece of its shard, RS the piece of its partial of rank 1's block)
 * and its flag, so copies 2j + 1 and 2j + 2 belong to piece j; the peer's
 * timeout names the first piece that never came, and none that did. */
Test(overlap_exec, chunk_overlap_a_failed_copy_names_the_missing_piece)
{
    for (int c = 0; c < 2; c++)
        for (unsigned chunks = 2; chunks <= 3; chunks++) {
            const fgrt_collective coll = (fgrt_collective)c;
            copy_failure(coll, FGRT_CHUNK_OVERLAP, chunks, 0, "rank 0's start", NULL);
            for (unsigned j = 0; j < chunks; j++) {
                char name[48], missing[64], absent[48];
                snprintf(missing, sizeof missing, "rank 0's %s",
                         piece_name(coll, j, name, sizeof name));
                piece_name(coll, j - 1, absent, sizeof absent);   /* it did come */
                copy_failure(coll, FGRT_CHUNK_OVERLAP, chunks, (int)(2 * j + 1), missing,
                             j ? absent : "start");
                copy_failure(coll, FGRT_CHUNK_OVERLAP, chunks, (int)(2 * j + 2), missing,
                             j ? absent : "start");
            }
        }
}

/* RS chunk_overlap's ring at world 3 (chunks 2): rank 0 sends only to rank 1,
 * step 0 (block 2) and step 1 (block 0), each as pieces 0 and 1 (flags
 * FGRT_FLAG_SENT + 0 to 3).  Its copy 7 (step 1 piece 0) fails: rank 1 times
 * out on step 1's pieces only, while block 2's sum, which passed rank 0 at
 * step 0, still completes at rank 2. */
Test(overlap_exec, chunk_overlap_a_broken_ring_times_out_downstream_only)
{
    world w;
    world_open(&w, 3, FGRT_GEMM_RS, FGRT_CHUNK_OVERLAP, 2, 0.05, true);
    rank_t *r0 = &w.r[0];
    r0->dev->fail_copy_after = 7;   /* start to 1 and 2, 2 x (data, flag), data */
    for (long long e = 0; e < w.m * K; e++)
        r0->a[e] = input(&w, 0, 0, e / K, e % K);
    cr_assert_eq(fgrt_overlap_run(r0->x, NULL), FG_ERR_DRIVER, "%s", fg_last_error());
    cr_assert(strstr(fg_last_error(), "copy_async failed"), "%s", fg_last_error());
    start_call(&w, 0, 1, NULL, false);
    start_call(&w, 0, 2, NULL, false);
    cr_assert_eq(fgrt_overlap_wait(w.r[2].x), FG_OK, "%s", fg_last_error());
    check_rank(&w, 0, 2, "rank 2 behind a broken ring");
    expect_timeout_without(&w, 1, "rank 0's sent(1) step 1 piece 0 at", "step 0");
    cr_assert(strstr(fg_last_error(), "rank 0's sent(1) step 1 piece 1 at"), "%s",
              fg_last_error());
    cr_assert_eq(fgrt_overlap_wait(r0->x), FG_ERR_DRIVER);
    world_close(&w);
}

/* Rank 0's GEMM callback fails once `after` GEMMs were enqueued: its run
 * fails and marks rank 1, whose wait then reports the failure at once,
 * naming `missing` (not `absent`), or (missing NULL: rank 0 had pushed all
 * it owed) with every flag come and its output exact: a peer's failure fails
 * the call even so, since pushes that failure releases may land in buffers
 * still in use.  Rank 1 starts first: the failure releases rank 0's barrier,
 * so its pushes would otherwise land before rank 1's caller writes
 * (poisons) its a. */
static void gemm_failure(fgrt_collective c, fgrt_schedule s, unsigned chunks, int after,
                         const char *missing, const char *absent)
{
    world w;
    world_open(&w, 2, c, s, chunks, 0.05, true);
    w.r[0].gemm_fail_after = after;
    start_call(&w, 0, 1, NULL, false);
    for (long long e = 0; e < w.m * K; e++)
        w.r[0].a[e] = input(&w, 0, 0, e / K, e % K);
    cr_assert_eq(fgrt_overlap_run(w.r[0].x, NULL), FG_ERR_DRIVER, "%s", fg_last_error());
    cr_assert(strstr(fg_last_error(), "gemm callback failed"), "%s", fg_last_error());
    cr_assert_eq(w.r[0].gemms, after);
    expect_peer_failed(&w, 1, 0, missing, absent);
    if (!missing)
        check_rank(&w, 0, 1, "the peer of a failed GEMM");
    cr_assert_eq(fgrt_overlap_wait(w.r[0].x), FG_ERR_DRIVER);
    world_close(&w);
    fake_teardown();
}

Test(overlap_exec, a_failed_gemm_callback_fails_the_run)
{
    /* the first GEMM comes before rank 0's pushes and sent flags */
    for (int c = 0; c < 2; c++)
        gemm_failure((fgrt_collective)c, FGRT_SHARD_OVERLAP, 1, 0, "rank 0's sent(1)", " piece");
}

Test(overlap_exec, chunk_overlap_a_failed_gemm_callback_fails_the_run)
{
    for (unsigned chunks = 2; chunks <= 4; chunks++) {
        /* AG: the own block's GEMM comes before every push; after it, rank 0
         * pushes all its pieces before the peers' GEMMs, so rank 1 finishes */
        gemm_failure(FGRT_AG_GEMM, FGRT_CHUNK_OVERLAP, chunks, 0, "rank 0's sent(1) piece 0 at",
                     NULL);
        gemm_failure(FGRT_AG_GEMM, FGRT_CHUNK_OVERLAP, chunks, 1, NULL, NULL);
        /* RS: piece j's GEMM comes before piece j's push: pieces before j came */
        for (unsigned j = 0; j < chunks; j++) {
            char name[48], missing[64], absent[48];
            snprintf(missing, sizeof missing, "rank 0's %s",
                     piece_name(FGRT_GEMM_RS, j, name, sizeof name));
            piece_name(FGRT_GEMM_RS, j - 1, absent, sizeof absent);
            gemm_failure(FGRT_GEMM_RS, FGRT_CHUNK_OVERLAP, chunks, (int)j, missing,
                         j ? absent : "start");
        }
        /* its last GEMMs (the own block) follow every push: rank 1 finishes */
        gemm_failure(FGRT_GEMM_RS, FGRT_CHUNK_OVERLAP, chunks, (int)chunks, NULL, NULL);
    }
}

/* ---- argument checks ---- */

static void expect_refused(fg_context *ctx, const fgrt_overlap_args *a, fg_status want,
                           const char *text, int line)
{
    fgrt_overlap *x = (fgrt_overlap *)1;
    const fg_status st = fgrt_overlap_create(ctx, a, &x);
    cr_assert_eq(st, want, "line %d: %s (%s)", line, fg_status_string(st), fg_last_error());
    cr_assert_null(x, "line %d: a failed create clears *out", line);
    cr_assert(strstr(fg_last_error(), text), "line %d: want \"%s\" in: %s", line, text,
              fg_last_error());
    const fdev *f = (const fdev *)ctx->drv;
    cr_assert(f->allocs == 0 && f->stream_creates == 0 && f->event_creates == 0,
              "line %d: refused arguments touched the device", line);
}

#define REFUSE(change, status, text)                                                               \
    do {                                                                                           \
        fgrt_overlap_args a_ = good;                                                               \
        change;                                                                                    \
        expect_refused(ctx, &a_, status, text, __LINE__);                                          \
    } while (0)

Test(overlap_exec, create_checks_its_arguments)
{
    fdev *f = fake_open(&fake_ops);
    fg_context *ctx = NULL;
    cr_assert_eq(fg_context_create(&f->base, NULL, NULL, 0, &ctx), FG_OK);
    void *a = dev_buffer(f, 12 * K * 2), *c = dev_buffer(f, 12 * N * 2);
    void *out = dev_buffer(f, 6 * N * 2);
    rank_t user = {.dev = f};
    const fgrt_overlap_args good = {
        .collective = FGRT_GEMM_RS, .schedule = FGRT_SHARD_OVERLAP, .world = 2, .rank = 1,
        .m = 12, .n = N, .k = K, .dtype = FG_REG_F16, .a = a, .c = c, .out = out,
        .gemm = cb_gemm, .reduce = cb_reduce, .user = &user, .timeout_s = 1};

    REFUSE(a_.world = 1, FG_ERR_INVALID_ARGUMENT, "rank 1 of world 1");
    REFUSE(a_.node_ranks = 2, FG_ERR_INVALID_ARGUMENT, "node_ranks 2 for world 2");
    REFUSE((a_.world = 6, a_.node_ranks = 4), FG_ERR_INVALID_ARGUMENT, "node_ranks 4 for world 6");
    REFUSE((a_.world = 4, a_.node_ranks = 1), FG_ERR_INVALID_ARGUMENT, "node_ranks 1");
    REFUSE((a_.world = 4, a_.node_ranks = 2), FG_ERR_INVALID_ARGUMENT, "no across callback");
    REFUSE((a_.world = 4, a_.node_ranks = 2, a_.across = cb_across, a_.lanes = 2),
           FG_ERR_INVALID_ARGUMENT, "2 copy lanes for the hierarchical plan in nodes of 2 (1 to 1");
    REFUSE((a_.world = 4, a_.node_ranks = 2, a_.across = cb_across,
            a_.schedule = FGRT_SERIAL_CE),
           FG_ERR_INVALID_ARGUMENT, "shard_overlap's, not serial_ce");
    REFUSE(a_.world = 65, FG_ERR_INVALID_ARGUMENT, "of world 65");
    REFUSE(a_.rank = 2, FG_ERR_INVALID_ARGUMENT, "rank 2 of world 2");
    REFUSE(a_.m = 13, FG_ERR_BAD_SHAPE, "m 13");
    REFUSE(a_.m = 0, FG_ERR_BAD_SHAPE, "m 0");
    REFUSE(a_.n = -5, FG_ERR_BAD_SHAPE, "n -5");
    REFUSE(a_.k = 0, FG_ERR_BAD_SHAPE, "k 0");
    REFUSE(a_.a = NULL, FG_ERR_NULL_POINTER, "a is NULL");
    REFUSE(a_.c = NULL, FG_ERR_NULL_POINTER, "c is NULL");
    REFUSE(a_.out = NULL, FG_ERR_NULL_POINTER, "out is NULL");
    REFUSE(a_.gemm = NULL, FG_ERR_INVALID_ARGUMENT, "no gemm callback");
    /* without a callback the generated kernel reduces, in 16-byte vectors:
     * a row block of 6 x 5 f16 is 60 bytes */
    REFUSE((a_.reduce = NULL, a_.n = 5), FG_ERR_BAD_SHAPE, "give a reduce callback");
    REFUSE(a_.schedule = FGRT_SERIAL_NCCL, FG_ERR_INVALID_ARGUMENT, "serial_nccl");
    REFUSE(a_.schedule = FGRT_SCHEDULE_COUNT, FG_ERR_INVALID_ARGUMENT, "not the executor's");
    REFUSE(a_.collective = (fgrt_collective)7, FG_ERR_INVALID_ARGUMENT, "unknown collective");
    REFUSE(a_.dtype = (fg_reg_dtype)9, FG_ERR_INVALID_ARGUMENT, "unknown dtype");
    REFUSE(a_.timeout_s = -1, FG_ERR_INVALID_ARGUMENT, "timeout_s -1");
    REFUSE(a_.timeout_s = NAN, FG_ERR_INVALID_ARGUMENT, "timeout_s nan");
    REFUSE(a_.timeout_s = 4000, FG_ERR_INVALID_ARGUMENT, "timeout_s 4000");
    /* chunk_overlap takes 1 to FGRT_MAX_CHUNKS pieces (fgrt_overlap_ops' rule), the
     * other schedules none */
    REFUSE((a_.schedule = FGRT_CHUNK_OVERLAP, a_.chunks = 0), FG_ERR_INVALID_ARGUMENT,
           "0 chunks");
    REFUSE((a_.schedule = FGRT_CHUNK_OVERLAP, a_.chunks = FGRT_MAX_CHUNKS + 1),
           FG_ERR_INVALID_ARGUMENT, "9 chunks");
    REFUSE(a_.chunks = 2, FG_ERR_INVALID_ARGUMENT, "2 chunks");   /* shard_overlap */
    /* copy lanes: no more than a rank's copies (one at world 2 without
     * pieces), FGRT_MAX_LANES, and one for RS chunk_overlap's ring */
    REFUSE(a_.lanes = 2, FG_ERR_INVALID_ARGUMENT,
           "2 copy lanes for shard_overlap (1 to 8, and no more than the 1 copies");
    REFUSE((a_.world = 12, a_.lanes = FGRT_MAX_LANES + 1), FG_ERR_INVALID_ARGUMENT,
           "9 copy lanes for shard_overlap");
    REFUSE((a_.schedule = FGRT_CHUNK_OVERLAP, a_.chunks = 2, a_.lanes = 2),
           FG_ERR_INVALID_ARGUMENT, "1 for GEMM+RS chunk_overlap's ring");
    REFUSE((a_.schedule = FGRT_SERIAL_CE, a_.chunks = 2), FG_ERR_INVALID_ARGUMENT, "2 chunks");
    /* m a multiple of world x chunks: 12 is one of world 2, not of 2 x 4 pieces
     * (nor 18 of 2 x 2) */
    REFUSE((a_.schedule = FGRT_CHUNK_OVERLAP, a_.chunks = 4), FG_ERR_BAD_SHAPE,
           "m 12, n 8, k 7 (positive, m a multiple of 8: the world size times the chunks)");
    REFUSE((a_.schedule = FGRT_CHUNK_OVERLAP, a_.chunks = 2, a_.m = 18), FG_ERR_BAD_SHAPE,
           "m 18");
    REFUSE((a_.collective = FGRT_AG_GEMM, a_.out = NULL, a_.reduce = NULL,
            a_.schedule = FGRT_CHUNK_OVERLAP, a_.chunks = 3, a_.world = 4, a_.rank = 3,
            a_.m = 16),
           FG_ERR_BAD_SHAPE, "multiple of 12");
    /* chunk_fused: AG's only, with W and whole tile rows of the generated GEMM,
     * which the context's registry must hold (this one holds nothing: every
     * allocation made for it is returned) */
    REFUSE((a_.schedule = FGRT_CHUNK_FUSED, a_.chunks = 2, a_.w = a), FG_ERR_BAD_SHAPE,
           "m 12 is not a multiple of 128");
    REFUSE((a_.schedule = FGRT_CHUNK_FUSED, a_.chunks = 2, a_.w = a, a_.m = 640),
           FG_ERR_BAD_SHAPE, "not a multiple of 512 (the world x the chunks x the GEMM's");
#define FUSED(m_) (a_.collective = FGRT_AG_GEMM, a_.out = NULL, a_.reduce = NULL,                  \
                   a_.schedule = FGRT_CHUNK_FUSED, a_.chunks = 2, a_.m = (m_), a_.w = a)
    REFUSE((FUSED(512), a_.w = NULL), FG_ERR_NULL_POINTER, "chunk_fused: w is NULL");
    REFUSE(FUSED(516), FG_ERR_BAD_SHAPE, "m 516 is not a multiple of 128");
    REFUSE((FUSED(512), a_.chunks = 9), FG_ERR_INVALID_ARGUMENT, "9 chunks");
    REFUSE(FUSED(512), FG_ERR_NO_MATCHING_INSTANCE, "the generated GEMM does not bind");
#undef FUSED
    cr_assert(f->live_allocs == 0 && f->live_streams == 0 && f->live_events == 0,
              "a failed create leaves nothing behind");

    fgrt_overlap *x = (fgrt_overlap *)1;
    cr_assert_eq(fgrt_overlap_create(ctx, &good, NULL), FG_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fgrt_overlap_create(NULL, &good, &x), FG_ERR_INVALID_ARGUMENT);
    cr_assert_null(x);
    x = (fgrt_overlap *)1;
    cr_assert_eq(fgrt_overlap_create(ctx, NULL, &x), FG_ERR_INVALID_ARGUMENT);
    cr_assert_null(x);
    cr_assert(f->allocs == 0 && f->stream_creates == 0 && f->event_creates == 0);

    /* AG needs neither out nor reduce */
    fgrt_overlap_args ag = good;
    ag.collective = FGRT_AG_GEMM, ag.out = NULL, ag.reduce = NULL;
    cr_assert_eq(fgrt_overlap_create(ctx, &ag, &x), FG_OK, "%s", fg_last_error());
    cr_assert_eq(f->allocs, 1, "AG allocates its flags only");
    fgrt_overlap_destroy(x);
    fgrt_overlap_destroy(NULL);
    cr_assert(f->live_allocs == 0 && f->live_streams == 0 && f->live_events == 0);

    /* RS chunk_overlap's GEMMs add the partials: no reduce callback, and this
     * context has no generated reduction to bind (nothing loaded), at every
     * piece count; that a row block of 3 x chunks rows x 5 f16 (60 bytes at 2
     * pieces) is not whole 16-byte vectors is no concern of its */
    const long long ring_m = 6 * FGRT_MAX_CHUNKS;
    void *ra = dev_buffer(f, (size_t)ring_m * K * 2), *rc = dev_buffer(f, (size_t)ring_m * N * 2);
    void *rout = dev_buffer(f, (size_t)ring_m / 2 * N * 2);
    for (unsigned chunks = 2; chunks <= FGRT_MAX_CHUNKS; chunks++)
        for (long long n = 5; n <= N; n += N - 5) {
            fgrt_overlap_args ring = good;
            ring.schedule = FGRT_CHUNK_OVERLAP, ring.chunks = chunks, ring.m = 6 * chunks;
            ring.n = n, ring.a = ra, ring.c = rc, ring.out = rout, ring.reduce = NULL;
            const int allocs = f->allocs;
            x = NULL;
            cr_assert_eq(fgrt_overlap_create(ctx, &ring, &x), FG_OK, "chunks %u n %lld: %s",
                         chunks, n, fg_last_error());
            cr_assert_eq(f->allocs - allocs, 2, "flags and receive slots");
            fgrt_overlap_destroy(x);
            cr_assert(f->live_allocs == 0 && f->live_streams == 0 && f->live_events == 0);
        }
    cr_assert_eq(f->loads, 0, "chunk_overlap bound a reduction");

    /* a backend without the executor's driver calls */
    fdev *plain = fake_open(&plain_ops);
    fg_context *pctx = NULL;
    cr_assert_eq(fg_context_create(&plain->base, NULL, NULL, 0, &pctx), FG_OK);
    x = (fgrt_overlap *)1;
    cr_assert_eq(fgrt_overlap_create(pctx, &good, &x), FG_ERR_UNSUPPORTED_DEVICE);
    cr_assert_null(x);
    cr_assert_eq(plain->allocs, 0);

    cr_assert_eq(fgrt_overlap_export(NULL, &(fgrt_overlap_handle){0}), FG_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fgrt_overlap_run(NULL, NULL), FG_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fgrt_overlap_wait(NULL), FG_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fgrt_overlap_connect(NULL, &(fgrt_overlap_handle){0}), FG_ERR_INVALID_ARGUMENT);
    fg_shutdown(pctx);
    fg_shutdown(ctx);
    cr_assert_eq(misuse, 0, "%s", misuse_why);
}

/* chunk_fused on an AMD device runs the portable GEMM (op
 * overlap_gemm_portable: plain pointers, the same feed and drain) for
 * AG+GEMM and GEMM+RS; an overlap_gemm entry for an arch other than
 * sm_90a (that op is the wgmma form's, tensor maps; the generator emits
 * none) is refused before anything is made. */
Test(overlap_exec, chunk_fused_binds_the_portable_gemm_on_amd)
{
    static const unsigned char image[16] = {1};
    static const size_t image_size = sizeof image;
    enum { PN = 256, PK = 64 };
    static const fg_kernel_entry portable[] = {
        {.name = "overlap_gemm_gfx942_f16_n256_k64", .family = "overlap_gemm",
         .op = "overlap_gemm_portable", .arch = FG_REG_ARCH_GFX942, .dtype = FG_REG_F16,
         .ndims = 2, .dims = {PN, PK}, .grid_rule = FG_REG_GRID_FIXED, .grid = {608, 1, 1},
         .block = {256, 1, 1}, .cluster = {1, 1, 1}, .image = image, .image_size = &image_size}};
    static const fg_kernel_entry stale[] = {
        {.name = "overlap_gemm_gfx942_f16_n256_k64", .family = "overlap_gemm", .op = "overlap_gemm",
         .arch = FG_REG_ARCH_GFX942, .dtype = FG_REG_F16, .ndims = 2, .dims = {PN, PK},
         .grid_rule = FG_REG_GRID_FIXED, .grid = {1, 1, 1}, .block = {256, 1, 1},
         .cluster = {1, 1, 1}, .image = image, .image_size = &image_size}};
    for (int which = 0; which < 2; which++) {
        fdev *f = fake_open(&fake_ops);
        f->base.caps.info.backend = FG_BACKEND_HIP;
        f->base.caps.info.arch = FG_REG_ARCH_GFX942;
        snprintf(f->base.caps.info.arch_name, sizeof f->base.caps.info.arch_name, "gfx942");
        fg_context *ctx = NULL;
        cr_assert_eq(fg_context_create(&f->base, NULL, which ? stale : portable, 1, &ctx), FG_OK);
        void *a = dev_buffer(f, 512 * PK * 2), *c = dev_buffer(f, 512 * PN * 2);
        void *w = dev_buffer(f, PN * PK * 2), *out = dev_buffer(f, 256 * PN * 2);
        const fgrt_overlap_args rs = {
            .collective = FGRT_GEMM_RS, .schedule = FGRT_CHUNK_FUSED, .world = 2, .rank = 0,
            .chunks = 2, .m = 512, .n = PN, .k = PK, .dtype = FG_REG_F16, .a = a, .c = c,
            .out = out, .w = w, .reduce = cb_reduce, .timeout_s = 1};
        fgrt_overlap_args ag = rs;
        ag.collective = FGRT_AG_GEMM, ag.out = NULL, ag.reduce = NULL;
        for (int i = 0; i < 2; i++) {
            fgrt_overlap *x = NULL;
            const fg_status st = fgrt_overlap_create(ctx, i ? &ag : &rs, &x);
            if (which) {
                cr_assert_eq(st, FG_ERR_UNSUPPORTED_DEVICE);
                cr_assert_null(x);
                cr_assert(strstr(fg_last_error(), "that op is the sm_90a wgmma form's"), "%s",
                          fg_last_error());
                cr_assert_eq(f->allocs, 0, "nothing made");
            } else {
                cr_assert_eq(st, FG_OK, "%s: %s", i ? "AG" : "RS", fg_last_error());
                fgrt_overlap_destroy(x);
            }
            cr_assert(f->live_allocs == 0 && f->live_streams == 0 && f->live_events == 0);
        }
        cr_assert_eq(f->loads, which ? 0 : 1, "the portable GEMM's module (the context keeps it)");
        fg_shutdown(ctx);
        cr_assert_eq(misuse, 0, "%s", misuse_why);
    }
}

/* chunk_fused GEMM+RS end to end on the fake driver, whose launch of the
 * portable GEMM computes it a 128 x 128 block at a time and counts each
 * piece's blocks as fgrt.h's drain contract says: 2 ranks, m = 1024 (pieces
 * of 256 rows: a count of 4 a call), n = 256, k = 16, on CUDA-like devices
 * and on HIP-like ones (stream waits compared unsigned), fresh inputs every
 * call, the streams run in a different order each call (sweeps, random, one
 * device ahead), on one copy lane and on two (each piece's wait for its
 * rows and its push on a lane of its own).  Every rank's out must be the
 * sum of every rank's partial of its block, each call: a push let through
 * before its rows were written (a done counter not reset for the next call,
 * or a wait for less than the whole piece) sends stale rows. */
typedef struct fused_rank {
    fdev *dev;
    fg_context *ctx;
    fgrt_overlap *x;
    uint16_t *a, *w, *c, *out;
    void *caller;
} fused_rank;

static int fused_reduce(void *user, void *stream, const void *own, const void *recv, void *out,
                        unsigned world, unsigned rank, long long elems)
{
    gen_reduce *j = malloc(sizeof *j);
    cr_assert(j);
    *j = (gen_reduce){.own = own, .recv = recv, .out = out, .world = world, .rank = rank,
                      .elems = elems};
    return fake_host(((fused_rank *)user)->dev, stream, run_generated_reduce, j) == FG_OK ? 0 : 1;
}

static uint16_t fused_input(unsigned call, unsigned rank, long long row, long long l, bool w)
{
    return (uint16_t)((row * 7 + l * 3 + rank * 11 + call * 5 + (w ? 1 : 0)) % 9 + 1);
}

Test(overlap_exec, chunk_fused_rs_counts_each_call_from_zero)
{
    enum { W = 2, FM = 1024, FN = 256, FK = 16, ROWS_ = FM / W, CALLS_ = 6 };
    static const unsigned char image[16] = {1};
    static const size_t image_size = sizeof image;
    /* each call's stream order, of modes[]: sweeps, random (seed 1), priority
     * to rank 0 and to rank 1, oldest first to rank 0, random (seed 2) */
    static const int orders[CALLS_] = {0, 10, 2, 3, 6, 11};
    for (int pass = 0; pass < 4; pass++) {
        const int hip = pass % 2;
        const unsigned lanes = 1 + pass / 2;
        const fg_kernel_entry gemm[] = {
            {.name = hip ? "overlap_gemm_gfx942_f16_n256_k16" : "overlap_gemm_sm90a_f16_n256_k16",
             .family = "overlap_gemm", .op = "overlap_gemm_portable",
             .arch = hip ? FG_REG_ARCH_GFX942 : FG_REG_ARCH_SM90A, .dtype = FG_REG_F16,
             .ndims = 2, .dims = {FN, FK}, .grid_rule = FG_REG_GRID_FIXED, .grid = {8, 1, 1},
             .block = {256, 1, 1}, .cluster = {1, 1, 1}, .image = image,
             .image_size = &image_size}};
        fused_rank r[W];
        for (unsigned i = 0; i < W; i++) {
            r[i].dev = fake_open(&fake_ops);
            if (hip) {
                r[i].dev->base.caps.info.backend = FG_BACKEND_HIP;
                r[i].dev->base.caps.info.arch = FG_REG_ARCH_GFX942;
                snprintf(r[i].dev->base.caps.info.arch_name,
                         sizeof r[i].dev->base.caps.info.arch_name, "gfx942");
            }
            cr_assert_eq(fg_context_create(&r[i].dev->base, NULL, gemm, 1, &r[i].ctx), FG_OK,
                         "%s", fg_last_error());
            r[i].a = dev_buffer(r[i].dev, (size_t)FM * FK * 2);
            r[i].w = dev_buffer(r[i].dev, (size_t)FN * FK * 2);
            r[i].c = dev_buffer(r[i].dev, (size_t)FM * FN * 2);
            r[i].out = dev_buffer(r[i].dev, (size_t)ROWS_ * FN * 2);
            const fgrt_overlap_args args = {
                .collective = FGRT_GEMM_RS, .schedule = FGRT_CHUNK_FUSED, .world = W, .rank = i,
                .chunks = 2, .lanes = lanes, .m = FM, .n = FN, .k = FK, .dtype = FG_REG_F16,
                .a = r[i].a,
                .c = r[i].c, .out = r[i].out, .w = r[i].w, .reduce = fused_reduce,
                .user = &r[i], .timeout_s = 5};
            cr_assert_eq(fgrt_overlap_create(r[i].ctx, &args, &r[i].x), FG_OK, "rank %u: %s", i,
                         fg_last_error());
            cr_assert_eq(fake_ops.stream_create(&r[i].dev->base, &r[i].caller), FG_OK);
        }
        fgrt_overlap_handle h[W];
        for (unsigned i = 0; i < W; i++)
            cr_assert_eq(fgrt_overlap_export(r[i].x, &h[i]), FG_OK);
        for (unsigned i = 0; i < W; i++)
            cr_assert_eq(fgrt_overlap_connect(r[i].x, h), FG_OK, "%s", fg_last_error());
        for (unsigned call = 0; call < CALLS_; call++) {
            set_mode(&modes[orders[call]]);
            for (unsigned i = 0; i < W; i++) {
                for (long long row = 0; row < FM; row++)
                    for (long long l = 0; l < FK; l++)
                        r[i].a[row * FK + l] = fused_input(call, i, row, l, false);
                for (long long j = 0; j < FN; j++)
                    for (long long l = 0; l < FK; l++)
                        r[i].w[j * FK + l] = fused_input(call, i, j, l, true);
                memset(r[i].out, 0xff, (size_t)ROWS_ * FN * 2);
                cr_assert_eq(fgrt_overlap_run(r[i].x, r[i].caller), FG_OK, "%s", fg_last_error());
            }
            pump();
            for (unsigned i = 0; i < W; i++)
                cr_assert_eq(fgrt_overlap_wait(r[i].x), FG_OK, "%s, %u lanes, call %u rank %u: %s",
                             hip ? "HIP" : "CUDA", lanes, call, i, fg_last_error());
            for (unsigned i = 0; i < W; i++)
                for (long long row = 0; row < ROWS_; row++)
                    for (long long j = 0; j < FN; j++) {
                        uint32_t want = 0;
                        for (unsigned q = 0; q < W; q++)
                            for (long long l = 0; l < FK; l++)
                                want += (uint32_t)fused_input(call, q, i * ROWS_ + row, l, false) *
                                        fused_input(call, q, j, l, true);
                        cr_assert_eq(r[i].out[row * FN + j], (uint16_t)want,
                                     "%s, %u lanes, call %u rank %u out[%lld,%lld]: %#x, "
                                     "want %#x", hip ? "HIP" : "CUDA", lanes, call, i, row, j,
                                     r[i].out[row * FN + j], (uint16_t)want);
                    }
        }
        for (unsigned i = 0; i < W; i++) {
            cr_assert_eq(r[i].dev->launches, CALLS_, "one fused GEMM a call");
            fgrt_overlap_destroy(r[i].x);
            fake_ops.stream_destroy(&r[i].dev->base, r[i].caller);
            cr_assert(r[i].dev->live_allocs == 0 && r[i].dev->live_streams == 0 &&
                      r[i].dev->live_events == 0);
            fg_shutdown(r[i].ctx);
        }
        cr_assert_eq(misuse, 0, "%s", misuse_why);
        fake_teardown();   /* the HIP pass's ranks are devices 0 and 1 again (favor) */
    }
}

/* RS with no reduce callback binds the registry's overlap_reduce kernel; a
 * context without one refuses the executor and leaks nothing it made. */
Test(overlap_exec, rs_without_a_callback_needs_the_generated_reduction)
{
    fdev *f = fake_open(&fake_ops);
    fg_context *ctx = NULL;
    cr_assert_eq(fg_context_create(&f->base, NULL, NULL, 0, &ctx), FG_OK);
    void *a = dev_buffer(f, 16 * K * 2), *c = dev_buffer(f, 16 * 8 * 2);
    void *out = dev_buffer(f, 8 * 8 * 2);
    rank_t user = {.dev = f};
    const fgrt_overlap_args args = {
        .collective = FGRT_GEMM_RS, .schedule = FGRT_SERIAL_CE, .world = 2, .rank = 0,
        .m = 16, .n = 8, .k = K, .dtype = FG_REG_BF16, .a = a, .c = c, .out = out,
        .gemm = cb_gemm, .user = &user, .timeout_s = 1};
    fgrt_overlap *x = (fgrt_overlap *)1;
    cr_assert_eq(fgrt_overlap_create(ctx, &args, &x), FG_ERR_NO_MATCHING_INSTANCE, "%s",
                 fg_last_error());
    cr_assert_null(x);
    cr_assert(strstr(fg_last_error(), "the generated reduction does not bind"), "%s",
              fg_last_error());
    cr_assert(strstr(fg_last_error(), "overlap_reduce"), "%s", fg_last_error());
    cr_assert_eq(f->live_allocs, 0);
    cr_assert_eq(f->live_streams, 0);
    cr_assert_eq(f->live_events, 0);
    fg_shutdown(ctx);
}

/* Connect checks every handle before it maps anything; a refused connect
 * leaves the executor unconnected, so it can be retried. */
Test(overlap_exec, connect_refuses_handles_that_disagree)
{
    world w;
    world_open(&w, 2, FGRT_GEMM_RS, FGRT_SERIAL_CE, 0, 1.0, false);
    fgrt_overlap *x0 = w.r[0].x;
    cr_assert_eq(fgrt_overlap_run(x0, NULL), FG_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(fg_last_error(), "not connected"), "%s", fg_last_error());

    fgrt_overlap_handle h[2], swapped[2], other[2], junk[2];
    for (unsigned i = 0; i < 2; i++)
        cr_assert_eq(fgrt_overlap_export(w.r[i].x, &h[i]), FG_OK);
    swapped[0] = h[1], swapped[1] = h[0];
    memset(junk, 0, sizeof junk);
    junk[0] = h[0];
    /* rank 1 from an older libfgrt (version 4: flags without the failure
     * mark's words): the wire's version follows its magic */
    fgrt_overlap_handle old[2] = {h[0], h[1]};
    const uint32_t v4 = 4;
    memcpy(old[1].bytes + sizeof(uint32_t), &v4, sizeof v4);

    /* rank 1 with another m, and with another schedule */
    rank_t *r1 = &w.r[1];
    fgrt_overlap_args args = r1->args;
    void *a2 = dev_buffer(r1->dev, (size_t)2 * w.m * K * 2);
    void *c2 = dev_buffer(r1->dev, (size_t)2 * w.m * N * 2);
    args.m = 2 * w.m, args.a = a2, args.c = c2;
    fgrt_overlap *bigger = NULL, *overlap = NULL;
    cr_assert_eq(fgrt_overlap_create(r1->ctx, &args, &bigger), FG_OK, "%s", fg_last_error());
    args = r1->args, args.schedule = FGRT_SHARD_OVERLAP;
    cr_assert_eq(fgrt_overlap_create(r1->ctx, &args, &overlap), FG_OK, "%s", fg_last_error());
    other[0] = h[0];

    const struct { const fgrt_overlap_handle *all; const char *why, *text; } cases[] = {
        {swapped, "handles in the wrong order", "handle 0 is rank 1 of 2"},
        {junk, "a handle no executor exported", "handle 1 is not an exported executor"},
        {old, "a handle of another version",
         "handle 1 is from an executor of version 4; this one is version 7"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_assert_eq(fgrt_overlap_connect(x0, cases[i].all), FG_ERR_INVALID_ARGUMENT, "%s",
                     cases[i].why);
        cr_assert(strstr(fg_last_error(), cases[i].text), "%s: %s", cases[i].why,
                  fg_last_error());
    }
    cr_assert_eq(fgrt_overlap_export(bigger, &other[1]), FG_OK);
    cr_assert_eq(fgrt_overlap_connect(x0, other), FG_ERR_INVALID_ARGUMENT, "ranks disagree on m");
    cr_assert(strstr(fg_last_error(), "m 48") && strstr(fg_last_error(), "m 24"), "%s",
              fg_last_error());
    cr_assert_eq(fgrt_overlap_export(overlap, &other[1]), FG_OK);
    cr_assert_eq(fgrt_overlap_connect(x0, other), FG_ERR_INVALID_ARGUMENT,
                 "ranks disagree on the schedule");
    cr_assert(strstr(fg_last_error(), "shard_overlap") && strstr(fg_last_error(), "serial_ce"),
              "%s", fg_last_error());
    cr_assert_eq(fgrt_overlap_connect(x0, NULL), FG_ERR_INVALID_ARGUMENT);
    cr_assert_eq(w.r[0].dev->enable_peers, 0, "nothing was mapped");
    cr_assert_eq(fgrt_overlap_run(x0, NULL), FG_ERR_INVALID_ARGUMENT, "still not connected");

    /* peer access refused: the status comes back, and nothing stays mapped */
    w.r[0].dev->enable_peer_status = FG_ERR_UNSUPPORTED_DEVICE;
    cr_assert_eq(fgrt_overlap_connect(x0, h), FG_ERR_UNSUPPORTED_DEVICE);
    cr_assert_eq(fgrt_overlap_run(x0, NULL), FG_ERR_INVALID_ARGUMENT, "still not connected");
    w.r[0].dev->enable_peer_status = FG_OK;

    for (unsigned i = 0; i < 2; i++)
        cr_assert_eq(fgrt_overlap_connect(w.r[i].x, h), FG_OK, "%s", fg_last_error());
    cr_assert_eq(fgrt_overlap_connect(x0, h), FG_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(fg_last_error(), "already connected"), "%s", fg_last_error());
    for (unsigned i = 0; i < 2; i++)   /* and the retried connect works */
        start_call(&w, 0, i, NULL, false);
    for (unsigned i = 0; i < 2; i++)
        cr_assert_eq(fgrt_overlap_wait(w.r[i].x), FG_OK, "%s", fg_last_error());
    pump();
    check_call(&w, 0, "after a refused connect");
    fgrt_overlap_destroy(bigger);
    fgrt_overlap_destroy(overlap);
    world_close(&w);
}

/* Ranks that disagree on chunks lay their flags out differently (a rank's
 * row is FGRT_FLAG_SENT + pieces words, and a peer writes into it at its own
 * offsets): connect must refuse them, as it does m or the schedule. */
Test(overlap_exec, connect_refuses_ranks_that_disagree_on_chunks)
{
    world w;
    world_open(&w, 2, FGRT_AG_GEMM, FGRT_CHUNK_OVERLAP, 2, 1.0, false);
    fgrt_overlap_args args = w.r[1].args;
    args.chunks = 4;   /* m = 24: a multiple of 2 x 4 */
    fgrt_overlap *more = NULL;
    cr_assert_eq(fgrt_overlap_create(w.r[1].ctx, &args, &more), FG_OK, "%s", fg_last_error());
    fgrt_overlap_handle h[2];
    cr_assert_eq(fgrt_overlap_export(w.r[0].x, &h[0]), FG_OK);
    cr_assert_eq(fgrt_overlap_export(more, &h[1]), FG_OK);
    const fg_status st = fgrt_overlap_connect(w.r[0].x, h);
    cr_assert_eq(st, FG_ERR_INVALID_ARGUMENT, "ranks disagree on chunks: %s (%s)",
                 fg_status_string(st), fg_last_error());
    cr_assert_eq(w.r[0].dev->enable_peers, 0, "nothing was mapped");
    fgrt_overlap_destroy(more);
    world_close(&w);
}

/* The hierarchical plan, 4 ranks as 2 nodes of 2 (the copy engine inside a
 * node, the across callback between them, as NCCL's): exact call after
 * call, pipelined on the callers' streams, with the caller's reduction and
 * the generated one, in every scheduling mode; 6 ranks in nodes of 2 and 3
 * (these also on a copy lane a node peer) call after call. */
Test(overlap_exec, the_hierarchical_plan_matches_the_reference)
{
    use_nodes = 2;
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        for (int c = FGRT_AG_GEMM; c <= FGRT_GEMM_RS; c++) {
            three_calls((fgrt_collective)c, FGRT_SHARD_OVERLAP, 4, 1, &modes[i]);
            pipelined((fgrt_collective)c, FGRT_SHARD_OVERLAP, 4, 1, &modes[i]);
        }
    use_generated = true;
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i += 3)
        three_calls(FGRT_GEMM_RS, FGRT_SHARD_OVERLAP, 4, 1, &modes[i]);
    use_generated = false;
    /* 6 ranks: 3 nodes of 2 (two steps between nodes) and 2 of 3, these on one lane and
     * on a lane a node peer */
    for (use_nodes = 2; use_nodes <= 3; use_nodes++)
        for (use_lanes = 1; use_lanes < use_nodes; use_lanes++)
            for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i += 2)
                for (int c = FGRT_AG_GEMM; c <= FGRT_GEMM_RS; c++) {
                    use_generated = c == FGRT_GEMM_RS && i % 4 == 2;
                    three_calls((fgrt_collective)c, FGRT_SHARD_OVERLAP, 6, 1, &modes[i]);
                }
    use_generated = false;
    /* only the node's peers are mapped (rank 0 reaches ranks 1 and 2, not 3 to 5); its
     * streams: 2 GEMM streams, 2 lanes, the steps between nodes', the host's */
    use_nodes = 3, use_lanes = 2;
    world w;
    world_open(&w, 6, FGRT_AG_GEMM, FGRT_SHARD_OVERLAP, 1, 5.0, true);
    for (unsigned i = 0; i < 6; i++) {
        cr_assert_eq(w.r[i].dev->enable_peers, 2, "rank %u", i);
        cr_assert_eq(w.r[i].dev->stream_creates, 6, "rank %u", i);
    }
    world_close(&w);
    fake_teardown();
    use_nodes = 0, use_lanes = 0;
}

/* A copy of rank 0 fails (its start flag to rank 1 went out, its first push
 * did not): rank 1, its node peer, times out naming the blocks rank 0 never
 * sent; the other node learns it through the engine's NCCL (here its abort,
 * after which every wait ends). */
Test(overlap_exec, the_hierarchical_plan_a_failed_copy_times_its_node_peer_out)
{
    use_nodes = 2;
    for (int c = FGRT_AG_GEMM; c <= FGRT_GEMM_RS; c++) {
        world w;
        world_open(&w, 4, (fgrt_collective)c, FGRT_SHARD_OVERLAP, 1, 0.05, true);
        rank_t *r0 = &w.r[0];
        r0->dev->fail_copy_after = 1;
        for (long long e = 0; e < w.m * K; e++)   /* its inputs (start_call insists on success) */
            r0->a[e] = input(&w, 0, 0, e / K, e % K);
        cr_assert_eq(fgrt_overlap_run(r0->x, NULL), FG_ERR_DRIVER, "%s", fg_last_error());
        for (unsigned i = 1; i < 4; i++)
            start_call(&w, 0, i, NULL, false);
        expect_timeout(&w, 1, "rank 0's sent(1) of node +0");
        abort_meets();
        for (unsigned i = 2; i < 4; i++)
            fgrt_overlap_wait(w.r[i].x);   /* (whatever each says: NCCL's abort decides) */
        for (unsigned i = 1; i < 4; i++)
            cr_assert_not(fake_busy(w.r[i].dev), "%s rank %u: work left", coll_name(c), i);
        world_close(&w);
        fake_teardown();
    }
    use_nodes = 0;
}

Test(overlap_exec, connect_refuses_ranks_that_disagree_on_nodes)
{
    world w;
    world_open(&w, 4, FGRT_AG_GEMM, FGRT_SHARD_OVERLAP, 1, 1.0, false);
    fgrt_overlap_args args = w.r[3].args;
    args.node_ranks = 2, args.across = cb_across;
    fgrt_overlap *hier = NULL;
    cr_assert_eq(fgrt_overlap_create(w.r[3].ctx, &args, &hier), FG_OK, "%s", fg_last_error());
    fgrt_overlap_handle h[4];
    for (unsigned i = 0; i < 3; i++)
        cr_assert_eq(fgrt_overlap_export(w.r[i].x, &h[i]), FG_OK);
    cr_assert_eq(fgrt_overlap_export(hier, &h[3]), FG_OK);
    const fg_status st = fgrt_overlap_connect(w.r[0].x, h);
    cr_assert_eq(st, FG_ERR_INVALID_ARGUMENT, "%s (%s)", fg_status_string(st), fg_last_error());
    cr_assert(strstr(fg_last_error(), "nodes of 2"), "%s", fg_last_error());
    cr_assert_eq(w.r[0].dev->enable_peers, 0, "nothing was mapped");
    fgrt_overlap_destroy(hier);
    world_close(&w);
}

/* ---- resource failures in create ---- */

/* Every allocation, stream and event create in turn fails: create returns
 * the driver's status, clears *out, and frees what it had made. */
Test(overlap_exec, every_failure_in_create_leaks_nothing)
{
    fdev *f = fake_open(&fake_ops);
    fg_context *ctx = NULL;
    cr_assert_eq(fg_context_create(&f->base, NULL, NULL, 0, &ctx), FG_OK);
    void *a = dev_buffer(f, 12 * K * 2), *c = dev_buffer(f, 12 * N * 2);
    void *out = dev_buffer(f, 6 * N * 2);
    rank_t user = {.dev = f};
    /* shard_overlap with a reduce callback; chunk_overlap (3 pieces) without */
    for (int chunked = 0; chunked < 2; chunked++)
        for (int coll = 0; coll < 2; coll++)
            for (int knob = 0; knob < 3; knob++) {
                const fgrt_overlap_args args = {
                    .collective = (fgrt_collective)coll,
                    .schedule = chunked ? FGRT_CHUNK_OVERLAP : FGRT_SHARD_OVERLAP,
                    .chunks = chunked ? 3 : 1, .world = 2, .rank = 0, .m = 12, .n = N, .k = K,
                    .dtype = FG_REG_BF16, .a = a, .c = c, .out = out, .gemm = cb_gemm,
                    .reduce = chunked ? NULL : cb_reduce, .user = &user};
                int n = 0;
                for (;; n++) {
                    cr_assert_lt(n, 100);
                    f->allocs = f->stream_creates = f->event_creates = 0;
                    f->fail_alloc_after = knob == 0 ? n : -1;
                    f->fail_stream_after = knob == 1 ? n : -1;
                    f->fail_event_after = knob == 2 ? n : -1;
                    fgrt_overlap *x = (fgrt_overlap *)1;
                    const fg_status st = fgrt_overlap_create(ctx, &args, &x);
                    if (st == FG_OK) {
                        fgrt_overlap_destroy(x);
                        break;
                    }
                    cr_assert_eq(st, knob == 0 ? FG_ERR_OUT_OF_MEMORY : FG_ERR_DRIVER,
                                 "%s knob %d at %d: %s", coll_name(coll), knob, n,
                                 fg_last_error());
                    cr_assert_null(x);
                    cr_assert(f->live_allocs == 0 && f->live_streams == 0 && f->live_events == 0,
                              "%s knob %d at %d: %d allocations, %d streams, %d events left",
                              coll_name(coll), knob, n, f->live_allocs, f->live_streams,
                              f->live_events);
                }
                /* the failure points were reached: flags (and RS's receive slots);
                 * 3 streams; 5 events at least */
                const int points[3] = {coll == FGRT_GEMM_RS ? 2 : 1, 3, 5};
                cr_assert_geq(n, points[knob], "%s knob %d: only %d failure points",
                              coll_name(coll), knob, n);
                cr_assert(f->live_allocs == 0 && f->live_streams == 0 && f->live_events == 0);
            }
    fg_shutdown(ctx);
    cr_assert_eq(misuse, 0, "%s", misuse_why);
}
