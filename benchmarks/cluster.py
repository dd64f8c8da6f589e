"""fastdual.dask (CoCoA+) on this machine: local worker processes against one-process SDCA and
dask-ml; and the algorithm alone as the number of blocks grows.

    python -m benchmarks.cluster [--datasets news20 synth_sparse] [--big] [--workers 1 2 4]
                                 [--local-epochs auto 1 3] [--dask-ml] [--scaling] [--direct]
                                 [--anatomy]

Objective: logistic loss, l2 strength alpha (default 1e-4), no intercept (the objective dask-ml's
LogisticRegression(fit_intercept=False, C=1/(alpha n)) minimises), rows at unit norm; `--big` adds
the generated 10^6 x 10^6 problem of benchmarks.scale (float64).

Table 1: for each data set and number of workers K (a LocalCluster of K processes, one thread
each; the data in K row chunks): seconds of fastdual.dask.train with its defaults (gather="auto":
data of at most GATHER_BYTES fetched to this process and trained there, larger data in rounds),
then seconds and rounds of its CoCoA+ rounds (gather=False) to a certified relative
gap of 1e-4 (local_epochs "auto", 1 and 3 by default; median of 5, 1 for --big, after a warm-up
run on the fresh workers; the data already in the workers' memory), with the round-trip of K
trivial tasks on the same cluster (median of 20) and the fastdual.dask run's rounds times it
added to one process's seconds (the floor a run of that many rounds cannot go below), against fastdual.train(solver="sdca") in this
process (median of 5, 1 for --big) and the one-pass floor (a sparse product X w, median of 5). With --dask-ml:
dask-ml's LogisticRegression (admm, lbfgs) on K workers (its sparse chunks as pydata/sparse arrays, normalize=False), one run each of
max_iter = 2, 4, 8, ..., the first whose objective is within 1e-4 (relative) of P*, P* from SDCA certified to 1e-9; its
seconds, or the last objective reached once a run passes the time cap, or "stalled" when a
run is no better than the previous one (the solver stops on its own criteria); each solver's runs are in a
child process with its own cluster of K workers, killed with them when a run is still going at
twice the cap.

Table 2 (--scaling): rounds to 1e-4 as the number of blocks K grows, from fastdual.dask's own
rounds run in one process (train_local: the same rounds, bit for bit, without a cluster).

--direct: the driver's Client connects to the workers directly (Client(direct_to_workers=True)):
fastdual.dask's calls to its blocks' actors and their results then bypass the scheduler (by
default Dask routes them through it). --anatomy: after each fastdual.dask row, the median per
round of its last run's rounds_ (ms): wall, the slowest block's certificate (block_sums and the
mix's sums) and local epochs, and the latency (wall less the slowest block's work).
"""
import argparse
import json
import os
import queue
import signal
import subprocess
import sys
import threading
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
    # (hash=False: the same data scattered again must not share keys with chunks being released)
    xs = client.scatter([X[k:k + rows] for k in starts], hash=False)
    ys = client.scatter([y[k:k + rows] for k in starts], hash=False)
    Xd = da.concatenate([da.from_delayed(f, shape=(min(rows, X.shape[0] - k), X.shape[1]),
                                         dtype=X.dtype, meta=X[:0]) for f, k in zip(xs, starts)])
    yd = da.concatenate([da.from_delayed(f, shape=(min(rows, X.shape[0] - k),), dtype=y.dtype,
                                         meta=y[:0]) for f, k in zip(ys, starts)])
    return Xd, yd


def objective(X, y, w, alpha):
    margins = y * (X @ w)
    return float(np.mean(np.logaddexp(0.0, -margins)) + 0.5 * alpha * (w @ w))


def round_trip(client, workers):
    """Seconds of one round of `workers` trivial tasks submitted and gathered (median of 20)."""
    def nothing():
        return 0

    times = []
    for _ in range(23):
        start = time.perf_counter()
        client.gather([client.submit(nothing, pure=False) for _ in range(workers)])
        times.append(time.perf_counter() - start)
    return float(np.median(times[3:]))


