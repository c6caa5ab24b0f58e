// namedtensor's CUDA emulator, device side: lets the CUDA C kernels (`kernels/common.cuh` and
// `kernels/*.cu`, unchanged) compile as host C++ and run on the CPU.
//
// The host (`emu/kernel_build.rs`) compiles one program per kernel source file: this header,
// the kernel program NVRTC would see (common.cuh, the file, every instantiation line), then
// one `NT_EMU_ENTRY(name)` line per kernel, which defines the C entry point
// `nt_emu_entry_<name>` that `emu/stream.rs` calls to launch it.
//
// Execution model:
// - The grid's blocks run one after another on the calling OS thread, in row-major order
//   (x fastest). A block's threads run as fibers, each on its own stack; a fiber runs until it
//   returns or reaches `__syncthreads`.
// - `__syncthreads` suspends the fiber. When no fiber can run, either all of the block's live
//   threads wait at the same barrier (they are released together), or the launch fails: some
//   returned while others wait (a barrier reached by part of the block), or they wait at
//   different barriers. Real hardware hangs or computes garbage there.
// - `__shared__` variables are per-OS-thread statics: shared by the fibers of the running block
//   and reused by the next block (no kernel may rely on their contents at block start, which
//   real hardware does not promise either).
// - With a non-zero seed, the fibers of a block are resumed in a different pseudo-random order
//   in every round between barriers, which exposes kernels whose result depends on the order
//   of threads (shared-memory races, colliding writes).
//
// Invariants:
// - A launch runs entirely on one OS thread; fibers never migrate, so `thread_local` state is
//   the launch's state.
// - Every fiber stack has a PROT_NONE guard page below it: a stack overflow faults instead of
//   corrupting memory.
// - A fiber's record never moves (the pool's records are allocated once, for the largest
//   block), so a fiber keeps a pointer to its own across launches.
// - A fiber abandoned mid-kernel (a failed barrier check) is re-created before reuse; nothing
//   on its stack needs destroying (kernels hold only trivially destructible values).
//
// Switching uses _setjmp/_longjmp (no signal-mask system call); ucontext is used once per
// fiber to start it on its stack. Under AddressSanitizer (kernels compiled with
// -fsanitize=address) every switch is announced to it (`switching_to`, `arrived`), so it
// knows which stack is live: without that, the _longjmp into another stack makes it unpoison
// or check the wrong memory.

#include <math.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <tuple>
#include <type_traits>
#include <utility>

#if defined(__SANITIZE_ADDRESS__)
#define NT_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NT_EMU_ASAN 1
#endif
#endif
#ifdef NT_EMU_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static thread_local

// CUDA's math functions that C does not have.
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }

struct nt_emu_dim3 {
    unsigned int x, y, z;
};

// The launch configuration, as `emu/stream.rs` passes it (`repr(C)` there).
struct nt_emu_launch_t {
    unsigned int grid[3];
    unsigned int block[3];
    unsigned int shared_mem_bytes;
    unsigned int reserved;
    uint64_t seed;
};

