"""Parallel SDCA epochs (train's n_jobs on one problem): time per epoch and time to a relative
suboptimality, one thread against several.

    python -m benchmarks.parallel [--datasets news20 synth_sparse] [--losses hinge logistic]
                                  [--jobs 1 2] [--repeats 3] [--target 1e-4] [--quick]

For each data set and loss (C = 1, i.e. alpha = 1/n, LIBLINEAR's intercept feature):

* floor: ``X @ w`` plus ``X.T @ a`` with scipy, the cost of one streaming pass each way;
* per epoch: the median over the epochs of all repeats of one SDCA epoch (driver defaults:
  Option I, a fresh permutation, shrinking), for each n_jobs; n_jobs = 1 is the sequential
  kernel (_sdca.pyx), n_jobs > 1 the asynchronous one (_sdca_parallel.pyx, PASSCoDe-Atomic).
  "wild" is the same parallel epoch with plain (non-atomic) additions to v, PASSCoDe-Wild,
  measured for comparison only (train never runs it: it loses updates);
* to target: the median over repeats (random_state 0, 1, ...) of the summed epoch times until
  (P(w) - P*) / P* <= target, P evaluated outside the timing after every epoch, P* the primal of
  a one-thread run to a relative duality gap of 1e-9 (an upper bound on P*: suboptimalities are
  measured against the best point known, as the other benchmarks do); the epochs it took.

Epochs are timed on the driver directly (the loop's certificate passes are not counted), with
one BLAS thread. On a shared or busy machine the times are noisy: run it on a quiet one.
"""
import argparse
import functools
import time

import numpy as np

import fastdual
from benchmarks.datasets import load
from benchmarks.timing import matvec_floor
from fastdual import _fit, _loop
from fastdual._problem import build_problem
from fastdual.solvers import _sdca_parallel, sdca as sdca_module


def make_problem(X, y, loss):
    return build_problem(X, y, loss=loss, alpha=1.0 / X.shape[0], C=None, l1_ratio=0.0,
                         fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                         loss_params={})


def reference_primal(X, y, loss):
    model = fastdual.train(X, y, loss=loss, C=1.0, solver="sdca", tol=1e-9, max_epochs=3000,
                           random_state=0)
    return model.primal_


def run(problem, n_jobs, seed, p_star, target, max_epochs, wild=False):
    """(epoch seconds list, seconds to target or nan, epochs to target or nan)."""
    original = _sdca_parallel.sdca_parallel_epoch
    if wild:
        sdca_module._sdca_parallel.sdca_parallel_epoch = functools.partial(original,
                                                                           atomic=False)
    try:
        driver = _fit.make_driver(problem, "sdca", {}, seed, n_jobs=n_jobs)
        times, reached, epochs = [], np.nan, np.nan
        for epoch in range(1, max_epochs + 1):
            start = time.perf_counter()
            driver.epoch()
            times.append(time.perf_counter() - start)
            primal = problem.certificate(np.array(driver.w), np.array(driver.duals))[0]
            if (primal - p_star) / abs(p_star) <= target:
                reached, epochs = float(np.sum(times)), epoch
                break
        return times, reached, epochs
    finally:
        sdca_module._sdca_parallel.sdca_parallel_epoch = original


def benchmark(name, X, y, loss, jobs, repeats, target, max_epochs):
    problem = make_problem(X, y, loss)
    p_star = reference_primal(X, y, loss)
    floor = matvec_floor(X)["floor"]
    row = {"data": name, "loss": loss, "floor": floor}
    variants = [(j, False) for j in jobs] + ([(max(jobs), True)] if max(jobs) > 1 else [])
    for n_jobs, wild in variants:
        epoch_times, to_target, to_epochs = [], [], []
        for seed in range(repeats):
            times, reached, epochs = run(problem, n_jobs, seed, p_star, target, max_epochs,
                                         wild)
            epoch_times += times
            to_target.append(reached)
            to_epochs.append(epochs)
        key = f"wild{n_jobs}" if wild else str(n_jobs)
        row[key] = (float(np.median(epoch_times)), float(np.median(to_target)),
                    float(np.median(to_epochs)))
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["news20", "synth_sparse"])
    parser.add_argument("--losses", nargs="+", default=["hinge", "logistic"])
    parser.add_argument("--jobs", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--target", type=float, default=1e-4)
    parser.add_argument("--max-epochs", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="20000-row subsets")
    args = parser.parse_args(argv)
    print(f"OpenMP: {_sdca_parallel.OPENMP}; target relative suboptimality {args.target:g}; "
          f"medians over {args.repeats} repeats")
    header = ("| data | loss | floor (s) | "
              + " | ".join(f"epoch n_jobs={j} (s, x floor)" for j in args.jobs)
              + (f" | epoch wild n_jobs={max(args.jobs)} (s)" if max(args.jobs) > 1 else "")
              + " | " + " | ".join(f"to target n_jobs={j} (s, epochs)" for j in args.jobs)
              + " |")
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    with _loop.single_thread_blas():
        for name in args.datasets:
            X, y = load(name, n_samples=20000 if args.quick else None)
            for loss in args.losses:
                row = benchmark(name, X, y, loss, args.jobs, args.repeats, args.target,
                                args.max_epochs)
                cells = [name, loss, f"{row['floor']:.4f}"]
                for j in args.jobs:
                    cells.append(f"{row[str(j)][0]:.4f} ({row[str(j)][0] / row['floor']:.1f})")
                if max(args.jobs) > 1:
                    cells.append(f"{row['wild' + str(max(args.jobs))][0]:.4f}")
                for j in args.jobs:
                    cells.append(f"{row[str(j)][1]:.3f} ({row[str(j)][2]:.0f})")
                print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
