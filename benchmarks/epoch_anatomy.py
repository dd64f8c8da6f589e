"""What one SDCA epoch costs, and why, in units of the matrix-vector floor.

    python -m benchmarks.epoch_anatomy [--datasets ...] [--losses ...] [--repeats R] [--float32]

For each data set and loss, in one process (minimum over repeats, one thread):

* floor: ``X @ w`` plus ``X.T @ a`` with scipy (numpy for dense) -- two streaming passes;
* full epoch: one Prox-SDCA epoch over every sample (Option I, a fresh random permutation, no
  shrinking), from a point reached after three epochs;
* rows in visit order: the same epoch again -- same samples in the same order, same arithmetic --
  on a copy of X whose rows are stored in the order the epoch visits them, so that the rows are
  read sequentially; the difference to the full epoch is the price of random access;
* certificate pass: the shared duality-gap function (P and D with v recomputed from alpha);
* certificate, v exact: the same pass summing v with no rounding lost (what SDCA takes over at
  a check every 8 epochs; over sparse rows w, v and its rounding packed side by side).

The kernel is called directly (``fastdual.solvers._sdca.sdca_epoch``), as ``fastdual.train`` does.
"""
import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

from .datasets import load  # noqa: E402

NO_ALIAS = (np.empty(0), np.empty(0, dtype=np.intp))     # the kernel's sampling table: none
LOSSES = ("hinge", "squared_hinge", "smooth_hinge", "logistic", "squared")


def min_time(fn, repeats):
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def anatomy(X, y, loss, repeats, alpha=1e-4):
    from fastdual.solvers import _sdca
    from fastdual._problem import build_problem
    from fastdual._core.losses import new_step_state

    n, d = X.shape
    problem = build_problem(X, y, loss=loss, alpha=alpha, C=None, l1_ratio=0.0,
                            fit_intercept=False, intercept_scaling=1.0, sample_weight=None,
                            loss_params={})
    data, indices, indptr = problem.X.kernel_args
    sq_norms = problem.squared_norms()
    alpha_ = np.zeros(n)
    v = np.zeros(d + 1)
    order = np.arange(n, dtype=np.intp)
    rng_state = np.random.SeedSequence(0).generate_state(4, dtype=np.uint64)
    step_state = new_step_state(problem.loss, n)      # as the driver keeps it

    def epoch():
        _sdca.sdca_epoch(data, indices, indptr, n, d, problem.bias, problem.y,
                         problem.sample_weight, sq_norms, alpha_, v, v, problem.loss, problem.l2,
                         0.0, 1, 0.0, False, order, rng_state, n, np.inf, np.inf, *NO_ALIAS,
                         step_state)

    for _ in range(3):
        epoch()
    full = min_time(epoch, repeats)
    visit_order = min(_visit_order_epoch(problem, data, indices, indptr, sq_norms, alpha_, v,
                                         order, rng_state, step_state) for _ in range(repeats))
    v_check = np.empty(d + 1)
    certificate = min_time(lambda: problem.primal_dual(v, alpha_, v_out=v_check), repeats)
    exact = min_time(lambda: problem.certificate(v, alpha_, v_out=v_check, exact_v=True), repeats)
    return full, visit_order, certificate, exact


