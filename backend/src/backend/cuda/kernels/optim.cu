// Optimiser steps in place, one thread per element (grid-stride loop).
//
// NT_ADAM(T): one Adam or AdamW step over n elements: the parameter p and its gradient g
// (contiguous from their offsets), the moments m and v and, with `ams`, the running maximum
// vmax (each contiguous from 0; vmax is not touched without `ams`). Per element, computed in
// float for f16/bf16/f32 and double for f64 with the scalars rounded to that type once
// (as the CPU does), in this order:
//   p *= decay; if (l2_on) g += p * l2; m += (g - m) * one_minus_b1;
//   v = v * b2 + g * g * one_minus_b2; s = ams ? (vmax = max(vmax, v)) : v;
//   p += m * neg_step / (sqrt(s) / c2 + eps).
// The maximum propagates NaN, as the CPU's.

template <typename C> NT_HD C nt_adam_sqrt(C x);
template <> NT_HD float nt_adam_sqrt<float>(float x) { return sqrtf(x); }
template <> NT_HD double nt_adam_sqrt<double>(double x) { return sqrt(x); }

template <typename T>
__device__ void nt_adam_impl(T* p, nt_u64 p_offset, const T* g, nt_u64 g_offset, T* m, T* v,
                             T* vmax, nt_u64 n, double decay, double l2, double one_minus_b1,
                             double b2, double one_minus_b2, double c2, double eps,
                             double neg_step, int l2_on, int ams) {
    typedef nt_traits<T> tr;
    typedef typename tr::compute C;
    const C k_decay = (C)decay, k_l2 = (C)l2, k_1b1 = (C)one_minus_b1, k_b2 = (C)b2,
            k_1b2 = (C)one_minus_b2, k_c2 = (C)c2, k_eps = (C)eps, k_step = (C)neg_step;
    nt_u64 stride = (nt_u64)gridDim.x * blockDim.x;
    for (nt_u64 i = (nt_u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        C pi = tr::to_compute(p[p_offset + i]) * k_decay;
        C gi = tr::to_compute(g[g_offset + i]);
        if (l2_on) gi = gi + pi * k_l2;
        C mi = tr::to_compute(m[i]);
        mi = mi + (gi - mi) * k_1b1;
        C vi = tr::to_compute(v[i]) * k_b2 + gi * gi * k_1b2;
        C s = vi;
        if (ams) {
            C x = tr::to_compute(vmax[i]);
            x = (x != x) ? x : ((vi != vi || vi > x) ? vi : x);
            vmax[i] = tr::from_compute(x);
            s = x;
        }
        pi = pi + mi * k_step / (nt_adam_sqrt<C>(s) / k_c2 + k_eps);
        p[p_offset + i] = tr::from_compute(pi);
        m[i] = tr::from_compute(mi);
        v[i] = tr::from_compute(vi);
    }
}

#define NT_ADAM(T)                                                                           \
    extern "C" __global__ void nt_adam_##T(                                                  \
        nt_t_##T* p, nt_u64 p_offset, const nt_t_##T* g, nt_u64 g_offset, nt_t_##T* m,      \
        nt_t_##T* v, nt_t_##T* vmax, nt_u64 n, double decay, double l2, double one_minus_b1, \
        double b2, double one_minus_b2, double c2, double eps, double neg_step, int l2_on,   \
        int ams) {                                                                           \
        nt_adam_impl<nt_t_##T>(p, p_offset, g, g_offset, m, v, vmax, n, decay, l2,          \
                               one_minus_b1, b2, one_minus_b2, c2, eps, neg_step, l2_on,    \
                               ams);                                                         \
    }
