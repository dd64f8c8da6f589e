"""Distributed training on Dask: CoCoA+ with adding aggregation, one global certificate.

    from distributed import Client, LocalCluster
    import fastdual.dask
    client = Client(LocalCluster(n_workers=2))
    model = fastdual.dask.train(X, y, loss="logistic", alpha=1e-4)   # X, y: dask arrays

X is a dask array chunked by rows only (dense or scipy CSR blocks), y a dask array with the same
row chunks. Each worker keeps its block of rows and that block's duals; every round the driver
broadcasts w, each worker runs `local_epochs` SDCA epochs on CoCoA+'s local subproblem (Smith,
Jaggi et al.; gamma = 1, sigma' = K blocks) in fastdual's own SDCA kernel, and returns its change
of v; w moves by their sum. The certificate is the shared gap function in block form
(_core/gap.pyx: block_sums on each worker at the new w, combine on the driver): P(w) and D of
the duals kept on the workers, v recomputed from them, so the model's gap_ bounds its
suboptimality for data no single process held. docs/math.md Sec. 4j; docs/cluster.md.

The l2 penalty (l1_ratio = 0), a regularised intercept or none, every loss SDCA trains; the
same seed and chunking give the same model.
"""
import copy
import warnings

import numpy as np

from fastdual import _loop
from fastdual._core import gap as _gap, rows as _rows
from fastdual._problem import map_strength
from fastdual._validation import check_matrix, check_int, check_positive, check_seed
from fastdual.losses import make_loss
from fastdual.model import Model
from fastdual.solvers import _sdca

# The options of the SDCA epoch the blocks run (Option I, permutation sampling, no shrinking).
OPTION_I = 1


def _require_dask():
    try:
        import dask.array as da
        from distributed import default_client, wait
    except ImportError as exc:   # pragma: no cover - depends on the installation
        raise ImportError("fastdual.dask needs dask and distributed: pip install "
                          "'fastdual[dask]'") from exc
    return da, default_client, wait


