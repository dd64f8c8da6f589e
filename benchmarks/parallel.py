"""Parallel SDCA epochs (train's n_jobs on one problem): time per epoch and time to a relative
suboptimality, one thread against several.

    python -m benchmarks.parallel [--datasets news20 synth_sparse]
                                  [--losses hinge logistic squared_hinge] [--jobs 1 2]
                                  [--repeats 3] [--target 1e-4] [--variants] [--quick]

For each data set and loss (C = 1, i.e. alpha = 1/n, LIBLINEAR's intercept feature):

* floor: ``X @ w`` plus ``X.T @ a`` with scipy, the cost of one streaming pass each way;
* per epoch: the median over the epochs of all repeats of one SDCA epoch (driver defaults:
  Option I, a fresh permutation, shrinking), for each n_jobs; n_jobs = 1 is the sequential
  kernel (_sdca.pyx), n_jobs > 1 the asynchronous one (_sdca_parallel.pyx) with the PASSCoDe
  variant the driver picks (Wild on wide sparse data, Atomic otherwise) and its replicated hot
  entries; at the largest n_jobs also without replicas ("no replicas": every thread writes
  every entry of v) and, with --variants, Atomic and Wild forced;
* to target: the median over repeats (random_state 0, 1, ...) of the summed epoch times until
  (P(w) - P*) / P* <= target, P evaluated outside the timing after every epoch, P* the primal of
  a one-thread run to a relative duality gap of 1e-8 (an upper bound on P*: suboptimalities are
  measured against the best point known, as the other benchmarks do); the epochs it took.

Epochs are timed on the driver directly (the loop's certificate passes are not counted), with
one BLAS thread. On a shared or busy machine the times are noisy: run it on a quiet one (the
"load" column is the 1-minute load average when the row started; above the number of cores,
the threads did not have a core each).
"""
import argparse
import os
import time

import numpy as np

import fastdual
from benchmarks.datasets import load
from benchmarks.timing import matvec_floor
from fastdual import _fit, _loop
from fastdual._problem import build_problem
from fastdual.solvers import _sdca_parallel, sdca


def make_problem(X, y, loss):
    return build_problem(X, y, loss=loss, alpha=1.0 / X.shape[0], C=None, l1_ratio=0.0,
                         fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                         loss_params={})


def reference_primal(X, y, loss):
    model = fastdual.train(X, y, loss=loss, C=1.0, solver="sdca", tol=1e-8, max_epochs=1000,
                           random_state=0)
    return model.primal_


def run(problem, n_jobs, seed, p_star, target, max_epochs, atomic=None, replicas=True,
        forced=False):
    """(epoch seconds list, seconds to target or nan, epochs to target or nan); atomic None:
    the driver's choice of PASSCoDe variant, else Atomic (True) or Wild (False); replicas
    False: no entry of v replicated per thread (every thread writes v's hot entries); forced:
    threads even under the driver's cutoff (sdca.PARALLEL_MIN_NNZ)."""
    cutoff = sdca.PARALLEL_MIN_NNZ
    sdca.PARALLEL_MIN_NNZ = 0 if forced else cutoff
    try:
        return _run(problem, n_jobs, seed, p_star, target, max_epochs, atomic, replicas)
    finally:
        sdca.PARALLEL_MIN_NNZ = cutoff


def _run(problem, n_jobs, seed, p_star, target, max_epochs, atomic, replicas):
    driver = _fit.make_driver(problem, "sdca", {}, seed, n_jobs=n_jobs)
    if atomic is not None:
        driver.atomic = atomic
    if not replicas:
        driver._threads_ready()          # (the hot entries chosen, then dropped)
        driver.hot_features = driver.hot_features[:0]
    times, reached, epochs = [], np.nan, np.nan
    for epoch in range(1, max_epochs + 1):
        start = time.perf_counter()
        driver.epoch()
        times.append(time.perf_counter() - start)
        w, duals = driver.point()     # Wild: v recomputed from the duals, as at a check
        primal = problem.certificate(np.array(w), np.array(duals))[0]
        if (primal - p_star) / abs(p_star) <= target:
            reached, epochs = float(np.sum(times)), epoch
            break
    return times, reached, epochs


