"""fastdual.dask (CoCoA+) on this machine: local worker processes against one-process SDCA and
dask-ml; and the algorithm alone as the number of blocks grows.

    python -m benchmarks.cluster [--datasets news20 synth_sparse] [--big] [--workers 1 2 4]
                                 [--dask-ml] [--scaling]

Objective: logistic loss, l2 strength alpha (default 1e-4), no intercept (the objective dask-ml's
LogisticRegression(fit_intercept=False, C=1/(alpha n)) minimises), rows at unit norm; `--big` adds
the generated 10^6 x 10^6 problem of benchmarks.scale (float64).

Table 1: for each data set and number of workers K (a LocalCluster of K processes, one thread
each; the data in K row chunks): seconds and rounds of fastdual.dask.train to a certified relative
gap of 1e-4 (local_epochs 1 and 3; median of 3, 1 for --big, after a warm-up run on the fresh
workers; the data already in the workers' memory), against fastdual.train(solver="sdca") in this
process (median of 3, 1 for --big) and the one-pass floor (a sparse product X w, median of 5). With --dask-ml:
dask-ml's LogisticRegression (admm, lbfgs) on the same cluster (its sparse chunks as pydata/sparse arrays, normalize=False), one run each of
max_iter = 2, 4, 8, ..., the first whose objective is within 1e-4 (relative) of P*, P* from SDCA certified to 1e-9; its
seconds, or the last objective reached once a run passes the time cap (a run still going at twice
the cap is abandoned by restarting the workers).

Table 2 (--scaling): rounds to 1e-4 as the number of blocks K grows, from fastdual.dask's own
rounds run in one process (LocalBlocks: the same rounds, bit for bit, without a cluster).
"""
import argparse
import time
import warnings

import numpy as np

import fastdual
import fastdual.dask
from benchmarks.datasets import load

TOL = 1e-4


