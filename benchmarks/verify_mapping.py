"""Check every solver's parameter mapping numerically on a small problem.

    python -m benchmarks.verify_mapping [--alphas 1e-2 1e-4] [--n 300]

Each available solver runs at high precision on a small, row-normalised data set
(scikit-learn's breast_cancer by default) and its P(w), scored by
:mod:`benchmarks.objective`, is compared with a high-precision reference P*.
A correct mapping reaches P* to ~1e-6 relative or better (stochastic first-order
peers such as SGD only approach it; they are listed, with their relative gap,
for information).
"""
import argparse
import os
import time

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402

from .datasets import normalize_rows  # noqa: E402
from .objective import PROBLEMS, primal  # noqa: E402
from .reference import compute_reference  # noqa: E402
from .solvers import get_solvers  # noqa: E402

# budgets that bring every exact solver to ~1e-10 on a few hundred samples
HIGH_PRECISION = {"iter": 3000, "tol": 1e-12}
ITER_OVERRIDE = {"sklearn-SGD": 200, "sklearn-lbfgs": 20000}


def small_problem(n=300, seed=0):
    from sklearn.datasets import load_breast_cancer
    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(seed)
    idx = np.sort(rng.choice(X.shape[0], size=min(n, X.shape[0]), replace=False))
    X = X[idx]
    # standardise then scale rows to unit norm (a common benchmark preprocessing)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return normalize_rows(X), np.where(y[idx] == 1, 1.0, -1.0)


def high_precision_w(solver, X, y, problem, alpha):
    ctx = solver.prepare(X, y, problem, alpha)
    budget = (ITER_OVERRIDE.get(solver.name, HIGH_PRECISION["iter"]) if solver.kind == "iter"
              else HIGH_PRECISION["tol"])
    return solver.fit(ctx, budget)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--alphas", nargs="+", type=float, default=[1e-2, 1e-4])
    p.add_argument("--n", type=int, default=300)
    p.add_argument("--problems", nargs="+", default=list(PROBLEMS))
    p.add_argument("--solvers", nargs="+", default=None)
    args = p.parse_args(argv)
    X, y = small_problem(args.n)
    solvers = get_solvers(args.solvers)
    for s in solvers:
        reason = s.available()
        if reason:
            print("SKIP %-24s %s" % (s.name, reason))
    solvers = [s for s in solvers if s.available() is None]
    print("data: breast_cancer subset n=%d d=%d" % X.shape)
    for problem in args.problems:
        for alpha in args.alphas:
            ref = compute_reference(X, y, problem, alpha, verbose=False)
            print("\n%s alpha=%g  P* = %.15g (%s)" % (problem, alpha, ref["p_star"],
                                                     ", ".join(ref["methods"])))
            for s in solvers:
                if not s.supports(problem):
                    continue
                t0 = time.perf_counter()
                try:
                    w = high_precision_w(s, X, y, problem, alpha)
                except Exception as exc:
                    print("  %-24s ERROR %s: %s" % (s.name, type(exc).__name__, exc))
                    continue
                pw = primal(w, X, y, problem, alpha)
                rel = (pw - ref["p_star"]) / abs(ref["p_star"])
                print("  %-24s P = %.15g  rel = %+.2e  (%.2f s)"
                      % (s.name, pw, rel, time.perf_counter() - t0))


if __name__ == "__main__":
    main()
