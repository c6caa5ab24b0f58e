// Sorting contiguous rows (`sort`, `argsort`, `topk`): every row of `n` entries ordered with
// the positions the entries came from.
//
// Instantiated by the host per dtype: NT_SORT(T).
//
// The order is a strict total order on (entry, position) pairs: entries by PyTorch's order
// (numbers by value, -0.0 equal to 0.0, NaN above every number and equal to every NaN;
// reversed when descending), ties by position, ascending in both directions. So the sort is
// stable, and no two pairs compare equal, which the merge below relies on: the rank of a pair
// in the merged run is its rank in its own run plus the number of pairs of the other run that
// are less, with no tie to break.
//
// Two kernels, run by the host in turn (`compute::sort`):
// - `tile`: one block per (row, tile of NT_SORT_TILE entries) sorts the tile in shared memory
//   by a bitonic network (positions past the row's end are padding above every pair), so
//   rows of up to NT_SORT_TILE entries need nothing more;
// - `merge`: one pass merges neighbouring sorted runs of `width` entries into runs of
//   2 * width, one thread per entry, each placing its pair by a binary search of the other
//   run (from `ki`/`ii` into `ko`/`io`, so passes alternate between two buffers). The host
//   runs passes from width NT_SORT_TILE until one run covers the row.

// Whether (a, ia) comes before (b, ib); `desc` reverses the entries' order, not the
// positions'.
template <typename T>
NT_HD bool nt_sort_before(T a, nt_i64 ia, T b, nt_i64 ib, int desc) {
    typedef typename nt_traits<T>::compute C;
    C x = nt_traits<T>::to_compute(a);
    C y = nt_traits<T>::to_compute(b);
    bool xnan = x != x, ynan = y != y;  // only a float NaN differs from itself
    // -1, 0 or 1 for x before, tied with or after y in ascending order.
    int c;
    if (xnan || ynan) {
        c = (int)xnan - (int)ynan;
    } else {
        c = x < y ? -1 : (y < x ? 1 : 0);
    }
    if (desc) c = -c;
    return c < 0 || (c == 0 && ia < ib);
}

// Sorts each tile of NT_SORT_TILE entries of the `rows` x `n` row-major `keys` in place and
// writes each entry's position in its row to `idx`. One block per tile, of at least a quarter
// as many threads as the network's size (the host sizes it to the row: a warp for short rows,
// NT_SORT_TILE / 4 for full tiles), thread `t` holding slots `t + r * blockDim.x` (r < 4) and
// comparing two pairs at each step; blocks walk tiles with a grid stride. Positions within the tile are kept as
// `int` in shared memory (4096 f64 keys and their positions fill the 48 KiB a block gets).
// Every thread runs the same loops (the tile, its network size and the steps are the same in
// the whole block; per-thread work is only guarded by `if`), so all reach each barrier
// together.
template <typename T>
__device__ void nt_sort_tile_impl(T* keys, nt_i64* idx, nt_u64 rows, nt_u64 n, int desc) {
    __shared__ T sk[NT_SORT_TILE];
    __shared__ int si[NT_SORT_TILE];
    const unsigned int threads = blockDim.x;
    const unsigned int tid = threadIdx.x;
    nt_u64 tiles_per_row = (n + NT_SORT_TILE - 1) / NT_SORT_TILE;
#pragma unroll 1
    for (nt_u64 t = blockIdx.x; t < rows * tiles_per_row; t += gridDim.x) {
        nt_u64 row = t / tiles_per_row;
        nt_u64 first = (t - row * tiles_per_row) * NT_SORT_TILE;  // within the row
        unsigned int len = (unsigned int)(n - first < NT_SORT_TILE ? n - first : NT_SORT_TILE);
        // The network's size: the tile's length rounded up to a power of two.
        unsigned int size = 2;
#pragma unroll 1
        while (size < len) size <<= 1;
        T* base = keys + row * n + first;
        nt_i64* ibase = idx + row * n + first;
#pragma unroll
        for (unsigned int r = 0; r < 4; ++r) {
            unsigned int k = tid + r * threads;
            if (k < len) sk[k] = base[k];
            if (k < size) si[k] = k < len ? (int)k : -1;  // -1: padding, after every pair
        }
        __syncthreads();
#pragma unroll 1
        for (unsigned int span = 2; span <= size; span <<= 1) {
#pragma unroll 1
            for (unsigned int j = span >> 1; j > 0; j >>= 1) {
#pragma unroll
                for (unsigned int r = 0; r < 2; ++r) {
                    unsigned int p = tid + r * threads;
                    unsigned int lo = 2 * p - (p & (j - 1));  // pairs (lo, lo + j)
                    unsigned int hi = lo + j;
                    if (hi < size) {
                        bool up = (lo & span) == 0;  // this subsequence's direction
                        int ilo = si[lo], ihi = si[hi];
                        bool hi_first;
                        if (ilo < 0) {
                            hi_first = ihi >= 0;
                        } else if (ihi < 0) {
                            hi_first = false;
                        } else {
                            hi_first = nt_sort_before(sk[hi], (nt_i64)ihi, sk[lo], (nt_i64)ilo, desc);
                        }
                        if (hi_first == up) {
                            T tk = sk[lo];
                            sk[lo] = sk[hi];
                            sk[hi] = tk;
                            si[lo] = ihi;
                            si[hi] = ilo;
                        }
                    }
                }
                __syncthreads();
            }
        }
#pragma unroll
        for (unsigned int r = 0; r < 4; ++r) {
            unsigned int k = tid + r * threads;
            if (k < len) {
                base[k] = sk[k];
                ibase[k] = (nt_i64)first + si[k];
            }
        }
        __syncthreads();  // the shared arrays are refilled for the next tile
    }
}

