"""Numbers to text and back at C speed: a model file's weights, as LIBLINEAR's save_model writes
them ("%.17g " a number, a line a row), without a Python object per number; and a LIBSVM
file's samples read in one pass over its bytes (parse_libsvm)."""
import numpy as np

from libc.math cimport fabs, floor, frexp, isfinite, signbit
from libc.stdio cimport snprintf
from libc.stdlib cimport free, malloc, strtod

from fastdual._core.rows cimport two_product

# printf and strtod read the decimal point from the C locale's LC_NUMERIC, which a program may
# have set (Python's locale.setlocale(locale.LC_NUMERIC, "de_DE.UTF-8") makes it ","): a model
# file or a LIBSVM file must not depend on it. Where POSIX's per-thread locales exist, the calls
# below run under the "C" numeric locale (uselocale, which changes the calling thread only) and
# restore the thread's own after.
cdef extern from *:
    """
    #include <locale.h>
    #if defined(__APPLE__)
    #include <xlocale.h>
    #endif
    #if defined(__GLIBC__) || defined(__APPLE__) || defined(__FreeBSD__)
    static locale_t fastdual_c_numeric = (locale_t)0;
    static void* fastdual_use_c_numeric(void) {
        if (fastdual_c_numeric == (locale_t)0)
            fastdual_c_numeric = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
        return fastdual_c_numeric == (locale_t)0 ? NULL
                                                 : (void*)uselocale(fastdual_c_numeric);
    }
    static void fastdual_restore_locale(void* previous) {
        if (previous != NULL)
            uselocale((locale_t)previous);
    }
    #else
    static void* fastdual_use_c_numeric(void) { return NULL; }
    static void fastdual_restore_locale(void* previous) { (void)previous; }
    #endif
    """
    void* use_c_numeric "fastdual_use_c_numeric"() noexcept
    void restore_locale "fastdual_restore_locale"(void* previous) noexcept nogil

# "%.17g " of a double is at most 25 characters (sign, 17 digits, point, "e-308", space)
DEF WIDTH = 26

# 10^k = _POW_HI[k - K_MIN] + _POW_LO[k - K_MIN] to about 2^-106 relative, for the k that bring
# a number of magnitude 1e-30 to 1e30 to 17 digits (docs/math.md, "Model files' numbers")
DEF K_MIN = -16
DEF K_MAX = 48
cdef double _POW_HI[K_MAX - K_MIN + 1]
cdef double _POW_LO[K_MAX - K_MIN + 1]


def _fill_powers():
    """Each power of ten as the double nearest to it and the double nearest to what remains, by
    Python's exact integers (an int quotient is correctly rounded)."""
    for k in range(K_MIN, K_MAX + 1):
        numerator, denominator = (10 ** k, 1) if k >= 0 else (1, 10 ** -k)
        high = numerator / denominator
        high_numerator, high_denominator = high.as_integer_ratio()
        _POW_HI[k - K_MIN] = high
        _POW_LO[k - K_MIN] = ((numerator * high_denominator - high_numerator * denominator)
                              / (denominator * high_denominator))


_fill_powers()

cdef const char* _PAIRS = (b"00010203040506070809101112131415161718192021222324252627282930313233"
                           b"34353637383940414243444546474849505152535455565758596061626364656667"
                           b"6869707172737475767778798081828384858687888990919293949596979899")
cdef long long LOW_17 = 10 ** 16      # the smallest 17-digit integer
cdef long long HIGH_17 = 10 ** 17


