"""fastdual.dask (CoCoA+) on this machine: local worker processes against one-process SDCA.

    python -m benchmarks.cluster [--datasets news20] [--workers 1 2 4] [--alpha 1e-4]

For each data set (rows at unit norm) and number of workers K (a LocalCluster of K processes, one
thread each; the data in K row chunks): seconds and rounds to a certified relative gap of 1e-4
with `local_epochs` 1 and 3, against fastdual.train(solver="sdca") in this process (seconds and
epochs, median of 3). Then the algorithm alone, without wall time: rounds to 1e-4 as the number
of blocks grows (2 to 32 blocks, on a threads-only cluster), CoCoA+'s price for splitting the
data (sigma' = K makes every block's steps K times more cautious).
"""
import argparse
import time
import warnings

import numpy as np

import fastdual
import fastdual.dask
from benchmarks.datasets import load


def dask_arrays(X, y, blocks):
    import dask.array as da
    rows = -(-X.shape[0] // blocks)
    return da.from_array(X, chunks=(rows, -1), asarray=False), da.from_array(y, chunks=rows)


def timed_dask(X, y, blocks, alpha, local_epochs, client):
    Xd, yd = dask_arrays(X, y, blocks)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
        model = fastdual.dask.train(Xd, yd, loss="logistic", alpha=alpha, tol=1e-4,
                                    max_rounds=2000, local_epochs=local_epochs, random_state=0,
                                    client=client)
    return time.perf_counter() - start, model


def main(argv=None):
    from distributed import Client, LocalCluster
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["news20"])
    parser.add_argument("--workers", nargs="+", type=int, default=[1, 2, 4])
    parser.add_argument("--alpha", type=float, default=1e-4)
    parser.add_argument("--no-scaling", action="store_true",
                        help="skip the rounds-against-blocks table")
    args = parser.parse_args(argv)
    print("| data | K workers | local epochs | seconds | rounds | rel. gap | one-process SDCA "
          "(s, epochs) | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.datasets:
        X, y = load(name)
        times = []
        for _ in range(3):
            start = time.perf_counter()
            single = fastdual.train(X, y, loss="logistic", alpha=args.alpha, solver="sdca",
                                    tol=1e-4, random_state=0)
            times.append(time.perf_counter() - start)
        single_seconds = float(np.median(times))
        for workers in args.workers:
            with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                              dashboard_address=None) as cluster, Client(cluster) as client:
                for local_epochs in (1, 3):
                    seconds, model = timed_dask(X, y, workers, args.alpha, local_epochs, client)
                    print(f"| {name} | {workers} | {local_epochs} | {seconds:.2f} | "
                          f"{model.n_epochs_} | {model.relative_gap_:.1e} | "
                          f"{single_seconds:.2f}, {single.n_epochs_} | "
                          f"{seconds / single_seconds:.1f}x |", flush=True)
    if args.no_scaling:
        return
    print("\nRounds to 1e-4 as the blocks grow (the algorithm alone; local_epochs 1 and 3):\n")
    print("| data | blocks | rounds (1 epoch) | rounds (3 epochs) |")
    print("|---|---|---|---|")
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        for name in args.datasets:
            X, y = load(name)
            for blocks in (2, 4, 8, 16, 32):
                rounds = [timed_dask(X, y, blocks, args.alpha, e, client)[1].n_epochs_
                          for e in (1, 3)]
                print(f"| {name} | {blocks} | {rounds[0]} | {rounds[1]} |", flush=True)


if __name__ == "__main__":
    main()