def _visit_order_epoch(problem, data, indices, indptr, sq_norms, alpha_, v, order, rng_state,
                       step_state):
    """Seconds of one epoch from the current state with X's rows stored in visit order.

    The kernel shuffles `order` in place by a permutation that depends only on the random state:
    a dry run with zero sample weights (every step skipped) reveals it. With the rows, labels,
    weights, norms and duals permuted accordingly and `order` set to the inverse permutation, the
    kernel's shuffle yields 0, 1, 2, ...: the same steps in the same order, on rows read in
    sequence. Works on copies; the caller's state is not advanced."""
    from fastdual.solvers import _sdca

    n, d = problem.n_samples, problem.n_features
    dry_order = order.copy()
    dry_state = rng_state.copy()
    _sdca.sdca_epoch(data, indices, indptr, n, d, problem.bias, problem.y, np.zeros(n),
                     sq_norms, alpha_.copy(), v.copy(), v.copy(), problem.loss, problem.l2, 0.0, 1,
                     0.0, False, dry_order, dry_state, n, np.inf, np.inf, *NO_ALIAS)
    visit = dry_order                                  # the sample visited at step t
    X = (sp.csr_matrix((data, indices, indptr), shape=(n, d)) if indptr.size
         else data.reshape(n, d))
    Xv = X[visit]
    if sp.issparse(Xv):
        Xv.sort_indices()
        dv, iv, pv = Xv.data, Xv.indices.astype(np.int32), Xv.indptr.astype(np.int32)
    else:
        dv, iv, pv = np.ascontiguousarray(Xv).ravel(), indices, indptr
    # The shuffle maps position p to pi(p): visit[p] = order[pi(p)]. Starting from start_order
    # with start_order[pi(p)] = p, it leaves p at position p.
    position_in_order = np.empty(n, dtype=np.intp)
    position_in_order[order] = np.arange(n)
    start_order = np.empty(n, dtype=np.intp)
    start_order[position_in_order[visit]] = np.arange(n)
    yv, cv, sqv = problem.y[visit], problem.sample_weight[visit], sq_norms[visit]
    for _ in range(2):        # the first run brings the fresh copy into cache, as X is
        state = rng_state.copy()
        alpha_v, v_v, order_v = alpha_[visit].copy(), v.copy(), start_order.copy()
        state_v = step_state.reshape(n, -1)[visit].ravel()
        t0 = time.perf_counter()
        _sdca.sdca_epoch(dv, iv, pv, n, d, problem.bias, yv, cv, sqv, alpha_v, v_v, v_v,
                         problem.loss, problem.l2, 0.0, 1, 0.0, False, order_v, state, n, np.inf,
                         np.inf, *NO_ALIAS, state_v)
        seconds = time.perf_counter() - t0
    start_order = order_v
    if not np.array_equal(start_order, np.arange(n)):
        raise RuntimeError("visit-order epoch did not visit the rows in storage order")
    # The same steps: the real epoch from the same state ends at the same duals.
    alpha_r, v_r = alpha_.copy(), v.copy()
    _sdca.sdca_epoch(data, indices, indptr, n, d, problem.bias, problem.y, problem.sample_weight,
                     sq_norms, alpha_r, v_r, v_r, problem.loss, problem.l2, 0.0, 1, 0.0, False,
                     order.copy(), rng_state.copy(), n, np.inf, np.inf, *NO_ALIAS, step_state.copy())
    if not np.allclose(alpha_r[visit], alpha_v, rtol=1e-9, atol=1e-12):
        raise RuntimeError("visit-order epoch did not take the same steps")
    return seconds


def floor(X, repeats):
    rng = np.random.default_rng(0)
    w = rng.standard_normal(X.shape[1]).astype(X.dtype)    # same dtype: no upcast copy of X
    a = rng.standard_normal(X.shape[0]).astype(X.dtype)
    return min_time(lambda: X @ w, repeats) + min_time(lambda: X.T @ a, repeats)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--datasets", nargs="+", default=["a9a", "reuters_lasvm", "news20"])
    p.add_argument("--losses", nargs="+", default=list(LOSSES), choices=LOSSES)
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--float32", action="store_true", help="X in float32 (floor in float32 too)")
    p.add_argument("--n-samples", type=int, default=None,
                   help="rows of the generated sets (synth_sparse, synth_dense)")
    args = p.parse_args(argv)
    print("| data | nnz / row | loss | floor (ms) | full epoch (ms) | epoch / floor "
          "| rows in visit order / floor | certificate / floor | certificate, v exact / floor |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for name in args.datasets:
        X, y = load(name, n_samples=args.n_samples if name.startswith("synth") else None)
        if args.float32:
            X = X.astype(np.float32)
        nnz = X.nnz if sp.issparse(X) else X.size
        base = floor(X, args.repeats)
        for loss in args.losses:
            full, visit_order, certificate, exact = anatomy(X, y, loss, args.repeats)
            print(f"| {name} | {nnz / X.shape[0]:.0f} | {loss} | {base * 1e3:.2f} "
                  f"| {full * 1e3:.2f} | {full / base:.2f} "
                  f"| {visit_order / base:.2f} | {certificate / base:.2f} "
                  f"| {exact / base:.2f} |", flush=True)


if __name__ == "__main__":
    main()