namespace nt_emu {

enum State { READY, AT_BARRIER, DONE };

struct Fiber {
    jmp_buf ctx;
    State state;
    nt_emu_dim3 thread_idx;
    const void* barrier_site;
    char* mapping;
    size_t mapping_size;
    void* asan_fake_stack;  // AddressSanitizer's state of this fiber while it is suspended
};

// What the fibers run: `run(arg)` is one CUDA thread of the current block.
struct Task {
    void (*run)(const void*);
    const void* arg;
};

static const size_t STACK_BYTES = 256 * 1024;
static const unsigned MAX_THREADS = 1024;

static thread_local Fiber* current = nullptr;
static thread_local jmp_buf scheduler;
static thread_local const Task* task = nullptr;
static thread_local nt_emu_dim3 block_idx, block_dim, grid_dim;
static thread_local Fiber* booting = nullptr;
static thread_local jmp_buf boot_return;

// AddressSanitizer's view of the stacks. Before a switch, `switching_to` names the stack about
// to run (`fake` keeps the leaving stack's state; null when it is abandoned); right after one,
// `arrived` restores the arriving stack's state and, on a fiber's first arrival, records the
// OS thread's own stack (the scheduler's), where fibers switch back to. No-ops without ASan.
static thread_local const void* os_stack_bottom = nullptr;
static thread_local size_t os_stack_size = 0;
static thread_local void* os_fake_stack = nullptr;  // the OS thread's state while a fiber runs

static inline void switching_to(void** fake, const void* bottom, size_t size) {
#ifdef NT_EMU_ASAN
    __sanitizer_start_switch_fiber(fake, bottom, size);
#else
    (void)fake, (void)bottom, (void)size;
#endif
}

static inline void arrived(void* fake, bool from_os_stack) {
#ifdef NT_EMU_ASAN
    if (from_os_stack) {
        __sanitizer_finish_switch_fiber(fake, &os_stack_bottom, &os_stack_size);
    } else {
        __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
    }
#else
    (void)fake, (void)from_os_stack;
#endif
}

static inline const void* stack_bottom(const Fiber* f) {
    return f->mapping + sysconf(_SC_PAGESIZE);
}
static inline size_t stack_size(const Fiber* f) {
    return f->mapping_size - (size_t)sysconf(_SC_PAGESIZE);
}

// From a fiber back to the scheduler (on the OS thread's stack); returns when resumed.
static inline void suspend(Fiber* self) {
    if (!_setjmp(self->ctx)) {
        switching_to(&self->asan_fake_stack, os_stack_bottom, os_stack_size);
        _longjmp(scheduler, 1);
    }
    arrived(self->asan_fake_stack, true);
}

struct Pool {
    Fiber* fibers = nullptr;
    unsigned count = 0;
    ~Pool() {
        for (unsigned i = 0; i < count; ++i) munmap(fibers[i].mapping, fibers[i].mapping_size);
        free(fibers);
    }
};
static thread_local Pool pool;

static void fiber_main() {
    Fiber* self = booting;
    arrived(nullptr, true);
    if (!_setjmp(self->ctx)) {
        switching_to(&self->asan_fake_stack, os_stack_bottom, os_stack_size);
        _longjmp(boot_return, 1);
    }
    arrived(self->asan_fake_stack, true);
    for (;;) {
        task->run(task->arg);
        self->state = DONE;
        suspend(self);
    }
}

// Starts `f` on its stack, where it waits for its first resumption.
static bool start(Fiber* f) {
    ucontext_t uc;
    if (getcontext(&uc) != 0) return false;
    uc.uc_stack.ss_sp = (void*)stack_bottom(f);
    uc.uc_stack.ss_size = stack_size(f);
    uc.uc_link = nullptr;
    makecontext(&uc, fiber_main, 0);
    booting = f;
    f->asan_fake_stack = nullptr;
    if (!_setjmp(boot_return)) {
        switching_to(&os_fake_stack, stack_bottom(f), stack_size(f));
        setcontext(&uc);
    }
    arrived(os_fake_stack, false);
    return true;
}

// Makes `n` fibers available; false if memory runs out.
static bool reserve(unsigned n) {
    if (n <= pool.count) return true;
    if (!pool.fibers) {
        // Records for the largest block at once: a running fiber holds a pointer to its own,
        // which must not move when a later launch needs more fibers.
        pool.fibers = (Fiber*)calloc(MAX_THREADS, sizeof(Fiber));
        if (!pool.fibers) return false;
    }
    long page = sysconf(_SC_PAGESIZE);
    while (pool.count < n) {
        Fiber* f = &pool.fibers[pool.count];
        size_t size = STACK_BYTES + (size_t)page;
        void* m = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) return false;
        if (mprotect(m, (size_t)page, PROT_NONE) != 0) {
            munmap(m, size);
            return false;
        }
        f->mapping = (char*)m;
        f->mapping_size = size;
        if (!start(f)) {
            munmap(m, size);
            return false;
        }
        ++pool.count;
    }
    return true;
}

