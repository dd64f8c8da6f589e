"""Timing helpers: convergence curves, time-to-target, the matrix-vector floor."""
import time

import numpy as np
import scipy.sparse as sp

from .objective import primal, relative_suboptimality

TARGETS = (1e-2, 1e-4, 1e-6)


def matvec_floor(X, repeats=7, seed=0):
    """Median seconds of ``X @ w`` plus median seconds of ``X.T @ a`` (scipy / numpy).

    One pass of any first-order method over the data costs at least this much.
    """
    rng = np.random.default_rng(seed)
    n, d = X.shape
    w = rng.standard_normal(d)
    a = rng.standard_normal(n)
    fwd, bwd = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        X @ w
        fwd.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        X.T @ a
        bwd.append(time.perf_counter() - t0)
    return {"forward": float(np.median(fwd)), "backward": float(np.median(bwd)),
            "floor": float(np.median(fwd) + np.median(bwd)), "sparse": bool(sp.issparse(X))}


def run_curve(solver, ctx, X, y, problem, alpha, p_ref, budgets, max_seconds,
              max_run_seconds, stop_subopt=1e-9):
    """One repeat: fit from scratch at each budget, time it, score P outside the timing.

    Stops when the solver reaches ``stop_subopt`` against ``p_ref``, when the
    cumulated time passes ``max_seconds``, when one fit takes more than
    ``max_run_seconds``, or (iteration budgets) when three consecutive budgets
    give the same P (the solver stops on its own criterion) and the last of them
    ran fewer passes than its budget allowed (a solver that says how many it ran, in
    ``ctx["epochs_run"]``: fastdual's Newton iteration makes several passes, so budgets
    1, 2, 3 all run its first iteration, the same P, and it has not stopped).
    """
    points = []
    spent = 0.0
    for b in budgets:
        ctx.pop("epochs_run", None)
        t0 = time.perf_counter()
        w = solver.fit(ctx, b)
        t = time.perf_counter() - t0
        p = primal(w, X, y, problem, alpha)
        points.append({"budget": b, "seconds": t, "primal": p})
        spent += t
        if relative_suboptimality(p, p_ref) <= stop_subopt:
            break
        if spent > max_seconds or t > max_run_seconds:
            break
        if (solver.kind == "iter" and len(points) >= 3
                and points[-1]["primal"] == points[-2]["primal"] == points[-3]["primal"]
                and ctx.get("epochs_run", 0) < b):
            break
    return points


def repeat_curves(solver, ctx, X, y, problem, alpha, p_ref, repeats, max_seconds,
                  max_run_seconds):
    """The first repeat fixes the list of budgets; later repeats re-run exactly those."""
    first = run_curve(solver, ctx, X, y, problem, alpha, p_ref, solver.budgets(),
                      max_seconds, max_run_seconds)
    runs = [first]
    budgets = [pt["budget"] for pt in first]
    for _ in range(repeats - 1):
        runs.append(run_curve(solver, ctx, X, y, problem, alpha, p_ref, budgets,
                              float("inf"), float("inf"), stop_subopt=-np.inf))
    return runs


def median_curve(runs):
    """Median seconds per budget across repeats; P of every repeat kept (max reported)."""
    out = []
    for i, pt in enumerate(runs[0]):
        secs = [r[i]["seconds"] for r in runs if i < len(r)]
        prims = [r[i]["primal"] for r in runs if i < len(r)]
        out.append({"budget": pt["budget"], "seconds": float(np.median(secs)),
                    "primal": float(max(prims)), "primal_spread": float(max(prims) - min(prims))})
    return out


def time_to_targets(runs, p_star, targets=TARGETS):
    """Median over repeats of the time of the first fit whose P is within each target."""
    result = {}
    for eps in targets:
        times = []
        for r in runs:
            hit = [pt["seconds"] for pt in r
                   if relative_suboptimality(pt["primal"], p_star) <= eps]
            times.append(hit[0] if hit else np.inf)
        med = float(np.median(times))
        result["%g" % eps] = None if not np.isfinite(med) else med
    return result


def timed_fit(fit, X, y, budget, repeats):
    """(median seconds, result) of `fit(X, y, budget)` over `repeats` runs (one run when the
    first takes more than a second), warnings silenced: a point of a budget curve."""
    import warnings
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = fit(X, y, budget)
        times.append(time.perf_counter() - start)
        if times[0] > 1.0:
            break
    return float(np.median(times)), result


def timed_train(X, y, repeats, seconds=None, tol=1e-4, max_epochs=1000, **kwargs):
    """(median seconds, converged, the solver that ran) of fastdual.train(tol=1e-4) over
    `repeats` runs (one when the first takes more than a second), each stopped after `seconds`
    of training when given."""
    import fastdual
    times, model = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        budget = None if seconds is None else (
            lambda info, start=start: time.perf_counter() - start < seconds)
        model = fastdual.train(X, y, tol=tol, max_epochs=max_epochs, random_state=0,
                               callback=budget, **kwargs)
        times.append(time.perf_counter() - start)
        if times[0] > 1.0:
            break
    return float(np.median(times)), bool(model.converged_), model.solver
