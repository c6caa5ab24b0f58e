/* LD_PRELOAD shim: counts the live bytes of the C heap (malloc_usable_size of every block) and
 * their peak, for torch_memory.py. nt_reset_peak() sets the peak to the current count,
 * nt_peak()/nt_live() read them. Build: gcc -O2 -shared -fPIC live_bytes.c -o live_bytes.so -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stddef.h>

static _Atomic long live, peak;
static void *(*real_malloc)(size_t), *(*real_calloc)(size_t, size_t), *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t), *(*real_memalign)(size_t, size_t);

static void init(void) {
    real_malloc = dlsym(RTLD_NEXT, "malloc");
    real_calloc = dlsym(RTLD_NEXT, "calloc");
    real_realloc = dlsym(RTLD_NEXT, "realloc");
    real_free = dlsym(RTLD_NEXT, "free");
    real_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
    real_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
    real_memalign = dlsym(RTLD_NEXT, "memalign");
}
static void add(void *p) {
    if (!p) return;
    long now = atomic_fetch_add(&live, (long)malloc_usable_size(p)) + (long)malloc_usable_size(p);
    long old = atomic_load(&peak);
    while (now > old && !atomic_compare_exchange_weak(&peak, &old, now)) {}
}
static void sub(void *p) { if (p) atomic_fetch_sub(&live, (long)malloc_usable_size(p)); }

/* calloc is called by dlsym itself: serve those first calls from a static buffer. */
static char boot[4096]; static size_t boot_used;
void *calloc(size_t n, size_t s) {
    if (!real_calloc) {
        void *p = boot + boot_used; boot_used += (n * s + 15) & ~15UL; return p;
    }
    void *p = real_calloc(n, s); add(p); return p;
}
void *malloc(size_t n) { if (!real_malloc) init(); void *p = real_malloc(n); add(p); return p; }
void free(void *p) {
    if ((char *)p >= boot && (char *)p < boot + sizeof boot) return;
    if (!real_free) init(); sub(p); real_free(p);
}
void *realloc(void *p, size_t n) { if (!real_realloc) init(); sub(p); void *q = real_realloc(p, n); add(q ? q : (n ? NULL : NULL)); if (!q && n) add(p); return q; }
int posix_memalign(void **out, size_t a, size_t n) { if (!real_posix_memalign) init(); int r = real_posix_memalign(out, a, n); if (!r) add(*out); return r; }
void *aligned_alloc(size_t a, size_t n) { if (!real_aligned_alloc) init(); void *p = real_aligned_alloc(a, n); add(p); return p; }
void *memalign(size_t a, size_t n) { if (!real_memalign) init(); void *p = real_memalign(a, n); add(p); return p; }

long nt_live(void) { return atomic_load(&live); }
long nt_peak(void) { return atomic_load(&peak); }
void nt_reset_peak(void) { atomic_store(&peak, atomic_load(&live)); }
