// Copy kernels: copy between two strided views of the same shape converting the element
// type (`copy_`; with a contiguous destination also `contiguous`, `clone`, `to_vec`,
// `to_dtype`), and fill a strided view (`fill_`).
//
// Instantiated by the host per dtype pair: NT_COPY(S, D), NT_FILL(T).

// dst[position(dst_l, i)] = cast(src[position(src_l, i)]); both layouts have the same sizes.
// `dst_l` has no two indices on one element and `dst` does not overlap `src` (the host copies
// an aliasing source first).
template <typename S, typename D>
__device__ void nt_copy_impl(D* dst, NtLayout dst_l, const S* src, NtLayout src_l, nt_u64 n) {
    if (dst_l.flags & src_l.flags & NT_LAYOUT_CONTIGUOUS) {
        D* to = dst + dst_l.offset;
        const S* from = src + src_l.offset;
#define NT_LOAD_(j) nt_cast<D>(from[j])
#define NT_STORE_(j, v) (to[j] = (v))
        NT_CONTIGUOUS_FOR_EACH4(n, D, NT_LOAD_, NT_STORE_)
#undef NT_LOAD_
#undef NT_STORE_
        return;
    }
    NT_FOR_EACH(i, n) { dst[nt_position(dst_l, i)] = nt_cast<D>(src[nt_position(src_l, i)]); }
}

// dst[position(dst_l, i)] = value, where `value_bits` holds the element's bytes
// (little-endian, zero-extended to 64 bits).
template <typename T>
__device__ void nt_fill_impl(T* dst, NtLayout dst_l, nt_u64 value_bits, nt_u64 n) {
    T value = nt_traits<T>::from_bits(value_bits);
    NT_FOR_EACH(i, n) { dst[nt_position(dst_l, i)] = value; }
}

#define NT_COPY(S, D)                                                                        \
    extern "C" __global__ void nt_copy_##S##_##D(nt_t_##D* dst, NtLayout dst_l,             \
                                                 const nt_t_##S* src, NtLayout src_l,        \
                                                 nt_u64 n) {                                 \
        nt_copy_impl<nt_t_##S, nt_t_##D>(dst, dst_l, src, src_l, n);                        \
    }

#define NT_FILL(T)                                                                           \
    extern "C" __global__ void nt_fill_##T(nt_t_##T* dst, NtLayout dst_l, nt_u64 value_bits, \
                                           nt_u64 n) {                                       \
        nt_fill_impl<nt_t_##T>(dst, dst_l, value_bits, n);                                  \
    }
