// Reductions over one dim, NT_REDUCE_THREADS threads per block.
//
// Row `r` starts at storage position position(outer, r) of `in` and has `rlen` elements
// `rstride` apart; out[r] is the reduction (rows in row-major order of the remaining dims).
// Instantiated by the host per operation and dtype: NT_REDUCE(op, T).
//
// `group` threads reduce one row (a power of two dividing the block; the host picks it by
// shape, launch::reduce_group): the whole block for long rows, a warp's worth for short ones,
// and one thread per row when rows are adjacent in memory (the reduced dim is not the
// innermost), so that a warp's reads of one step fall on adjacent elements.
//
// Accumulators: float for f16/bf16/f32, double for f64, i64 (wrapping) for integers and bool.
// Outputs: sum/prod -> the float type itself, i64 for integers and bool; mean -> the float
// type (floats only); max/min -> the type itself; argmax/argmin -> i64, the first index of
// the extreme value. NaN propagates through max/min/argmax/argmin (the first NaN wins).
// Empty rows give sum 0, prod 1, mean NaN; max/min/argmax/argmin of an empty row are refused
// on the host.

template <typename T, bool F = nt_traits<T>::is_float> struct nt_sum_types;
template <typename T> struct nt_sum_types<T, true> {
    typedef typename nt_traits<T>::compute acc;
    typedef T out;
    NT_HD static acc load(T v) { return nt_traits<T>::to_compute(v); }
    NT_HD static out store(acc a) { return nt_traits<T>::from_compute(a); }
};
template <typename T> struct nt_sum_types<T, false> {
    typedef nt_i64 acc;
    typedef nt_i64 out;
    NT_HD static acc load(T v) { return nt_traits<T>::to_i64(v); }
    NT_HD static out store(acc a) { return a; }
};

template <typename T> struct nt_red_sum {
    typedef nt_sum_types<T> ty;
    typedef typename ty::acc acc;
    typedef typename ty::out out;
    NT_HD static acc init() { return (acc)0; }
    NT_HD static acc step(acc a, T v, nt_u64) { return nt_wrap_add(a, ty::load(v)); }
    NT_HD static acc combine(acc a, acc b) { return nt_wrap_add(a, b); }
    NT_HD static out finish(acc a, nt_u64) { return ty::store(a); }
};

template <typename T> struct nt_red_prod {
    typedef nt_sum_types<T> ty;
    typedef typename ty::acc acc;
    typedef typename ty::out out;
    NT_HD static acc init() { return (acc)1; }
    NT_HD static acc step(acc a, T v, nt_u64) { return nt_wrap_mul(a, ty::load(v)); }
    NT_HD static acc combine(acc a, acc b) { return nt_wrap_mul(a, b); }
    NT_HD static out finish(acc a, nt_u64) { return ty::store(a); }
};

template <typename T> struct nt_red_mean {  // floats only
    typedef typename nt_traits<T>::compute acc;
    typedef T out;
    NT_HD static acc init() { return (acc)0; }
    NT_HD static acc step(acc a, T v, nt_u64) { return a + nt_traits<T>::to_compute(v); }
    NT_HD static acc combine(acc a, acc b) { return a + b; }
    NT_HD static out finish(acc a, nt_u64 n) { return nt_traits<T>::from_compute(a / (acc)n); }
};

// max/min: the accumulator starts at the identity (-inf/+inf, or the integer bounds).
template <typename C> NT_HD C nt_lowest(C) { return (C)(-nt_inf((C)0)); }
template <typename C> NT_HD C nt_highest(C) { return nt_inf((C)0); }
#define NT_INT_BOUNDS(T, LO, HI)                                                             \
    template <> NT_HD T nt_lowest<T>(T) { return (T)(LO); }                                  \
    template <> NT_HD T nt_highest<T>(T) { return (T)(HI); }
