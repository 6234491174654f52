/* CUPTI kernel activity records, consumed in C into a lock-free ring that Python drains in bulk.

   Handling CUPTI's activity buffers in Python costs tens of microseconds per record (the buffer
   callback holds the GIL), which is more than a decode step's kernels take. Here the buffer
   callback runs in C on CUPTI's thread: each CONCURRENT_KERNEL record becomes one fixed-size ring
   entry {start, end, graph_node_id, name_id, graph_id}, kernel names are interned once (a name's
   id is the index of its first sighting), and Python copies whole columns out with tfr_drain.

   Ring: single producer (the buffer-completed callback; a producer mutex serialises CUPTI's
   worker thread against a thread inside cuptiActivityFlushAll, taken once per buffer, not per
   record), single consumer (tfr_drain, under a consumer mutex because ctypes drops the GIL).
   head and tail are C11 atomics: the producer publishes entries with a release store of head,
   the consumer frees them with a release store of tail. A full ring drops the new record and
   counts it; nothing blocks.

   Lifetime, as CUPTI allows it: activity callbacks cannot be unregistered (NULL is
   CUPTI_ERROR_INVALID_PARAMETER), but cuptiActivityRegisterCallbacks may be called again and the
   latest pair wins. kineto (torch.profiler) registers its own each time it starts, so a buffer of
   ours still held by CUPTI would reach kineto as unknown, and its stop disables CONCURRENT_KERNEL
   for us too: stop the ring before profiling. tfr_stop disables the kind and forces a flush, so
   CUPTI holds none of our buffers; the callbacks stay registered but inert (a late buffer is
   counted and freed); tfr_start registers again. cuptiFinalize is not called: CUPTI documents it
   as safe only from an API-exit callback. Entries stay drainable after tfr_stop. No function
   aborts or prints; failures return -1 and set tfr_error(). */

#include <cupti.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef TFR_KERNEL_RECORD /* the build passes the struct its cupti.h names for CONCURRENT_KERNEL */
#define TFR_KERNEL_RECORD CUpti_ActivityKernel10
#endif

#define TFR_MAX_NAMES 4096         /* distinct kernel names; a decode step has a few dozen */
#define TFR_NAME_SLOTS 8192        /* open-addressing table, twice TFR_MAX_NAMES */
#define TFR_PTR_CACHE 256          /* direct-mapped name-pointer cache in front of the table */
#define TFR_NAME_OVERFLOW 0xFFFFFFFFu
#define TFR_POOL 8                 /* completed buffers kept for reuse instead of freed */

typedef struct {
    uint64_t start, end, graph_node_id;
    uint32_t name_id, graph_id;
} tfr_entry; /* 32 bytes */

enum { /* counters, in the order tfr_stats writes them (tfr_stat_name gives each name) */
    S_RECORDS, S_RING_DROPPED, S_BUFFERS, S_CUPTI_DROPPED, S_CALLBACK_NS, S_CALLBACK_MAX_NS,
    S_OTHER_RECORDS, S_BAD_RECORDS, S_NAME_OVERFLOW, S_LAUNCHES, S_LATE_BUFFERS, S_DRAINED,
    S_NCOUNTERS
};
static const char *const stat_names[] = {
    "records", "ring_dropped", "buffers", "cupti_dropped", "callback_ns", "callback_max_ns",
    "other_records", "bad_records", "name_overflow", "launches", "late_buffers", "drained",
    /* gauges, read at the call */
    "names", "ring_capacity", "ring_used", "running", "cupti_version", "header_version",
};
#define TFR_NSTATS (sizeof stat_names / sizeof stat_names[0])

static _Atomic uint64_t counters[S_NCOUNTERS];

static pthread_mutex_t producer = PTHREAD_MUTEX_INITIALIZER; /* callbacks, start, stop */
static pthread_mutex_t consumer = PTHREAD_MUTEX_INITIALIZER; /* drain */
static pthread_mutex_t err_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;

static tfr_entry *ring;
static size_t ring_mask; /* capacity - 1, capacity a power of two */
static _Atomic size_t head, tail;
static atomic_int running;
static size_t buffer_bytes = 4u << 20;
static uint32_t last_correlation;
static int period_set; /* tfr_flush_period set a period that tfr_stop resets */

static struct { uint8_t *p; size_t size; } pool[TFR_POOL];
static int pool_n;

/* names: copies owned here; count published with release so tfr_name can read lock-free */
static char *names[TFR_MAX_NAMES];
static _Atomic uint32_t names_n;
static uint32_t name_slots[TFR_NAME_SLOTS]; /* id + 1, 0 empty; producer only */
static struct { const char *ptr; uint32_t id; } ptr_cache[TFR_PTR_CACHE];

