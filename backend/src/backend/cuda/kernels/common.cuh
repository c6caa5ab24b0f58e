// namedtensor CUDA kernels: shared definitions, prepended to every kernel file.
//
// Compiled at run time by NVRTC without any include path, so nothing here includes a header:
// f16 and bf16 are structs around their 16 bits with hand-written conversions, and the
// integer types are the builtin ones. Every conversion reproduces the CPU backend's rules
// (`namedtensor::dtype`): float to float rounds once to nearest-even; float to integer
// truncates toward zero, saturates at the type's bounds and maps NaN to 0; integer to integer
// wraps; anything non-zero is `true`.
//
// The conversion functions are plain C++ (NT_HD = `__device__`); the test suite also compiles
// them for the host and compares them with the Rust implementation bit for bit.

#ifndef NT_HD
#define NT_HD __device__ __forceinline__
#endif

typedef unsigned long long nt_u64;
typedef long long nt_i64;

// ---------------------------------------------------------------------------------------------
// Element types. The names after `nt_t_` are the dtype names of the Rust side.

struct nt_half { unsigned short bits; };
struct nt_bfloat { unsigned short bits; };

typedef bool nt_t_bool;
typedef unsigned char nt_t_u8;
typedef signed char nt_t_i8;
typedef short nt_t_i16;
typedef int nt_t_i32;
typedef long long nt_t_i64;
typedef nt_half nt_t_f16;
typedef nt_bfloat nt_t_bf16;
typedef float nt_t_f32;
typedef double nt_t_f64;

// ---------------------------------------------------------------------------------------------
// Bit casts (memcpy-free, so they compile without headers on host and device).

NT_HD unsigned int nt_f32_bits(float f) { union { float f; unsigned int u; } c; c.f = f; return c.u; }
NT_HD float nt_f32_from_bits(unsigned int u) { union { float f; unsigned int u; } c; c.u = u; return c.f; }
NT_HD nt_u64 nt_f64_bits(double d) { union { double d; nt_u64 u; } c; c.d = d; return c.u; }
NT_HD double nt_f64_from_bits(nt_u64 u) { union { double d; nt_u64 u; } c; c.u = u; return c.d; }

// ---------------------------------------------------------------------------------------------
// f16 <-> f32 and bf16 <-> f32, bit for bit as the `half` crate.