static uint64_t next_random(uint64_t* s) {
    // xorshift64*
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

// Runs the current block's `n` threads to completion; 0, or -1 with `err` filled.
static int run_block(unsigned n, uint64_t* seed, unsigned* order, char* err, size_t err_len) {
    for (unsigned t = 0; t < n; ++t) {
        Fiber* f = &pool.fibers[t];
        f->state = READY;
        f->thread_idx.x = t % block_dim.x;
        f->thread_idx.y = (t / block_dim.x) % block_dim.y;
        f->thread_idx.z = t / (block_dim.x * block_dim.y);
        f->barrier_site = nullptr;
        order[t] = t;
    }
    for (;;) {
        if (*seed != 0) {
            for (unsigned t = n; t > 1; --t) {
                unsigned j = (unsigned)(next_random(seed) % t);
                unsigned tmp = order[t - 1];
                order[t - 1] = order[j];
                order[j] = tmp;
            }
        }
        for (unsigned k = 0; k < n; ++k) {
            Fiber* f = &pool.fibers[order[k]];
            if (f->state != READY) continue;
            current = f;
            if (!_setjmp(scheduler)) {
                switching_to(&os_fake_stack, stack_bottom(f), stack_size(f));
                _longjmp(f->ctx, 1);
            }
            arrived(os_fake_stack, false);
        }
        current = nullptr;
        unsigned done = 0, waiting = 0;
        const void* site = nullptr;
        bool same_site = true;
        for (unsigned t = 0; t < n; ++t) {
            Fiber* f = &pool.fibers[t];
            if (f->state == DONE) {
                ++done;
            } else {
                if (waiting > 0 && f->barrier_site != site) same_site = false;
                site = f->barrier_site;
                ++waiting;
            }
        }
        if (done == n) return 0;
        if (done > 0 || !same_site) {
            if (done > 0) {
                snprintf(err, err_len,
                         "__syncthreads reached by %u of the %u threads of block (%u, %u, %u); "
                         "the other %u had returned",
                         waiting, n, block_idx.x, block_idx.y, block_idx.z, done);
            } else {
                snprintf(err, err_len,
                         "the threads of block (%u, %u, %u) wait at different __syncthreads",
                         block_idx.x, block_idx.y, block_idx.z);
            }
            // The waiting fibers are abandoned mid-kernel: restart them.
            for (unsigned t = 0; t < n; ++t) {
                if (pool.fibers[t].state == AT_BARRIER && !start(&pool.fibers[t])) {
                    // Could not restart: drop the rest of the pool (mappings leak no further).
                    pool.count = t;
                    break;
                }
            }
            return -1;
        }
        for (unsigned t = 0; t < n; ++t) pool.fibers[t].state = READY;
    }
}

template <typename T> struct Arg {
    static_assert(std::is_trivially_copyable<T>::value, "kernel arguments are plain data");
    typedef T type;
};

template <typename Tuple, typename K> struct Invocation {
    K kernel;
    Tuple values;
    static void run(const void* self) {
        const Invocation* inv = (const Invocation*)self;
        Tuple copy = inv->values;  // each thread gets its own copy of the arguments
        std::apply(inv->kernel, copy);
    }
};

template <size_t I, typename Tuple>
static void unpack(Tuple& values, void* const* args) {
    if constexpr (I < std::tuple_size<Tuple>::value) {
        memcpy(&std::get<I>(values), args[I], sizeof(std::get<I>(values)));
        unpack<I + 1>(values, args);
    }
}

// Launches `kernel` (named `name`) with the argument values `args[i]` of byte sizes `sizes[i]`.
template <typename... P>
static int launch(void (*kernel)(P...), const char* name, const nt_emu_launch_t* cfg,
                  void* const* args, const uint64_t* sizes, unsigned nargs, char* err,
                  size_t err_len) {
    typedef std::tuple<typename Arg<typename std::decay<P>::type>::type...> Tuple;
    const uint64_t expected[sizeof...(P) + 1] = {sizeof(typename std::decay<P>::type)..., 0};
    if (nargs != sizeof...(P)) {
        snprintf(err, err_len, "%s takes %u arguments, the launch passed %u", name,
                 (unsigned)sizeof...(P), nargs);
        return -1;
    }
    for (unsigned i = 0; i < nargs; ++i) {
        if (sizes[i] != expected[i]) {
            snprintf(err, err_len,
                     "argument %u of %s is %llu bytes in the kernel's signature, the launch "
                     "passed %llu bytes",
                     i, name, (unsigned long long)expected[i], (unsigned long long)sizes[i]);
            return -1;
        }
    }
    unsigned long long threads =
        (unsigned long long)cfg->block[0] * cfg->block[1] * cfg->block[2];
    if (threads == 0 || threads > MAX_THREADS || cfg->block[2] > 64) {
        snprintf(err, err_len, "invalid block size (%u, %u, %u) for %s", cfg->block[0],
                 cfg->block[1], cfg->block[2], name);
        return -1;
    }
    if (cfg->grid[0] == 0 || cfg->grid[1] == 0 || cfg->grid[2] == 0 ||
        cfg->grid[0] > 0x7fffffffu || cfg->grid[1] > 65535 || cfg->grid[2] > 65535) {
        snprintf(err, err_len, "invalid grid size (%u, %u, %u) for %s", cfg->grid[0],
                 cfg->grid[1], cfg->grid[2], name);
        return -1;
    }
    if (cfg->shared_mem_bytes != 0) {
        snprintf(err, err_len, "%s: dynamic shared memory is not emulated", name);
        return -1;
    }
    if (!reserve((unsigned)threads)) {
        snprintf(err, err_len, "out of host memory for %llu fiber stacks", threads);
        return -1;
    }
    Invocation<Tuple, void (*)(P...)> inv;
    inv.kernel = kernel;
    unpack<0>(inv.values, args);
    Task t = {&Invocation<Tuple, void (*)(P...)>::run, &inv};
    unsigned order[MAX_THREADS];
    uint64_t seed = cfg->seed;
    task = &t;
    block_dim.x = cfg->block[0];
    block_dim.y = cfg->block[1];
    block_dim.z = cfg->block[2];
    grid_dim.x = cfg->grid[0];
    grid_dim.y = cfg->grid[1];
    grid_dim.z = cfg->grid[2];
    int status = 0;
    for (unsigned z = 0; z < grid_dim.z && status == 0; ++z) {
        for (unsigned y = 0; y < grid_dim.y && status == 0; ++y) {
            for (unsigned x = 0; x < grid_dim.x && status == 0; ++x) {
                block_idx.x = x;
                block_idx.y = y;
                block_idx.z = z;
                status = run_block((unsigned)threads, &seed, order, err, err_len);
            }
        }
    }
    task = nullptr;
    if (status != 0) {
        size_t used = strlen(err);
        snprintf(err + used, err_len - used, " (in %s)", name);
    }
    return status;
}

}  // namespace nt_emu

__attribute__((noinline)) static void __syncthreads() {
    nt_emu::Fiber* self = nt_emu::current;
    self->state = nt_emu::AT_BARRIER;
    self->barrier_site = __builtin_return_address(0);
    nt_emu::suspend(self);
}

#define threadIdx (nt_emu::current->thread_idx)
#define blockIdx (nt_emu::block_idx)
#define blockDim (nt_emu::block_dim)
#define gridDim (nt_emu::grid_dim)

// One C entry point per kernel: launches `name` with the configuration and arguments given.
#define NT_EMU_ENTRY(name)                                                                   \
    extern "C" int nt_emu_entry_##name(const nt_emu_launch_t* cfg, void* const* args,        \
                                       const uint64_t* sizes, unsigned nargs, char* err,     \
                                       size_t err_len) {                                     \
        return nt_emu::launch(&name, #name, cfg, args, sizes, nargs, err, err_len);          \
    }
