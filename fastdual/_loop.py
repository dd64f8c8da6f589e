"""The one training loop every solver runs in: certificate schedule, history, verbose lines,
callbacks, the convergence warning, best-so-far and Ctrl-C.

A solver is a *driver* (fastdual.solvers): `epoch()` runs its next step in its kernel and
returns the passes over the data that step made (None: one; a Newton iteration or an AGM
iteration makes several), and `point()` says where it stands (`point()`: its w with the intercept feature last, and its
duals, or None for a solver that keeps none, in which case the duals are built from the margins).
Optional hooks: `start_from(w)` (a primal solver's warm start from a model's
coefficients, called after construction), `check_work()` (the passes' worth of work its epochs
did since the last check: the "auto" schedule waits for one before certifying), `may_reach(tol)`
(False where the driver's own optimality measure shows a certificate cannot reach tol yet: the
"auto" schedule waits; e.g. cd's largest violation on pure l1, Newton's gap ||g||^2 / (2 l2)),
`check_due(epoch)` (True/False to override the schedule, e.g. the averaging option's windows;
None to leave it to the schedule), `after_check(checkpoint)` (e.g. SDCA's
pure-l1 continuation; solver="auto"'s Switching driver switches methods there, and its
`switches` are printed with verbose) and `dual_vector_out()` (an array of length n_features + 1 into which
the certificate writes its v(duals), at the objective's l2 and summed with no rounding lost, or
None: a driver that keeps v incrementally takes it over in after_check instead of carrying the
rounding of its updates, with no pass of its own; a driver with `exact_dual_vector = False`
gets v summed plainly, at no cost beyond the certificate's, e.g. cd's screening tests). Everything else happens here, once, for
every solver.

What a model reports about itself is never carried over from bookkeeping: at each check the
certificate is computed by the one shared gap function on the driver's point, of which exact
copies are then frozen (read-only) in the checkpoint. The model returned is built from exactly one such checkpoint:
the last one, or after Ctrl-C the one with the smallest certified relative gap; its epoch is
`n_epochs_` and `history_` ends with it.
"""
import contextlib
import math
import signal
import sys
import threading
import time
import warnings
from dataclasses import dataclass

import numpy as np

TINY = np.finfo(float).tiny