def timed_fastdual(Xd, yd, alpha, local_epochs, client, gather=False):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
        model = fastdual.dask.train(Xd, yd, loss="logistic", alpha=alpha, fit_intercept=False,
                                    tol=TOL, max_epochs=2000 * (16 if local_epochs == "auto"
                                                                else local_epochs),
                                    local_epochs=local_epochs, gather=gather,
                                    random_state=0, client=client)
    return time.perf_counter() - start, model


def dask_ml_fits(key, workers, alpha, solver, p_star, cap):
    """In a child process (its own cluster): dask-ml's fits of max_iter = 2, 4, 8, ..., one JSON
    line each on stdout, until one is within TOL of p_star or takes longer than the cap."""
    from dask_ml.linear_model import LogisticRegression
    from distributed import Client, LocalCluster
    X, y = data(key)
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=None, memory_limit=0) as cluster, \
            Client(cluster) as client:
        Xd, yd = dask_arrays(X, y, workers, client)
        if not isinstance(X, np.ndarray):     # dask-ml's sparse chunks: pydata/sparse arrays
            import sparse
            Xd = Xd.map_blocks(sparse.COO.from_scipy_sparse, dtype=X.dtype,
                               meta=sparse.COO.from_scipy_sparse(X[:0]))
        Xd, yd = client.persist([Xd, (yd > 0).astype(np.float64)])

        def estimator(max_iter):
            return LogisticRegression(penalty="l2", C=1.0 / (alpha * X.shape[0]), solver=solver,
                                      fit_intercept=False, max_iter=max_iter, tol=1e-12,
                                      solver_kwargs={"normalize": False})

        with warnings.catch_warnings():       # imports and compilations: not in the timings
            warnings.simplefilter("ignore")
            rows = min(2000, X.shape[0] // workers)
            estimator(1).fit(Xd[:rows * workers].rechunk({0: rows}), yd[:rows * workers]
                             .rechunk(rows))
        max_iter, previous = 2, np.inf
        while True:
            est = estimator(max_iter)
            print(json.dumps({"start": max_iter}), flush=True)
            start = time.perf_counter()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est.fit(Xd, yd)
            except Exception as exc:      # noqa: BLE001 - reported in the table
                print(json.dumps({"failed": f"{type(exc).__name__}"}), flush=True)
                return
            seconds = time.perf_counter() - start
            subopt = (objective(X, y, np.asarray(est.coef_).ravel(), alpha) - p_star) / p_star
            print(json.dumps({"max_iter": max_iter, "seconds": seconds, "subopt": subopt}),
                  flush=True)
            # (a run no better than the one with half the iterations: the solver stops on its
            # own criteria before max_iter; more iterations give the same)
            if subopt <= TOL or seconds > cap or subopt >= previous:
                return
            max_iter, previous = 2 * max_iter, subopt


def timed_dask_ml(key, workers, alpha, solver, p_star, cap, setup=1800.0):
    """(seconds, max_iter, relative suboptimality) of dask-ml's first run within TOL of p_star;
    seconds None when a run took longer than the cap (its max_iter and suboptimality are the
    last ones reached). The runs are in a child process with its own cluster, killed with its
    workers when a run is still going at twice the cap (setup: seconds allowed for loading the
    data and starting the cluster)."""
    spec = json.dumps([key, workers, alpha, solver, p_star, cap])
    child = subprocess.Popen([sys.executable, "-m", "benchmarks.cluster", "--child", spec],
                             stdout=subprocess.PIPE, text=True, start_new_session=True)
    lines = queue.Queue()

    def read():
        for line in child.stdout:
            if line.startswith("{"):
                lines.put(json.loads(line))
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    last, running, timeout = None, None, setup
    try:
        while True:
            record = lines.get(timeout=timeout)
            if record is None:
                break
            if "failed" in record:
                return None, running, f"failed: {record['failed']}"
            if "start" in record:
                running, timeout = record["start"], 2 * cap
            else:
                last, running = record, None
    except queue.Empty:                     # a run still going at twice the cap
        pass
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    if last is None:
        return None, running, "no run finished"
    if last["subopt"] <= TOL:
        return last["seconds"], last["max_iter"], last["subopt"]
    if running is None and last["seconds"] <= cap:
        return None, last["max_iter"], f"stalled at subopt. {last['subopt']:.1e}"
    return None, running or last["max_iter"], last["subopt"]


def anatomy(model):
    """A round of a fastdual.dask model, the median over its rounds_ in ms."""
    parts = ("wall", "certify", "local", "latency")
    medians = [1e3 * float(np.median([r[f"{part}_seconds"] for r in model.rounds_]))
               for part in parts]
    return "    a round (median ms): " + ", ".join(f"{part} {value:.1f}"
                                                 for part, value in zip(parts, medians))


def floor_seconds(X):
    w = np.ones(X.shape[1])
    times = []
    for _ in range(5):
        start = time.perf_counter()
        X @ w
        times.append(time.perf_counter() - start)
    return float(np.median(times))


BIG = "synth 1e6 x 1e6"


def data(key):
    """A data set of benchmarks.datasets by name, or BIG: the 10^6 x 10^6 problem (float64)."""
    if key == BIG:
        from benchmarks.scale import generate
        return generate(10**6, 10**6, 100, np.float64, seed=0)
    return load(key)


def data_sets(args):
    for name in args.datasets:
        yield name, *data(name), 5
    if args.big:
        yield BIG, *data(BIG), 1


def main(argv=None):
    from distributed import Client, LocalCluster
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="*", default=["news20", "synth_sparse"])
    parser.add_argument("--big", action="store_true", help="add the 10^6 x 10^6 problem")
    parser.add_argument("--workers", nargs="+", type=int, default=[1, 2, 4])
    parser.add_argument("--alpha", type=float, default=1e-4)
    parser.add_argument("--local-epochs", nargs="+", default=["auto", "1", "3"],
                        help='local epochs per round of the fastdual.dask rows: "auto" or ints')
    parser.add_argument("--dask-ml", action="store_true", help="dask-ml's admm and lbfgs too")
    parser.add_argument("--dask-ml-solvers", nargs="+", default=["admm", "lbfgs"])
    parser.add_argument("--dask-ml-workers", nargs="+", type=int,
                        help="the worker counts dask-ml runs at (default: --workers)")
    parser.add_argument("--cap", type=float, default=120.0,
                        help="seconds after which a dask-ml run is the last one")
    parser.add_argument("--scaling", action="store_true", help="the rounds-against-K table")
    parser.add_argument("--blocks", nargs="+", type=int, default=[1, 2, 4, 8, 16, 32, 64])
    parser.add_argument("--direct", action="store_true",
                        help="Client(direct_to_workers=True) for the fastdual.dask rows")
    parser.add_argument("--anatomy", action="store_true",
                        help="a round's median times (ms) after each fastdual.dask row")
    parser.add_argument("--child", help=argparse.SUPPRESS)    # dask-ml's runs (internal)
    args = parser.parse_args(argv)
    if args.child:
        return dask_ml_fits(*json.loads(args.child))
    warm = load("a9a", n_samples=2000)       # imports on fresh workers: not in the timings
    local_epochs = [e if e == "auto" else int(e) for e in args.local_epochs]
    print("| data | n x d | floor (ms) | K workers | method | seconds | rounds / iterations | "
          "reached | / one-process SDCA | / (one process + rounds x round-trip) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
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
        print(f"{head} - | one-process SDCA | {sdca:.3f} | {single.n_epochs_} epochs | "
              f"gap {single.relative_gap_:.1e} | 1.0x | |", flush=True)
        p_star = None
        if args.dask_ml:
            p_star = fastdual.train(X, y, loss="logistic", alpha=args.alpha, solver="sdca",
                                    fit_intercept=False, tol=1e-9, max_epochs=10_000).primal_
        for workers in args.workers:
            with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                              dashboard_address=None, memory_limit=0) as cluster, \
                    Client(cluster, direct_to_workers=args.direct or None) as client:
                timed_fastdual(*dask_arrays(*warm, workers, client), args.alpha, 1, client)
                trip = round_trip(client, workers)
                print(f"{head} {workers} | round-trip of {workers} trivial tasks | "
                      f"{trip:.4f} | | | | |", flush=True)
                Xd, yd = dask_arrays(X, y, workers, client)
                # train's defaults: gather="auto" (small data fetched and trained here)
                timed_fastdual(*dask_arrays(*warm, workers, client), args.alpha, "auto",
                               client, gather=True)
                runs = [timed_fastdual(Xd, yd, args.alpha, "auto", client, gather="auto")
                        for _ in range(repeats)]
                seconds, model = float(np.median([r[0] for r in runs])), runs[0][1]
                how = (f"trained here ({model.solver})" if not model.rounds_
                       else f"{len(model.rounds_)} rounds")
                print(f"{head} {workers} | fastdual.dask, defaults: {how} | {seconds:.3f} | "
                      f"{len(model.rounds_) or '-'} | gap {model.relative_gap_:.1e} | "
                      f"{seconds / sdca:.1f}x | |", flush=True)
                for epochs in local_epochs:
                    runs = [timed_fastdual(Xd, yd, args.alpha, epochs, client)
                            for _ in range(repeats)]
                    seconds, model = float(np.median([r[0] for r in runs])), runs[0][1]
                    rounds = len(model.rounds_)
                    work = ("auto: " + ",".join(str(r["local_epochs"]) for r in model.rounds_)
                            if epochs == "auto" else f"{epochs} local epoch(s)")
                    print(f"{head} {workers} | fastdual.dask, {work} | "
                          f"{seconds:.3f} | {rounds} | "
                          f"gap {model.relative_gap_:.1e} | {seconds / sdca:.1f}x | "
                          f"{seconds / (sdca + rounds * trip):.1f}x |", flush=True)
                    if args.anatomy:
                        print(anatomy(model), flush=True)
            if not args.dask_ml:     # (after the cluster above is closed: its own cluster)
                continue
            for solver in args.dask_ml_solvers:
                if args.dask_ml_workers and workers not in args.dask_ml_workers:
                    continue
                s, it, sub = timed_dask_ml(name, workers, args.alpha, solver, p_star, args.cap)
                sub = sub if isinstance(sub, str) else f"subopt. {sub:.1e}"
                # (a run killed at twice the cap: its max_iter, nothing reached)
                over = "> %g" % (2 * args.cap if sub == "no run finished" else args.cap)
                print(f"{head} {workers} | dask-ml {solver} | "
                      + (f"{s:.2f} | {it} | {sub} | {s / sdca:.1f}x | |" if s is not None
                         else f"{'-' if sub.startswith('stalled') else over} | {it} | {sub} | - "
                              "| |"),
                      flush=True)
        if args.scaling and repeats > 1:       # (not for --big: the simulation is serial)
            scaling(name, X, y, args)


def scaling(name, X, y, args):
    print(f"\nRounds to 1e-4 as the blocks grow ({name}; the algorithm alone, in one process):\n")
    print("| data | K blocks | rounds (1 epoch) | rounds (3 epochs) | SDCA epochs (K = 1) |")
    print("|---|---|---|---|---|")
    for K in args.blocks:
        rows = -(-X.shape[0] // K)
        parts = [(X[k:k + rows], y[k:k + rows]) for k in range(0, X.shape[0], rows)]
        cells = []
        for epochs in (1, 3):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
                model = fastdual.dask.train_local(parts, loss="logistic", alpha=args.alpha,
                                                  fit_intercept=False, tol=TOL,
                                                  max_epochs=5000 * epochs, local_epochs=epochs,
                                                  random_state=0)
            rounds = len(model.history_) - 1       # (one record per round, the start's first)
            cells.append(rounds if model.converged_ else f"> {rounds}")
        print(f"| {name} | {K} | {cells[0]} | {cells[1]} | {cells[0] if K == 1 else ''} |",
              flush=True)


if __name__ == "__main__":
    main()
