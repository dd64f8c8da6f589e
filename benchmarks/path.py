"""Lasso regularisation paths: fastdual.path against scikit-learn's lasso_path and celer's
celer_path (when installed), 100 alphas from alpha_max down to eps = 1e-3 alpha_max, no intercept,
rows at unit norm, one thread: total time, and the relative duality gap of every model of the
path, certified for every solver by fastdual.duality_gap on the same objective.

    python -m benchmarks.path [--datasets reuters_lasvm news20 rcv1like dense] [--repeats 3]

Each solver runs at several tolerances (its own notion: fastdual's relative duality gap,
scikit-learn's duality gap over ||y||^2 / n, celer's duality gap), so that times can be compared
at equal certified gaps: the table gives, per run, the total seconds (median of repeats) and the
median and largest certified relative gap along the path.
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

import fastdual  # noqa: E402
from benchmarks.sparse import dataset  # noqa: E402
from fastdual.selection import alpha_grid  # noqa: E402

TOLERANCES = (1e-3, 1e-4, 1e-6)


def runs(alphas):
    from sklearn.linear_model import lasso_path
    out = {}
    for tol in TOLERANCES:
        out[f"fastdual.path tol={tol:g}"] = (
            lambda X, y, tol=tol: fastdual.path(X, y, loss="squared", l1_ratio=1.0,
                                                alphas=alphas, fit_intercept=False,
                                                tol=tol, max_epochs=10000).coefs)
        out[f"scikit-learn lasso_path tol={tol:g}"] = (
            lambda X, y, tol=tol: lasso_path(X, y, alphas=alphas, tol=tol,
                                             max_iter=100000)[1])
    try:
        import celer
        for tol in TOLERANCES:
            out[f"celer_path tol={tol:g}"] = (
                lambda X, y, tol=tol: celer.celer_path(X, y, "lasso", alphas=alphas,
                                                       tol=tol)[1])
    except ImportError:
        pass
    return out


def certified_gaps(X, y, alphas, coefs):
    return np.array([fastdual.duality_gap(X, y, coefs[:, k], None, loss="squared",
                                          alpha=alphas[k], l1_ratio=1.0).relative_gap
                     for k in range(len(alphas))])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+",
                        default=["reuters_lasvm", "news20", "rcv1like", "dense"])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    print("| data | solver | total (s) | median gap | largest gap |")
    print("|---|---|---:|---:|---:|")
    for name in args.datasets:
        X, y, _ = dataset(name)
        alphas = alpha_grid(X, y, loss="squared", l1_ratio=1.0, n_alphas=100,
                                     eps=1e-3, fit_intercept=False)
        for key, fit in runs(alphas).items():
            if key.startswith("celer"):
                fit(X[:50], y[:50])       # numba's compilation outside the timing
            times, coefs = [], None
            for _ in range(args.repeats):
                start = time.perf_counter()
                coefs = np.asarray(fit(X, y))
                times.append(time.perf_counter() - start)
                if times[0] > 5.0:
                    break
            gaps = certified_gaps(X, y, alphas, coefs)
            print(f"| {name} | {key} | {np.median(times):.3f} | {np.median(gaps):.1e} | "
                  f"{np.max(gaps):.1e} |", flush=True)


if __name__ == "__main__":
    main()
