# The package's own random number generator: xoshiro256** seeded by splitmix64.
# Inline and nogil so that sampling inside the epoch loops costs a few instructions and
# is bit-for-bit reproducible from `random_state`, independent of numpy's generators.
from libc.stdint cimport uint32_t, uint64_t


cdef struct RandomState:
    uint64_t s0
    uint64_t s1
    uint64_t s2
    uint64_t s3


cdef inline uint64_t _rotl(uint64_t x, int k) noexcept nogil:
    return (x << k) | (x >> (64 - k))


cdef inline uint64_t _splitmix64(uint64_t* x) noexcept nogil:
    x[0] += <uint64_t>0x9E3779B97F4A7C15
    cdef uint64_t z = x[0]
    z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EB
    return z ^ (z >> 31)


cdef inline void rng_seed(RandomState* rs, uint64_t seed) noexcept nogil:
    cdef uint64_t x = seed
    rs.s0 = _splitmix64(&x)
    rs.s1 = _splitmix64(&x)
    rs.s2 = _splitmix64(&x)
    rs.s3 = _splitmix64(&x)


cdef inline uint64_t rng_next(RandomState* rs) noexcept nogil:
    cdef uint64_t result = _rotl(rs.s1 * 5, 7) * 9
    cdef uint64_t t = rs.s1 << 17
    rs.s2 ^= rs.s0
    rs.s3 ^= rs.s1
    rs.s1 ^= rs.s2
    rs.s0 ^= rs.s3
    rs.s2 ^= t
    rs.s3 = _rotl(rs.s3, 45)
    return result


cdef inline Py_ssize_t rng_below(RandomState* rs, Py_ssize_t n) noexcept nogil:
    """Uniform integer in [0, n), n >= 1, exactly uniform (Lemire's multiply-and-reject method).

    For n < 2**32 the high half of a 32-bit draw times n is the result; the rare draws whose low
    half falls below 2**32 mod n are rejected. This avoids a 64-bit division on almost every call,
    which matters in the per-epoch shuffle. Larger n fall back to modulo with rejection.
    """
    cdef uint64_t m, r, threshold, bound
    cdef uint32_t x, low, n32, t32
    if <uint64_t>n <= <uint64_t>0xFFFFFFFF:
        n32 = <uint32_t>n
        x = <uint32_t>(rng_next(rs) >> 32)
        m = <uint64_t>x * <uint64_t>n32
        low = <uint32_t>m
        if low < n32:
            t32 = (<uint32_t>(-n32)) % n32
            while low < t32:
                x = <uint32_t>(rng_next(rs) >> 32)
                m = <uint64_t>x * <uint64_t>n32
                low = <uint32_t>m
        return <Py_ssize_t>(m >> 32)
    bound = <uint64_t>n
    threshold = (-bound) % bound
    while True:
        r = rng_next(rs)
        # [threshold, 2**64) holds a whole multiple of n values, so r % n is exactly uniform.
        if r >= threshold:
            return <Py_ssize_t>(r % bound)


cdef inline double rng_uniform(RandomState* rs) noexcept nogil:
    """Uniform double in [0, 1): the top 53 bits of a draw."""
    return <double>(rng_next(rs) >> 11) * (1.0 / 9007199254740992.0)


cdef inline Py_ssize_t rng_alias(RandomState* rs, const double* keep, const Py_ssize_t* alias,
                                 Py_ssize_t n) noexcept nogil:
    """Index k drawn with the probabilities of the alias table (keep, alias) of
    fastdual._core.sampling.alias_table: j uniform, kept with probability keep[j], else alias[j]."""
    cdef Py_ssize_t j = rng_below(rs, n)
    return j if rng_uniform(rs) < keep[j] else alias[j]


cdef inline void rng_shuffle(RandomState* rs, Py_ssize_t* order, Py_ssize_t n) noexcept nogil:
    """Fisher-Yates shuffle of order[0:n] in place."""
    cdef Py_ssize_t i, j, tmp
    for i in range(n - 1, 0, -1):
        j = rng_below(rs, i + 1)
        tmp = order[i]
        order[i] = order[j]
        order[j] = tmp