def dask_arrays(X, y, blocks, client):
    """X and y as dask arrays of `blocks` row chunks already in the workers' memory (as data
    loaded by the cluster itself would be): the timings start from there."""
    import dask.array as da
    rows = -(-X.shape[0] // blocks)
    starts = range(0, X.shape[0], rows)
    xs = client.scatter([X[k:k + rows] for k in starts])
    ys = client.scatter([y[k:k + rows] for k in starts])
    Xd = da.concatenate([da.from_delayed(f, shape=(min(rows, X.shape[0] - k), X.shape[1]),
                                         dtype=X.dtype, meta=X[:0]) for f, k in zip(xs, starts)])
    yd = da.concatenate([da.from_delayed(f, shape=(min(rows, X.shape[0] - k),), dtype=y.dtype,
                                         meta=y[:0]) for f, k in zip(ys, starts)])
    return Xd, yd


def objective(X, y, w, alpha):
    margins = y * (X @ w)
    return float(np.mean(np.logaddexp(0.0, -margins)) + 0.5 * alpha * (w @ w))


def timed_fastdual(X, y, blocks, alpha, local_epochs, client):
    Xd, yd = dask_arrays(X, y, blocks, client)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
        model = fastdual.dask.train(Xd, yd, loss="logistic", alpha=alpha, fit_intercept=False,
                                    tol=TOL, max_rounds=2000, local_epochs=local_epochs,
                                    random_state=0, client=client)
    return time.perf_counter() - start, model


def timed_dask_ml(X, y, blocks, alpha, solver, p_star, cap, client):
    """(seconds, max_iter) of the first run within TOL of p_star, or (None, last relative
    suboptimality) when a run exceeds the time cap."""
    from concurrent.futures import ThreadPoolExecutor, TimeoutError
    from dask_ml.linear_model import LogisticRegression
    Xd, yd = dask_arrays(X, y, blocks, client)
    if not isinstance(X, np.ndarray):     # dask-ml's sparse chunks are pydata/sparse arrays
        import sparse
        Xd = Xd.map_blocks(sparse.COO.from_scipy_sparse, dtype=X.dtype,
                           meta=sparse.COO.from_scipy_sparse(X[:0]))
    Xd, yd = client.persist([Xd, (yd > 0).astype(np.float64)])
    max_iter, subopt = 2, np.inf
    while True:
        est = LogisticRegression(penalty="l2", C=1.0 / (alpha * X.shape[0]), solver=solver,
                                 fit_intercept=False, max_iter=max_iter, tol=1e-12,
                                 solver_kwargs={"normalize": False})
        start = time.perf_counter()
        with warnings.catch_warnings(), ThreadPoolExecutor(1) as pool:
            warnings.simplefilter("ignore")
            run = pool.submit(est.fit, Xd, yd)
            try:
                run.result(timeout=2 * cap)
            except TimeoutError:
                client.restart()          # abandons the run (its thread then fails)
                return None, max_iter, subopt
            except Exception as exc:      # noqa: BLE001 - reported in the table
                return None, max_iter, f"failed: {type(exc).__name__}"
        seconds = time.perf_counter() - start
        subopt = (objective(X, y, np.asarray(est.coef_).ravel(), alpha) - p_star) / p_star
        if subopt <= TOL:
            return seconds, max_iter, subopt
        if seconds > cap:
            return None, max_iter, subopt
        max_iter *= 2


def floor_seconds(X):
    w = np.ones(X.shape[1])
    times = []
    for _ in range(5):
        start = time.perf_counter()
        X @ w
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def data_sets(args):
    for name in args.datasets:
        yield name, *load(name), 3
    if args.big:
        from benchmarks.scale import generate
        X, y = generate(10**6, 10**6, 100, np.float64, seed=0)
        yield "synth 1e6 x 1e6", X, y, 1


def main(argv=None):
    from distributed import Client, LocalCluster
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="*", default=["news20", "synth_sparse"])
    parser.add_argument("--big", action="store_true", help="add the 10^6 x 10^6 problem")
    parser.add_argument("--workers", nargs="+", type=int, default=[1, 2, 4])
    parser.add_argument("--alpha", type=float, default=1e-4)
    parser.add_argument("--dask-ml", action="store_true", help="dask-ml's admm and lbfgs too")
    parser.add_argument("--cap", type=float, default=120.0,
                        help="seconds after which a dask-ml run is the last one")
    parser.add_argument("--scaling", action="store_true", help="the rounds-against-K table")
    parser.add_argument("--blocks", nargs="+", type=int, default=[1, 2, 4, 8, 16, 32, 64])
    args = parser.parse_args(argv)
    warm = load("a9a", n_samples=2000)       # imports on fresh workers: not in the timings
    print("| data | n x d | floor (ms) | K workers | method | seconds | rounds / iterations | "
          "reached | / one-process SDCA |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, X, y, repeats in data_sets(args):
        floor = floor_seconds(X)
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            single = fastdual.train(X, y, loss="logistic", alpha=args.alpha, solver="sdca",
                                    fit_intercept=False, tol=TOL, random_state=0)
            times.append(time.perf_counter() - start)
        sdca = float(np.median(times))
        head = f"| {name} | {X.shape[0]} x {X.shape[1]} | {1e3 * floor:.1f} |"
        print(f"{head} - | one-process SDCA | {sdca:.2f} | {single.n_epochs_} epochs | "
              f"gap {single.relative_gap_:.1e} | 1.0x |", flush=True)
        p_star = None
        if args.dask_ml:
            p_star = fastdual.train(X, y, loss="logistic", alpha=args.alpha, solver="sdca",
                                    fit_intercept=False, tol=1e-9, max_epochs=10_000).primal_
        for workers in args.workers:
            with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                              dashboard_address=None, memory_limit=0) as cluster, \
                    Client(cluster) as client:
                timed_fastdual(*warm, workers, args.alpha, 1, client)
                for local_epochs in (1, 3):
                    runs = [timed_fastdual(X, y, workers, args.alpha, local_epochs, client)
                            for _ in range(repeats)]
                    seconds, model = float(np.median([r[0] for r in runs])), runs[0][1]
                    print(f"{head} {workers} | fastdual.dask, {local_epochs} local epoch(s) | "
                          f"{seconds:.2f} | {model.n_epochs_} | gap {model.relative_gap_:.1e} | "
                          f"{seconds / sdca:.1f}x |", flush=True)
                if not args.dask_ml:
                    continue
                for solver in ("admm", "lbfgs"):
                    s, it, sub = timed_dask_ml(X, y, workers, args.alpha, solver, p_star,
                                               args.cap, client)
                    sub = sub if isinstance(sub, str) else f"subopt. {sub:.1e}"
                    print(f"{head} {workers} | dask-ml {solver} | "
                          + (f"{s:.2f} | {it} | {sub} | {s / sdca:.1f}x |" if s is not None
                             else f"> {args.cap:.0f} | {it} | {sub} | - |"), flush=True)
        if args.scaling and repeats > 1:       # (not for --big: the simulation is serial)
            scaling(name, X, y, args)


def scaling(name, X, y, args):
    print(f"\nRounds to 1e-4 as the blocks grow ({name}; the algorithm alone, in one process):\n")
    print("| data | K blocks | rounds (1 epoch) | rounds (3 epochs) | SDCA epochs (K = 1) |")
    print("|---|---|---|---|---|")
    classes = np.unique(y)
    for K in args.blocks:
        rows = -(-X.shape[0] // K)
        parts = [(X[k:k + rows], y[k:k + rows]) for k in range(0, X.shape[0], rows)]
        cells = []
        for epochs in (1, 3):
            blocks = fastdual.dask.LocalBlocks(parts, "logistic", {}, classes, 0.0)
            out = fastdual.dask.cocoa(blocks, X.shape[0], X.shape[1], args.alpha, 0.0,
                                      tol=TOL, max_rounds=5000, local_epochs=epochs, seed=0)
            cells.append(out[4] if out[2] - out[3] <= TOL * abs(out[2]) else f"> {out[4]}")
        print(f"| {name} | {K} | {cells[0]} | {cells[1]} | {cells[0] if K == 1 else ''} |",
              flush=True)


if __name__ == "__main__":
    main()
