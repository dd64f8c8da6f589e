"""Distributed training on Dask: CoCoA+ with adding aggregation, one global certificate.

    from distributed import Client, LocalCluster
    import fastdual.dask
    client = Client(LocalCluster(n_workers=2))
    model = fastdual.dask.train(X, y, loss="logistic", alpha=1e-4)   # X, y: dask arrays

X is a dask array chunked by rows only (dense or scipy CSR blocks), y a dask array with the same
row chunks. Each worker keeps its blocks of rows and their duals in its own memory; every round
the driver broadcasts v (w = v, or its soft threshold for the elastic net) and each block, in one
task, certifies the state it holds (its share of the certificate's sums, _core/gap.pyx
block_sums) and then runs `local_epochs` SDCA epochs on CoCoA+'s local subproblem (Smith, Jaggi
et al.; gamma = 1, sigma' = K blocks) in fastdual's own kernel, returning its change of v. The
driver adds the shares (`combine`: P(w), D of the duals, v recomputed from them, and the gap as
the sum of the blocks' Fenchel-Young terms and the penalty's), stops on the relative gap, and
otherwise moves v by the sum of the changes. docs/math.md Sec. 4j; docs/cluster.md.

Every round commits the duals it certified to the driver; a worker lost in the middle of a round
costs that round: the lost blocks are rebuilt from X's chunks with the committed duals and the
round runs again (the same seed gives the same result). The model returned is always a committed
state with its own certificate.
"""
import itertools
import warnings

import numpy as np

from fastdual import _loop
from fastdual._core import gap as _gap, rows as _rows
from fastdual._problem import map_strength
from fastdual._validation import check_matrix, check_int, check_positive, check_seed
from fastdual.losses import make_loss
from fastdual.model import Model
from fastdual.solvers import _sdca
from fastdual.solvers.common import soft_threshold

# The options of the SDCA epoch the blocks run (Option I, permutation sampling, no shrinking).
OPTION_I = 1
# Rounds run again after lost workers before giving up with an error.
MAX_RECOVERIES = 3
# The blocks kept by this process when it is a Dask worker: (training token, block index) -> Block.
_STATE = {}
_TOKENS = itertools.count()


def _require_dask():
    try:
        import dask.array as da
        from distributed import default_client
    except ImportError as exc:   # pragma: no cover - depends on the installation
        raise ImportError("fastdual.dask needs dask and distributed: pip install "
                          "'fastdual[dask]'") from exc
    return da, default_client


class MissingBlock(LookupError):
    """A block's task ran on a worker that does not hold the block (its worker was lost)."""