NT_INT_BOUNDS(unsigned char, 0, 255)
NT_INT_BOUNDS(signed char, -128, 127)
NT_INT_BOUNDS(short, -32768, 32767)
NT_INT_BOUNDS(int, -2147483647 - 1, 2147483647)
NT_INT_BOUNDS(long long, -9223372036854775807LL - 1, 9223372036854775807LL)

template <typename C> NT_HD C nt_max_nan(C a, C b) { if (a != a) return a; if (b != b) return b; return b > a ? b : a; }
template <typename C> NT_HD C nt_min_nan(C a, C b) { if (a != a) return a; if (b != b) return b; return b < a ? b : a; }

template <typename T> struct nt_red_max {
    typedef typename nt_traits<T>::compute acc;
    typedef T out;
    NT_HD static acc init() { return nt_lowest((acc)0); }
    NT_HD static acc step(acc a, T v, nt_u64) { return nt_max_nan(a, nt_traits<T>::to_compute(v)); }
    NT_HD static acc combine(acc a, acc b) { return nt_max_nan(a, b); }
    NT_HD static out finish(acc a, nt_u64) { return nt_traits<T>::from_compute(a); }
};

template <typename T> struct nt_red_min {
    typedef typename nt_traits<T>::compute acc;
    typedef T out;
    NT_HD static acc init() { return nt_highest((acc)0); }
    NT_HD static acc step(acc a, T v, nt_u64) { return nt_min_nan(a, nt_traits<T>::to_compute(v)); }
    NT_HD static acc combine(acc a, acc b) { return nt_min_nan(a, b); }
    NT_HD static out finish(acc a, nt_u64) { return nt_traits<T>::from_compute(a); }
};

// argmax/argmin: (value, index) with index -1 for "no element yet".
template <typename C> struct nt_arg { C v; nt_i64 i; };

// Whether (bv, bi) beats (av, ai): NaN first, then the extreme value, then the lower index.
template <typename C, bool MAX> NT_HD bool nt_arg_better(nt_arg<C> a, nt_arg<C> b) {
    if (b.i < 0) return false;
    if (a.i < 0) return true;
    bool an = a.v != a.v, bn = b.v != b.v;
    if (an || bn) return bn && (!an || b.i < a.i);
    if (MAX ? (b.v > a.v) : (b.v < a.v)) return true;
    return b.v == a.v && b.i < a.i;
}

template <typename T, bool MAX> struct nt_red_arg {
    typedef typename nt_traits<T>::compute C;
    typedef nt_arg<C> acc;
    typedef nt_i64 out;
    NT_HD static acc init() { acc a; a.v = (C)0; a.i = -1; return a; }
    NT_HD static acc step(acc a, T v, nt_u64 k) {
        acc b; b.v = nt_traits<T>::to_compute(v); b.i = (nt_i64)k;
        return nt_arg_better<C, MAX>(a, b) ? b : a;
    }
    NT_HD static acc combine(acc a, acc b) { return nt_arg_better<C, MAX>(a, b) ? b : a; }
    NT_HD static out finish(acc a, nt_u64) { return a.i; }
};
template <typename T> struct nt_red_argmax : nt_red_arg<T, true> {};
template <typename T> struct nt_red_argmin : nt_red_arg<T, false> {};

template <typename R> struct nt_combiner {
    NT_HD typename R::acc operator()(typename R::acc a, typename R::acc b) const { return R::combine(a, b); }
};

