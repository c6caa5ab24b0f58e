// Softmax and log-softmax along contiguous rows, one block per row, NT_REDUCE_THREADS threads.
//
// Row `r` is in[offset + r * cols .. offset + (r + 1) * cols]; out is contiguous from 0.
// Computed in float for f16/bf16/f32 and double for f64, with the row maximum subtracted
// first; a NaN anywhere in a row makes the row NaN. Instantiated per float dtype:
// NT_SOFTMAX(T).
//
// The gradient, NT_SOFTMAX_BWD(T): from the forward's output y and its gradient g (both
// contiguous rows from 0), per row s = sum(g * y) (sum(g) for log-softmax), then
// y * (g - s) (g - exp(y) * s), computed like the forward.

template <typename C> NT_HD C nt_exp_c(C x);
template <> NT_HD float nt_exp_c<float>(float x) { return expf(x); }
template <> NT_HD double nt_exp_c<double>(double x) { return exp(x); }
template <typename C> NT_HD C nt_log_c(C x);
template <> NT_HD float nt_log_c<float>(float x) { return logf(x); }
template <> NT_HD double nt_log_c<double>(double x) { return log(x); }

template <typename C> struct nt_max_op {
    NT_HD C operator()(C a, C b) const { if (a != a) return a; if (b != b) return b; return b > a ? b : a; }
};
template <typename C> struct nt_add_op {
    NT_HD C operator()(C a, C b) const { return a + b; }
};

template <typename T>
__device__ void nt_softmax_impl(T* out, const T* in, nt_u64 offset, nt_u64 rows, nt_u64 cols, int log) {
    typedef nt_traits<T> tr;
    typedef typename tr::compute C;
    __shared__ C sh[NT_REDUCE_THREADS];
    for (nt_u64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* x = in + offset + row * cols;
        T* y = out + row * cols;
        C m = -nt_inf((C)0);
        for (nt_u64 k = threadIdx.x; k < cols; k += NT_REDUCE_THREADS) {
            m = nt_max_op<C>()(m, tr::to_compute(x[k]));
        }
        m = nt_block_reduce(sh, m, nt_max_op<C>());
        C s = (C)0;
        for (nt_u64 k = threadIdx.x; k < cols; k += NT_REDUCE_THREADS) {
            s += nt_exp_c(tr::to_compute(x[k]) - m);
        }
        s = nt_block_reduce(sh, s, nt_add_op<C>());
        C log_s = nt_log_c(s);
        for (nt_u64 k = threadIdx.x; k < cols; k += NT_REDUCE_THREADS) {
            C v = tr::to_compute(x[k]) - m;
            y[k] = tr::from_compute(log ? v - log_s : nt_exp_c(v) / s);
        }
    }
}

#define NT_SOFTMAX(T)                                                                        \
    extern "C" __global__ void nt_softmax_##T(nt_t_##T* out, const nt_t_##T* in,            \
                                              nt_u64 offset, nt_u64 rows, nt_u64 cols,       \
                                              int log) {                                     \
        nt_softmax_impl<nt_t_##T>(out, in, offset, rows, cols, log);                        \
    }

template <typename T>
__device__ void nt_softmax_bwd_impl(T* out, const T* y, const T* g, nt_u64 rows, nt_u64 cols, int log) {
    typedef nt_traits<T> tr;
    typedef typename tr::compute C;
    __shared__ C sh[NT_REDUCE_THREADS];
    for (nt_u64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* yr = y + row * cols;
        const T* gr = g + row * cols;
        T* o = out + row * cols;
        C s = (C)0;
        for (nt_u64 k = threadIdx.x; k < cols; k += NT_REDUCE_THREADS) {
            C gk = tr::to_compute(gr[k]);
            s += log ? gk : gk * tr::to_compute(yr[k]);
        }
        s = nt_block_reduce(sh, s, nt_add_op<C>());
        for (nt_u64 k = threadIdx.x; k < cols; k += NT_REDUCE_THREADS) {
            C yk = tr::to_compute(yr[k]);
            C gk = tr::to_compute(gr[k]);
            o[k] = tr::from_compute(log ? gk - nt_exp_c(yk) * s : yk * (gk - s));
        }
    }
}

#define NT_SOFTMAX_BWD(T)                                                                    \
    extern "C" __global__ void nt_softmax_bwd_##T(nt_t_##T* out, const nt_t_##T* y,          \
                                                  const nt_t_##T* g, nt_u64 rows,            \
                                                  nt_u64 cols, int log) {                    \
        nt_softmax_bwd_impl<nt_t_##T>(out, y, g, rows, cols, log);                          \
    }