static char err_buf[512];

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void set_error(const char *call, CUptiResult r) {
    const char *s = NULL;
    if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || s == NULL) s = "unknown CUPTI result";
    pthread_mutex_lock(&err_lock);
    snprintf(err_buf, sizeof err_buf, "%s: %s (%d)", call, s, (int)r);
    pthread_mutex_unlock(&err_lock);
}

static void set_message(const char *msg) {
    pthread_mutex_lock(&err_lock);
    snprintf(err_buf, sizeof err_buf, "%s", msg);
    pthread_mutex_unlock(&err_lock);
}

#define CHECK(call)                                                                        \
    do {                                                                                   \
        CUptiResult r_ = (call);                                                           \
        if (r_ != CUPTI_SUCCESS) { set_error(#call, r_); return -1; }                      \
    } while (0)

static void count(int which, uint64_t n) { atomic_fetch_add_explicit(&counters[which], n, memory_order_relaxed); }

/* -- names ------------------------------------------------------------------------------- */
static uint64_t fnv1a(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

/* The id of `name`, interned on first sight; producer side only. The pointer cache is checked
   with strcmp, so a pointer CUPTI reuses for another string still maps to the right id. */
static uint32_t intern(const char *name) {
    if (name == NULL) name = "(unnamed)";
    size_t c = ((uintptr_t)name >> 4) & (TFR_PTR_CACHE - 1);
    if (ptr_cache[c].ptr == name && strcmp(names[ptr_cache[c].id], name) == 0) return ptr_cache[c].id;
    uint64_t h = fnv1a(name);
    uint32_t n = atomic_load_explicit(&names_n, memory_order_relaxed);
    for (size_t i = 0; i < TFR_NAME_SLOTS; i++) {
        size_t slot = (h + i) & (TFR_NAME_SLOTS - 1);
        uint32_t v = name_slots[slot];
        if (v == 0) {
            if (n >= TFR_MAX_NAMES) break;
            char *copy = strdup(name);
            if (copy == NULL) break;
            names[n] = copy;
            name_slots[slot] = n + 1;
            atomic_store_explicit(&names_n, n + 1, memory_order_release);
            ptr_cache[c].ptr = name;
            ptr_cache[c].id = n;
            return n;
        }
        if (strcmp(names[v - 1], name) == 0) {
            ptr_cache[c].ptr = name;
            ptr_cache[c].id = v - 1;
            return v - 1;
        }
    }
    count(S_NAME_OVERFLOW, 1);
    return TFR_NAME_OVERFLOW;
}

/* -- CUPTI's buffer callbacks ------------------------------------------------------------ */
static void note_callback_ns(uint64_t t0) {
    uint64_t dt = now_ns() - t0;
    count(S_CALLBACK_NS, dt);
    uint64_t m = atomic_load_explicit(&counters[S_CALLBACK_MAX_NS], memory_order_relaxed);
    while (dt > m && !atomic_compare_exchange_weak(&counters[S_CALLBACK_MAX_NS], &m, dt)) {}
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    uint64_t t0 = now_ns();
    uint8_t *p = NULL;
    size_t want = buffer_bytes;
    pthread_mutex_lock(&pool_lock);
    while (pool_n > 0 && p == NULL) {
        pool_n--;
        if (pool[pool_n].size == want) p = pool[pool_n].p;
        else free(pool[pool_n].p);
    }
    pthread_mutex_unlock(&pool_lock);
    if (p == NULL) p = aligned_alloc(8, want); /* ACTIVITY_RECORD_ALIGNMENT; want is a multiple of 8 */
    *buffer = p; /* NULL declines: CUPTI drops records and counts them */
    *size = p ? want : 0;
    *max_records = 0; /* as many as fit */
    note_callback_ns(t0);
}

static void give_back(uint8_t *p, size_t size) {
    pthread_mutex_lock(&pool_lock);
    if (pool_n < TFR_POOL) { pool[pool_n].p = p; pool[pool_n].size = size; pool_n++; p = NULL; }
    pthread_mutex_unlock(&pool_lock);
    free(p);
}

static void put(const TFR_KERNEL_RECORD *k) {
    size_t h = atomic_load_explicit(&head, memory_order_relaxed);
    size_t t = atomic_load_explicit(&tail, memory_order_acquire);
    count(S_RECORDS, 1);
    if (k->correlationId != last_correlation) { last_correlation = k->correlationId; count(S_LAUNCHES, 1); }
    if (h - t > ring_mask) { count(S_RING_DROPPED, 1); return; }
    tfr_entry *e = &ring[h & ring_mask];
    e->start = k->start;
    e->end = k->end;
    e->graph_node_id = k->graphNodeId;
    e->graph_id = k->graphId;
    e->name_id = intern(k->name);
    atomic_store_explicit(&head, h + 1, memory_order_release);
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid) {
    (void)ctx, (void)stream;
    uint64_t t0 = now_ns();
    pthread_mutex_lock(&producer);
    count(S_BUFFERS, 1);
    if (buffer == NULL || valid == 0) {
        /* nothing to walk */
    } else if (!atomic_load(&running) || ring == NULL) {
        count(S_LATE_BUFFERS, 1);
    } else {
        CUpti_Activity *rec = NULL;
        for (;;) {
            CUptiResult r = cuptiActivityGetNextRecord(buffer, valid, &rec);
            if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) break; /* end of the buffer */
            if (r != CUPTI_SUCCESS) { count(S_BAD_RECORDS, 1); set_error("cuptiActivityGetNextRecord", r); break; }
            if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL)
                put((const TFR_KERNEL_RECORD *)rec);
            else
                count(S_OTHER_RECORDS, 1);
        }
    }
    size_t dropped = 0;
    CUptiResult r = cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped);
    if (r == CUPTI_SUCCESS) count(S_CUPTI_DROPPED, dropped);
    else set_error("cuptiActivityGetNumDroppedRecords", r);
    pthread_mutex_unlock(&producer);
    if (buffer) give_back(buffer, size);
    note_callback_ns(t0);
}