// Reduces rows `group` threads each (see the top), each row's elements split into `splits`
// consecutive chunks reduced by different blocks. With one split, out[row] is the row's
// result; with more, part[row * splits + s] is chunk `s`'s accumulator and the combine pass
// (`nt_reduce_combine_impl`) finishes the rows. A thread reads its chunk UNROLL elements at a
// time, all loads issued before the first use, so several reads are in flight per thread
// (the order of accumulation is unchanged: element by element, ascending).
#define NT_REDUCE_UNROLL 4
template <typename T, typename R>
__device__ void nt_reduce_impl(typename R::out* out, typename R::acc* part, const T* in,
                               NtLayout outer, nt_u64 rows, nt_u64 rlen, nt_u64 rstride,
                               unsigned int group, nt_u64 splits) {
    __shared__ typename R::acc sh[NT_REDUCE_THREADS];
    unsigned int lane = threadIdx.x & (group - 1);
    nt_u64 per_block = NT_REDUCE_THREADS / group;
    nt_u64 row_blocks = (rows + per_block - 1) / per_block;
    nt_u64 chunk = (rlen + splits - 1) / splits;
    // `b` is the same in every thread of the block, so all reach nt_group_reduce together.
#pragma unroll 1
    for (nt_u64 b = blockIdx.x; b < row_blocks * splits; b += gridDim.x) {
        nt_u64 s = b / row_blocks;  // neighbouring blocks take neighbouring rows
        nt_u64 row = (b - s * row_blocks) * per_block + threadIdx.x / group;
        nt_u64 lo = s * chunk;
        nt_u64 hi = rlen - lo < chunk ? rlen : lo + chunk;
        typename R::acc acc = R::init();
        if (row < rows && lo < rlen) {
            const T* p = in + nt_position(outer, row);
            nt_u64 k = lo + lane;
#pragma unroll 1
            for (; k + (NT_REDUCE_UNROLL - 1) * (nt_u64)group < hi;
                 k += NT_REDUCE_UNROLL * (nt_u64)group) {
                T v[NT_REDUCE_UNROLL];
#pragma unroll
                for (int u = 0; u < NT_REDUCE_UNROLL; ++u) v[u] = p[(k + u * (nt_u64)group) * rstride];
#pragma unroll
                for (int u = 0; u < NT_REDUCE_UNROLL; ++u) acc = R::step(acc, v[u], k + u * (nt_u64)group);
            }
#pragma unroll 1
            for (; k < hi; k += group) acc = R::step(acc, p[k * rstride], k);
        }
        acc = nt_group_reduce(sh, acc, group, nt_combiner<R>());
        if (lane == 0 && row < rows) {
            if (splits == 1) {
                out[row] = R::finish(acc, rlen);
            } else {
                part[row * splits + s] = acc;
            }
        }
    }
}

// The combine pass of a split reduction: out[row] from its `splits` partial accumulators,
// combined in chunk order, one thread per row.
template <typename T, typename R>
__device__ void nt_reduce_combine_impl(typename R::out* out, const typename R::acc* part,
                                       nt_u64 rows, nt_u64 rlen, nt_u64 splits) {
    NT_FOR_EACH(row, rows) {
        typename R::acc acc = R::init();
#pragma unroll 1
        for (nt_u64 s = 0; s < splits; ++s) acc = R::combine(acc, part[row * splits + s]);
        out[row] = R::finish(acc, rlen);
    }
}

// `part` holds rows * splits accumulators (16 bytes each at most) when splits > 1; `combine`
// selects the combine pass (one thread per row) instead of the reduction (NT_REDUCE_THREADS
// threads per block, `group` a power of two dividing it).
#define NT_REDUCE(OP, T)                                                                     \
    extern "C" __global__ void nt_reduce_##OP##_##T(                                         \
        nt_red_##OP<nt_t_##T>::out* out, void* part, const nt_t_##T* in, NtLayout outer,     \
        nt_u64 rows, nt_u64 rlen, nt_u64 rstride, unsigned int group, nt_u64 splits,         \
        int combine) {                                                                       \
        typedef nt_red_##OP<nt_t_##T> R;                                                     \
        if (combine) {                                                                       \
            nt_reduce_combine_impl<nt_t_##T, R>(out, (const R::acc*)part, rows, rlen, splits); \
        } else {                                                                             \
            nt_reduce_impl<nt_t_##T, R>(out, (R::acc*)part, in, outer, rows, rlen, rstride,   \
                                        group, splits);                                      \
        }                                                                                    \
    }
