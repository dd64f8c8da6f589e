"""Numbers to text and back at C speed: a model file's weights, as LIBLINEAR's save_model writes
them ("%.17g " a number, a line a row), without a Python object per number; and a LIBSVM
file's samples read in one pass over its bytes (parse_libsvm)."""
import numpy as np

from libc.math cimport isfinite, signbit
from libc.stdio cimport snprintf
from libc.stdlib cimport free, malloc, strtod

# "%.17g " of a double is at most 25 characters (sign, 17 digits, point, "e-308", space)
DEF WIDTH = 26


def format_rows(const double[:, ::1] values):
    """The rows of `values` as bytes: each number "%.17g " (C's printf, the bits LIBLINEAR's
    save_model writes), each row ending in a newline. Zeros, most of the weights of a model
    over many features (two thirds of sector's one-vs-rest hinge model), are written as
    printf writes them ("0 ", "-0 ") without a call to it."""
    cdef Py_ssize_t n = values.shape[0], k = values.shape[1], i, j
    cdef Py_ssize_t size = n * (k * WIDTH + 1) + 1, used = 0
    cdef char* buffer = <char*> malloc(size)
    cdef double value
    if buffer == NULL:
        raise MemoryError(f"cannot hold {n} x {k} numbers as text ({size} bytes)")
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
                    used += snprintf(buffer + used, WIDTH, b"%.17g ", value)
                buffer[used] = b"\n"
                used += 1
        return buffer[:used]
    finally:
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
    if failed or row == 0:
        return None
    # (views: every colon of a plain file is a pair's, so values and indices are filled
    # whole; y and indptr keep a slot per blank line at most)
    return (y_array[:row], values_array[:nnz], indices_array[:nnz], indptr_array[:row + 1],
            int(largest))
