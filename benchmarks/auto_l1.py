"""Where solver="auto" should send problems with an l1 term: time to a certified 1e-4 relative
duality gap (train(tol=1e-4), the stop decided by the certificate) of cd against the solvers
the l2-side rules pick (SDCA, accelerated when there is an l2 term; Newton; AGM), one thread.

    python -m benchmarks.auto_l1 [--datasets news20 reuters_lasvm a9a dense]
                                 [--ratios 1 0.9 0.5 0.15] [--scales 10 100] [--repeats 3]

Problems: squared (on the labels), logistic and squared hinge, LIBLINEAR's intercept (a
regularised bias feature), data as loaded (raw rows). alpha = alpha_max / scale, with alpha_max
the smallest alpha at which w = 0 is optimal: ||X^T c phi'(y, 0)||_inf / (n l1_ratio), the bias
column included. Times are medians of `repeats` runs (one when the first takes over a second);
'*' marks a run stopped by max_epochs (1000) or a 60 s budget of epochs before 1e-4.
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

import fastdual  # noqa: E402
from benchmarks.cd import correlated_dense  # noqa: E402
from benchmarks.datasets import load  # noqa: E402
from benchmarks.timing import timed_train  # noqa: E402
from fastdual._problem import build_problem  # noqa: E402
from fastdual.solvers import auto  # noqa: E402

LOSSES = ("squared", "logistic", "squared_hinge")


def alpha_max(X, y, loss, l1_ratio):
    """fastdual.alpha_max with LIBLINEAR's regularised intercept (the bias column counts)."""
    return fastdual.alpha_max(X, y, loss=loss, l1_ratio=l1_ratio, fit_intercept=True,
                              regularize_intercept=True)


def timed(X, y, repeats, **kwargs):
    return timed_train(X, y, repeats, seconds=60.0, **kwargs)     # (a 60 s budget a run)


def dense_classification():
    X, y = correlated_dense()
    return X, np.where(y > np.median(y), 1.0, -1.0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+",
                        default=["news20", "reuters_lasvm", "a9a", "dense"])
    parser.add_argument("--losses", nargs="+", default=list(LOSSES))
    parser.add_argument("--ratios", nargs="+", type=float, default=[1.0, 0.9, 0.5, 0.15])
    parser.add_argument("--scales", nargs="+", type=float, default=[10.0, 100.0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    fastdual.train(np.eye(2), [1.0, -1.0])      # the package's imports, outside the timing
    rows = []
    print("| data | loss | l1_ratio | alpha_max / alpha | kappa | rules pick | cd (s) "
          "| sdca (s) | newton (s) | agm (s) | cd / best other |")
    print("|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|")
    for name in args.datasets:
        X, y = dense_classification() if name == "dense" else load(name)
        if sp.issparse(X):
            X = sp.csr_matrix(X)
        for loss in args.losses:
            for ratio in args.ratios:
                for scale in args.scales:
                    alpha = alpha_max(X, y, loss, ratio) / scale
                    problem = build_problem(X, y, loss=loss, alpha=alpha, C=None,
                                            l1_ratio=ratio, fit_intercept=True,
                                            intercept_scaling=1.0, sample_weight=None,
                                            loss_params={})
                    kappa = auto.condition_number(problem)
                    pick, options, number = auto.rule(problem)
                    common = dict(loss=loss, alpha=alpha, l1_ratio=ratio)
                    results = {"cd": timed(X, y, args.repeats, solver="cd", **common),
                               "sdca": timed(X, y, args.repeats, solver="sdca",
                                             acceleration=ratio < 1.0, **common)}
                    if ratio < 1.0:
                        results["newton"] = timed(X, y, args.repeats, solver="newton", **common)
                    results["agm"] = timed(X, y, args.repeats, solver="agm", **common)
                    others = [v[0] for k, v in results.items() if k != "cd" and v[1]]
                    best = min(others) if others else np.inf
                    cell = {k: "-" if k not in results else
                            "%.3g%s" % (results[k][0], "" if results[k][1] else "*")
                            for k in ("cd", "sdca", "newton", "agm")}
                    label = pick + (" +acc" if options.get("acceleration") else "")
                    print(f"| {name} | {loss} | {ratio:g} | {scale:g} | {kappa:.3g} | {label} "
                          f"| {cell['cd']} | {cell['sdca']} | {cell['newton']} | {cell['agm']} "
                          f"| {results['cd'][0] / best:.2f} |", flush=True)
                    rows.append(dict(dataset=name, loss=loss, l1_ratio=ratio, scale=scale,
                                     kappa=kappa, pick=label,
                                     **{k: v[0] for k, v in results.items()},
                                     converged={k: v[1] for k, v in results.items()}))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
