// Sliding windows over the last two dims (`ops/conv.rs`): im2col (`unfold2d`), its adjoint
// col2im (`fold2d`, also max pooling's gradient with the winning taps) and max pooling.
// One thread per output element each, no atomics: `fold2d` gathers every input element's
// taps in (a, b) order into one accumulator of the compute type, as the CPU backend does, so
// both round the same sums.
//
// Instantiated by the host per dtype: NT_UNFOLD2D(T), NT_FOLD2D(T), NT_MAX_POOL2D(T) (floats).

// The window's geometry over an h × w input with oh × ow positions (`launch::KernelWindow`).
// Row `i` reads input row `i*sh + a*dh - ph` with tap `a`, padding where that is outside
// 0..h; the host checked that every such position fits 64 bits (`Window2d::output_size`).
struct NtWindow {
    nt_u64 h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
};

// The input coordinate output `i` reads with tap `a` along one axis, or -1 for padding.
NT_HD long long nt_window_source(nt_u64 i, nt_u64 a, nt_u64 s, nt_u64 p, nt_u64 d, nt_u64 size) {
    nt_u64 pos = i * s + a * d;
    if (pos < p || pos - p >= size) return -1;
    return (long long)(pos - p);
}

// The output that reads input coordinate `y` with tap `a` along one axis, or -1 if none.
NT_HD long long nt_window_reader(nt_u64 y, nt_u64 a, nt_u64 s, nt_u64 p, nt_u64 d, nt_u64 out) {
    nt_u64 pos = y + p;
    if (pos < a * d) return -1;
    pos -= a * d;
    if (pos % s != 0 || pos / s >= out) return -1;
    return (long long)(pos / s);
}

// out[l, a, b, i, j] (row-major, n elements) = src[position(lead, l) + y*hs + x*ws] for the
// input coordinates (y, x) of tap (a, b) at position (i, j), or `pad_bits` (the element's
// bytes) in the padding. `lead` maps the leading index to the source's storage.
template <typename T>
__device__ void nt_unfold2d_impl(T* out, const T* src, NtLayout lead, nt_u64 hs, nt_u64 ws,
                                 NtWindow g, nt_u64 pad_bits, nt_u64 n) {
    T pad = nt_traits<T>::from_bits(pad_bits);
    NT_FOR_EACH(e, n) {
        nt_u64 t = e;
        nt_u64 j = t % g.ow; t /= g.ow;
        nt_u64 i = t % g.oh; t /= g.oh;
        nt_u64 b = t % g.kw; t /= g.kw;
        nt_u64 a = t % g.kh; t /= g.kh;
        long long y = nt_window_source(i, a, g.sh, g.ph, g.dh, g.h);
        long long x = nt_window_source(j, b, g.sw, g.pw, g.dw, g.w);
        out[e] = (y < 0 || x < 0) ? pad
                                  : src[nt_position(lead, t) + (nt_u64)y * hs + (nt_u64)x * ws];
    }
}

// out[l, y, x] (row-major, n elements) = the sum, in the compute type, over the taps (a, b)
// in order of cols[position(lead, l) + a*sa + b*sb + i*si + j*sj] for the window (i, j) whose
// tap (a, b) reads (y, x). With `winners` (has_winners != 0), a tap counts only where
// winners[position(wlead, l) + i*wi + j*wj] == a*kw + b.
template <typename T>
__device__ void nt_fold2d_impl(T* out, const T* cols, NtLayout lead, nt_u64 sa, nt_u64 sb,
                               nt_u64 si, nt_u64 sj, NtWindow g, const nt_i64* winners,
                               NtLayout wlead, nt_u64 wi, nt_u64 wj, int has_winners,
                               nt_u64 n) {
    typedef nt_traits<T> tr;
    NT_FOR_EACH(e, n) {
        nt_u64 t = e;
        nt_u64 x = t % g.w; t /= g.w;
        nt_u64 y = t % g.h; t /= g.h;
        nt_u64 base = nt_position(lead, t);
        nt_u64 wbase = has_winners ? nt_position(wlead, t) : 0;
        typename tr::compute acc = tr::to_compute(tr::from_bits(0));
#pragma unroll 1
        for (nt_u64 a = 0; a < g.kh; ++a) {
            long long i = nt_window_reader(y, a, g.sh, g.ph, g.dh, g.oh);
            if (i < 0) continue;
#pragma unroll 1
            for (nt_u64 b = 0; b < g.kw; ++b) {
                long long j = nt_window_reader(x, b, g.sw, g.pw, g.dw, g.ow);
                if (j < 0) continue;
                if (has_winners &&
                    winners[wbase + (nt_u64)i * wi + (nt_u64)j * wj] != (nt_i64)(a * g.kw + b)) {
                    continue;
                }
                T v = cols[base + a * sa + b * sb + (nt_u64)i * si + (nt_u64)j * sj];
                acc = nt_wrap_add(acc, tr::to_compute(v));
            }
        }
        out[e] = tr::from_compute(acc);
    }
}

