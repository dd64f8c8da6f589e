"""What one SDCA epoch costs, and why, in units of the matrix-vector floor.

    python -m benchmarks.epoch_anatomy [--datasets ...] [--losses ...] [--repeats R] [--float32]

For each data set and loss, in one process (minimum over repeats, one thread):

* floor: ``X @ w`` plus ``X.T @ a`` with scipy (numpy for dense) -- two streaming passes;
* full epoch: one Prox-SDCA epoch over every sample (Option I, a fresh random permutation, no
  shrinking), from a point reached after three epochs;
* independent steps: the same epoch, the same instructions, but every margin is read from a
  frozen copy of w while the updates go to v. Consecutive steps then no longer wait for each
  other through memory (x_{i+1} . w cannot start before x_i's update of the shared features has
  landed); the difference to the full epoch is the price of the sequential dependency that makes
  coordinate ascent what it is, which no two-pass floor pays;
* certificate pass: the shared duality-gap function (P and D with v recomputed from alpha).

The kernel is called directly (``fastdual._sdca.sdca_epoch``), as ``fastdual.train`` does.
"""
import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

from .datasets import load  # noqa: E402

LOSSES = ("hinge", "squared_hinge", "smooth_hinge", "logistic", "squared")


def min_time(fn, repeats):
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def anatomy(X, y, loss, repeats, alpha=1e-4):
    from fastdual import _sdca
    from fastdual._problem import build_problem

    n, d = X.shape
    problem = build_problem(X, y, loss=loss, alpha=alpha, C=None, l1_ratio=0.0,
                            fit_intercept=False, intercept_scaling=1.0, sample_weight=None,
                            tol=1e-4, loss_params={})
    data, indices, indptr = problem.X.kernel_args
    sq_norms = problem.squared_norms()
    alpha_ = np.zeros(n)
    v = np.zeros(d + 1)
    order = np.arange(n, dtype=np.intp)
    rng_state = np.random.SeedSequence(0).generate_state(4, dtype=np.uint64)

    def epoch(w):
        _sdca.sdca_epoch(data, indices, indptr, n, d, problem.bias, problem.y,
                         problem.sample_weight, sq_norms, alpha_, v, w, problem.loss, problem.l2,
                         0.0, 1, 0.0, False, order, rng_state, n, np.inf)

    for _ in range(3):
        epoch(v)
    full = min_time(lambda: epoch(v), repeats)
    # The state keeps moving during the timed epochs; the frozen copy is refreshed before each
    # timed epoch (outside the clock) so both variants work on the same kind of point.
    frozen = np.empty_like(v)
    times = []
    for _ in range(repeats):
        frozen[:] = v
        t0 = time.perf_counter()
        epoch(frozen)
        times.append(time.perf_counter() - t0)
    independent = min(times)
    v_check = np.empty(d + 1)
    certificate = min_time(lambda: problem.primal_dual(v, alpha_, v_out=v_check), repeats)
    return full, independent, certificate


def floor(X, repeats):
    rng = np.random.default_rng(0)
    w = rng.standard_normal(X.shape[1])
    a = rng.standard_normal(X.shape[0])
    return min_time(lambda: X @ w, repeats) + min_time(lambda: X.T @ a, repeats)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--datasets", nargs="+", default=["a9a", "reuters_lasvm", "news20"])
    p.add_argument("--losses", nargs="+", default=list(LOSSES), choices=LOSSES)
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--float32", action="store_true", help="X in float32 (floor in float32 too)")
    args = p.parse_args(argv)
    print("| data | nnz / row | loss | floor (ms) | full epoch (ms) | epoch / floor "
          "| independent steps / floor | certificate / floor |")
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    for name in args.datasets:
        X, y = load(name)
        if args.float32:
            X = X.astype(np.float32)
        nnz = X.nnz if sp.issparse(X) else X.size
        base = floor(X, args.repeats)
        for loss in args.losses:
            full, independent, certificate = anatomy(X, y, loss, args.repeats)
            print(f"| {name} | {nnz / X.shape[0]:.0f} | {loss} | {base * 1e3:.2f} "
                  f"| {full * 1e3:.2f} | {full / base:.2f} | {independent / base:.2f} "
                  f"| {certificate / base:.2f} |", flush=True)


if __name__ == "__main__":
    main()