class ConvergenceWarning(UserWarning):
    """The solver stopped before its certificate reached tol. The scikit-learn estimators
    (fastdual.sklearn) re-issue it as a subclass of both this class and scikit-learn's
    ConvergenceWarning, so that either's filters catch it there; fastdual itself never imports
    scikit-learn to train."""


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C during fastdual.train. A KeyboardInterrupt, so scripts and loops stop as usual;
    `.model` holds the best certified model reached before the interrupt (None if no epoch
    completed)."""

    def __init__(self, model):
        super().__init__("training interrupted" if model is None else
                         f"training interrupted; the best certified model so far (epoch "
                         f"{model.n_epochs_}, relative gap {model.relative_gap_:.3g}) is "
                         "attached as .model")
        self.model = model


# threadpoolctl's controller of the BLAS libraries loaded, and the number of Python modules
# when it was made: a BLAS library comes with the extension module that loads it (scipy.linalg's
# OpenBLAS after numpy's), so a new module count makes it anew (1.3 ms, not every call).
_BLAS = None
_BLAS_MODULES = -1


@contextlib.contextmanager
def single_thread_blas():
    """Training runs with one BLAS thread (numpy's and scipy's OpenBLAS or MKL, restored
    afterwards): the drivers' vector operations (Newton's and AGM's d-vectors) then give the
    same bits on every machine whatever its thread count, and a busy machine costs no more than
    its share. Parallel work is fastdual's own (n_jobs), never BLAS's."""
    global _BLAS, _BLAS_MODULES
    if _BLAS is None or _BLAS_MODULES != len(sys.modules):
        from threadpoolctl import ThreadpoolController
        _BLAS = ThreadpoolController()
        _BLAS_MODULES = len(sys.modules)
    with _BLAS.limit(limits=1, user_api="blas"):
        yield


def relative_gap(primal, dual, gap=None):
    """gap / max(|primal|, tiny), gap the certificate's own (its Fenchel-Young sum, which
    P - D equals but for rounding) when given, else primal - dual."""
    return (primal - dual if gap is None else gap) / max(abs(primal), TINY)


class TrainingDiverged(FloatingPointError):
    """A solver's iterate left the floating-point range: no model is returned (a model that is
    not finite would be silently wrong); the message says where and what to change."""

    def __init__(self, solver, point, problem):
        advice = problem.scaling_advice()
        super().__init__(
            f"{solver} diverged: at epoch {point.epoch} its objective is {point.primal:.3g}; "
            "no model is returned. Rescale the data (e.g. rows "
            "to unit norm), regularize more (larger alpha, smaller C), or use another solver "
            "(solver='sdca', 'newton' or 'agm')." + (" " + advice if advice else ""))


@dataclass(frozen=True)
class Checkpoint:
    """A point and its certificate, computed on these very (read-only) arrays."""
    epoch: int
    w: np.ndarray            # the coefficients, the intercept feature last
    duals: np.ndarray
    primal: float
    dual: float
    gap: float               # accumulated without cancellation: primal - dual but for rounding

    @property
    def relative_gap(self):
        return relative_gap(self.primal, self.dual, self.gap)


@dataclass
class Result:
    checkpoint: Checkpoint   # what the model is made of
    history: list            # the checks up to and including it
    converged: bool          # its relative gap is at most tol
    interrupted: bool
    stopped_by_callback: bool


def certify(problem, w, duals, epoch, v_out=None, exact_v=True):
    """Certify (w, duals) and freeze exact copies of them (duals from the margins if None; with
    a free intercept, projected onto its hyperplane first). The certificate is computed before
    the copies are made (the driver does not run meanwhile, so they hold the same bits): the
    gap function's scratch and the copies are never alive together, one d-vector less at the
    peak on very wide data, unless the driver asked for the scratch (v_out: v(duals) is written
    into it and kept, summed with no rounding lost unless exact_v is False)."""
    w = np.asarray(w, dtype=np.float64)
    duals = problem.duals_from_margins(w) if duals is None else problem.feasible_duals(duals)
    duals = np.asarray(duals, dtype=np.float64)
    primal, dual, gap = problem.certificate(w, duals, v_out=v_out, feasible=True,
                                            exact_v=v_out is not None and exact_v)
    w, duals = w.copy(), duals.copy()
    w.setflags(write=False)
    duals.setflags(write=False)
    return Checkpoint(int(epoch), w, duals, float(primal), float(dual), float(gap))


# For a driver whose gap spikes above a falling trend (keeps_check_spacing: SDCA), a gap that did
# not fall at a check is checked again at the next epoch only while the smallest relative gap so
# far is within NEAR_TOL times tol (docs/math.md Sec. 4, "A gap that does not fall").
NEAR_TOL = 3.0


class CheckSchedule:
    """When to compute the certificate: every `every` epochs, or adaptively ("auto").

    "auto" extrapolates the linear convergence of the relative gap seen at the last two checks
    and skips ahead to 70% of the predicted epoch where it reaches tol (at least 2 epochs when
    that epoch is more than one away), never more than doubling the previous interval. A gap
    that does not fall is checked again at the next epoch, but for a driver whose gap spikes
    above a falling trend (keep_spacing), far from tol (the smallest gap so far above NEAR_TOL
    times tol), where the last two checks' spacing is kept; with
    tol = 0 only the last epoch is checked. The last epoch is always checked, and stopping is
    still decided by an exact certificate.

    prior: (rate, epochs), what a similar problem showed (one-vs-rest's classes before this one):
    the log relative gap's change per epoch (< 0, convergence_rate) and the epochs it ran.
    "auto" takes the rate for the first interval, where it has one check and no rate of its
    own (70 % of the epochs predicted to tol, at most `epochs`); the later intervals are as
    above. Without it the first intervals double (1, 2, 4, ...).
    """

    def __init__(self, every, tol, max_epochs, prior=None):
        if every != "auto":
            if isinstance(every, bool) or not isinstance(every, (int, np.integer)) or every < 1:
                raise ValueError(f"check_every must be a positive integer or 'auto', got {every!r}")
        self.every = every
        self.tol = tol
        self.max_epochs = max_epochs
        self.next_check = 1 if (every == "auto" and tol > 0) else (
            max_epochs if every == "auto" else min(every, max_epochs))
        self.last = None        # (epoch, relative gap) of the previous check
        self.best_gap = math.inf
        self.interval = 1
        self.prior = prior if (prior is not None and math.isfinite(prior[0]) and prior[0] < 0.0
                               and prior[1] >= 1) else None

    def due(self, epoch):
        return epoch >= self.next_check or epoch >= self.max_epochs

    def affords(self, driver):
        """"auto" only: whether the driver's epochs since the last check did at least one
        certificate's worth of work (`check_work()`, in passes; drivers without it: always),
        so that a driver whose epochs skip most rows (SDCA's shrinking) is not certified more
        often than it trains, and whether a certificate may reach tol (`may_reach(tol)`;
        drivers without it: always), so that checks the driver's own measure shows cannot
        pass are not paid for. An explicit check_every is kept as given; the last epoch is
        checked either way."""
        if self.every != "auto":
            return True
        work = getattr(driver, "check_work", None)
        if work is not None and work() < 1.0:
            return False
        reach = getattr(driver, "may_reach", None)
        return reach is None or bool(reach(self.tol))

    def checked(self, epoch, rel_gap, keep_spacing=False):
        if self.every != "auto":
            self.next_check = epoch + self.every
            return
        step = 1
        self.best_gap = min(self.best_gap, rel_gap)
        if (self.last is None and self.prior is not None and self.tol > 0
                and math.isfinite(rel_gap) and rel_gap > self.tol):
            # The first check: epochs to tol at the prior rate.
            rate, epochs = self.prior
            step = self._step_to_tol((math.log(self.tol) - math.log(rel_gap)) / rate,
                                     int(epochs))
        elif self.last is not None and self.tol > 0:
            last_epoch, last_gap = self.last
            if 0 < rel_gap < last_gap and rel_gap > self.tol:
                # Epochs to tol at the rate of the last interval, from the logs of the gaps and
                # of tol (their ratios may underflow), or near 1 from log1p of the relative
                # decrease. A gap falling too slowly for that log to be below 0 in floating
                # point (or an infinite one) predicts no end: the interval doubles.
                if rel_gap > 0.5 * last_gap:
                    log_ratio = math.log1p((rel_gap - last_gap) / last_gap)
                else:
                    log_ratio = math.log(rel_gap) - math.log(last_gap)
                step = 2 * self.interval
                if math.isfinite(log_ratio) and log_ratio < 0.0:
                    step = self._step_to_tol((epoch - last_epoch)
                                             * (math.log(self.tol) - math.log(rel_gap))
                                             / log_ratio, step)
            elif keep_spacing and self.best_gap > NEAR_TOL * self.tol:
                # A gap that did not fall, far from tol: a spike of a primal that is not
                # monotone (SDCA's w(alpha) on hinge-type losses) or a stall, where a lucky
                # check cannot reach tol. The next check keeps this one's spacing.
                step = max(1, epoch - last_epoch)
        self.interval = step
        self.last = (epoch, rel_gap)
        self.next_check = epoch + step

    @staticmethod
    def _step_to_tol(predicted, longest):
        """The next interval for tol predicted `predicted` epochs away: 70 % of it (at least 2
        when more than one epoch away: the next epoch's check would see tol only if the rate
        sped up, and the rate seen is mostly the fastest still to come; SDCA's slows down),
        or `longest` when that is shorter."""
        if predicted >= longest / 0.7:
            return longest
        step = max(1, int(math.floor(0.7 * predicted)))
        return max(step, 2) if predicted > 1.0 else step


def convergence_rate(history):
    """The log relative gap's mean change per epoch from a run's first check to its last
    (negative when it fell), or None when there are not two checks at different epochs with
    positive gaps: the rate of a similar problem's CheckSchedule prior."""
    if len(history) < 2:
        return None
    first, last = history[0], history[-1]
    gaps = [relative_gap(entry["primal"], entry["dual"], entry["gap"]) for entry in (first, last)]
    if last["epoch"] <= first["epoch"] or not all(0.0 < g < math.inf for g in gaps):
        return None
    return (math.log(gaps[1]) - math.log(gaps[0])) / (last["epoch"] - first["epoch"])


class InterruptFlag:
    """Turns the first Ctrl-C into a flag the loop reads between epochs (a kernel is never cut
    in the middle, and the point it leaves is certified and returned); a second Ctrl-C raises
    KeyboardInterrupt at once. Only installed in the main thread over Python's default handler;
    elsewhere a KeyboardInterrupt is caught by the loop as it comes. `installed`: whether this
    flag's handler is the one Ctrl-C runs (the loop then runs long epochs off the main thread,
    so that the handler runs while a kernel holds no GIL: see run_epoch)."""

    def __init__(self):
        self.pressed = False
        self._previous = None

    @property
    def installed(self):
        return self._previous is not None

    def _handler(self, signum, frame):
        if self.pressed:
            raise KeyboardInterrupt
        self.pressed = True

    def __enter__(self):
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
            self._previous = signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc):
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
        return False


# An epoch longer than this (seconds) makes the next ones run in a helper thread (run_epoch).
LONG_EPOCH = 0.2


def run_epoch(driver, in_thread):
    """driver.epoch(), in the calling thread or (in_thread) in a helper thread the calling (main)
    thread waits on in short joins. Python runs signal handlers in the main thread only, and
    only between bytecodes: while the main thread itself runs a nogil kernel, a second Ctrl-C
    waits for the epoch to end (seconds, for long epochs). Waiting on a join instead, the
    handler runs at once and its KeyboardInterrupt stops the loop with the points certified so
    far; the abandoned epoch finishes in its (daemon) thread on the driver's state, which the
    loop no longer reads (the checkpoints are frozen copies)."""
    if not in_thread:
        return driver.epoch()
    outcome = {}

    def work():
        try:
            outcome["passes"] = driver.epoch()
        except BaseException as error:        # re-raised in the calling thread
            outcome["error"] = error

    worker = threading.Thread(target=work, name="fastdual-epoch", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(0.05)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["passes"]


def run(problem, driver, *, tol, max_epochs, check_every="auto", verbose=0, callback=None,
        interrupt=None, prior=None):
    """Run `driver` until its certificate reaches tol, max_epochs, a callback's False or Ctrl-C.

    `interrupt`: an InterruptFlag shared by several problems trained together (one-vs-rest's
    classes), entered by their caller: Ctrl-C, or a KeyboardInterrupt in one problem, stops
    them all; a problem that finds it set before its first epoch certifies its start.
    `prior`: CheckSchedule's."""
    schedule = CheckSchedule(check_every, tol, max_epochs, prior)
    history = []
    last = best = None        # (checkpoint, history length): the last check, the smallest
                              # relative gap
    start = time.perf_counter()
    stop = interrupted = stopped_by_callback = False
    epoch = 0
    bar = progress_bar(max_epochs) if verbose >= 2 else None

    def check(epoch):
        nonlocal best, last, stop, stopped_by_callback
        w, duals = driver.point()
        v_out = driver.dual_vector_out() if hasattr(driver, "dual_vector_out") else None
        point = certify(problem, w, duals, epoch, v_out,
                        getattr(driver, "exact_dual_vector", True))
        # (P sums the loss of every margin and the penalty of every coefficient: it is finite
        # exactly when the point is, without a temporary of w's length)
        if not np.isfinite(point.primal):
            raise TrainingDiverged(getattr(driver, "description", driver.name), point, problem)
        entry = {"epoch": point.epoch, "seconds": time.perf_counter() - start,
                 "primal": point.primal, "dual": point.dual, "gap": point.gap,
                 "nnz": int(np.count_nonzero(point.w[:problem.n_features]))}
        history.append(entry)
        if bar is not None:
            bar.set_postfix_str(f"rel.gap {point.relative_gap:.2e}", refresh=False)
        elif verbose:
            if len(history) == 1:
                print(f"{'epoch':>6} {'primal':>14} {'dual':>14} {'gap':>10} {'rel.gap':>9} "
                      f"{'nnz':>8} {'seconds':>8}")
            print(f"{point.epoch:6d} {point.primal:14.8g} {point.dual:14.8g} {point.gap:10.3e} "
                  f"{point.relative_gap:9.2e} {entry['nnz']:8d} {entry['seconds']:8.3f}",
                  flush=True)
        last = (point, len(history))
        if best is None or point.relative_gap <= best[0].relative_gap:
            best = (point, len(history))
        if point.relative_gap <= tol:
            stop = True
        elif callback is not None and callback(dict(entry)) is False:
            stop = stopped_by_callback = True
        schedule.checked(epoch, point.relative_gap,
                         bool(getattr(driver, "keeps_check_spacing", False)))
        return point

    last_checked = 0
    in_thread = False       # long epochs, with this loop's own Ctrl-C handler: off the main thread
    announced = 0            # switches of solver="auto" (a Switching driver) printed so far
    with (contextlib.nullcontext(interrupt) if interrupt is not None else InterruptFlag()) as flag:
        try:
            while epoch < max_epochs and not stop:
                if flag.pressed:
                    interrupted = True
                    break
                began = time.perf_counter()
                passes = run_epoch(driver, in_thread)
                if (not in_thread and time.perf_counter() - began > LONG_EPOCH
                        and getattr(flag, "installed", False)
                        and threading.current_thread() is threading.main_thread()):
                    in_thread = True
                passes = 1 if passes is None else int(passes)
                epoch += passes
                if bar is not None:
                    bar.update(passes)
                due = driver.check_due(epoch)
                if due is None:
                    # (the last epoch is checked whatever the driver's may_reach would say,
                    # and Newton's would pay a gradient pass to say it)
                    due = epoch >= max_epochs or (schedule.due(epoch)
                                                  and schedule.affords(driver))
                if flag.pressed:
                    interrupted = True
                    break
                if due or epoch >= max_epochs:
                    point = check(epoch)
                    last_checked = epoch
                    if not stop:
                        driver.after_check(point)
                        if verbose:
                            announced = announce_switches(driver, announced)
                if flag.pressed:
                    interrupted = True
                    break
            if interrupted and (epoch > last_checked or best is None):
                check(epoch)    # the point the interrupt left, certified like any other
        except KeyboardInterrupt:
            # A second Ctrl-C, or one the flag could not catch: stop at once with what is
            # certified already (and every problem sharing the flag with it).
            interrupted = flag.pressed = True
        finally:
            if bar is not None:
                bar.close()
    if best is None:
        return None
    # A run that ends as asked (tol, max_epochs, callback) returns its last check, as every
    # solver's users expect; an interrupted one the best certified point so far.
    point, length = best if interrupted else last
    return Result(point, history[:length], point.relative_gap <= tol, interrupted,
                  stopped_by_callback)


def announce_switches(driver, announced):
    """verbose: one line for each switch of solver="auto" (fastdual.solvers.switching) not
    printed yet, with its reason; returns how many are printed."""
    switches = getattr(driver, "switches", None) or []
    for switch in switches[announced:]:
        print(f"switch at epoch {switch['epoch']}: {switch['from']} "
              f"{switch.get('reason', 'stalled')} (relative gap "
              f"{switch['relative_gap']:.2e}), continuing with {switch['to']}", flush=True)
    return len(switches)


def progress_bar(max_epochs):
    """verbose >= 2: a tqdm bar over the epochs on stderr, advanced between the kernel's epochs
    (never inside them), its postfix the last certified relative gap; None (verbose lines
    instead) when tqdm is not installed."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=max_epochs, unit="epoch", desc="fastdual", leave=False)


def warn_unconverged(result, solver, tol, max_epochs, problem):
    """The convergence warning: the gap reached, and what to change."""
    point = result.checkpoint
    if result.interrupted:
        message = (f"{solver}: interrupted; returning the best certified model so far, of epoch "
                   f"{point.epoch} (relative duality gap {point.relative_gap:.3g})")
    elif result.stopped_by_callback or tol == 0 or result.converged:
        return
    else:
        message = (f"{solver}: stopped after max_epochs={max_epochs} with relative duality gap "
                   f"{point.relative_gap:.3g} > tol={tol:g}. Increase max_epochs, loosen tol, "
                   "or regularize more (larger alpha, smaller C).")
        advice = problem.scaling_advice()
        if advice:
            message += " " + advice
    warnings.warn(message, ConvergenceWarning, stacklevel=3)
