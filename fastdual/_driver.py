"""What every solver's epoch loop shares: timing, the convergence test on the relative duality
gap, history, verbose lines, callbacks. Kernels return to Python between epochs to use it."""
import time
import warnings

import numpy as np

TINY = np.finfo(float).tiny


class ConvergenceWarning(UserWarning):
    """The solver stopped before its certificate reached tol."""


def relative_gap(primal, dual):
    return (primal - dual) / max(abs(primal), TINY)


class Monitor:
    def __init__(self, tol, verbose, callback, solver_name):
        self.tol = tol
        self.verbose = verbose
        self.callback = callback
        self.solver_name = solver_name
        self.history = []
        self.start = time.perf_counter()
        self.stopped_by_callback = False

    def elapsed(self):
        return time.perf_counter() - self.start

    def record(self, epoch, primal, dual, nnz):
        """Append one check; return True when training should stop (converged or told to)."""
        gap = primal - dual
        entry = {"epoch": int(epoch), "seconds": self.elapsed(), "primal": float(primal),
                 "dual": float(dual), "gap": float(gap), "nnz": int(nnz)}
        self.history.append(entry)
        if self.verbose:
            if len(self.history) == 1:
                print(f"{'epoch':>6} {'primal':>14} {'dual':>14} {'gap':>10} {'rel.gap':>9} "
                      f"{'nnz':>8} {'seconds':>8}")
            print(f"{epoch:6d} {primal:14.8g} {dual:14.8g} {gap:10.3e} "
                  f"{relative_gap(primal, dual):9.2e} {nnz:8d} {entry['seconds']:8.3f}", flush=True)
        if self.callback is not None and self.callback(dict(entry)) is False:
            self.stopped_by_callback = True
            return True
        return self.converged(primal, dual)

    def converged(self, primal, dual):
        return relative_gap(primal, dual) <= self.tol

    def warn_unconverged(self, primal, dual, epochs, interrupted):
        if interrupted:
            warnings.warn(f"{self.solver_name}: interrupted after {epochs} epochs; returning the "
                          f"model of the last completed epoch (relative gap "
                          f"{relative_gap(primal, dual):.3g})", ConvergenceWarning, stacklevel=4)
        elif not self.stopped_by_callback and self.tol > 0:
            warnings.warn(f"{self.solver_name}: stopped after max_epochs={epochs} with relative "
                          f"duality gap {relative_gap(primal, dual):.3g} > tol={self.tol:g}. "
                          "Increase max_epochs, loosen tol, or regularise more (larger alpha, "
                          "smaller C).", ConvergenceWarning, stacklevel=4)


class CheckSchedule:
    """When to compute the certificate: every `every` epochs, or adaptively ("auto").

    "auto" extrapolates the linear convergence of the relative gap seen at the last two checks
    and skips ahead to 70% of the predicted epoch where it reaches tol, never more than doubling
    the previous interval; with tol = 0 only the last epoch is checked. The last epoch is always
    checked, and stopping is still decided by an exact certificate.
    """

    def __init__(self, every, tol, max_epochs):
        if every != "auto":
            if isinstance(every, bool) or not isinstance(every, (int, np.integer)) or every < 1:
                raise ValueError(f"check_every must be a positive integer or 'auto', got {every!r}")
        self.every = every
        self.tol = tol
        self.max_epochs = max_epochs
        self.next_check = 1 if (every == "auto" and tol > 0) else (
            max_epochs if every == "auto" else min(every, max_epochs))
        self.last = None        # (epoch, relative gap) of the previous check
        self.interval = 1

    def due(self, epoch):
        return epoch >= self.next_check or epoch >= self.max_epochs

    def checked(self, epoch, rel_gap):
        if self.every != "auto":
            self.next_check = epoch + self.every
            return
        step = 1
        if self.last is not None and self.tol > 0:
            last_epoch, last_gap = self.last
            if 0 < rel_gap < last_gap and rel_gap > self.tol:
                rate = (rel_gap / last_gap) ** (1.0 / (epoch - last_epoch))
                predicted = np.log(self.tol / rel_gap) / np.log(rate)
                step = int(np.clip(np.floor(0.7 * predicted), 1, 2 * self.interval))
        self.interval = step
        self.last = (epoch, rel_gap)
        self.next_check = epoch + step
