"""Rule 4 on wide data: Newton against SDCA by the rows' estimated Gram floor.

    python -m benchmarks.wide_rule [--sets hashed-2000 hashed-20000 hashed-100000 zipf-10000
                                    zipf-30000 dense-500x20000 dense-2000x10000
                                    dense-4000x5000 news20 reuters_lasvm sector]
                                   [--losses logistic squared] [--alphas 1e-4 1e-6 1e-8]
                                   [--intercept none liblinear] [--repeats 2]
                                   [--max-epochs 1000] [--max-seconds 20] [--json FILE]

Time to a certified 1e-4 relative duality gap (train(tol=1e-4)), one thread, unit rows without
an intercept ("none") and with LIBLINEAR's intercept feature of value 1 ("liblinear"), of
solver="newton" (conjugate gradient: its direct solve does not pay with d > n)
and solver="sdca", for every case with more features than samples where rule 4 weighs the
two (kappa >= NEWTON_KAPPA), with auto.gram_floor's estimate of the smallest eigenvalue of
the rows' Gram matrix scaled to a unit diagonal and the seconds it took (each case builds its
problem anew: no estimate is reused), that eigenvalue over all the rows ("exact": 0 where two
rows are equal, NumPy's up to 4,000 rows, Lanczos iterations above), and what solver="auto"
now picks. The sets:
- hashed-N: N rows of 50 features drawn uniformly among 2^20 (hashed features), Gaussian
  values, rows scaled to unit norm, labels from a sparse linear model with noise;
- zipf-N: the suite's synth_sparse, N rows of about 100 of 10^6 features drawn by a Zipf
  law (tf-idf-like values);
- dense-NxD: Gaussian rows with a shared component, labels from a sparse linear model;
- news20, reuters_lasvm, sector: the LIBSVM text sets (rows of shared vocabulary).
Prints every case, then Newton / SDCA by bins of the estimate (docs/solvers/auto.md, "Nearly
orthogonal rows": the bins set auto.GRAM_FLOOR).
"""
import argparse
import itertools
import json
import time
import warnings

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh

from benchmarks.datasets import load, normalize_rows
from benchmarks.timing import timed_train
from fastdual._problem import build_problem
from fastdual.solvers import auto

BINS = (0.0, 1e-9, 0.01, 0.05, 0.1, 0.2, 0.5, 1.01)
EXACT_ROWS = 4000     # the exact eigenvalue by NumPy up to this many rows, by Lanczos above


def exact_floor(X, bias):
    """The smallest eigenvalue of the Gram matrix of X's nonzero rows (with the intercept
    feature) scaled to a unit diagonal, over all the rows: 0 where two rows are equal (the text
    sets' repeated documents), by NumPy up to EXACT_ROWS rows, above by Lanczos iterations
    (scipy's eigsh, to a relative 1e-3: a Ritz value, at or just above the eigenvalue; None if
    they do not converge) on the operator v -> S (X X^T + b^2 1 1^T) S v."""
    X = sp.csr_matrix(X, copy=True) if sp.issparse(X) else np.asarray(X)
    if sp.issparse(X):
        X.sort_indices()                   # (a copy: the caller's rows stay as they are)
        seen = set()
        for i in range(X.shape[0]):
            start, end = X.indptr[i], X.indptr[i + 1]
            key = (X.indices[start:end].tobytes(), X.data[start:end].tobytes())
            if start < end and key in seen:
                return 0.0
            seen.add(key)
    norms = (np.asarray(X.multiply(X).sum(axis=1)).ravel() if sp.issparse(X)
             else np.einsum("ij,ij->i", X, X)) + bias * bias
    X = X[norms > 0]
    scale = 1.0 / np.sqrt(norms[norms > 0])
    if X.shape[0] <= EXACT_ROWS:
        gram = (X @ X.T).toarray() if sp.issparse(X) else X @ X.T
        gram = (gram + bias * bias) * scale[:, None] * scale[None, :]
        return max(float(np.linalg.eigvalsh(gram)[0]), 0.0)
    transposed = X.T.tocsr() if sp.issparse(X) else X.T

    def product(v):
        v = np.ravel(v) * scale
        return (X @ (transposed @ v) + bias * bias * v.sum()) * scale

    operator = LinearOperator((X.shape[0], X.shape[0]), matvec=product, dtype=np.float64)
    try:
        lowest = eigsh(operator, k=1, which="SA", tol=1e-3, ncv=80, maxiter=20_000,
                       return_eigenvectors=False)
    except ArpackNoConvergence:
        return None
    return max(float(lowest[0]), 0.0)


