"""Numbers to text at C speed: a model file's weights, as LIBLINEAR's save_model writes them
("%.17g " a number, a line a row), without a Python object per number."""
from libc.stdio cimport snprintf
from libc.stdlib cimport free, malloc

# "%.17g " of a double is at most 25 characters (sign, 17 digits, point, "e-308", space)
DEF WIDTH = 26


def format_rows(const double[:, ::1] values):
    """The rows of `values` as bytes: each number "%.17g " (C's printf, the bits LIBLINEAR's
    save_model writes), each row ending in a newline."""
    cdef Py_ssize_t n = values.shape[0], k = values.shape[1], i, j
    cdef Py_ssize_t size = n * (k * WIDTH + 1) + 1, used = 0
    cdef char* buffer = <char*> malloc(size)
    if buffer == NULL:
        raise MemoryError(f"cannot hold {n} x {k} numbers as text ({size} bytes)")
    try:
        with nogil:
            for i in range(n):
                for j in range(k):
                    used += snprintf(buffer + used, WIDTH, b"%.17g ", values[i, j])
                buffer[used] = b"\n"
                used += 1
        return buffer[:used]
    finally:
        free(buffer)