/* -- the API ----------------------------------------------------------------------------- */
const char *tfr_error(void) { return err_buf; } /* last failure, "" if none; one reader expected */

int tfr_version(uint32_t *runtime, uint32_t *header) {
    *header = CUPTI_API_VERSION;
    CHECK(cuptiGetVersion(runtime));
    return 0;
}

/* Allocates a ring of at least ring_records entries (a power of two; an existing ring of that
   capacity is kept, undrained entries and all), hands CUPTI buffers of buffer_bytes, registers
   the callbacks and enables CONCURRENT_KERNEL. 0 on success, -1 with tfr_error() set. */
int tfr_start(size_t ring_records, size_t bytes) {
    if (atomic_load(&running)) { set_message("tfr_start: already started"); return -1; }
    uint32_t rt = 0;
    CHECK(cuptiGetVersion(&rt));
    if (rt / 10000 != CUPTI_API_VERSION / 10000) { /* record layouts change between majors */
        char msg[256];
        snprintf(msg, sizeof msg, "libcupti API version %u does not match cupti.h's %u; build against "
                 "the headers of the libcupti that is loaded", rt, (unsigned)CUPTI_API_VERSION);
        set_message(msg);
        return -1;
    }
    size_t cap = 1024;
    while (cap < ring_records && cap < ((size_t)1 << 30)) cap <<= 1;
    pthread_mutex_lock(&producer);
    pthread_mutex_lock(&consumer);
    if (ring == NULL || ring_mask + 1 != cap) {
        tfr_entry *fresh = malloc(cap * sizeof *fresh);
        if (fresh == NULL) {
            pthread_mutex_unlock(&consumer);
            pthread_mutex_unlock(&producer);
            set_message("tfr_start: out of memory for the ring");
            return -1;
        }
        free(ring);
        ring = fresh;
        ring_mask = cap - 1;
        atomic_store(&head, 0);
        atomic_store(&tail, 0);
    }
    buffer_bytes = bytes < 65536 ? 65536 : (bytes + 7) & ~(size_t)7;
    pthread_mutex_unlock(&consumer);
    pthread_mutex_unlock(&producer);
    CHECK(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
    atomic_store(&running, 1); /* before enable: the first buffer may complete at once */
    CUptiResult r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (r != CUPTI_SUCCESS) {
        atomic_store(&running, 0);
        set_error("cuptiActivityEnable(CONCURRENT_KERNEL)", r);
        return -1;
    }
    return 0;
}

/* CUPTI delivers partly filled buffers every `ms` milliseconds from its own thread (0: only when
   full or flushed), so the ring fills without anyone calling tfr_flush. */
int tfr_flush_period(uint32_t ms) {
    CHECK(cuptiActivityFlushPeriod(ms));
    period_set = ms != 0;
    return 0;
}

/* Hands CUPTI's completed buffers to the callback now; forced also hands over partly filled
   ones with records still in flight (what tfr_stop does). Blocks until they are consumed. */
int tfr_flush(int forced) {
    CHECK(cuptiActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0));
    return 0;
}

