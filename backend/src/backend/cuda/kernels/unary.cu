// Strided elementwise unary operations: out[i] = op(in[position(l, i)]), `out` contiguous.
//
// Instantiated by the host per operation and dtype: NT_UNARY(op, T). Arithmetic happens in
// `nt_traits<T>::compute` (float for f16/bf16/f32, double for f64, the type itself for
// integers); integer arithmetic wraps like Rust's `wrapping_*`.

// Math functions by compute type (NVRTC provides expf/exp etc. without headers).
#define NT_MATH1(name, ffn, dfn)                                                             \
    NT_HD float nt_##name(float x) { return ffn(x); }                                       \
    NT_HD double nt_##name(double x) { return dfn(x); }
NT_MATH1(exp, expf, exp)
NT_MATH1(log, logf, log)
NT_MATH1(sqrt, sqrtf, sqrt)
NT_MATH1(rsqrt, rsqrtf, rsqrt)
NT_MATH1(sin, sinf, sin)
NT_MATH1(cos, cosf, cos)
NT_MATH1(tan, tanf, tan)
NT_MATH1(tanh, tanhf, tanh)
NT_MATH1(erf, erff, erf)
NT_MATH1(log1p, log1pf, log1p)
NT_MATH1(expm1, expm1f, expm1)
NT_MATH1(floor, floorf, floor)
NT_MATH1(ceil, ceilf, ceil)
NT_MATH1(round, rintf, rint)  // halves to even, as PyTorch's round
NT_MATH1(trunc, truncf, trunc)

// Operations on every numeric type.
struct nt_op_neg { template <typename C> NT_HD C operator()(C x) const { return nt_wrap_neg(x); } };
template <typename C> NT_HD C nt_abs(C x) { return x < (C)0 ? nt_wrap_neg(x) : x; }  // integers
NT_HD float nt_abs(float x) { return fabsf(x); }  // |-0.0| is +0.0
NT_HD double nt_abs(double x) { return fabs(x); }
struct nt_op_abs { template <typename C> NT_HD C operator()(C x) const { return nt_abs(x); } };
struct nt_op_relu { template <typename C> NT_HD C operator()(C x) const { return x < (C)0 ? (C)0 : x; } };  // NaN stays NaN
struct nt_op_square { template <typename C> NT_HD C operator()(C x) const { return nt_wrap_mul(x, x); } };
struct nt_op_sign { template <typename C> NT_HD C operator()(C x) const { return (C)((x > (C)0) - (x < (C)0)); } };  // NaN -> 0

// Float-only operations.
#define NT_FLOAT_OP(name, expr)                                                              \
    struct nt_op_##name { template <typename C> NT_HD C operator()(C x) const { return expr; } };
NT_FLOAT_OP(exp, nt_exp(x))
NT_FLOAT_OP(log, nt_log(x))
NT_FLOAT_OP(sqrt, nt_sqrt(x))
NT_FLOAT_OP(rsqrt, nt_rsqrt(x))
NT_FLOAT_OP(sin, nt_sin(x))
NT_FLOAT_OP(cos, nt_cos(x))
NT_FLOAT_OP(tan, nt_tan(x))
NT_FLOAT_OP(tanh, nt_tanh(x))
NT_FLOAT_OP(erf, nt_erf(x))
NT_FLOAT_OP(log1p, nt_log1p(x))
NT_FLOAT_OP(expm1, nt_expm1(x))
NT_FLOAT_OP(floor, nt_floor(x))
NT_FLOAT_OP(ceil, nt_ceil(x))
NT_FLOAT_OP(round, nt_round(x))
NT_FLOAT_OP(trunc, nt_trunc(x))
NT_FLOAT_OP(recip, (C)1 / x)
NT_FLOAT_OP(sigmoid, (C)1 / ((C)1 + nt_exp(-x)))
NT_FLOAT_OP(gelu, (C)0.5 * x * ((C)1 + nt_erf(x * (C)0.70710678118654752440)))
// GELU's derivative: Phi(x) + x phi(x)
NT_FLOAT_OP(gelu_grad, (C)0.5 * ((C)1 + nt_erf(x * (C)0.70710678118654752440)) + x * (C)0.39894228040143267794 * nt_exp((C)-0.5 * x * x))
// tanh approximation: x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
NT_FLOAT_OP(gelu_tanh, (C)0.5 * x * ((C)1 + nt_tanh((x + (C)0.044715 * x * x * x) * (C)0.79788456080286535588)))
NT_FLOAT_OP(silu, x / ((C)1 + nt_exp(-x)))

template <typename T, typename Op>
__device__ void nt_unary_impl(T* out, const T* in, NtLayout l, nt_u64 n) {
    typedef nt_traits<T> tr;
    Op op;
    if (l.flags & NT_LAYOUT_CONTIGUOUS) {
        const T* src = in + l.offset;
#define NT_LOAD_(j) tr::from_compute(op(tr::to_compute(src[j])))
#define NT_STORE_(j, v) (out[j] = (v))
        NT_CONTIGUOUS_FOR_EACH4(n, T, NT_LOAD_, NT_STORE_)
#undef NT_LOAD_
#undef NT_STORE_
        return;
    }
    NT_FOR_EACH(i, n) { out[i] = tr::from_compute(op(tr::to_compute(in[nt_position(l, i)]))); }
}

#define NT_UNARY(OP, T)                                                                      \
    extern "C" __global__ void nt_unary_##OP##_##T(nt_t_##T* out, const nt_t_##T* in,       \
                                                   NtLayout l, nt_u64 n) {                   \
        nt_unary_impl<nt_t_##T, nt_op_##OP>(out, in, l, n);                                 \
    }