def hashed(n, d=2 ** 20, k=50, seed=0):
    rng = np.random.default_rng(seed)
    indices = np.sort(rng.choice(d, size=(n, k)), axis=1).ravel()
    X = sp.csr_matrix((rng.standard_normal(n * k), indices, np.arange(0, n * k + 1, k)),
                      shape=(n, d))
    X.sum_duplicates()
    w = np.zeros(d)
    w[rng.choice(d, 3000, replace=False)] = rng.standard_normal(3000)
    X = normalize_rows(X)
    return X, np.where(X @ w + 0.1 * rng.standard_normal(n) > 0, 1.0, -1.0)


def dense(n, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) + 0.3 * rng.standard_normal((n, 1))
    w = np.zeros(d)
    w[:50] = rng.standard_normal(50)
    X /= np.linalg.norm(X, axis=1)[:, None]
    return X, np.where(X @ w + 0.05 * rng.standard_normal(n) > 0, 1.0, -1.0)


def load_set(name):
    kind, _, size = name.partition("-")
    if kind == "hashed":
        return hashed(int(size))
    if kind == "zipf":
        return load("synth_sparse", n_samples=int(size))
    if kind == "dense":
        n, d = (int(v) for v in size.split("x"))
        return dense(n, d)
    return load(name)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+",
                        default=["hashed-2000", "hashed-20000", "hashed-100000", "zipf-10000",
                                 "zipf-30000", "dense-500x20000", "dense-2000x10000",
                                 "dense-4000x5000", "news20", "reuters_lasvm", "sector"])
    parser.add_argument("--losses", nargs="+", default=["logistic", "squared"])
    parser.add_argument("--alphas", nargs="+", type=float, default=[1e-4, 1e-6, 1e-8])
    parser.add_argument("--intercept", nargs="+", default=["none", "liblinear"],
                        choices=["none", "liblinear"])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--max-epochs", type=int, default=1000)
    parser.add_argument("--max-seconds", type=float, default=20.0)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rows = []
    print("| data | n | d | intercept | loss | alpha | kappa | gram floor (s) | exact | "
          "newton (s) | sdca (s) | newton / sdca | auto picks |")
    print("|---|---:|---:|---|---|---:|---:|---|---:|---:|---:|---:|---|")
    exact = {}
    for name in args.sets:
        X, y = load_set(name)
        n, d = X.shape
        for intercept, loss, alpha in itertools.product(args.intercept, args.losses,
                                                    args.alphas):
            fit_intercept = intercept == "liblinear"
            problem = build_problem(X, y, loss=loss, alpha=alpha, C=None, l1_ratio=0.0,
                                    fit_intercept=fit_intercept, intercept_scaling=1.0,
                                    sample_weight=None, loss_params={})
            kappa = auto.condition_number(problem)
            if kappa < auto.NEWTON_KAPPA or d <= n:
                continue
            start = time.perf_counter()
            floor = auto.gram_floor(problem)
            seconds = time.perf_counter() - start
            if (name, intercept) not in exact:
                exact[name, intercept] = exact_floor(X, 1.0 if fit_intercept else 0.0)
            truth = exact[name, intercept]
            common = dict(loss=loss, alpha=alpha, max_epochs=args.max_epochs,
                          seconds=args.max_seconds, fit_intercept=fit_intercept,
                          intercept_scaling=1.0)
            t_newton, ok_newton, _ = timed_train(X, y, args.repeats, solver="newton",
                                                 **common)
            t_sdca, ok_sdca, _ = timed_train(X, y, args.repeats, solver="sdca", **common)
            pick = auto.rule(problem)[0]
            print(f"| {name} | {n} | {d} | {intercept} | {loss} | {alpha:g} | {kappa:.3g} | "
                  f"{floor:.3f} ({seconds:.3f}) | "
                  f"{'-' if truth is None else format(truth, '.3f')} | "
                  f"{t_newton:.3f}{'' if ok_newton else '*'} | "
                  f"{t_sdca:.3f}{'' if ok_sdca else '*'} | {t_newton / t_sdca:.2f} | "
                  f"{pick} |", flush=True)
            rows.append(dict(dataset=name, n=n, d=d, intercept=intercept, loss=loss,
                             alpha=alpha, kappa=kappa, gram_floor=floor, exact=truth,
                             floor_seconds=seconds, newton=t_newton, sdca=t_sdca,
                             newton_converged=ok_newton, sdca_converged=ok_sdca, auto=pick))
    print()
    print("| gram floor | cases | Newton / SDCA, geo-mean (min - max) | SDCA faster |")
    print("|---|---:|---|---:|")
    for low, high in zip(BINS[:-1], BINS[1:]):
        ratios = [r["newton"] / r["sdca"] for r in rows if low <= r["gram_floor"] < high]
        if ratios:
            geo = float(np.exp(np.mean(np.log(ratios))))
            print(f"| {low:g} - {high:g} | {len(ratios)} | {geo:.2f} ({min(ratios):.2f} - "
                  f"{max(ratios):.2f}) | {sum(r > 1.0 for r in ratios)} |")
    print("\n`*`: stopped at --max-epochs or --max-seconds without the certified 1e-4.")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
