"""Numbers to text at C speed: a model file's weights, as LIBLINEAR's save_model writes them
("%.17g " a number, a line a row), without a Python object per number."""
from libc.math cimport signbit
from libc.stdio cimport snprintf
from libc.stdlib cimport free, malloc

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
