// Normalisation along contiguous rows (layer norm with `center`, RMS norm without), one block
// per row, NT_REDUCE_THREADS threads; the host moves the dim last and packs the operands so
// that every row is contiguous from 0.
//
// NT_NORMALIZE(T): per row of `cols` entries, mu = mean(x) (0 without `center`),
// r = 1 / sqrt(mean((x - mu)^2) + eps) (the biased variance), y = (x - mu) * r; `r` is written
// to rstd[row]. The mean is reduced first, then the squared deviations (as accurate as the
// composite ops this replaces). Computed in float for f16/bf16/f32 and double for f64.
//
// NT_NORMALIZE_BWD(T): from the output y, its gradient g and rstd (one entry per row),
// gx = r * (g - mean(g) - y * mean(g * y)) per row (no mean(g) term without `center`).

template <typename C> NT_HD C nt_norm_sqrt(C x);
template <> NT_HD float nt_norm_sqrt<float>(float x) { return sqrtf(x); }
template <> NT_HD double nt_norm_sqrt<double>(double x) { return sqrt(x); }

template <typename C> struct nt_norm_add {
    NT_HD C operator()(C a, C b) const { return a + b; }
};

template <typename T>
__device__ void nt_normalize_impl(T* out, T* rstd, const T* in, nt_u64 rows, nt_u64 cols,
                                  double eps, int center) {
    typedef nt_traits<T> tr;
    typedef typename tr::compute C;
    __shared__ C sh[NT_REDUCE_THREADS];
    C n = (C)cols;
    for (nt_u64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* x = in + row * cols;
        T* y = out + row * cols;
        C mu = (C)0;
        if (center) {
            for (nt_u64 k = threadIdx.x; k < cols; k += NT_REDUCE_THREADS) {
                mu += tr::to_compute(x[k]);
            }
            mu = nt_block_reduce(sh, mu, nt_norm_add<C>()) / n;
        }
        C sq = (C)0;
        for (nt_u64 k = threadIdx.x; k < cols; k += NT_REDUCE_THREADS) {
            C d = tr::to_compute(x[k]) - mu;
            sq += d * d;
        }
        sq = nt_block_reduce(sh, sq, nt_norm_add<C>());
        C r = (C)1 / nt_norm_sqrt<C>(sq / n + (C)eps);
        for (nt_u64 k = threadIdx.x; k < cols; k += NT_REDUCE_THREADS) {
            y[k] = tr::from_compute((tr::to_compute(x[k]) - mu) * r);
        }
        if (threadIdx.x == 0) {
            rstd[row] = tr::from_compute(r);
        }
    }
}

#define NT_NORMALIZE(T)                                                                      \
    extern "C" __global__ void nt_normalize_##T(nt_t_##T* out, nt_t_##T* rstd,               \
                                                const nt_t_##T* in, nt_u64 rows,             \
                                                nt_u64 cols, double eps, int center) {       \
        nt_normalize_impl<nt_t_##T>(out, rstd, in, rows, cols, eps, center);                \
    }

template <typename T>
__device__ void nt_normalize_bwd_impl(T* out, const T* y, const T* g, const T* rstd,
                                      nt_u64 rows, nt_u64 cols, int center) {
    typedef nt_traits<T> tr;
    typedef typename tr::compute C;
    __shared__ C sh[NT_REDUCE_THREADS];
    C n = (C)cols;
    for (nt_u64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* yr = y + row * cols;
        const T* gr = g + row * cols;
        T* o = out + row * cols;
        C sg = (C)0, sgy = (C)0;
        for (nt_u64 k = threadIdx.x; k < cols; k += NT_REDUCE_THREADS) {
            C gk = tr::to_compute(gr[k]);
            sg += gk;
            sgy += gk * tr::to_compute(yr[k]);
        }
        C mg = center ? nt_block_reduce(sh, sg, nt_norm_add<C>()) / n : (C)0;
        C mgy = nt_block_reduce(sh, sgy, nt_norm_add<C>()) / n;
        C r = tr::to_compute(rstd[row]);
        for (nt_u64 k = threadIdx.x; k < cols; k += NT_REDUCE_THREADS) {
            C yk = tr::to_compute(yr[k]);
            C gk = tr::to_compute(gr[k]);
            o[k] = tr::from_compute(r * (gk - mg - yk * mgy));
        }
    }
}

#define NT_NORMALIZE_BWD(T)                                                                  \
    extern "C" __global__ void nt_normalize_bwd_##T(nt_t_##T* out, const nt_t_##T* y,        \
                                                    const nt_t_##T* g, const nt_t_##T* rstd, \
                                                    nt_u64 rows, nt_u64 cols, int center) {  \
        nt_normalize_bwd_impl<nt_t_##T>(out, y, g, rstd, rows, cols, center);               \
    }