cdef Py_ssize_t _write_17g(char* out, double value) noexcept nogil:
    """value as C's printf writes "%.17g " into out (at most WIDTH bytes): its length.

    A finite value of magnitude 1e-30 to 1e30 is scaled to 17 digits in double-double
    arithmetic, a |value| 10^k within 1e-14 of the exact product; the digits are its nearest
    integer unless that product lies within 1e-9 of half an integer, where printf's exact
    rounding decides. Everything else is printf's too."""
    cdef double magnitude = fabs(value), product, error, whole, fraction
    cdef int exponent, binary_exponent, k, tries, last, i, length = 0, moved = 0
    cdef long long digits = 0
    cdef unsigned int part
    cdef char text[17]
    cdef bint scaled = False
    if not (1e-30 <= magnitude < 1e30):
        return snprintf(out, WIDTH, b"%.17g ", value)
    frexp(magnitude, &binary_exponent)      # 2^(binary_exponent - 1) <= magnitude
    exponent = <int> floor((binary_exponent - 1) * 0.30102999566398120)   # or one less
    for tries in range(3):
        k = 16 - exponent
        two_product(magnitude, _POW_HI[k - K_MIN], &product, &error)
        error += magnitude * _POW_LO[k - K_MIN]
        whole = floor(error)
        digits = <long long> product + <long long> whole
        fraction = error - whole
        if digits < LOW_17:
            if moved > 0:
                # 10^17 or more one exponent down, below 10^16 here: within the error of
                # 10^16, which both exponents round to
                digits, fraction, scaled = LOW_17, 0.0, True
                break
            exponent -= 1
            moved = -1
        elif digits >= HIGH_17:
            if moved < 0:
                digits, fraction, scaled = LOW_17, 0.0, True
                exponent += 1
                break
            exponent += 1
            moved = 1
        else:
            scaled = True
            break
    if not scaled or fabs(fraction - 0.5) < 1e-9:
        return snprintf(out, WIDTH, b"%.17g ", value)
    if fraction > 0.5:
        digits += 1
        if digits == HIGH_17:
            digits = LOW_17
            exponent += 1
    part = <unsigned int> (digits % 100000000)     # the last 8 digits, then the first 9
    for i in range(15, 7, -2):
        text[i] = _PAIRS[2 * (part % 100)]
        text[i + 1] = _PAIRS[2 * (part % 100) + 1]
        part //= 100
    part = <unsigned int> (digits // 100000000)
    for i in range(7, -1, -2):
        text[i] = _PAIRS[2 * (part % 100)]
        text[i + 1] = _PAIRS[2 * (part % 100) + 1]
        part //= 100
    text[0] = <char> (48 + part)
    last = 16
    while text[last] == b"0":
        last -= 1
    if signbit(value):
        out[length] = b"-"
        length += 1
    if -4 <= exponent < 17:           # "%f" style: 17 significant digits, no trailing zeros
        if exponent >= 0:
            for i in range(exponent + 1):
                out[length] = text[i]
                length += 1
            if last > exponent:
                out[length] = b"."
                length += 1
                for i in range(exponent + 1, last + 1):
                    out[length] = text[i]
                    length += 1
        else:
            out[length] = b"0"
            out[length + 1] = b"."
            length += 2
            for i in range(-exponent - 1):
                out[length] = b"0"
                length += 1
            for i in range(last + 1):
                out[length] = text[i]
                length += 1
    else:                              # "%e" style, the exponent in two digits (|X| <= 30)
        out[length] = text[0]
        length += 1
        if last > 0:
            out[length] = b"."
            length += 1
            for i in range(1, last + 1):
                out[length] = text[i]
                length += 1
        out[length] = b"e"
        out[length + 1] = b"-" if exponent < 0 else b"+"
        length += 2
        exponent = -exponent if exponent < 0 else exponent
        out[length] = <char> (48 + exponent // 10)
        out[length + 1] = <char> (48 + exponent % 10)
        length += 2
    out[length] = b" "
    return length + 1


def format_rows(const double[:, ::1] values):
    """The rows of `values` as bytes: each number "%.17g " (the characters C's printf writes,
    which LIBLINEAR's save_model writes; _write_17g), each row ending in a newline. Zeros, most
    of the weights of a model over many features (two thirds of sector's one-vs-rest hinge
    model), are written as printf writes them ("0 ", "-0 ")."""
    cdef Py_ssize_t n = values.shape[0], k = values.shape[1], i, j
    cdef Py_ssize_t size = n * (k * WIDTH + 1) + 1, used = 0
    cdef char* buffer = <char*> malloc(size)
    cdef double value
    cdef void* previous_locale
    if buffer == NULL:
        raise MemoryError(f"cannot hold {n} x {k} numbers as text ({size} bytes)")
    previous_locale = use_c_numeric()
    try:
        with nogil:
            for i in range(n):
                for j in range(k):
                    value = values[i, j]
                    if value == 0.0:
                        if signbit(value):
                            buffer[used] = b"-"
                            used += 1
                        buffer[used] = b"0"
                        buffer[used + 1] = b" "
                        used += 2
                        continue
                    used += _write_17g(buffer + used, value)
                buffer[used] = b"\n"
                used += 1
        return buffer[:used]
    finally:
        restore_locale(previous_locale)
        free(buffer)


cdef inline bint _blank(char c) noexcept nogil:
    """Whitespace within a line (the newline ends it)."""
    return c == b" " or c == b"\t" or c == b"\r" or c == b"\v" or c == b"\f"


cdef inline Py_ssize_t _number_end(const char* text, Py_ssize_t start,
                                   Py_ssize_t length) noexcept nogil:
    """The end of the token of plain decimal-number characters at start (digits, sign, point,
    exponent): where strtod must stop for the token to be the number alone."""
    cdef Py_ssize_t i = start
    cdef char c
    while i < length:
        c = text[i]
        if not ((48 <= c <= 57) or c == b"+" or c == b"-" or c == b"." or c == b"e"
                or c == b"E"):      # (48-57: the digits' codes)
            break
        i += 1
    return i


cdef inline Py_ssize_t _read_number(const char* text, Py_ssize_t start, Py_ssize_t length,
                                    double* out) noexcept nogil:
    """The plain decimal number at start into out: the end of its token, or -1 where the token
    is not one (other characters, a token not ending at a blank or the line's end, a number
    strtod does not read whole, or not finite)."""
    cdef Py_ssize_t end = _number_end(text, start, length)
    cdef char* stop
    if end == start or (end < length and not (_blank(text[end]) or text[end] == b"\n")):
        return -1
    out[0] = strtod(text + start, &stop)
    if stop != text + end or not isfinite(out[0]):
        return -1
    return end


def parse_libsvm(bytes content, long long index_limit):
    """(y, values, indices, indptr, n_features) of LIBSVM text (`label index:value ...`, one
    sample a line, 1-based strictly ascending indices below index_limit), in one pass over the
    bytes; None where the text needs a careful reader: a comment, a qid, an empty file, or any
    token that is not a plain decimal number or an `index:value` pair of them (hexadecimal,
    inf and nan included), a value that is not finite, an index out of order or range. The
    numbers are C's strtod's (correctly rounded, as numpy's parser)."""
    cdef const char* text = content
    cdef Py_ssize_t length = len(content)
    cdef Py_ssize_t max_rows = content.count(b"\n") + 1
    cdef Py_ssize_t max_pairs = content.count(b":")
    y_array = np.empty(max_rows, dtype=np.float64)
    values_array = np.empty(max_pairs, dtype=np.float64)
    indices_array = np.empty(max_pairs, dtype=np.int32)
    indptr_array = np.empty(max_rows + 1, dtype=np.int64)
    cdef double[::1] y = y_array
    cdef double[::1] values = values_array
    cdef int[::1] indices = indices_array
    cdef long long[::1] indptr = indptr_array
    cdef Py_ssize_t pos = 0, row = 0, nnz = 0, end
    cdef long long index, last, largest = 0
    cdef double value
    cdef bint failed = False
    cdef void* previous_locale = use_c_numeric()
    with nogil:
        indptr[0] = 0
        while pos < length and not failed:
            while pos < length and _blank(text[pos]):
                pos += 1
            if pos >= length:
                break
            if text[pos] == b"\n":
                pos += 1
                continue
            # the label
            end = _read_number(text, pos, length, &value)
            if end < 0:
                failed = True
                break
            y[row] = value
            pos = end
            last = 0
            # the pairs
            while True:
                while pos < length and _blank(text[pos]):
                    pos += 1
                if pos >= length or text[pos] == b"\n":
                    break
                index = 0
                end = pos
                while end < length and 48 <= text[end] <= 57 and index < index_limit:
                    index = 10 * index + (text[end] - 48)
                    end += 1
                if end == pos or end >= length or text[end] != b":" or index <= last \
                        or index >= index_limit:
                    failed = True       # (a comment, a qid, a malformed or unordered index)
                    break
                end = _read_number(text, end + 1, length, &value)
                if end < 0:
                    failed = True
                    break
                values[nnz] = value
                indices[nnz] = <int>(index - 1)
                nnz += 1
                last = index
                if index > largest:
                    largest = index
                pos = end
            row += 1
            indptr[row] = nnz
        restore_locale(previous_locale)
    if failed or row == 0:
        return None
    # (views: every colon of a plain file is a pair's, so values and indices are filled
    # whole; y and indptr keep a slot per blank line at most)
    return (y_array[:row], values_array[:nnz], indices_array[:nnz], indptr_array[:row + 1],
            int(largest))