/* Disables the kind, then forces a flush so CUPTI hands back every buffer it holds (the caller
   synchronises the device first, or kernels still running lose their records), and resets the
   flush period if tfr_flush_period set one. The callbacks stay registered but count and free any
   late buffer (see the file's comment). Safe to call when not started. */
int tfr_stop(void) {
    if (!atomic_load(&running)) return 0;
    CUptiResult rd = cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    CUptiResult rf = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    CUptiResult rp = period_set ? cuptiActivityFlushPeriod(0) : CUPTI_SUCCESS;
    period_set = 0;
    pthread_mutex_lock(&producer);
    atomic_store(&running, 0);
    pthread_mutex_unlock(&producer);
    if (rd != CUPTI_SUCCESS) { set_error("cuptiActivityDisable(CONCURRENT_KERNEL)", rd); return -1; }
    if (rf != CUPTI_SUCCESS) { set_error("cuptiActivityFlushAll(FORCED)", rf); return -1; }
    if (rp != CUPTI_SUCCESS) { set_error("cuptiActivityFlushPeriod(0)", rp); return -1; }
    return 0;
}

/* Copies up to max entries into the columns (graph_id may be NULL) and frees their slots;
   returns how many. */
size_t tfr_drain_ex(uint64_t *start, uint64_t *end, uint64_t *node, uint32_t *name_id, uint32_t *graph_id,
                    size_t max) {
    pthread_mutex_lock(&consumer);
    size_t n = 0;
    if (ring != NULL) {
        size_t t = atomic_load_explicit(&tail, memory_order_relaxed);
        size_t h = atomic_load_explicit(&head, memory_order_acquire);
        n = h - t < max ? h - t : max;
        for (size_t i = 0; i < n; i++) {
            const tfr_entry *e = &ring[(t + i) & ring_mask];
            start[i] = e->start;
            end[i] = e->end;
            node[i] = e->graph_node_id;
            name_id[i] = e->name_id;
            if (graph_id) graph_id[i] = e->graph_id;
        }
        atomic_store_explicit(&tail, t + n, memory_order_release);
    }
    pthread_mutex_unlock(&consumer);
    count(S_DRAINED, n);
    return n;
}

size_t tfr_drain(uint64_t *start, uint64_t *end, uint64_t *node, uint32_t *name_id, size_t max) {
    return tfr_drain_ex(start, end, node, name_id, NULL, max);
}

/* Copies name `id` into buf (NUL-terminated, truncated to n); returns its full length, -1 for an
   id not interned. */
long tfr_name(uint32_t id, char *buf, size_t n) {
    if (id >= atomic_load_explicit(&names_n, memory_order_acquire)) return -1;
    size_t len = strlen(names[id]);
    if (n > 0) {
        size_t k = len < n - 1 ? len : n - 1;
        memcpy(buf, names[id], k);
        buf[k] = 0;
    }
    return (long)len;
}

/* Entries waiting to be drained. */
size_t tfr_pending(void) { return atomic_load(&head) - atomic_load(&tail); }

uint32_t tfr_names(void) { return atomic_load_explicit(&names_n, memory_order_acquire); }

size_t tfr_nstats(void) { return TFR_NSTATS; }

const char *tfr_stat_name(size_t i) { return i < TFR_NSTATS ? stat_names[i] : NULL; }

/* Writes min(n, tfr_nstats()) values in stat_names' order; returns how many. */
size_t tfr_stats(uint64_t *out, size_t n) {
    uint64_t v[TFR_NSTATS];
    for (size_t i = 0; i < S_NCOUNTERS; i++) v[i] = atomic_load_explicit(&counters[i], memory_order_relaxed);
    size_t h = atomic_load(&head), t = atomic_load(&tail);
    uint32_t rt = 0;
    if (cuptiGetVersion(&rt) != CUPTI_SUCCESS) rt = 0;
    size_t k = S_NCOUNTERS;
    v[k++] = tfr_names();
    v[k++] = ring ? ring_mask + 1 : 0;
    v[k++] = h - t;
    v[k++] = (uint64_t)atomic_load(&running);
    v[k++] = rt;
    v[k++] = CUPTI_API_VERSION;
    size_t m = n < TFR_NSTATS ? n : TFR_NSTATS;
    memcpy(out, v, m * sizeof *out);
    return m;
}

/* CUPTI's clock, the one the records' start and end are on. */
int tfr_timestamp(uint64_t *ts) {
    CHECK(cuptiGetTimestamp(ts));
    return 0;
}
