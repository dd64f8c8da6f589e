"""Benchmark data: LIBSVM files from the shared data folder and generated sets.

Every data set is returned as ``(X, y)`` with ``y`` in {-1, +1} (float64) and the
rows of ``X`` scaled to unit l2 norm (empty rows stay zero).  Sparse sets are
CSR float64 with sorted, unique column indices; the generated dense set is a
C-contiguous ndarray.

The xz files are read from the folder named by ``FASTDUAL_DATA`` (default
``../shared/data`` relative to the repository root) and are never copied into the
repository.  Parsed matrices are cached as ``.npz`` under ``FASTDUAL_CACHE``
(default ``benchmarks/results/cache``, which git ignores).
"""
import compileall
import lzma
import os
import time

import numpy as np
import scipy.sparse as sp

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name -> (file, how labels become -1/+1)
#   "pm1": labels already -1/+1 (also -1.0/1.0)
#   "12": labels 1/2 -> 1 -> -1, 2 -> +1
#   "half": multiclass, classes <= k/2 -> -1, the rest -> +1 (k = number of classes)
LIBSVM_SETS = {
    "a9a": ("a9a.xz", "pm1"),
    "w8a": ("w8a.xz", "pm1"),
    "ijcnn1": ("ijcnn1.xz", "pm1"),
    "mushrooms": ("mushrooms.xz", "12"),
    "reuters_lasvm": ("reuters_lasvm.trn.xz", "pm1"),
    "news20": ("news20.xz", "half"),
    "sector": ("sector.scale.xz", "half"),
}
GENERATED_SETS = ("synth_sparse", "synth_dense")
ALL_DATASETS = tuple(LIBSVM_SETS) + GENERATED_SETS


def data_dir():
    return os.environ.get("FASTDUAL_DATA",
                          os.path.normpath(os.path.join(REPO_ROOT, "..", "shared", "data")))


def cache_dir():
    path = os.environ.get("FASTDUAL_CACHE",
                          os.path.join(REPO_ROOT, "benchmarks", "results", "cache"))
    os.makedirs(path, exist_ok=True)
    return path


def compile_package():
    """Write fastdual's bytecode (__pycache__) beside its sources, as installing a wheel does.

    A benchmark that times whole processes (start-up included) runs the package from this
    checkout; where PYTHONDONTWRITEBYTECODE is set, or the sources changed since the last import,
    every process would compile each module again (about 0.07 s), a cost no installed copy pays.
    Compiling is idempotent: up-to-date bytecode is left alone."""
    import fastdual
    compileall.compile_dir(os.path.dirname(os.path.abspath(fastdual.__file__)), quiet=1)


# --------------------------------------------------------------------------- helpers

def normalize_rows(X):
    """Scale every row to unit l2 norm; rows with no nonzero stay zero."""
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64, copy=True)
        X.sum_duplicates()
        X.sort_indices()
        sq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
        scale = np.zeros_like(sq)
        nz = sq > 0
        scale[nz] = 1.0 / np.sqrt(sq[nz])
        X.data *= np.repeat(scale, np.diff(X.indptr))
        return X
    X = np.array(X, dtype=np.float64, order="C", copy=True)
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    nz = norms > 0
    X[nz] /= norms[nz, None]
    return X


