"""What more than one driver uses: the declaration of a solver option, the soft threshold
(grad g* for the elastic net), the penalty of a primal point, the pure-l1 continuation test
(seed 000 Sec. 3.1, seed 002 Sec. 3) and the Cholesky solve of the Newton-type steps."""
from dataclasses import dataclass

import numpy as np

from fastdual._core.linalg import asum, cholesky_solve, dot, triangular_solves

# Systems of at most this many unknowns are solved by _core.linalg's unblocked Cholesky (at most
# 128^3 / 3 = 0.7 M multiply-adds); larger ones by LAPACK's blocked one through numpy.linalg
# (no scipy.linalg import) and _core.linalg's triangular solves. Measured against scipy's
# LAPACK, factor and solve, one thread: up to 64 unknowns the own loop is the faster (64: 30
# against 37 us); at 128, 0.19 against 0.06 ms; at 200, 0.85 against 0.20 ms.
OWN_CHOLESKY_MAX = 128


@dataclass(frozen=True)
class Option:
    """A solver option: its default, and either its allowed (string) values or its kind: bool,
    int (a positive integer) or float (a positive finite number, or None for "choose for me")."""
    default: object
    choices: tuple = None
    kind: type = None
    help: str = ""

    def check(self, name, value):
        if self.choices is not None and not (isinstance(value, str) and value in self.choices):
            raise ValueError(f"{name} must be one of {list(self.choices)}, got {value!r}")
        if self.kind is bool and not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{name} must be True or False, got {value!r}")
        if self.kind is int:
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                raise TypeError(f"{name} must be a positive integer, got {value!r}")
            if value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
            return int(value)
        if self.kind is float and value is not None:
            number = isinstance(value, (int, float, np.number))
            if isinstance(value, (bool, np.bool_)) or not number:
                raise TypeError(f"{name} must be a positive number or None, got {value!r}")
            if not 0.0 < float(value) < np.inf:
                raise ValueError(f"{name} must be a positive finite number or None, got {value!r}")
            return float(value)
        return value


def soft_threshold(v, kappa):
    return np.sign(v) * np.maximum(np.abs(v) - kappa, 0.0)


def penalised_dot(a, b, free_last):
    """a.P b, P the identity but for a free intercept's entry (the last): the dot product over
    the penalised entries of two float64 vectors, by _core.linalg's sum."""
    value = dot(a, b)
    if free_last:
        value -= a[-1] * b[-1]
    return value


def penalty(w, l2, l1, free_last):
    """l2/2 ||w||^2 + l1 ||w||_1 over the entries of w (float64, contiguous) but the last when
    it is a free intercept's, without a temporary of w's length: by _core.linalg's sums, the
    same bits wherever w lies in memory (a line search compares these values)."""
    value = 0.5 * l2 * penalised_dot(w, w, free_last)
    if l1:
        value += l1 * (asum(w) - (abs(w[-1]) if free_last else 0.0))
    return value


def helper_can_shrink(problem, checkpoint, working_l2):
    """Pure l1 solved with a helper working_l2/2 ||w||^2: True once the working problem's own
    gap at the checkpoint is below a quarter of working_l2 ||w||^2, i.e. once the distance to
    the l1 optimum is dominated by the helper's bias, not by optimisation: time to lower it."""
    w = checkpoint.w
    primal, dual = problem.primal_dual(w, checkpoint.duals, l2=working_l2)
    return primal - dual <= 0.25 * working_l2 * float(w @ w)


def solve_spd(A, b):
    """x with A x = b for a symmetric positive definite A (float64, C-contiguous; its upper
    triangle and diagonal are read, and A may be overwritten by the factorisation), or None when A
    is not positive definite to working precision or x is not finite. By _core.linalg's
    Cholesky up to OWN_CHOLESKY_MAX unknowns; above, LAPACK's factorisation through numpy.linalg
    (loaded with numpy: no scipy.linalg import, 0.05-0.2 s of a process) and _core.linalg's
    triangular solves."""
    x = np.array(b, dtype=np.float64)
    if b.shape[0] <= OWN_CHOLESKY_MAX:
        if not cholesky_solve(A, x):
            return None
    else:
        try:
            # (numpy factors the lower triangle of the matrix it is given: A's transpose's is
            # A's upper)
            factor = np.linalg.cholesky(A.T)
        except np.linalg.LinAlgError:
            return None
        triangular_solves(np.ascontiguousarray(factor), x)
    return x if np.all(np.isfinite(x)) else None
