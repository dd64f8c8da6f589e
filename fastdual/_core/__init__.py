"""Shared nogil building blocks, used from Cython: row access (rows), the random generator
(rng), the losses, the one certificate (gap) and the O(n) projections (projection)."""