// One merge pass over the `rows` x `n` row-major pairs (ki, ii), whose runs of `width`
// entries (counted from each row's start) are sorted: writes runs of 2 * width to (ko, io).
template <typename T>
__device__ void nt_sort_merge_impl(T* ko, nt_i64* io, const T* ki, const nt_i64* ii,
                                   nt_u64 rows, nt_u64 n, nt_u64 width, int desc) {
    NT_FOR_EACH(e, rows * n) {
        nt_u64 row = e / n;
        nt_u64 p = e - row * n;
        nt_u64 run = p / width;
        nt_u64 start = run * width;
        nt_u64 other = (run ^ 1) * width;  // the neighbouring run's start
        T key = ki[e];
        nt_i64 pos = ii[e];
        nt_u64 at;
        if (other >= n) {
            at = p;  // the row's last run has no neighbour: it stays
        } else {
            const T* ok = ki + row * n + other;
            const nt_i64* oi = ii + row * n + other;
            nt_u64 olen = n - other < width ? n - other : width;
            // How many pairs of the other run come before this one.
            nt_u64 lo = 0, hi = olen;
            while (lo < hi) {
                nt_u64 mid = lo + (hi - lo) / 2;
                if (nt_sort_before(ok[mid], oi[mid], key, pos, desc)) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            nt_u64 merged = start < other ? start : other;
            at = merged + (p - start) + lo;
        }
        ko[row * n + at] = key;
        io[row * n + at] = pos;
    }
}

// `pass` 0 is the tile sort (in place on `ko`/`io`; `ki`/`ii` unused); any other is a merge
// pass of runs of `width`.
#define NT_SORT(T)                                                                           \
    extern "C" __global__ void nt_sort_##T(nt_t_##T* ko, nt_i64* io, const nt_t_##T* ki,     \
                                           const nt_i64* ii, nt_u64 rows, nt_u64 n,          \
                                           nt_u64 width, int desc, int pass) {               \
        if (pass == 0) {                                                                     \
            nt_sort_tile_impl<nt_t_##T>(ko, io, rows, n, desc);                             \
        } else {                                                                             \
            nt_sort_merge_impl<nt_t_##T>(ko, io, ki, ii, rows, n, width, desc);             \
        }                                                                                    \
    }
