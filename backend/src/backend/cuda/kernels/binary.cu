// Strided broadcast binary operations and comparisons:
// out[i] = op(a[position(la, i)], b[position(lb, i)]), `out` contiguous. The host gives both
// input layouts the output's sizes (a broadcast dim has stride 0).
//
// Instantiated by the host per operation and dtype: NT_BINARY(op, T) (out: T) and
// NT_COMPARE(op, T) (out: bool). Integer arithmetic wraps; maximum/minimum propagate NaN.

NT_HD float nt_pow(float a, float b) { return powf(a, b); }
NT_HD double nt_pow(double a, double b) { return pow(a, b); }

// C's fmod (the sign of the dividend); an integer zero divisor gives 0 (the host refuses
// it first) and MIN % -1 gives 0 instead of trapping.
template <typename C> NT_HD C nt_fmod(C a, C b) {
    if (b == (C)0) return (C)0;
    if ((C)-1 < (C)0 && b == (C)-1) return (C)0;
    return a % b;
}
NT_HD float nt_fmod(float a, float b) { return fmodf(a, b); }
NT_HD double nt_fmod(double a, double b) { return fmod(a, b); }
// Python's remainder: the sign of the divisor.
template <typename C> NT_HD C nt_remainder(C a, C b) {
    C r = nt_fmod(a, b);
    if (r != (C)0 && ((r < (C)0) != (b < (C)0))) r += b;
    return r;
}

struct nt_op_add { template <typename C> NT_HD C operator()(C a, C b) const { return nt_wrap_add(a, b); } };
struct nt_op_sub { template <typename C> NT_HD C operator()(C a, C b) const { return nt_wrap_sub(a, b); } };
struct nt_op_mul { template <typename C> NT_HD C operator()(C a, C b) const { return nt_wrap_mul(a, b); } };
struct nt_op_div { template <typename C> NT_HD C operator()(C a, C b) const { return a / b; } };  // floats only
struct nt_op_pow { template <typename C> NT_HD C operator()(C a, C b) const { return nt_pow(a, b); } };  // floats only
struct nt_op_remainder { template <typename C> NT_HD C operator()(C a, C b) const { return nt_remainder(a, b); } };
struct nt_op_fmod { template <typename C> NT_HD C operator()(C a, C b) const { return nt_fmod(a, b); } };
struct nt_op_relu_grad { template <typename C> NT_HD C operator()(C a, C b) const { return b <= (C)0 ? (C)0 : a; } };
struct nt_op_maximum {
    template <typename C> NT_HD C operator()(C a, C b) const {
        if (a != a) return a;
        if (b != b) return b;
        return a > b ? a : b;
    }
};
struct nt_op_minimum {
    template <typename C> NT_HD C operator()(C a, C b) const {
        if (a != a) return a;
        if (b != b) return b;
        return a < b ? a : b;
    }
};

struct nt_op_eq { template <typename C> NT_HD bool operator()(C a, C b) const { return a == b; } };
struct nt_op_ne { template <typename C> NT_HD bool operator()(C a, C b) const { return a != b; } };
struct nt_op_lt { template <typename C> NT_HD bool operator()(C a, C b) const { return a < b; } };
struct nt_op_le { template <typename C> NT_HD bool operator()(C a, C b) const { return a <= b; } };
struct nt_op_gt { template <typename C> NT_HD bool operator()(C a, C b) const { return a > b; } };
struct nt_op_ge { template <typename C> NT_HD bool operator()(C a, C b) const { return a >= b; } };
// Truth values: non-zero (NaN included) is true.
struct nt_op_logical_and { template <typename C> NT_HD bool operator()(C a, C b) const { return (a != (C)0) && (b != (C)0); } };
struct nt_op_logical_or { template <typename C> NT_HD bool operator()(C a, C b) const { return (a != (C)0) || (b != (C)0); } };
struct nt_op_logical_xor { template <typename C> NT_HD bool operator()(C a, C b) const { return (a != (C)0) != (b != (C)0); } };

template <typename T, typename Op>
__device__ void nt_binary_impl(T* out, const T* a, NtLayout la, const T* b, NtLayout lb, nt_u64 n) {
    typedef nt_traits<T> tr;
    Op op;
    if (la.flags & lb.flags & NT_LAYOUT_CONTIGUOUS) {
        const T* x = a + la.offset;
        const T* y = b + lb.offset;
#define NT_LOAD_(j) tr::from_compute(op(tr::to_compute(x[j]), tr::to_compute(y[j])))
#define NT_STORE_(j, v) (out[j] = (v))
        NT_CONTIGUOUS_FOR_EACH4(n, T, NT_LOAD_, NT_STORE_)
#undef NT_LOAD_
#undef NT_STORE_
        return;
    }
    NT_FOR_EACH(i, n) {
        out[i] = tr::from_compute(op(tr::to_compute(a[nt_position(la, i)]),
                                     tr::to_compute(b[nt_position(lb, i)])));
    }
}

template <typename T, typename Op>
__device__ void nt_compare_impl(bool* out, const T* a, NtLayout la, const T* b, NtLayout lb, nt_u64 n) {
    typedef nt_traits<T> tr;
    Op op;
    NT_FOR_EACH(i, n) {
        out[i] = op(tr::to_compute(a[nt_position(la, i)]), tr::to_compute(b[nt_position(lb, i)]));
    }
}

#define NT_BINARY(OP, T)                                                                     \
    extern "C" __global__ void nt_binary_##OP##_##T(nt_t_##T* out, const nt_t_##T* a,      \
                                                    NtLayout la, const nt_t_##T* b,          \
                                                    NtLayout lb, nt_u64 n) {                 \
        nt_binary_impl<nt_t_##T, nt_op_##OP>(out, a, la, b, lb, n);                        \
    }

#define NT_COMPARE(OP, T)                                                                    \
    extern "C" __global__ void nt_compare_##OP##_##T(bool* out, const nt_t_##T* a,          \
                                                     NtLayout la, const nt_t_##T* b,         \
                                                     NtLayout lb, nt_u64 n) {                \
        nt_compare_impl<nt_t_##T, nt_op_##OP>(out, a, la, b, lb, n);                        \
    }