NT_HD float nt_f16_to_f32(unsigned short h) {
    unsigned int sign = ((unsigned int)h & 0x8000u) << 16;
    unsigned int exp = ((unsigned int)h >> 10) & 0x1fu;
    unsigned int man = (unsigned int)h & 0x3ffu;
    if (exp == 0x1fu) {
        // Infinity, or NaN with the quiet bit set and the payload kept.
        return nt_f32_from_bits(sign | 0x7f800000u | (man != 0 ? 0x00400000u : 0u) | (man << 13));
    }
    if (exp == 0) {
        if (man == 0) return nt_f32_from_bits(sign);
        // Subnormal: normalise the mantissa.
        int e = -1;
        do { ++e; man <<= 1; } while ((man & 0x400u) == 0);
        return nt_f32_from_bits(sign | ((unsigned int)(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13));
    }
    return nt_f32_from_bits(sign | ((exp + (127 - 15)) << 23) | (man << 13));
}

// Round to nearest, ties to even.
NT_HD unsigned short nt_f32_to_f16(float f) {
    unsigned int x = nt_f32_bits(f);
    unsigned int sign = x & 0x80000000u;
    unsigned int exp = x & 0x7f800000u;
    unsigned int man = x & 0x007fffffu;
    if (exp == 0x7f800000u) {
        unsigned int nan_bit = man == 0 ? 0u : 0x0200u;
        return (unsigned short)((sign >> 16) | 0x7c00u | nan_bit | (man >> 13));
    }
    unsigned int half_sign = sign >> 16;
    int half_exp = (int)(exp >> 23) - 127 + 15;
    if (half_exp >= 0x1f) return (unsigned short)(half_sign | 0x7c00u);
    if (half_exp <= 0) {
        if (14 - half_exp > 24) return (unsigned short)half_sign;
        man |= 0x00800000u;
        unsigned int half_man = man >> (14 - half_exp);
        unsigned int round_bit = 1u << (13 - half_exp);
        if ((man & round_bit) != 0 && (man & (3u * round_bit - 1u)) != 0) half_man += 1;
        return (unsigned short)(half_sign | half_man);
    }
    unsigned int r = half_sign | ((unsigned int)half_exp << 10) | (man >> 13);
    unsigned int round_bit = 0x00001000u;
    if ((man & round_bit) != 0 && (man & (3u * round_bit - 1u)) != 0) r += 1;
    return (unsigned short)r;
}

NT_HD float nt_bf16_to_f32(unsigned short b) {
    unsigned int x = (unsigned int)b;
    // NaN: set the quiet bit, as `half` does.
    if ((x & 0x7fffu) > 0x7f80u) x |= 0x0040u;
    return nt_f32_from_bits(x << 16);
}

// Round to nearest, ties to even.
NT_HD unsigned short nt_f32_to_bf16(float f) {
    unsigned int x = nt_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((x >> 16) | 0x0040u);
    unsigned int round_bit = 0x00008000u;
    if ((x & round_bit) != 0 && (x & (3u * round_bit - 1u)) != 0) return (unsigned short)((x >> 16) + 1u);
    return (unsigned short)(x >> 16);
}

// f64 -> f32 rounding to odd: truncate toward zero, then set the last bit if anything was
// lost. Rounding the result to nearest-even at 11 (f16) or 8 (bf16) significant bits gives the
// correctly rounded value of the original double, so f64 -> f16/bf16 rounds only once.
NT_HD float nt_f64_to_f32_odd(double d) {
    if (d != d) return (float)d;
    float f = (float)d;  // nearest
    double back = (double)f;
    if (back == d) return f;
    unsigned int u = nt_f32_bits(f);
    // Step back toward zero when rounding to nearest went away from zero (|f| > |d|).
    // (Magnitude bits are below the sign bit, so `u - 1` steps toward zero for either sign;
    // an overflow to infinity steps back to the largest finite float.)
    if ((back > d && d > 0.0) || (back < d && d < 0.0)) u -= 1u;
    return nt_f32_from_bits(u | 1u);
}

NT_HD unsigned short nt_f64_to_f16(double d) { return nt_f32_to_f16(nt_f64_to_f32_odd(d)); }
NT_HD unsigned short nt_f64_to_bf16(double d) { return nt_f32_to_bf16(nt_f64_to_f32_odd(d)); }

// ---------------------------------------------------------------------------------------------
// Element traits: is the type a float, its value as float/double/i64, and back.
//
// `compute` is the type arithmetic happens in: float for f16/bf16/f32, double for f64, the
// type itself for integers.

template <typename T> struct nt_traits;

#define NT_INT_TRAITS(T, LO, HI_PLUS_ONE, MAXV)                                            \
    template <> struct nt_traits<T> {                                                      \
        typedef T compute;                                                                 \
        static const bool is_float = false;                                                \
        NT_HD static nt_i64 to_i64(T v) { return (nt_i64)v; }                              \
        NT_HD static double to_f64(T v) { return (double)v; }                              \
        NT_HD static T from_i64(nt_i64 v) { return (T)(nt_u64)v; }                          \
        /* Truncate toward zero, saturate, NaN -> 0. */                                    \
        NT_HD static T from_f64(double v) {                                                \
            if (v != v) return (T)0;                                                       \
            if (v <= (double)(LO)) return (T)(LO);                                         \
            if (v >= (HI_PLUS_ONE)) return (T)(MAXV);                                      \
            return (T)v;                                                                   \
        }                                                                                  \
        NT_HD static T from_f32(float v) { return from_f64((double)v); }                   \
        NT_HD static compute to_compute(T v) { return v; }                                 \
        NT_HD static T from_compute(compute v) { return v; }                               \
        NT_HD static T from_bits(nt_u64 b) { return (T)b; }                                \
    };

NT_INT_TRAITS(unsigned char, 0, 256.0, 255)
NT_INT_TRAITS(signed char, -128, 128.0, 127)
NT_INT_TRAITS(short, -32768, 32768.0, 32767)
NT_INT_TRAITS(int, -2147483647 - 1, 2147483648.0, 2147483647)
NT_INT_TRAITS(long long, -9223372036854775807LL - 1, 9223372036854775808.0, 9223372036854775807LL)

template <> struct nt_traits<bool> {
    typedef bool compute;
    static const bool is_float = false;
    NT_HD static nt_i64 to_i64(bool v) { return v ? 1 : 0; }
    NT_HD static double to_f64(bool v) { return v ? 1.0 : 0.0; }
    NT_HD static bool from_i64(nt_i64 v) { return v != 0; }
    NT_HD static bool from_f64(double v) { return v != 0.0; }  // NaN -> true
    NT_HD static bool from_f32(float v) { return v != 0.0f; }
    NT_HD static compute to_compute(bool v) { return v; }
    NT_HD static bool from_compute(compute v) { return v; }
    NT_HD static bool from_bits(nt_u64 b) { return (b & 0xffu) != 0; }
};

template <> struct nt_traits<float> {
    typedef float compute;
    static const bool is_float = true;
    NT_HD static float to_f32(float v) { return v; }
    NT_HD static double to_f64(float v) { return (double)v; }
    NT_HD static float from_i64(nt_i64 v) { return (float)v; }
    NT_HD static float from_f64(double v) { return (float)v; }
    NT_HD static float from_f32(float v) { return v; }
    NT_HD static compute to_compute(float v) { return v; }
    NT_HD static float from_compute(compute v) { return v; }
    NT_HD static float from_bits(nt_u64 b) { return nt_f32_from_bits((unsigned int)b); }
};

template <> struct nt_traits<double> {
    typedef double compute;
    static const bool is_float = true;
    NT_HD static float to_f32(double v) { return (float)v; }
    NT_HD static double to_f64(double v) { return v; }
    NT_HD static double from_i64(nt_i64 v) { return (double)v; }
    NT_HD static double from_f64(double v) { return v; }
    NT_HD static double from_f32(float v) { return (double)v; }
    NT_HD static compute to_compute(double v) { return v; }
    NT_HD static double from_compute(compute v) { return v; }
    NT_HD static double from_bits(nt_u64 b) { return nt_f64_from_bits(b); }
};

template <> struct nt_traits<nt_half> {
    typedef float compute;
    static const bool is_float = true;
    NT_HD static nt_half make(unsigned short b) { nt_half h; h.bits = b; return h; }
    NT_HD static float to_f32(nt_half v) { return nt_f16_to_f32(v.bits); }
    NT_HD static double to_f64(nt_half v) { return (double)nt_f16_to_f32(v.bits); }
    // i64 -> f64 -> f16, as the CPU backend does.
    NT_HD static nt_half from_i64(nt_i64 v) { return make(nt_f64_to_f16((double)v)); }
    NT_HD static nt_half from_f64(double v) { return make(nt_f64_to_f16(v)); }
    NT_HD static nt_half from_f32(float v) { return make(nt_f32_to_f16(v)); }
    NT_HD static compute to_compute(nt_half v) { return nt_f16_to_f32(v.bits); }
    NT_HD static nt_half from_compute(compute v) { return make(nt_f32_to_f16(v)); }
    NT_HD static nt_half from_bits(nt_u64 b) { return make((unsigned short)b); }
};

template <> struct nt_traits<nt_bfloat> {
    typedef float compute;
    static const bool is_float = true;
    NT_HD static nt_bfloat make(unsigned short b) { nt_bfloat h; h.bits = b; return h; }
    NT_HD static float to_f32(nt_bfloat v) { return nt_bf16_to_f32(v.bits); }
    NT_HD static double to_f64(nt_bfloat v) { return (double)nt_bf16_to_f32(v.bits); }
    NT_HD static nt_bfloat from_i64(nt_i64 v) { return make(nt_f64_to_bf16((double)v)); }
    NT_HD static nt_bfloat from_f64(double v) { return make(nt_f64_to_bf16(v)); }
    NT_HD static nt_bfloat from_f32(float v) { return make(nt_f32_to_bf16(v)); }
    NT_HD static compute to_compute(nt_bfloat v) { return nt_bf16_to_f32(v.bits); }
    NT_HD static nt_bfloat from_compute(compute v) { return make(nt_f32_to_bf16(v)); }
    NT_HD static nt_bfloat from_bits(nt_u64 b) { return make((unsigned short)b); }
};

// ---------------------------------------------------------------------------------------------
// Casts between element types, by the CPU backend's rules: a float source goes through its
// exact value (as float when that is exact and the target is not f64, else as double); an
// integer or bool source goes through i64.

template <typename S, typename D, bool SF = nt_traits<S>::is_float> struct nt_caster;

template <typename S, typename D> struct nt_caster<S, D, true> {
    NT_HD static D cast(S v) { return nt_traits<D>::from_f64(nt_traits<S>::to_f64(v)); }
};
template <typename S, typename D> struct nt_caster<S, D, false> {
    NT_HD static D cast(S v) { return nt_traits<D>::from_i64(nt_traits<S>::to_i64(v)); }
};
// Exact float sources narrower than f64 into f16/bf16/f32 skip the double detour (same
// result: widening is exact and the narrowing still rounds once).
#define NT_FLOAT_CAST(S, D)                                                                \
    template <> struct nt_caster<S, D, true> {                                             \
        NT_HD static D cast(S v) { return nt_traits<D>::from_f32(nt_traits<S>::to_f32(v)); } \
    };
NT_FLOAT_CAST(float, nt_half)
NT_FLOAT_CAST(float, nt_bfloat)
NT_FLOAT_CAST(nt_half, nt_bfloat)
NT_FLOAT_CAST(nt_bfloat, nt_half)
NT_FLOAT_CAST(nt_half, float)
NT_FLOAT_CAST(nt_bfloat, float)
// The same type: a bit copy.
template <typename T> struct nt_caster<T, T, true> { NT_HD static T cast(T v) { return v; } };
template <typename T> struct nt_caster<T, T, false> { NT_HD static T cast(T v) { return v; } };

template <typename D, typename S> NT_HD D nt_cast(S v) { return nt_caster<S, D>::cast(v); }

// ---------------------------------------------------------------------------------------------
// Wrapping integer arithmetic through 64-bit unsigned values (signed overflow is undefined in
// C++; conversion back to a narrower signed type wraps on every CUDA target).
template <typename T> NT_HD T nt_wrap_neg(T x) { return (T)(0ull - (nt_u64)(nt_i64)x); }
template <typename T> NT_HD T nt_wrap_add(T a, T b) { return (T)((nt_u64)(nt_i64)a + (nt_u64)(nt_i64)b); }
template <typename T> NT_HD T nt_wrap_sub(T a, T b) { return (T)((nt_u64)(nt_i64)a - (nt_u64)(nt_i64)b); }
template <typename T> NT_HD T nt_wrap_mul(T a, T b) { return (T)((nt_u64)(nt_i64)a * (nt_u64)(nt_i64)b); }
NT_HD float nt_wrap_neg(float x) { return -x; }
NT_HD double nt_wrap_neg(double x) { return -x; }
NT_HD float nt_wrap_add(float a, float b) { return a + b; }
NT_HD double nt_wrap_add(double a, double b) { return a + b; }
NT_HD float nt_wrap_sub(float a, float b) { return a - b; }
NT_HD double nt_wrap_sub(double a, double b) { return a - b; }
NT_HD float nt_wrap_mul(float a, float b) { return a * b; }
NT_HD double nt_wrap_mul(double a, double b) { return a * b; }

// ---------------------------------------------------------------------------------------------
// Layouts. `NtLayout` is filled by the host (`backend/cuda/launch.rs`, `KernelLayout`): the
// sizes and strides (in elements) of up to NT_MAX_DIMS dims, already coalesced, and the offset
// of the first element. Linear index `i` counts elements in row-major order of the sizes.

#ifndef NT_MAX_DIMS
#error "NT_MAX_DIMS comes from the host (kernels.rs prepends it from launch::MAX_DIMS)"
#endif

#ifndef NT_LAYOUT_CONTIGUOUS
#error "NT_LAYOUT_CONTIGUOUS comes from the host (kernels.rs, from launch::KernelLayout)"
#endif
#ifndef NT_LAYOUT_INDEX32
#error "NT_LAYOUT_INDEX32 comes from the host (kernels.rs, from launch::KernelLayout)"
#endif

struct NtLayout {
    nt_u64 sizes[NT_MAX_DIMS];
    nt_u64 strides[NT_MAX_DIMS];
    nt_u64 offset;
    unsigned int rank;
    unsigned int flags;  // NT_LAYOUT_CONTIGUOUS: position(i) == offset + i;
                         // NT_LAYOUT_INDEX32: the element count fits 32 bits
};

NT_HD nt_u64 nt_position(const NtLayout& l, nt_u64 i) {
    if (l.flags & NT_LAYOUT_CONTIGUOUS) return l.offset + i;
    nt_u64 pos = l.offset;
    // Loops not unrolled: one copy of the division keeps kernels small and quick to compile.
    if (l.flags & NT_LAYOUT_INDEX32) {
        // Every index and size fits 32 bits: 32-bit division, several times cheaper.
        unsigned int j = (unsigned int)i;
#pragma unroll 1
        for (int d = (int)l.rank - 1; d >= 0; --d) {
            unsigned int size = (unsigned int)l.sizes[d];
            unsigned int q = j / size;
            pos += (nt_u64)(j - q * size) * l.strides[d];
            j = q;
        }
        return pos;
    }
#pragma unroll 1
    for (int d = (int)l.rank - 1; d >= 0; --d) {
        nt_u64 size = l.sizes[d];
        nt_u64 q = i / size;
        pos += (i - q * size) * l.strides[d];
        i = q;
    }
    return pos;
}

// Grid-stride loop over `n` linear indices (64-bit, so sizes beyond 2^31 work).
#define NT_FOR_EACH(i, n)                                                                   \
    _Pragma("unroll 1")                                                                     \
    for (nt_u64 i = (nt_u64)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                \
         i += (nt_u64)blockDim.x * gridDim.x)

// The contiguous fast path of elementwise kernels: a grid-stride loop over `n` indices taking
// four per thread per round, a grid stride apart: LOAD(j) (a function-like macro reading and
// computing element j, of type T) for all four, then STORE(j, v) for each, so that every
// thread has four reads in flight (from 1 Mi elements the host launches a quarter of a thread
// per element: launch::elementwise_config). Each index of a round is read before any is
// written, so an output buffer that is also an input (in place) is read before it is
// written. A macro, not a function taking lambdas: capturing a kernel's layout arguments by
// reference moved them to local memory and made the kernels ten times slower on an H200.
#define NT_CONTIGUOUS_FOR_EACH4(n, T, LOAD, STORE)                                          \
    {                                                                                        \
        nt_u64 nt_s_ = (nt_u64)blockDim.x * gridDim.x;                                      \
        nt_u64 nt_i_ = (nt_u64)blockIdx.x * blockDim.x + threadIdx.x;                       \
        _Pragma("unroll 1") for (; nt_i_ + 3 * nt_s_ < (n); nt_i_ += 4 * nt_s_) {           \
            T nt_v0_ = LOAD(nt_i_);                                                          \
            T nt_v1_ = LOAD(nt_i_ + nt_s_);                                                  \
            T nt_v2_ = LOAD(nt_i_ + 2 * nt_s_);                                              \
            T nt_v3_ = LOAD(nt_i_ + 3 * nt_s_);                                              \
            STORE(nt_i_, nt_v0_);                                                            \
            STORE(nt_i_ + nt_s_, nt_v1_);                                                    \
            STORE(nt_i_ + 2 * nt_s_, nt_v2_);                                                \
            STORE(nt_i_ + 3 * nt_s_, nt_v3_);                                                \
        }                                                                                    \
        _Pragma("unroll 1") for (; nt_i_ < (n); nt_i_ += nt_s_) STORE(nt_i_, LOAD(nt_i_));  \
    }

// The block size every reduction kernel is launched with (a power of two): launch::ROW_BLOCK,
// which kernels.rs prepends to every program, so host and kernels cannot disagree.
#ifndef NT_REDUCE_THREADS
#error "NT_REDUCE_THREADS comes from the host (kernels.rs prepends it from launch::ROW_BLOCK)"
#endif
#ifndef NT_SORT_TILE
#error "NT_SORT_TILE comes from the host (kernels.rs prepends it from launch::SORT_TILE)"
#endif

// Infinities by compute type.
NT_HD float nt_inf(float) { return nt_f32_from_bits(0x7f800000u); }
NT_HD double nt_inf(double) { return nt_f64_from_bits(0x7ff0000000000000ull); }

// Combines the `v` of each group of `group` consecutive threads (a power of two dividing
// NT_REDUCE_THREADS) with `combine` (associative and commutative) and returns each group's
// result to its threads. `sh` is a shared array of NT_REDUCE_THREADS elements; blockDim.x must
// be NT_REDUCE_THREADS. Every thread of the block must call it with the same `group`.
template <typename A, typename F>
__device__ A nt_group_reduce(A* sh, A v, unsigned int group, F combine) {
    if (group == 1) return v;
    unsigned int tid = threadIdx.x;
    unsigned int lane = tid & (group - 1);
    sh[tid] = v;
    __syncthreads();
    for (unsigned int s = group / 2; s > 0; s >>= 1) {
        if (lane < s) sh[tid] = combine(sh[tid], sh[tid + s]);
        __syncthreads();
    }
    A r = sh[tid - lane];
    __syncthreads();  // `sh` may be reused right after
    return r;
}

// nt_group_reduce over the whole block.
template <typename A, typename F>
__device__ A nt_block_reduce(A* sh, A v, F combine) {
    return nt_group_reduce(sh, v, NT_REDUCE_THREADS, combine);
}
