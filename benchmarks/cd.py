"""solver="cd" on the Lasso: time to 1e-4 and 1e-6 relative suboptimality against scikit-learn's
coordinate descent, celer and skglm (when installed), one thread, medians of repeats.

    python -m benchmarks.cd [--cases news20:10 news20:100 dense:10 dense:100] [--repeats 3]

The objective is the same for every solver: P(w) = 1/(2n) ||y - X w||^2 + lam ||w||_1, no
intercept, rows of X at unit norm, lam = lam_max / k with lam_max = ||X^T y||_inf / n (the
smallest lam at which w = 0). news20 is the binary news20 of benchmarks.datasets (CSR); "dense"
is a 1000 x 5000 Gaussian design with AR(1)-correlated features (rho 0.6), y from 50 features
plus noise at SNR 3 (C-ordered). Every solver gets the same X (as loaded) and pays its own
conversions. Each solver runs from scratch at growing budgets (fastdual: max_epochs with tol 0,
so its only certificate is the last one; the others: their outer iterations); a budget's time is
the median of `repeats` runs, its P is computed here, and the time to a target is that of the
first budget reaching it. P* is the best P of all runs. "fastdual cd (certified)" is a run with
tol = the target: the time until its own duality gap proves the target (the gap bounds the
suboptimality). "(no screening)" rows are fastdual cd with screening=False; the last table gives
the features gap-safe screening removed by the end of a certified 1e-6 run. The floor is one
X @ w plus one X.T @ r by scipy / numpy.
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

from benchmarks.datasets import correlated_dense, load  # noqa: E402
from benchmarks.timing import matvec_floor, timed_fit as timed  # noqa: E402

TARGETS = (1e-4, 1e-6)
BUDGETS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)


def lasso_primal(X, y, w, lam):
    r = y - X @ w
    return 0.5 * float(r @ r) / X.shape[0] + lam * float(np.abs(w).sum())


def solvers(lam):
    """name -> (fit(X, y, budget) -> coef, warm-up or None)."""
    import fastdual
    from sklearn.linear_model import Lasso

    def fastdual_fit(X, y, budget, tol=0.0):
        return fastdual.train(X, y, loss="squared", alpha=lam, l1_ratio=1.0, solver="cd",
                              fit_intercept=False, tol=tol, max_epochs=budget).coef_

    def unscreened_fit(X, y, budget):
        return fastdual.train(X, y, loss="squared", alpha=lam, l1_ratio=1.0, solver="cd",
                              fit_intercept=False, tol=0.0, max_epochs=budget,
                              screening=False).coef_

    def sklearn_fit(X, y, budget):
        return Lasso(alpha=lam, fit_intercept=False, tol=0.0, max_iter=budget,
                     precompute=False).fit(X, y).coef_

    out = {"fastdual cd": fastdual_fit, "fastdual cd (no screening)": unscreened_fit,
           "scikit-learn cd": sklearn_fit}
    try:
        import celer

        def celer_fit(X, y, budget):
            return celer.Lasso(alpha=lam, fit_intercept=False, tol=1e-14, max_iter=budget,
                               max_epochs=100000).fit(X, y).coef_
        out["celer"] = celer_fit
    except ImportError:
        pass
    try:
        import skglm

        def skglm_fit(X, y, budget):
            return skglm.Lasso(alpha=lam, fit_intercept=False, tol=1e-14,
                               max_iter=budget).fit(X, y).coef_
        out["skglm"] = skglm_fit
    except ImportError:
        pass
    return out


def curve(fit, X, y, lam, repeats, max_seconds, stop=1e-9, p_floor=None):
    points = []
    for budget in BUDGETS:
        seconds, coef = timed(fit, X, y, budget, repeats)
        points.append((budget, seconds, lasso_primal(X, y, coef, lam)))
        if p_floor is not None and points[-1][2] <= p_floor * (1 + stop):
            break
        if seconds > max_seconds:
            break
        if len(points) >= 3 and points[-1][2] == points[-2][2] == points[-3][2]:
            break
    return points


def first_time(points, p_star, target):
    for _, seconds, p in points:
        if (p - p_star) / p_star <= target:
            return seconds
    return None


def run_case(name, X, y, k, repeats, max_seconds):
    import fastdual
    n = X.shape[0]
    lam = float(np.max(np.abs(X.T @ y))) / n / k
    fits = solvers(lam)
    # numba's compilation outside the timing
    small_X, small_y = X[:50], y[:50]
    for key in ("celer", "skglm"):
        if key in fits:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fits[key](small_X, small_y, 2)
    curves = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # (a tight solution, to stop sampling budgets once a solver is at rounding level)
        p_ref = lasso_primal(X, y, fastdual.train(
            X, y, loss="squared", alpha=lam, l1_ratio=1.0, solver="cd", fit_intercept=False,
            tol=1e-13, max_epochs=100000).coef_, lam)
        for key, fit in fits.items():
            curves[key] = curve(fit, X, y, lam, repeats, max_seconds, p_floor=p_ref)
    p_star = min(p for points in curves.values() for _, _, p in points)
    rows = []
    for key, points in curves.items():
        rows.append((key, [first_time(points, p_star, t) for t in TARGETS]))
    screened = {}
    for screening in (True, False):
        certified = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for target in TARGETS:
                times, model = [], None
                for _ in range(repeats):
                    start = time.perf_counter()
                    model, driver = certified_run(X, y, lam, target, screening)
                    times.append(time.perf_counter() - start)
                ok = model.relative_gap_ <= target
                certified.append(float(np.median(times)) if ok else None)
                if screening:
                    screened[target] = (driver.n_screened, model.n_epochs_)
        rows.append(("fastdual cd (certified)" if screening else
                     "fastdual cd (certified, no screening)", certified))
    floor = matvec_floor(X)["floor"]
    nnz = X.nnz if sp.issparse(X) else X.size
    support = int(np.count_nonzero(fastdual.train(
        X, y, loss="squared", alpha=lam, l1_ratio=1.0, solver="cd", fit_intercept=False,
        tol=1e-8, max_epochs=100000).coef_))
    return {"case": f"{name} lam_max/{k}", "rows": rows, "floor": floor, "nnz": nnz,
            "support": support, "p_star": p_star, "screened": screened, "d": X.shape[1]}


def certified_run(X, y, lam, tol, screening):
    """(model, driver) of fastdual cd at tol: the driver says how many features it screened."""
    from fastdual._fit import make_driver, solve
    from fastdual._problem import build_problem
    problem = build_problem(X, y, loss="squared", alpha=lam, C=None, l1_ratio=1.0,
                            fit_intercept=False, intercept_scaling=1.0, sample_weight=None,
                            loss_params={})
    driver = make_driver(problem, "cd", {"screening": screening}, 0)
    model = solve(problem, solver="cd", options={}, seed=0, tol=tol, max_epochs=100000,
                  check_every="auto", verbose=0, callback=None, on_interrupt="raise",
                  driver=driver)
    return model, driver


def conversion_cost(X, repeats=3):
    """Seconds to build the column view cd reads (CSR -> CSC, C -> Fortran order)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        X.tocsc() if sp.issparse(X) else np.asfortranarray(X)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def fmt(t):
    return "-" if t is None else (f"{t:.3f}" if t < 10 else f"{t:.1f}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", nargs="+",
                        default=["news20:10", "news20:100", "dense:10", "dense:100"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-seconds", type=float, default=30.0)
    args = parser.parse_args(argv)
    data = {}
    results = []
    for case in args.cases:
        name, k = case.split(":")
        if name not in data:
            data[name] = correlated_dense() if name == "dense" else load(name)
        X, y = data[name]
        results.append(run_case(name, X, y, int(k), args.repeats, args.max_seconds))
    print("| problem | solver | 1e-4 (s) | 1e-6 (s) |")
    print("|---|---|---|---|")
    for result in results:
        for key, times in result["rows"]:
            print(f"| {result['case']} | {key} | {fmt(times[0])} | {fmt(times[1])} |")
    print()
    print("| problem | nnz | support at 1e-8 | one-pass floor (s) |")
    print("|---|---|---|---|")
    for result in results:
        print(f"| {result['case']} | {result['nnz']} | {result['support']} | "
              f"{result['floor']:.4f} |")
    print()
    print("| problem | features | screened at a certified 1e-4 (epochs) | "
          "screened at a certified 1e-6 (epochs) |")
    print("|---|---|---|---|")
    for result in results:
        cells = [f"{result['screened'][t][0]} ({result['screened'][t][1]})" for t in TARGETS]
        print(f"| {result['case']} | {result['d']} | {cells[0]} | {cells[1]} |")
    print()
    for name, (X, y) in data.items():
        kind = "CSR -> CSC" if sp.issparse(X) else "C -> Fortran order"
        print(f"column view of {name} ({kind}): {conversion_cost(X):.4f} s")


if __name__ == "__main__":
    main()
