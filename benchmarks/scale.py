"""One machine, large data: a generated 10^6 x 10^6 sparse problem, trained without copying X.

    python -m benchmarks.scale [--n 1000000] [--d 1000000] [--nnz 100] [--solvers sdca spdc]
                               [--dtypes float32 float64] [--alpha 1e-6] [--tol 1e-4]
    python -m benchmarks.scale --wide      # the d-length vectors each solver allocates

The problem is the benchmarks' synth_sparse at scale: each row draws feature ids from a Zipf law
(exponent 1.1) over a random permutation of the d features, about `nnz` distinct ids per row,
values 1 + log(count) times an idf weight, rows at unit norm, labels from a sparse linear model
with 5% flipped. It is generated in chunks of rows, twice over with the same per-chunk seeds: the
first pass counts each row's distinct ids and the document frequencies, the second fills arrays
of exactly the final size, so that X is never held twice (no concatenation, no resize).

Each (dtype, solver) runs in a fresh process: generate, then reset the peak resident set size
(/proc/self/clear_refs) and train (logistic, alpha, tol); it reports the seconds, epochs and
certified relative gap, the bytes of X (data + indices + indptr), the resident set before
training and its peak during training, and the peak of the memory train() itself allocated
(tracemalloc, which numpy reports to; the resident set can hide it when training reuses memory
the generator freed), in units of 8 (n + d) bytes (one float64 per sample and per feature) and
of X.

--wide measures, with tracemalloc, the largest allocation of each solver's training on a tiny X
(n = 2000, 10 entries per row) with d = 2^25 features, in units of one float64 d-vector (256 MiB).
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np
import scipy.sparse as sp

CHUNK = 20_000
DRAWS_PER_NNZ = 1.3       # about 30% of the Zipf draws repeat an id already in the row


def _chunk_ids(rng, rows, d, nnz, zipf_a, perm):
    """(row of each distinct id, the id, its count) for one chunk, sorted by row then id."""
    counts = rng.poisson(DRAWS_PER_NNZ * nnz, size=rows).clip(1, None)
    u = rng.random(int(counts.sum()))
    s = zipf_a - 1.0
    ranks = np.floor((1.0 - u * (1.0 - (d + 1.0) ** (-s))) ** (-1.0 / s)).astype(np.int64)
    cols = perm[np.clip(ranks, 1, d) - 1]
    keys, cnt = np.unique(np.repeat(np.arange(rows, dtype=np.int64), counts) * d + cols,
                          return_counts=True)
    return keys // d, keys % d, cnt


def generate(n, d, nnz, dtype, seed=0, zipf_a=1.1):
    """(X, y): CSR with int32 indices, data of `dtype`, built chunk by chunk (see the module)."""
    rng = np.random.default_rng(seed)
    perm = rng.permutation(d)
    chunks = range(0, n, CHUNK)
    row_nnz = np.zeros(n, dtype=np.int64)
    df = np.zeros(d, dtype=np.int64)
    for start in chunks:                      # pass 1: sizes and document frequencies
        rows = min(CHUNK, n - start)
        r, c, _ = _chunk_ids(np.random.default_rng([seed, start]), rows, d, nnz, zipf_a, perm)
        row_nnz[start:start + rows] = np.bincount(r, minlength=rows)
        df += np.bincount(c, minlength=d)
    idf = np.log((1.0 + n) / (1.0 + df)) + 1.0
    del df
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(row_nnz, out=indptr[1:])
    del row_nnz
    total = int(indptr[-1])
    data = np.empty(total, dtype=dtype)
    indices = np.empty(total, dtype=np.int32)
    w_true = np.zeros(d)
    support = rng.choice(d, size=max(1, d // 100), replace=False)
    w_true[support] = rng.standard_normal(support.size)
    w_true[perm[:1000]] = rng.standard_normal(1000)
    score = np.empty(n)
    for start in chunks:                      # pass 2: the same draws, into place
        rows = min(CHUNK, n - start)
        r, c, cnt = _chunk_ids(np.random.default_rng([seed, start]), rows, d, nnz, zipf_a, perm)
        values = (1.0 + np.log(cnt)) * idf[c]
        norms = np.sqrt(np.bincount(r, weights=values * values, minlength=rows))
        values /= np.where(norms > 0, norms, 1.0)[r]
        lo, hi = indptr[start], indptr[start + rows]
        data[lo:hi] = values
        indices[lo:hi] = c
        score[start:start + rows] = np.bincount(r, weights=values * w_true[c], minlength=rows)
    y = np.where(score > np.median(score), 1.0, -1.0)
    flip = rng.random(n) < 0.05
    y[flip] = -y[flip]
    X = sp.csr_matrix((data, indices, indptr), shape=(n, d), copy=False)
    X.has_sorted_indices = True
    return X, y


def _status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return None


def child(args):
    import tracemalloc
    import fastdual
    start = time.perf_counter()
    X, y = generate(args.n, args.d, args.nnz, np.dtype(args.dtype))
    generated = time.perf_counter() - start
    x_bytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    before = _status("VmRSS")
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")                      # reset the peak resident set size (VmHWM)
        reset = True
    except OSError:
        reset = False
    tracemalloc.start()
    start = time.perf_counter()
    model = fastdual.train(X, y, loss="logistic", alpha=args.alpha, tol=args.tol,
                           solver=args.solver, max_epochs=args.max_epochs)
    seconds = time.perf_counter() - start
    traced = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    peak = _status("VmHWM") if reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({
        "dtype": args.dtype, "solver": args.solver, "n": args.n, "d": args.d, "nnz": X.nnz,
        "generate_seconds": generated, "seconds": seconds, "epochs": model.n_epochs_,
        "gap": model.relative_gap_, "converged": bool(model.converged_), "x_bytes": x_bytes,
        "rss_before": before, "peak": peak, "peak_reset": reset, "traced": traced}))


def very_wide(n, d, per_row, seed):
    """A tiny CSR X (n rows of about per_row uniform random ids among d features) and random
    -1/+1 labels: what training allocates beyond X is then all in vectors of length d."""
    rng = np.random.default_rng(seed)
    X = sp.csr_matrix((rng.random(n * per_row), rng.integers(0, d, n * per_row).astype(np.int32),
                       np.arange(0, n * per_row + 1, per_row)), shape=(n, d))
    X.sum_duplicates()
    X.sort_indices()
    return X, np.where(rng.random(n) < 0.5, 1.0, -1.0)


def wide(solvers):
    import tracemalloc
    import fastdual
    d = 1 << 25
    n = 2000
    X, y = very_wide(n, d, 10, seed=0)
    rows = []
    for solver in solvers:
        tracemalloc.start()
        fastdual.train(X, y, loss="logistic", alpha=1e-3, tol=1e-2, solver=solver, max_epochs=3)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        rows.append((solver, peak / (8.0 * d)))
    x_bytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    print(f"X: {n} x 2^25, {X.nnz} entries, {x_bytes / 2**20:.2f} MiB\n")
    print("| solver | peak traced memory of train(), in float64 d-vectors (256 MiB each) |")
    print("|---|---|")
    for solver, vectors in rows:
        print(f"| {solver} | {vectors:.2f} |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--d", type=int, default=1_000_000)
    parser.add_argument("--nnz", type=int, default=100)
    parser.add_argument("--alpha", type=float, default=1e-6)
    parser.add_argument("--tol", type=float, default=1e-4)
    parser.add_argument("--max-epochs", type=int, default=100)
    parser.add_argument("--solvers", nargs="+", default=["sdca", "spdc"])
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float64"])
    parser.add_argument("--wide", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--solver", help=argparse.SUPPRESS)
    parser.add_argument("--dtype", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args)
    if args.wide:
        return wide(args.solvers)
    print("| dtype | solver | nnz | X (GiB) | generate (s) | train (s) | epochs | rel. gap | "
          "RSS before (GiB) | peak (GiB) | traced by train (MiB) | in 8(n+d) | in X |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for dtype in args.dtypes:
        for solver in args.solvers:
            command = [sys.executable, "-m", "benchmarks.scale", "--child", "--solver", solver,
                       "--dtype", dtype, "--n", str(args.n), "--d", str(args.d), "--nnz",
                       str(args.nnz), "--alpha", str(args.alpha), "--tol", str(args.tol),
                       "--max-epochs", str(args.max_epochs)]
            out = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ))
            if out.returncode != 0:
                print(f"| {dtype} | {solver} | failed: {out.stderr.strip().splitlines()[-1]} |")
                continue
            r = json.loads(out.stdout.strip().splitlines()[-1])
            extra = r["traced"]
            unit = 8.0 * (r["n"] + r["d"])
            print(f"| {dtype} | {solver} | {r['nnz']:.3g} | {r['x_bytes'] / 2**30:.2f} | "
                  f"{r['generate_seconds']:.0f} | {r['seconds']:.1f} | {r['epochs']} | "
                  f"{r['gap']:.1e} | {r['rss_before'] / 2**30:.2f} | {r['peak'] / 2**30:.2f} | "
                  f"{extra / 2**20:.0f} | {extra / unit:.1f} | {extra / r['x_bytes']:.2f} |",
                  flush=True)


if __name__ == "__main__":
    main()