def benchmark(name, X, y, loss, jobs, repeats, target, max_epochs, compare_variants):
    problem = make_problem(X, y, loss)
    p_star = reference_primal(X, y, loss)
    floor = matvec_floor(X)["floor"]
    row = {"data": name, "loss": loss, "floor": floor}
    top = max(jobs)
    variants = [(j, None, True, False) for j in jobs]
    if top > 1:
        variants += [(top, None, True, True), (top, None, False, True)]
        variants += [(top, True, True, True), (top, False, True, True)] if compare_variants else []
    for n_jobs, atomic, replicas, forced in variants:
        epoch_times, to_target, to_epochs = [], [], []
        for seed in range(repeats):
            times, reached, epochs = run(problem, n_jobs, seed, p_star, target, max_epochs,
                                         atomic, replicas, forced)
            epoch_times += times
            to_target.append(reached)
            to_epochs.append(epochs)
        key = (("atomic" if atomic else "wild") if atomic is not None
               else "no replicas" if not replicas else "forced" if forced else str(n_jobs))
        row[key] = (float(np.median(epoch_times)), float(np.median(to_target)),
                    float(np.median(to_epochs)))
    if top > 1:
        driver = _fit.make_driver(problem, "sdca", {}, 0, n_jobs=top)
        row["choice"] = "atomic" if driver.atomic else "wild"
        row["hot"] = len(driver.hot_features)
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["news20", "synth_sparse"])
    parser.add_argument("--losses", nargs="+", default=["hinge", "logistic", "squared_hinge"])
    parser.add_argument("--jobs", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--target", type=float, default=1e-4)
    parser.add_argument("--max-epochs", type=int, default=200)
    parser.add_argument("--variants", action="store_true",
                        help="also Atomic and Wild forced at the largest n_jobs")
    parser.add_argument("--quick", action="store_true", help="20000-row subsets")
    args = parser.parse_args(argv)
    print(f"OpenMP: {_sdca_parallel.OPENMP}; target relative suboptimality {args.target:g}; "
          f"medians over {args.repeats} repeats")
    top = max(args.jobs)
    header = ("| data | loss | load | floor (s) | "
              + " | ".join(f"epoch n_jobs={j} (s, x floor)" for j in args.jobs)
              + (f" | epoch n_jobs={top} threads forced: replicas / none (s)" if top > 1
                 else "")
              + (f" | epoch atomic / wild n_jobs={top} (s)" if top > 1 and args.variants
                 else "")
              + " | " + " | ".join(f"to target n_jobs={j} (s, epochs)" for j in args.jobs)
              + (f" | to target n_jobs={top} threads forced: replicas / none (s, epochs)"
                 if top > 1 else "")
              + (f" | to target atomic / wild n_jobs={top} (s)" if top > 1 and args.variants
                 else "")
              + (f" | speed-up n_jobs={top}: epoch, to target" if top > 1 else "") + " |")
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    with _loop.single_thread_blas():
        for name in args.datasets:
            X, y = load(name, n_samples=20000 if args.quick else None)
            for loss in args.losses:
                load_average = os.getloadavg()[0]
                row = benchmark(name, X, y, loss, args.jobs, args.repeats, args.target,
                                args.max_epochs, args.variants)
                cells = [name, loss, f"{load_average:.1f}", f"{row['floor']:.4f}"]
                for j in args.jobs:
                    cells.append(f"{row[str(j)][0]:.4f} ({row[str(j)][0] / row['floor']:.1f})")
                if top > 1:
                    cells[-1] += f" [{row['choice']}, {row['hot']} replicated]"
                    cells.append(f"{row['forced'][0]:.4f} / {row['no replicas'][0]:.4f}")
                    if args.variants:
                        cells.append(f"{row['atomic'][0]:.4f} / {row['wild'][0]:.4f}")
                for j in args.jobs:
                    cells.append(f"{row[str(j)][1]:.3f} ({row[str(j)][2]:.0f})")
                if top > 1:
                    cells.append(f"{row['forced'][1]:.3f} ({row['forced'][2]:.0f}) / "
                                 f"{row['no replicas'][1]:.3f} ({row['no replicas'][2]:.0f})")
                    if args.variants:
                        cells.append(f"{row['atomic'][1]:.3f} / {row['wild'][1]:.3f}")
                    one, many, forced = row[str(min(args.jobs))], row[str(top)], row["forced"]
                    cells.append(f"{one[0] / many[0]:.2f}, {one[1] / many[1]:.2f} (forced: "
                                 f"{one[0] / forced[0]:.2f}, {one[1] / forced[1]:.2f})")
                print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
