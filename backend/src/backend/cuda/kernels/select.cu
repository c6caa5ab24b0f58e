// Selection and scans: ternary select (`where`, `masked_fill`, `tril`/`triu`), indexed reads
// (`index_select`, `gather`) and their adjoint (`scatter_add`, `index_add`), running
// sums/products along one dim (`cumsum`, `cumprod`).
//
// Instantiated by the host per dtype: NT_WHERE(T), NT_INDEX(T), NT_SCATTER_ADD(T), NT_SCAN(T).

// out[i] = cond[position(lc, i)] ? a[position(la, i)] : b[position(lb, i)], `out` contiguous.
// All three layouts have the output's sizes (broadcast dims have stride 0); `a` and `b` are
// already of the output's type (the host converts them first).
template <typename T>
__device__ void nt_where_impl(T* out, const bool* cond, NtLayout lc, const T* a, NtLayout la,
                              const T* b, NtLayout lb, nt_u64 n) {
    NT_FOR_EACH(i, n) {
        out[i] = cond[nt_position(lc, i)] ? a[nt_position(la, i)] : b[nt_position(lb, i)];
    }
}

// out[i] = src[position(ls, i) + idx[position(li, i)] * dstride], `out` contiguous. `ls` is the
// source's layout at the output's sizes with stride 0 in the indexed dim, whose stride in the
// source is `dstride` (in elements) and whose size is `size`. The host has checked that every
// index is in 0..size before the launch; an index outside it (which cannot reach here) is
// still never read through: it stores zero.
template <typename T>
__device__ void nt_index_impl(T* out, const T* src, NtLayout ls, const nt_i64* idx, NtLayout li,
                              nt_u64 dstride, nt_u64 size, nt_u64 n) {
    NT_FOR_EACH(i, n) {
        nt_i64 v = idx[nt_position(li, i)];
        if (v < 0 || (nt_u64)v >= size) {
            out[i] = nt_traits<T>::from_bits(0);
        } else {
            out[i] = src[nt_position(ls, i) + (nt_u64)v * dstride];
        }
    }
}

// out[position(lo, l) + idx[position(li, l) + k*istride] * ostride] += src[position(ls, l) +
// k*sstride] for every lane `l` < lanes and k < len, `out` contiguous and already holding the
// base. A lane is one position of the index with its scattered dim left out (`lo`, `li`, `ls`
// have size 1 there); two lanes differ in a coordinate other than the scattered dim, so they
// never reach the same output element and no atomics are needed, and each lane adds in index
// order, so the result is deterministic (it equals the CPU's). The host has checked every
// index against `size`; any other (which cannot reach here) is skipped.
template <typename T>
__device__ void nt_scatter_add_impl(T* out, NtLayout lo, nt_u64 ostride, nt_u64 size,
                                    const T* src, NtLayout ls, nt_u64 sstride, const nt_i64* idx,
                                    NtLayout li, nt_u64 istride, nt_u64 len, nt_u64 lanes) {
    typedef nt_traits<T> tr;
    NT_FOR_EACH(l, lanes) {
        nt_u64 o = nt_position(lo, l);
        nt_u64 s = nt_position(ls, l);
        nt_u64 x = nt_position(li, l);
#pragma unroll 1
        for (nt_u64 k = 0; k < len; ++k) {
            nt_i64 v = idx[x + k * istride];
            if (v < 0 || (nt_u64)v >= size) continue;
            T* at = out + o + (nt_u64)v * ostride;
            *at = tr::from_compute(nt_wrap_add(tr::to_compute(*at), tr::to_compute(src[s + k * sstride])));
        }
    }
}

// The accumulator of a scan: f64 for float elements, wrapping i64 for integer ones (as the CPU
// backend's scan), rounded to T on every store but never in the running value.
template <typename T, bool F = nt_traits<T>::is_float> struct nt_scan_acc;
template <typename T> struct nt_scan_acc<T, true> {
    typedef double A;
    NT_HD static A load(T v) { return nt_traits<T>::to_f64(v); }
    NT_HD static T store(A a) { return nt_traits<T>::from_f64(a); }
};
template <typename T> struct nt_scan_acc<T, false> {
    typedef nt_i64 A;
    NT_HD static A load(T v) { return nt_traits<T>::to_i64(v); }
    NT_HD static T store(A a) { return nt_traits<T>::from_i64(a); }
};