class Block:
    """One worker's rows, their duals and what SDCA needs of them (built on the worker)."""

    def __init__(self, X, y, loss_name, loss_params, classes, bias, index):
        self.matrix = check_matrix(X)
        y = np.asarray(y)
        if classes is None:
            self.y = np.asarray(y, dtype=np.float64)
        else:
            self.y = np.where(y == classes[1], 1.0, -1.0)
        self.loss_spec = (loss_name, loss_params)
        self.loss = make_loss(loss_name, loss_params)[1]
        self.bias = bias
        self.index = index
        n, d = self.matrix.n_samples, self.matrix.n_features
        self.weights = np.ones(n)
        self.sq_norms = _rows.row_squared_norms(*self.matrix.kernel_args, n, d, bias)
        self.duals = np.zeros(n)
        self.order = np.arange(n, dtype=np.intp)

    def __getstate__(self):
        """Picklable between processes: the loss (a Cython object) is rebuilt from its name."""
        state = dict(self.__dict__)
        del state["loss"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.loss = make_loss(*self.loss_spec)[1]

    def local_round(self, w, l2, n_total, blocks, epochs, seed):
        """CoCoA+'s local subproblem by SDCA from the duals: returns the block's change of v.

        The kernel scales steps by 1 / (l2' n_k) for its n_k rows; l2' = l2 n / (sigma' n_k)
        makes that sigma' / (l2 n): the curvature sigma' q_i and the update sigma' A_k da / (l2 n)
        of the subproblem, whose v starts at w."""
        m = self.matrix
        n = m.n_samples
        working_l2 = l2 * n_total / (blocks * n)
        v = np.array(w, dtype=np.float64)
        q_max = float(np.max(self.sq_norms, initial=0.0)) / (working_l2 * n)
        rng_state = np.random.SeedSequence([seed, self.index]).generate_state(4, np.uint64)
        self.order = self.order.copy()
        for _ in range(epochs):
            _sdca.sdca_epoch(*m.kernel_args, n, m.n_features, self.bias, self.y, self.weights,
                             self.sq_norms, self.duals, v, v, self.loss, working_l2, 0.0,
                             OPTION_I, q_max, False, self.order, rng_state, n, np.inf,
                             np.empty(0), np.empty(0, dtype=np.intp))
        return (v - w) / blocks

    def certificate(self, w, l2, n_total):
        """This block's sums and share of v(duals) (the certificate's block form)."""
        m = self.matrix
        v = np.zeros(m.n_features + 1)
        loss_sum, conj_sum = _gap.block_sums(*m.kernel_args, m.n_samples, m.n_features,
                                             self.bias, self.y, self.weights, w, self.duals,
                                             l2, n_total, self.loss, v)
        return loss_sum, conj_sum, v


def _build(X, y, loss_name, loss_params, classes, bias, index):
    return Block(X, y, loss_name, loss_params, classes, bias, index)


def _round(block, w, l2, n_total, blocks, epochs, seed):
    """A new block with the round's duals (the input is left as it was: a task that is run
    again, after a lost worker, starts from the same duals and gives the same result)."""
    block = copy.copy(block)
    block.duals = block.duals.copy()
    delta = block.local_round(w, l2, n_total, blocks, epochs, seed)
    return block, delta


def _certificate(block, w, l2, n_total):
    return block.certificate(w, l2, n_total)


def _duals(block):
    return block.duals


def _check_arrays(X, y, da):
    if not isinstance(X, da.Array) or X.ndim != 2:
        raise TypeError(f"X must be a 2-D dask array, got {type(X).__name__}")
    if not isinstance(y, da.Array) or y.ndim != 1:
        raise TypeError(f"y must be a 1-D dask array, got {type(y).__name__}")
    if any(np.isnan(c) for c in X.chunks[0]) or any(np.isnan(c) for c in y.chunks[0]):
        raise ValueError("X and y need known chunk sizes (call .compute_chunk_sizes())")
    if len(X.chunks[1]) != 1:
        raise ValueError(f"X must be chunked by rows only, got {len(X.chunks[1])} column "
                         "chunks; use X.rechunk({1: -1})")
    if tuple(X.chunks[0]) != tuple(y.chunks[0]):
        raise ValueError(f"X and y must have the same row chunks, got {X.chunks[0]} and "
                         f"{y.chunks[0]}")
    if 0 in X.chunks[0]:
        raise ValueError(f"every chunk of X needs rows; chunk {X.chunks[0].index(0)} has none")


def train(X, y, *, loss="smooth_hinge", alpha=None, C=None, l1_ratio=0.0, fit_intercept=True,
          intercept_scaling=1.0, tol=1e-4, max_rounds=200, local_epochs=1, random_state=None,
          client=None, verbose=0):
    """Train on a Dask cluster by CoCoA+ and certify the model by the global duality gap.

    X : dask array (n, d) chunked by rows only (numpy or scipy CSR blocks); y : dask array (n,)
    with the same row chunks. client: a distributed.Client (default: the current one).
    max_rounds: communication rounds; local_epochs: SDCA epochs per block and round. Returns a
    fastdual.Model with coef_, intercept_, the gathered dual_coef_ and the certificate
    primal_/dual_/gap_ of exactly them; history_ has one record per round."""
    da, default_client, wait = _require_dask()
    _check_arrays(X, y, da)
    client = default_client() if client is None else client
    tol = check_positive("tol", tol, allow_zero=True)
    max_rounds = check_int("max_rounds", max_rounds, 1)
    local_epochs = check_int("local_epochs", local_epochs, 1)
    seed = check_seed(random_state)
    spec, _, loss_params = make_loss(loss, {})
    n, d = int(X.shape[0]), int(X.shape[1])
    classes = None
    if spec.task == "binary":
        classes = np.unique(np.asarray(client.compute(da.unique(y)).result()))
        if classes.shape[0] != 2:
            raise ValueError(f"loss={loss!r} needs two classes in y, got {classes.shape[0]}")
    alpha, l1_ratio = map_strength(alpha, C, l1_ratio, float(n))
    if l1_ratio != 0.0:
        raise ValueError("fastdual.dask.train trains the l2 penalty (l1_ratio=0); the elastic "
                         "net and l1 are not distributed yet")
    l2 = alpha
    bias = check_positive("intercept_scaling", intercept_scaling) if fit_intercept else 0.0
    x_blocks, y_blocks = X.to_delayed().ravel(), y.to_delayed().ravel()
    blocks = [client.submit(_build, xb, yb, loss, loss_params, classes, bias, k, pure=False)
              for k, (xb, yb) in enumerate(zip(client.compute(list(x_blocks)),
                                                client.compute(list(y_blocks))))]
    K = len(blocks)
    w = np.zeros(d + 1)
    history = []
    result = None
    for round_ in range(1, max_rounds + 1):
        w_future = client.scatter(w, broadcast=True)
        rounds = [client.submit(_round, b, w_future, l2, n, K, local_epochs, seed + round_,
                                pure=False) for b in blocks]
        blocks = [client.submit(lambda r: r[0], r, pure=False) for r in rounds]
        deltas = client.gather([client.submit(lambda r: r[1], r, pure=False) for r in rounds])
        w = w + np.sum(deltas, axis=0)
        w_future = client.scatter(w, broadcast=True)
        parts = client.gather([client.submit(_certificate, b, w_future, l2, n, pure=False)
                               for b in blocks])
        loss_sum = sum(p[0] for p in parts)
        conj_sum = sum(p[1] for p in parts)
        v = np.sum([p[2] for p in parts], axis=0)
        primal, dual = _gap.combine(w, v, loss_sum, conj_sum, n, l2, 0.0)
        gap = primal - dual
        history.append({"epoch": round_, "primal": primal, "dual": dual, "gap": gap})
        if verbose:
            print(f"{round_:6d} {primal:14.8g} {dual:14.8g} {gap:10.3e}", flush=True)
        result = (w.copy(), primal, dual)
        if _loop.relative_gap(primal, dual) <= tol:
            break
    w, primal, dual = result
    duals = np.concatenate(client.gather([client.submit(_duals, b, pure=False)
                                          for b in blocks]))
    converged = _loop.relative_gap(primal, dual) <= tol
    if not converged:
        warnings.warn(f"fastdual.dask: stopped after max_rounds={max_rounds} with relative "
                      f"duality gap {_loop.relative_gap(primal, dual):.3g} > tol={tol:g}. "
                      "Increase max_rounds or local_epochs, loosen tol, or regularize more.",
                      _loop.ConvergenceWarning, stacklevel=2)
    return Model(
        w[:d], w[d] * bias, classes, dual_coef=duals, loss=loss, loss_params=loss_params,
        task=spec.task, solver="cocoa+", alpha=alpha, l1_ratio=0.0, l2_=l2, l1_=0.0,
        l2_added_=0.0, fit_intercept=bool(fit_intercept), intercept_scaling=intercept_scaling,
        intercept_mode="regularized" if fit_intercept else "none", primal_=primal, dual_=dual,
        gap_=primal - dual, converged_=converged, n_epochs_=len(history), history_=history,
        tol=tol, n_features_in_=d)
