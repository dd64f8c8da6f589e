# Work buffers for nogil kernels: fd_work_alloc(bytes) / fd_work_free(p, bytes), NULL when out of
# memory.  Buffers of 16 MiB and more are mapped directly and, on Linux, marked for transparent
# huge pages: a buffer of 10^7 doubles is otherwise paid for by ~10^5 page faults per call, which
# costs more than the arithmetic of a linear-time kernel.  Smaller ones come from malloc.
cdef extern from *:
    """
    #include <stdlib.h>
    #if defined(__linux__)
    #include <sys/mman.h>
    #define FD_WORK_MAP_BYTES ((size_t)1 << 24)
    static void *fd_work_alloc(size_t bytes) {
        if (bytes >= FD_WORK_MAP_BYTES) {
            void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p == MAP_FAILED) return NULL;
    #ifdef MADV_HUGEPAGE
            madvise(p, bytes, MADV_HUGEPAGE);
    #endif
            return p;
        }
        return malloc(bytes);
    }
    static void fd_work_free(void *p, size_t bytes) {
        if (p == NULL) return;
        if (bytes >= FD_WORK_MAP_BYTES) munmap(p, bytes); else free(p);
    }
    #else
    static void *fd_work_alloc(size_t bytes) { return malloc(bytes); }
    static void fd_work_free(void *p, size_t bytes) { (void)bytes; free(p); }
    #endif
    """
    void* fd_work_alloc(size_t nbytes) noexcept nogil
    void fd_work_free(void* p, size_t nbytes) noexcept nogil


cdef inline double* cache_aligned(double* start) noexcept nogil:
    """The first 64-byte boundary (a cache line's) at or after start, an 8-byte aligned array of
    doubles: a caller allocates 8 doubles more than it uses."""
    return start + (-(<size_t> start) % 64) // 8