// out[l, i, j] (row-major, n elements) = the largest tap of window (i, j) over
// src[position(lead, l) + y*hs + x*ws], and taps[l, i, j] its number a*kw + b. Starting from
// -inf at tap 0 and skipping the padding (-inf, which never wins) picks the first NaN, else
// the first maximum, as the CPU backend does.
template <typename T>
__device__ void nt_max_pool2d_impl(T* out, nt_i64* taps, const T* src, NtLayout lead,
                                   nt_u64 hs, nt_u64 ws, NtWindow g, nt_u64 n) {
    typedef nt_traits<T> tr;
    typedef typename tr::compute C;
    NT_FOR_EACH(e, n) {
        nt_u64 t = e;
        nt_u64 j = t % g.ow; t /= g.ow;
        nt_u64 i = t % g.oh; t /= g.oh;
        nt_u64 base = nt_position(lead, t);
        C best = -nt_inf((C)0);
        nt_i64 at = 0;
#pragma unroll 1
        for (nt_u64 a = 0; a < g.kh; ++a) {
            long long y = nt_window_source(i, a, g.sh, g.ph, g.dh, g.h);
            if (y < 0) continue;
#pragma unroll 1
            for (nt_u64 b = 0; b < g.kw; ++b) {
                long long x = nt_window_source(j, b, g.sw, g.pw, g.dw, g.w);
                if (x < 0) continue;
                C v = tr::to_compute(src[base + (nt_u64)y * hs + (nt_u64)x * ws]);
                if (v > best || (v != v && best == best)) {
                    best = v;
                    at = (nt_i64)(a * g.kw + b);
                }
            }
        }
        out[e] = tr::from_compute(best);
        taps[e] = at;
    }
}

#define NT_UNFOLD2D(T)                                                                       \
    extern "C" __global__ void nt_unfold2d_##T(nt_t_##T* out, const nt_t_##T* src,          \
                                               NtLayout lead, nt_u64 hs, nt_u64 ws,          \
                                               NtWindow g, nt_u64 pad_bits, nt_u64 n) {      \
        nt_unfold2d_impl<nt_t_##T>(out, src, lead, hs, ws, g, pad_bits, n);                  \
    }

#define NT_FOLD2D(T)                                                                         \
    extern "C" __global__ void nt_fold2d_##T(                                                \
        nt_t_##T* out, const nt_t_##T* cols, NtLayout lead, nt_u64 sa, nt_u64 sb, nt_u64 si, \
        nt_u64 sj, NtWindow g, const nt_i64* winners, NtLayout wlead, nt_u64 wi, nt_u64 wj,  \
        int has_winners, nt_u64 n) {                                                         \
        nt_fold2d_impl<nt_t_##T>(out, cols, lead, sa, sb, si, sj, g, winners, wlead, wi, wj, \
                                 has_winners, n);                                            \
    }

#define NT_MAX_POOL2D(T)                                                                     \
    extern "C" __global__ void nt_max_pool2d_##T(nt_t_##T* out, nt_i64* taps,                \
                                                 const nt_t_##T* src, NtLayout lead,         \
                                                 nt_u64 hs, nt_u64 ws, NtWindow g,           \
                                                 nt_u64 n) {                                 \
        nt_max_pool2d_impl<nt_t_##T>(out, taps, src, lead, hs, ws, g, n);                    \
    }