// Inclusive scan of a contiguous [outer, len, inner] buffer along its middle dim, from `in`
// into `out` (both contiguous, same shape); lane `l` is (outer, inner) index (l / inner,
// l % inner). Two strategies, picked by the host by shape (launch::scan_block_per_lane):
// - one thread per lane walks its `len` elements in order (many lanes: adjacent threads read
//   adjacent columns, so reads coalesce when inner > 1);
// - one block per lane (few, long lanes): the block scans NT_REDUCE_THREADS elements at a
//   time in shared memory (Hillis-Steele) and carries the running value from chunk to chunk.
//   Its order of accumulation differs from the CPU's, so float results may differ in the
//   last bits of the f64 accumulator (integers wrap identically).
template <typename T>
__device__ void nt_scan_lane_impl(T* out, const T* in, nt_u64 lanes, nt_u64 len, nt_u64 inner,
                                  int prod) {
    typedef nt_scan_acc<T> acc_t;
    typedef typename acc_t::A A;
    NT_FOR_EACH(l, lanes) {
        nt_u64 o = l / inner;
        nt_u64 c = l - o * inner;
        nt_u64 base = o * len * inner + c;
        A acc = prod ? (A)1 : (A)0;
#pragma unroll 1
        for (nt_u64 k = 0; k < len; ++k) {
            nt_u64 at = base + k * inner;
            A x = acc_t::load(in[at]);
            acc = prod ? nt_wrap_mul(acc, x) : nt_wrap_add(acc, x);
            out[at] = acc_t::store(acc);
        }
    }
}

template <typename T>
__device__ void nt_scan_block_impl(T* out, const T* in, nt_u64 lanes, nt_u64 len, nt_u64 inner,
                                   int prod) {
    typedef nt_scan_acc<T> acc_t;
    typedef typename acc_t::A A;
    __shared__ A sh[NT_REDUCE_THREADS];
    unsigned int tid = threadIdx.x;
    A identity = prod ? (A)1 : (A)0;
    // `l` and `k0` are the same in every thread of the block, so all reach each barrier.
    for (nt_u64 l = blockIdx.x; l < lanes; l += gridDim.x) {
        nt_u64 o = l / inner;
        nt_u64 c = l - o * inner;
        nt_u64 base = o * len * inner + c;
        A carry = identity;
        for (nt_u64 k0 = 0; k0 < len; k0 += NT_REDUCE_THREADS) {
            nt_u64 k = k0 + tid;
            A x = k < len ? acc_t::load(in[base + k * inner]) : identity;
            sh[tid] = x;
            __syncthreads();
            for (unsigned int off = 1; off < NT_REDUCE_THREADS; off <<= 1) {
                A before = tid >= off ? sh[tid - off] : identity;
                __syncthreads();  // every read of this step precedes every write
                x = prod ? nt_wrap_mul(before, x) : nt_wrap_add(before, x);
                sh[tid] = x;
                __syncthreads();
            }
            if (k < len) {
                out[base + k * inner] =
                    acc_t::store(prod ? nt_wrap_mul(carry, x) : nt_wrap_add(carry, x));
            }
            A total = sh[NT_REDUCE_THREADS - 1];
            carry = prod ? nt_wrap_mul(carry, total) : nt_wrap_add(carry, total);
            __syncthreads();  // `sh` is rewritten by the next chunk
        }
    }
}

#define NT_WHERE(T)                                                                          \
    extern "C" __global__ void nt_where_##T(nt_t_##T* out, const bool* cond, NtLayout lc,   \
                                            const nt_t_##T* a, NtLayout la,                  \
                                            const nt_t_##T* b, NtLayout lb, nt_u64 n) {      \
        nt_where_impl<nt_t_##T>(out, cond, lc, a, la, b, lb, n);                            \
    }

#define NT_INDEX(T)                                                                          \
    extern "C" __global__ void nt_index_##T(nt_t_##T* out, const nt_t_##T* src, NtLayout ls, \
                                            const nt_i64* idx, NtLayout li, nt_u64 dstride,  \
                                            nt_u64 size, nt_u64 n) {                         \
        nt_index_impl<nt_t_##T>(out, src, ls, idx, li, dstride, size, n);                   \
    }

#define NT_SCATTER_ADD(T)                                                                    \
    extern "C" __global__ void nt_scatter_add_##T(                                           \
        nt_t_##T* out, NtLayout lo, nt_u64 ostride, nt_u64 size, const nt_t_##T* src,        \
        NtLayout ls, nt_u64 sstride, const nt_i64* idx, NtLayout li, nt_u64 istride,         \
        nt_u64 len, nt_u64 lanes) {                                                          \
        nt_scatter_add_impl<nt_t_##T>(out, lo, ostride, size, src, ls, sstride, idx, li,     \
                                      istride, len, lanes);                                  \
    }

// `block_per_lane` is the strategy (the same for the whole launch; blockDim.x must be
// NT_REDUCE_THREADS when it is set).
#define NT_SCAN(T)                                                                           \
    extern "C" __global__ void nt_scan_##T(nt_t_##T* out, const nt_t_##T* in, nt_u64 lanes, \
                                           nt_u64 len, nt_u64 inner, int prod,               \
                                           int block_per_lane) {                             \
        if (block_per_lane) {                                                                \
            nt_scan_block_impl<nt_t_##T>(out, in, lanes, len, inner, prod);                 \
        } else {                                                                             \
            nt_scan_lane_impl<nt_t_##T>(out, in, lanes, len, inner, prod);                  \
        }                                                                                    \
    }
