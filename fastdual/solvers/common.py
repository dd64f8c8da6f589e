"""What more than one driver uses: the declaration of a solver option, the soft threshold
(grad g* for the elastic net), the penalty of a primal point and the pure-l1 continuation test
(seed 000 Sec. 3.1, seed 002 Sec. 3)."""
from dataclasses import dataclass

import numpy as np

from fastdual._core.reduce import asum


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


def penalty(w, l2, l1, free_last):
    """l2/2 ||w||^2 + l1 ||w||_1 over the entries of w (float64, contiguous) but the last when
    it is a free intercept's, without a temporary of w's length: by BLAS's ddot and
    _core.reduce's absolute sum (scipy's dasum sums in an order that depends on where w lies in
    memory, and a line search compares these values). scipy.linalg is imported here, where it
    is used, so that importing fastdual does not import it (newton.py)."""
    from scipy.linalg.blas import ddot
    last = w[-1] if free_last else 0.0
    value = 0.5 * l2 * (ddot(w, w) - last * last)
    if l1:
        value += l1 * (asum(w) - abs(last))
    return value


def helper_can_shrink(problem, checkpoint, working_l2):
    """Pure l1 solved with a helper working_l2/2 ||w||^2: True once the working problem's own
    gap at the checkpoint is below a quarter of working_l2 ||w||^2, i.e. once the distance to
    the l1 optimum is dominated by the helper's bias, not by optimisation: time to lower it."""
    w = checkpoint.w
    primal, dual = problem.primal_dual(w, checkpoint.duals, l2=working_l2)
    return primal - dual <= 0.25 * working_l2 * float(w @ w)