class Block:
    """One block of rows with its duals and what SDCA needs of them."""

    def __init__(self, X, y, loss_name, loss_params, classes, bias, index, duals=None,
                 labels_later=False):
        """classes: None for regression, else the two classes (y is then mapped to -1, +1);
        labels_later: binary labels kept as they are until `label(classes)` (the classes
        found from the blocks' own labels, without a pass of their own)."""
        self.matrix = check_matrix(X)
        self.labels = np.asarray(y)
        self.y = None
        if not labels_later:
            self.label(classes)
        self.loss_spec = (loss_name, loss_params)
        self.loss = make_loss(loss_name, loss_params)[1]
        self.bias = bias
        self.index = index
        n, d = self.matrix.n_samples, self.matrix.n_features
        self.weights = np.ones(n)
        self.sq_norms = _rows.row_squared_norms(*self.matrix.kernel_args, n, d, bias)
        self.committed = None
        self.restore(np.zeros(n) if duals is None else duals)

    def label(self, classes):
        y = self.labels
        self.y = (np.asarray(y, dtype=np.float64) if classes is None
                  else np.where(y == classes[1], 1.0, -1.0))
        self.labels = None

    def __getstate__(self):
        """Picklable between processes: the loss (a Cython object) is rebuilt from its name."""
        state = dict(self.__dict__)
        del state["loss"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.loss = make_loss(*self.loss_spec)[1]

    def restore(self, duals):
        """Back to committed duals."""
        self.duals = np.array(duals, dtype=np.float64)
        self.round = None

    def step(self, v, l2, l1, n_total, sigma, epochs, seed, round_):
        """One round: certify the duals held now at w = grad g*(v), then (epochs > 0) improve
        them on the local subproblem. Returns (duals certified, change of v or None, loss sum,
        conjugate sum, share of v(duals), Fenchel-Young sum). Running the same round twice gives the same result."""
        if self.round == round_:
            self.duals[:] = self.committed
        m = self.matrix
        w = soft_threshold(v, l1 / l2) if l1 else v
        share = np.zeros(m.n_features + 1)
        loss_sum, conj_sum, fy_sum = _gap.block_sums(*m.kernel_args, m.n_samples, m.n_features,
                                             self.bias, self.y, self.weights, w, self.duals,
                                             l2, n_total, self.loss, share)
        self.round, self.committed = round_, self.duals.copy()
        delta = self.local_round(v, l2, l1, n_total, sigma, epochs, seed) if epochs else None
        return self.committed, delta, loss_sum, conj_sum, share, fy_sum

    def local_round(self, v, l2, l1, n_total, sigma, epochs, seed):
        """CoCoA+'s local subproblem by SDCA from the duals: returns the block's change of v.

        The kernel scales steps by 1 / (l2' n_k) for its n_k rows; l2' = l2 n / (sigma' n_k)
        makes that sigma' / (l2 n): the curvature sigma' q_i and the update sigma' A_k da / (l2 n)
        of the subproblem, whose v starts at the global v; l1' = l1 l2' / l2 keeps the threshold
        l1 / l2, so the kernel's w is grad g*(v + sigma' dv_k) (docs/math.md Sec. 4j)."""
        m = self.matrix
        n = m.n_samples
        working_l2 = l2 * n_total / (sigma * n)
        working_l1 = l1 * working_l2 / l2
        local_v = np.array(v, dtype=np.float64)
        local_w = soft_threshold(local_v, l1 / l2) if l1 else local_v
        q_max = float(np.max(self.sq_norms, initial=0.0)) / (working_l2 * n)
        # The visiting order depends on (seed, block) only: a round run again after a lost
        # worker, from the committed duals, repeats exactly.
        rng_state = np.random.SeedSequence([seed, self.index]).generate_state(4, np.uint64)
        order = np.arange(n, dtype=np.intp)
        for _ in range(epochs):
            _sdca.sdca_epoch(*m.kernel_args, n, m.n_features, self.bias, self.y, self.weights,
                             self.sq_norms, self.duals, local_v, local_w, self.loss, working_l2,
                             working_l1, OPTION_I, q_max, False, order, rng_state, n,
                             np.inf, np.empty(0), np.empty(0, dtype=np.intp))
        local_v -= v
        local_v /= sigma
        return local_v


def _worker_address():
    from distributed import get_worker
    return get_worker().address


def _build(X, y, token, index, loss_name, loss_params, classes, bias, duals=None,
           labels_later=False):
    """The block on this worker: (its address, the block's distinct labels when they are to be
    mapped later, else None)."""
    block = Block(X, y, loss_name, loss_params, classes, bias, index, duals, labels_later)
    _STATE[token, index] = block
    return _worker_address(), np.unique(block.labels) if labels_later else None


def _step(token, index, classes, *args):
    block = _STATE.get((token, index))
    if block is None:
        raise MissingBlock(f"block {index} is not on worker {_worker_address()}")
    if block.y is None:
        block.label(classes)
    return block.step(*args)


def _restore(token, index, duals):
    block = _STATE.get((token, index))
    if block is None:
        return None
    block.restore(duals)
    return _worker_address()


async def _forget(token):
    """(a coroutine: Client.run can then return without waiting for it; the keys are read
    in one step, as tasks of a next training may add blocks meanwhile)"""
    for key in [key for key in list(_STATE) if key[0] == token]:
        _STATE.pop(key, None)


class LocalBlocks:
    """The blocks in this process: CoCoA+'s rounds exactly as on a cluster, without one (for
    the scaling study of benchmarks.cluster and for tests)."""

    lost_errors = ()

    def __init__(self, parts, loss_name, loss_params, classes, bias):
        self.blocks = [Block(X, y, loss_name, loss_params, classes, bias, k)
                       for k, (X, y) in enumerate(parts)]
        self.sizes = [block.duals.shape[0] for block in self.blocks]

    def __len__(self):
        return len(self.blocks)

    def step(self, v, *args):
        return [block.step(v, *args) for block in self.blocks]

    def restore(self, committed):
        for block, duals in zip(self.blocks, committed):
            block.restore(duals)

    def close(self):
        pass


class DaskBlocks:
    """The blocks on a cluster: built on the workers from X's row chunks, one task per block
    and round on the worker that holds it."""

    def __init__(self, client, X, y, loss_name, loss_params, binary, bias):
        """binary: y holds two classes, found from the blocks' labels as they are built
        (`classes`; their number is the caller's to check before any round)."""
        from distributed.scheduler import KilledWorker
        from distributed.client import FutureCancelledError
        # What a lost worker raises (OSError: a closed connection).
        self.lost_errors = (MissingBlock, KilledWorker, FutureCancelledError, OSError)
        self.client = client
        self.token = f"fastdual-{next(_TOKENS)}-{np.random.SeedSequence().entropy}"
        self.x_parts = list(X.to_delayed().ravel())
        self.y_parts = list(y.to_delayed().ravel())
        self.sizes = [int(rows) for rows in X.chunks[0]]
        self.spec = [loss_name, loss_params, None, bias]
        built = client.gather([self._build(k, labels_later=binary)
                               for k in range(len(self.x_parts))])
        self.addresses = [address for address, _ in built]
        self.classes = np.unique(np.concatenate([labels for _, labels in built])) if binary \
            else None
        self.spec[2] = self.classes           # (a block rebuilt later is labelled at once)

    def __len__(self):
        return len(self.addresses)

    def _build(self, k, duals=None, labels_later=False):
        x, y = self.client.compute([self.x_parts[k], self.y_parts[k]])
        return self.client.submit(_build, x, y, self.token, k, *self.spec, duals, labels_later,
                                  pure=False)

    def step(self, v, *args):
        client = self.client
        # v travels in the tasks themselves: a scatter to a worker that has just died waits
        # forever, a task's argument does not.
        return client.gather([client.submit(_step, self.token, k, self.classes, v, *args,
                                            pure=False,
                                            workers=[address], allow_other_workers=True)
                              for k, address in enumerate(self.addresses)])

    def restore(self, committed):
        """Every block back to its committed duals; a block whose worker was lost is rebuilt
        from X's chunk on the workers there are."""
        client = self.client
        found = client.gather([client.submit(_restore, self.token, k, duals, pure=False,
                                             workers=[address], allow_other_workers=True)
                               for k, (address, duals) in enumerate(zip(self.addresses,
                                                                        committed))])
        rebuilt = {k: self._build(k, committed[k])
                   for k, address in enumerate(found) if address is None}
        for k, address in zip(rebuilt, client.gather(list(rebuilt.values()))):
            found[k] = address[0]
        self.addresses = found

    def close(self):
        """Forget the blocks on every worker (without waiting for it)."""
        try:
            self.client.run(_forget, self.token, wait=False)
        except Exception:    # pragma: no cover - a cluster already gone keeps nothing
            pass


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


def cocoa(blocks, n, d, l2, l1, *, tol, max_rounds, local_epochs, seed, verbose=0):
    """CoCoA+'s rounds on blocks (LocalBlocks or DaskBlocks). Returns (w, duals, primal, dual,
    gap, rounds, history, recoveries): the last certified state, rounds of local work behind
    it."""
    K = len(blocks)
    v = np.zeros(d + 1)
    history, recoveries, failures, failed_round = [], 0, 0, -1
    committed, committed_v = [np.zeros(rows) for rows in blocks.sizes], v
    round_, restoring = 0, False
    while True:
        work = local_epochs if round_ < max_rounds else 0
        try:
            if restoring:      # (a worker lost while restoring counts as a failed round too)
                blocks.restore(committed)
                restoring = False
            parts = blocks.step(v, l2, l1, n, K, work, seed + round_, round_)
        except blocks.lost_errors as exc:
            failures, failed_round = failures + 1, round_
            if failures > MAX_RECOVERIES:
                raise RuntimeError(
                    f"fastdual.dask: a worker was lost in round {round_} and the round failed "
                    f"{failures} time(s) ({type(exc).__name__}: {exc}); no model is returned. "
                    "Check the cluster's workers (memory limits, restarts) and train again."
                ) from exc
            # Back to the last committed state: the round before this one, run again (the
            # start itself when round 0 fails).
            round_, v = max(round_ - 1, 0), committed_v
            del history[round_:]
            restoring = True
            recoveries += 1
            continue
        if round_ > failed_round:
            failures = 0
        committed = [p[0] for p in parts]
        committed_v = v
        share = np.sum([p[4] for p in parts], axis=0)
        primal, dual, gap = _gap.combine(soft_threshold(v, l1 / l2) if l1 else v, share,
                                         sum(p[2] for p in parts), sum(p[3] for p in parts),
                                         sum(p[5] for p in parts), n, l2, l1)
        history.append({"epoch": round_, "primal": primal, "dual": dual, "gap": gap})
        if verbose:
            print(f"{round_:6d} {primal:14.8g} {dual:14.8g} {gap:10.3e}", flush=True)
        if _loop.relative_gap(primal, dual, gap) <= tol or not work:
            w = soft_threshold(v, l1 / l2) if l1 else v
            return w, np.concatenate(committed), primal, dual, gap, round_, history, recoveries
        # The next v from the duals themselves (no drift) plus this round's changes.
        v = share + np.sum([p[1] for p in parts], axis=0)
        round_ += 1


def train(X, y, *, loss="smooth_hinge", alpha=None, C=None, l1_ratio=0.0, fit_intercept=True,
          intercept_scaling=1.0, tol=1e-4, max_rounds=200, local_epochs=1, random_state=None,
          client=None, verbose=0):
    """Train on a Dask cluster by CoCoA+ and certify the model by the global duality gap.

    X : dask array (n, d) chunked by rows only (numpy or scipy CSR blocks); y : dask array (n,)
    with the same row chunks. client: a distributed.Client (default: the current one).
    l1_ratio in [0, 1) (the elastic net; pure l1 needs an l2 term here). max_rounds: rounds of
    local work; local_epochs: SDCA epochs per block and round. Returns a fastdual.Model with
    coef_, intercept_, the gathered dual_coef_ and the certificate primal_/dual_/gap_ of exactly
    them; n_epochs_ counts the rounds behind it, history_ has one record per round."""
    da, default_client = _require_dask()
    _check_arrays(X, y, da)
    client = default_client() if client is None else client
    tol = check_positive("tol", tol, allow_zero=True)
    max_rounds = check_int("max_rounds", max_rounds, 1)
    local_epochs = check_int("local_epochs", local_epochs, 1)
    seed = check_seed(random_state)
    spec, _, loss_params = make_loss(loss, {})
    n, d = int(X.shape[0]), int(X.shape[1])
    alpha, l1_ratio = map_strength(alpha, C, l1_ratio, float(n))
    if l1_ratio == 1.0:
        raise ValueError("fastdual.dask.train needs an l2 term (l1_ratio < 1): CoCoA+'s local "
                         "subproblems are those of a strongly convex penalty; train pure l1 "
                         "with a small l2 part, e.g. l1_ratio=0.99")
    l2, l1 = alpha * (1.0 - l1_ratio), alpha * l1_ratio
    bias = check_positive("intercept_scaling", intercept_scaling) if fit_intercept else 0.0
    blocks = DaskBlocks(client, X, y, loss, loss_params, spec.task == "binary", bias)
    classes = blocks.classes
    try:
        if classes is not None and classes.shape[0] != 2:
            raise ValueError(f"loss={loss!r} needs two classes in y, got {classes.shape[0]}")
        w, duals, primal, dual, gap, rounds, history, recoveries = cocoa(
            blocks, n, d, l2, l1, tol=tol, max_rounds=max_rounds, local_epochs=local_epochs,
            seed=seed, verbose=verbose)
    finally:
        blocks.close()
    converged = _loop.relative_gap(primal, dual, gap) <= tol
    if not converged:
        warnings.warn(f"fastdual.dask: stopped after max_rounds={max_rounds} with relative "
                      f"duality gap {_loop.relative_gap(primal, dual, gap):.3g} > tol={tol:g}. "
                      "Increase max_rounds or local_epochs, loosen tol, or regularize more.",
                      _loop.ConvergenceWarning, stacklevel=2)
    model = Model(
        w[:d], w[d] * bias, classes, dual_coef=duals, loss=loss, loss_params=loss_params,
        task=spec.task, solver="cocoa+", alpha=alpha, l1_ratio=l1_ratio, l2_=l2, l1_=l1,
        l2_added_=0.0, fit_intercept=bool(fit_intercept), intercept_scaling=intercept_scaling,
        intercept_mode="regularized" if fit_intercept else "none", primal_=primal, dual_=dual,
        gap_=gap, converged_=converged, n_epochs_=rounds, history_=history,
        tol=tol, n_features_in_=d)
    model.recoveries_ = recoveries
    return model