def binary_labels(raw, rule):
    raw = np.asarray(raw, dtype=np.float64)
    if rule == "pm1":
        values = np.unique(raw)
        if not set(values.tolist()) <= {-1.0, 1.0}:
            raise ValueError("expected labels -1/+1, got %r" % values)
        return np.where(raw > 0, 1.0, -1.0)
    if rule == "12":
        return np.where(raw == 2, 1.0, -1.0)
    if rule == "half":
        classes = np.unique(raw)
        k = len(classes)
        # classes sorted ascending; the first k/2 of them (labels 1..k/2) -> -1
        threshold = classes[k // 2 - 1]
        return np.where(raw <= threshold, -1.0, 1.0)
    raise ValueError(rule)


def _save_npz(path, X, y):
    tmp = path + ".tmp.npz"
    if sp.issparse(X):
        np.savez(tmp, data=X.data, indices=X.indices, indptr=X.indptr,
                 shape=np.array(X.shape), y=y)
    else:
        np.savez(tmp, dense=X, y=y)
    os.replace(tmp, path)


def _load_npz(path):
    with np.load(path) as f:
        y = f["y"]
        if "dense" in f:
            return np.ascontiguousarray(f["dense"]), y
        shape = tuple(int(v) for v in f["shape"])
        # 32-bit indices where they fit, as load_svmlight_file gives them (scikit-learn's
        # liblinear refuses 64-bit ones)
        index = np.int32 if max(int(f["indptr"][-1]), shape[1]) < 2 ** 31 else np.int64
        X = sp.csr_matrix((f["data"], f["indices"].astype(index, copy=False),
                           f["indptr"].astype(index, copy=False)), shape=shape)
        return X, y


# --------------------------------------------------------------------------- generated

_DRAWS_PER_NNZ = 1.38


def make_sparse_text(n=100_000, d=1_000_000, nnz_per_row=100, zipf_a=1.1, seed=0):
    """Text-like sparse data: Zipf-distributed feature ids, tf-idf-like values.

    Each row draws feature ids from a Zipf law over a random
    permutation of the d features (duplicates merged; the number of draws is set
    so that a row has about ``nnz_per_row`` distinct ids); values are 1 + log(count) times an idf weight.  Labels come
    from a sparse ground-truth linear model with 5% label noise.
    """
    rng = np.random.default_rng(seed)
    # about 30% of the Zipf draws repeat an id already in the row: draw more
    counts = rng.poisson(_DRAWS_PER_NNZ * nnz_per_row, size=n).clip(1, None)
    total = int(counts.sum())
    # Zipf ranks truncated to [1, d]: inverse-CDF sampling on a continuous Pareto
    # (vectorised, bounded) rather than rejection.
    u = rng.random(total)
    s = zipf_a - 1.0
    ranks = np.floor((1.0 - u * (1.0 - (d + 1.0) ** (-s))) ** (-1.0 / s)).astype(np.int64)
    ranks = np.clip(ranks, 1, d)
    perm = rng.permutation(d)
    cols = perm[ranks - 1]
    rows = np.repeat(np.arange(n, dtype=np.int64), counts)
    # merge duplicates inside a row: sort by (row, col), count runs
    uniq, cnt = np.unique(rows * d + cols, return_counts=True)
    r = uniq // d
    c = uniq % d
    df = np.bincount(c, minlength=d)
    idf = np.log((1.0 + n) / (1.0 + df)) + 1.0
    vals = (1.0 + np.log(cnt)) * idf[c]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(r, minlength=n), out=indptr[1:])
    X = sp.csr_matrix((vals, c.astype(np.int32), indptr), shape=(n, d))
    X.has_sorted_indices = True
    X = normalize_rows(X)
    w_true = np.zeros(d)
    support = rng.choice(d, size=max(1, d // 100), replace=False)
    w_true[support] = rng.standard_normal(support.size)
    # the frequent features carry signal too
    w_true[perm[:1000]] = rng.standard_normal(1000)
    score = X @ w_true
    y = np.where(score > np.median(score), 1.0, -1.0)
    flip = rng.random(n) < 0.05
    y[flip] = -y[flip]
    return X, y


def make_dense(n=200_000, d=100, seed=0):
    """Dense Gaussian data with correlated features, labels from a noisy linear model."""
    rng = np.random.default_rng(seed)
    # feature scales decay geometrically -> moderately ill-conditioned design
    scales = np.geomspace(1.0, 1e-2, d)
    X = rng.standard_normal((n, d)) * scales
    w_true = rng.standard_normal(d) / scales
    margin = X @ w_true
    y = np.where(margin + 0.5 * margin.std() * rng.standard_normal(n) >= 0, 1.0, -1.0)
    return normalize_rows(X), y


# --------------------------------------------------------------------------- loading

def _load_libsvm(name):
    from sklearn.datasets import load_svmlight_file
    fname, rule = LIBSVM_SETS[name]
    path = os.path.join(data_dir(), fname)
    if not os.path.exists(path):
        raise FileNotFoundError("%s not found (set FASTDUAL_DATA to the data folder)" % path)
    with lzma.open(path) as f:
        X, raw = load_svmlight_file(f, zero_based=False)
    return normalize_rows(X), binary_labels(raw, rule)


def load_raw(name, use_cache=True):
    """``(X, y)`` of a LIBSVM set with its rows as distributed (not normalized): CSR float64,
    duplicate entries summed, indices sorted. Labels: -1/+1 as ``load`` maps them, but for
    news20, where ``y`` is the first class against the rest (the binary problem of
    LIBLINEAR's one-vs-rest first model)."""
    from sklearn.datasets import load_svmlight_file
    fname, rule = LIBSVM_SETS[name]
    path = os.path.join(cache_dir(), name + "_raw.npz")
    if use_cache and os.path.exists(path):
        return _load_npz(path)
    source = os.path.join(data_dir(), fname)
    if not os.path.exists(source):
        raise FileNotFoundError("%s not found (set FASTDUAL_DATA to the data folder)" % source)
    with lzma.open(source) as f:
        X, labels = load_svmlight_file(f, zero_based=False)
    X = sp.csr_matrix(X, dtype=np.float64)
    X.sum_duplicates()
    X.sort_indices()
    if name == "news20":
        y = np.where(labels == np.min(labels), 1.0, -1.0)
    else:
        y = binary_labels(labels, rule)
    if use_cache:
        _save_npz(path, X, y)
    return X, y


def load(name, n_samples=None, seed=0, use_cache=True):
    """Return ``(X, y)`` for a data set name (see ``ALL_DATASETS``).

    ``n_samples`` takes a reproducible random subset of rows (used by ``--quick``);
    for the generated sets it is the number of rows generated.
    """
    if name not in ALL_DATASETS:
        raise KeyError("unknown data set %r; known: %s" % (name, ", ".join(ALL_DATASETS)))
    tag = name if n_samples is None or name not in GENERATED_SETS else "%s_n%d" % (name, n_samples)
    path = os.path.join(cache_dir(), tag + ".npz")
    if use_cache and os.path.exists(path):
        X, y = _load_npz(path)
    else:
        if name == "synth_sparse":
            X, y = make_sparse_text(n=n_samples or 100_000)
        elif name == "synth_dense":
            X, y = make_dense(n=n_samples or 200_000)
        else:
            X, y = _load_libsvm(name)
        if use_cache:
            _save_npz(path, X, y)
    if n_samples is not None and name not in GENERATED_SETS and n_samples < X.shape[0]:
        rng = np.random.default_rng(seed)
        idx = np.sort(rng.choice(X.shape[0], size=n_samples, replace=False))
        X, y = X[idx], y[idx]
    return X, y


def describe(X, y):
    n, d = X.shape
    nnz = X.nnz if sp.issparse(X) else int(np.count_nonzero(X))
    return {"n": int(n), "d": int(d), "nnz": int(nnz),
            "density": nnz / float(n * d), "n_pos": int((y > 0).sum()),
            "sparse": bool(sp.issparse(X))}


def correlated_dense(n=1000, d=5000, rho=0.6, support=50, snr=3.0, seed=0):
    """Dense columns, each an AR(1) step (correlation rho) from the one before, unit rows, and a
    regression target from a sparse linear signal plus noise (signal-to-noise snr)."""
    rng = np.random.default_rng(seed)
    X = np.empty((n, d))
    X[:, 0] = rng.standard_normal(n)
    scale = np.sqrt(1.0 - rho * rho)
    for j in range(1, d):
        X[:, j] = rho * X[:, j - 1] + scale * rng.standard_normal(n)
    X = normalize_rows(X)
    w_true = np.zeros(d)
    w_true[rng.choice(d, support, replace=False)] = rng.standard_normal(support)
    signal = X @ w_true
    y = signal + rng.standard_normal(n) * np.std(signal) / snr
    return X, y


def main(argv=None):
    import argparse
    p = argparse.ArgumentParser(description="Load, cache and describe the benchmark data sets")
    p.add_argument("names", nargs="*", default=list(ALL_DATASETS))
    args = p.parse_args(argv)
    print("%-14s %9s %9s %11s %9s %8s" % ("data", "n", "d", "nnz", "density", "load s"))
    for name in args.names:
        t0 = time.perf_counter()
        X, y = load(name)
        info = describe(X, y)
        print("%-14s %9d %9d %11d %9.2e %8.1f" % (name, info["n"], info["d"], info["nnz"],
                                                 info["density"], time.perf_counter() - t0))


if __name__ == "__main__":
    main()

