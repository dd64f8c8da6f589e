"""Distributed training on Dask: CoCoA+ with adding aggregation, one global certificate.

    from distributed import Client, LocalCluster
    import fastdual.dask
    client = Client(LocalCluster(n_workers=2))
    model = fastdual.dask.train(X, y, loss="logistic", alpha=1e-4)   # X, y: dask arrays

X is a dask array chunked by rows only (dense or scipy CSR blocks), y a dask array with the same
row chunks. Each worker keeps its blocks of rows and their duals in its own memory; every round
the driver broadcasts v (w = v, or its soft threshold for the elastic net) and each block, in one
call to its worker's actor (a Dask actor per worker: the calls go to the worker without a task
through the scheduler), certifies the state it holds in one pass over its rows (its share of the
certificate's sums, _core/gap.pyx block_sums, with the mix's margin duals in the same pass) and
then runs the round's local epochs of SDCA on CoCoA+'s local subproblem (Smith,
Jaggi et al.; gamma = 1, sigma' = K blocks) in fastdual's own kernel, returning its change of v.
The driver adds the shares (`combine`: P(w), D of the duals, v recomputed from them, and the gap
as the sum of the blocks' Fenchel-Young terms and the penalty's), stops on the relative gap, and
otherwise moves v by the sum of the changes. Between rounds the duals move towards the margin
duals of w by the step that maximises the dual (the margin mix, CoCoA._mix), and
local_epochs="auto" runs as many local epochs as fit in half the round's measured latency.
docs/math.md Sec. 4j; docs/cluster.md.

Data of at most GATHER_BYTES on the workers (gather="auto") are fetched to the driver and trained
by fastdual.train instead: the rounds cost more than the whole solve there.

Every round commits the duals it certified to the driver; a worker lost in the middle of a round
costs that round: the lost blocks are rebuilt from X's chunks with the committed duals and the
round runs again (the same seed gives the same result). The model returned is always a committed
state with its own certificate.
"""
import asyncio
import concurrent.futures
import functools
import itertools
import math
import time
import warnings

import numpy as np
import scipy.sparse as sp

from fastdual import _fit
from fastdual._api import train as _train_in_process
from fastdual._core import gap as _gap
from fastdual._core.losses import new_step_state
from fastdual._defaults import DEFAULTS
from fastdual._problem import class_multipliers, describe_objective, map_strength
from fastdual._validation import (check_choice, check_int, check_labels, check_matrix,
                                  check_positive, check_seed, check_stream_weights, check_targets)
from fastdual.losses import get_loss_spec, make_loss
from fastdual.solvers import _sdca
from fastdual.solvers.common import soft_threshold

# The options of the SDCA epoch the blocks run (Option I, permutation sampling, no shrinking).
OPTION_I = 1
# Rounds run again after lost workers before giving up with an error.
MAX_RECOVERIES = 3
# The steps theta of the margin mix a <- (1 - theta) a + theta a(w) the driver chooses from (the
# dual is concave along the segment; 0 keeps the duals): 0 and 4^-7 ... 1.
MIX_STEPS = np.concatenate([[0.0], 4.0 ** -np.arange(7, -1, -1)])
# local_epochs="auto": as many local epochs as fit in LATENCY_MULTIPLE times the round's latency
# (its wall time less the slowest block's work), between 1 and MAX_AUTO_EPOCHS. More local work
# saves rounds only while the blocks' subproblems are far from solved (news20 and synth_sparse
# at K = 2: one round of 4-6 from 1 to 4 epochs), and the last round's work is always lost: it
# pays where the latency is well above an epoch, not where the two are alike.
LATENCY_MULTIPLE = 0.5
MAX_AUTO_EPOCHS = 16
# gather="auto": data of at most this many bytes on the cluster (X's stored values and indices,
# y, the weights) are fetched to this process and trained by fastdual.train in one piece. A
# solve on data this small costs less than a few of the cluster's rounds (news20, 15 MB: one
# process 30-60 ms, the rounds 150-250 ms at K = 1 or 2 on one machine; fetched and trained
# here about 100 ms; docs/benchmarks.md J).
GATHER_BYTES = 32 * 2 ** 20
# Seconds between a round's checks that the workers it waits for are still in the cluster.
ACTOR_POLL_SECONDS = 0.5
# The blocks kept by this process when it is a Dask worker: (training token, block index) -> Block.
_STATE = {}
_TOKENS = itertools.count()
_POOL = None           # (threads, the pool the blocks' steps run on in this worker: _threads)


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


class LostWorker(ConnectionError):
    """The worker that holds a block left the cluster during a round."""


class Block:
    """One block of rows with its duals and what SDCA needs of them."""

    def __init__(self, X, y, loss_name, loss_params, classes, bias, index, duals=None,
                 labels_later=False, weights=None):
        """classes: None for regression, else the two classes (y is then mapped to -1, +1);
        labels_later: the targets kept as they are until `label(classes, scale)` (the classes
        and the weights' scale found from every block's `summary`, without a pass of their own);
        weights: the block's sample weights as given (None: ones), multiplied by `scale`."""
        self.matrix = check_matrix(X)
        n, d = self.matrix.n_samples, self.matrix.n_features
        self.labels = np.asarray(y)
        if self.labels.ndim != 1 or self.labels.shape[0] != n:
            raise ValueError(f"y has a chunk of shape {self.labels.shape} for a block of {n} rows")
        self.given_weights = check_stream_weights(weights, n)
        self.y = self.weights = None
        self.loss_spec = (loss_name, loss_params)
        self.loss = make_loss(loss_name, loss_params)[1]
        self.task = get_loss_spec(loss_name).task
        if not labels_later:
            self.label(classes)
        self.bias = bias
        self.index = index
        self.sq_norms = self.matrix.squared_norms(bias)
        self.committed = None
        self.workspace = None      # (block_sums' 4 (d + 1) + 8 doubles, kept from round to round)
        self.restore(np.zeros(n) if duals is None else duals)

    def summary(self):
        """What the driver needs of the block before training: (its distinct labels, or None for
        regression, and per label the count and the sum of the weights as given). Regression
        targets are checked here (finite, numeric), as train checks them."""
        if self.task == "regression":
            check_targets(self.labels, self.labels.shape[0], "regression", self.loss_spec[0])
            return None, np.array([self.labels.shape[0]]), np.array([self.given_weights.sum()])
        if self.labels.dtype.kind == "f" and not np.all(np.isfinite(self.labels)):
            raise ValueError("y contains NaN or infinity; class labels must be finite")
        labels, index = np.unique(self.labels, return_inverse=True)
        return (labels, np.bincount(index, minlength=labels.shape[0]),
                np.bincount(index, weights=self.given_weights, minlength=labels.shape[0]))

    def label(self, classes, scale=1.0):
        """The targets in the kernels' terms (-1 / +1 by classes, or the real targets) and the
        weights: as given, times `scale` (a number, or one per class for a classifier)."""
        y = self.labels
        if classes is None:
            self.y = check_targets(y, y.shape[0], "regression", self.loss_spec[0])[0]
            self.weights = self.given_weights * scale
        else:
            positive = y == classes[1]
            self.y = np.where(positive, 1.0, -1.0)
            per_class = np.broadcast_to(np.asarray(scale, dtype=np.float64), (2,))
            self.weights = self.given_weights * np.where(positive, per_class[1], per_class[0])
        self.labels = None

    def __getstate__(self):
        """Picklable between processes: the loss (a Cython object) is rebuilt from its name."""
        state = dict(self.__dict__)
        del state["loss"]
        state["workspace"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.loss = make_loss(*self.loss_spec)[1]

    def restore(self, duals):
        """Back to committed duals (a block restored or rebuilt holds no margin duals: the
        round it runs again starts from the committed duals as they are)."""
        self.duals = np.array(duals, dtype=np.float64)
        self.round = None
        self.margin_duals = None

    def step(self, v, l2, l1, n_total, sigma, epochs, seed, round_, mix=0.0, probe=True):
        """One round: (mix > 0) first move the duals to (1 - mix) duals + mix a(w) with the margin
        duals a(w) of the previous round's w, then certify the duals held now at
        w = grad g*(v), then (epochs > 0) improve them on the local subproblem. Returns
        (duals certified, change of v or None, loss sum, conjugate sum, share of v(duals),
        Fenchel-Young sum, extras) with extras None when epochs = 0, else (share of v(a(w)),
        conjugate sums of (1 - t) duals + t a(w) for t in MIX_STEPS after the local work,
        seconds of certificate and mix, seconds of local work); the first two None unless
        `probe` (the mix's sums skipped). Running the same round twice gives the same result."""
        start = time.perf_counter()
        if self.round == round_:
            self.duals[:] = self.committed
        elif mix and self.margin_duals is not None:
            self.duals *= 1.0 - mix
            self.duals += mix * self.margin_duals
        m = self.matrix
        n, d = m.n_samples, m.n_features
        w = soft_threshold(v, l1 / l2) if l1 else v
        share = np.zeros(d + 1)
        # The certificate's sums and, in a round that probes for the mix, the margin duals a(w)
        # at w and their share of v (the other end of the next round's mix), in one pass.
        probing = bool(epochs) and probe
        margins = np.empty(n) if probing else None
        margin_duals = np.empty(n) if probing else None
        margin_share = np.zeros(d + 1) if probing else None
        if self.workspace is None or self.workspace.shape[0] != 4 * (d + 1) + 8:
            self.workspace = np.empty(4 * (d + 1) + 8)
        loss_sum, conj_sum, fy_sum = _gap.block_sums(
            *m.kernel_args, n, d, self.bias, self.y, self.weights, w, self.duals, l2, n_total,
            self.loss, share, False, margins, margin_duals, margin_share, self.workspace)
        self.round, self.committed = round_, self.duals.copy()
        if not epochs:
            return self.committed, None, loss_sum, conj_sum, share, fy_sum, None
        if not probe:
            self.margin_duals = None
            local_start = time.perf_counter()
            delta = self.local_round(v, l2, l1, n_total, sigma, epochs, seed)
            local_seconds = time.perf_counter() - local_start
            return (self.committed, delta, loss_sum, conj_sum, share, fy_sum,
                    (None, None, local_start - start, local_seconds))
        local_start = time.perf_counter()
        delta = self.local_round(v, l2, l1, n_total, sigma, epochs, seed)
        local_seconds = time.perf_counter() - local_start
        # The dual's conjugate part along the segment from the duals after the local work to
        # the margin duals (feasible at every t: the domain of phi* is convex).
        mixed = np.outer(1.0 - MIX_STEPS, self.duals)
        mixed += np.outer(MIX_STEPS, margin_duals)
        conj_steps = (np.asarray(self.loss.dual_values(self.y, mixed))
                      .reshape(mixed.shape) @ self.weights)
        self.margin_duals = margin_duals
        seconds = time.perf_counter() - start
        return (self.committed, delta, loss_sum, conj_sum, share, fy_sum,
                (margin_share, conj_steps, seconds - local_seconds, local_seconds))

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
        # The loss's step state lives for the round's epochs only: a round is a function of
        # the committed duals, v and the seed.
        step_state = new_step_state(self.loss, n)
        for _ in range(epochs):
            _sdca.sdca_epoch(*m.kernel_args, n, m.n_features, self.bias, self.y, self.weights,
                             self.sq_norms, self.duals, local_v, local_w, self.loss, working_l2,
                             working_l1, OPTION_I, q_max, False, order, rng_state, n,
                             np.inf, np.inf, np.empty(0), np.empty(0, dtype=np.intp), step_state)
        local_v -= v
        local_v /= sigma
        return local_v


def _add(vectors):
    """The blocks' vectors summed in block order (np.sum(vectors, axis=0)'s numbers, without
    stacking K copies of a d-vector first)."""
    total = np.array(vectors[0], dtype=np.float64)
    for vector in vectors[1:]:
        total += vector
    return total


def auto_epochs(latency, per_epoch):
    """local_epochs="auto"'s next round: the whole epochs of per_epoch seconds that fit in
    LATENCY_MULTIPLE times the latency (seconds), at least 1, at most MAX_AUTO_EPOCHS."""
    if not per_epoch > 0:
        return 1
    return int(min(max(math.floor(LATENCY_MULTIPLE * latency / per_epoch), 1),
                   MAX_AUTO_EPOCHS))


def _worker_address():
    from distributed import get_worker
    return get_worker().address


def _build(X, y, weights, token, index, loss_name, loss_params, labelling, bias, duals=None):
    """The block on this worker: (its address, its summary when it is to be labelled later,
    else None). labelling: None (label at the first round), or (classes, scale)."""
    block = Block(X, y, loss_name, loss_params, None, bias, index, duals, labels_later=True,
                  weights=weights)
    _STATE[token, index] = block
    if labelling is not None:
        block.label(*labelling)
        return _worker_address(), None
    return _worker_address(), block.summary()


def _step(token, index, labelling, *args, address=None):
    """Block `index`'s step on this worker (address: the worker's, for the error, when the
    caller is not in a Dask thread)."""
    block = _STATE.get((token, index))
    if block is None:
        raise MissingBlock(f"block {index} is not on worker {address or _worker_address()}")
    if block.y is None:
        block.label(*labelling)
    return block.step(*args)


def _threads(count):
    """This process's pool for the blocks' steps (as many threads as the worker has: the
    steps' kernels release the GIL), made once."""
    global _POOL
    if _POOL is None or _POOL[0] != count:
        _POOL = (count, concurrent.futures.ThreadPoolExecutor(
            count, thread_name_prefix="fastdual-blocks"))
    return _POOL[1]


class _BlockActor:
    """The blocks of a training held by one worker, called directly on it: a Dask actor, one
    per worker (DaskBlocks.step). A call runs the steps of all the blocks it names, in parallel
    on as many threads as the worker has (an actor's own calls run on one thread)."""

    def __init__(self, token):
        from distributed import get_worker
        worker = get_worker()
        self.token, self.address = token, worker.address
        threads = getattr(getattr(worker, "state", None), "nthreads", None)
        self.threads = max(int(threads or getattr(worker, "nthreads", 1) or 1), 1)

    async def step(self, indices, labelling, *args):
        loop = asyncio.get_running_loop()
        pool = _threads(self.threads)
        return await asyncio.gather(*[
            loop.run_in_executor(pool, functools.partial(_step, self.token, index, labelling,
                                                         *args, address=self.address))
            for index in indices])


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
    the scaling study of benchmarks.cluster and for tests; `train_local`)."""

    lost_errors = ()
    has_latency = False         # (local_epochs="auto" runs 1 epoch a round here)

    def __init__(self, parts, loss_name, loss_params, bias, weights=None):
        """parts: (X, y) row blocks; weights: None or one array per block."""
        weights = [None] * len(parts) if weights is None else weights
        self.blocks = [Block(X, y, loss_name, loss_params, None, bias, k, labels_later=True,
                             weights=c) for k, ((X, y), c) in enumerate(zip(parts, weights))]
        self.sizes = [block.duals.shape[0] for block in self.blocks]
        self.summaries = [block.summary() for block in self.blocks]

    def __len__(self):
        return len(self.blocks)

    def label(self, labelling):
        for block in self.blocks:
            block.label(*labelling)

    def step(self, v, *args):
        return [block.step(v, *args) for block in self.blocks]

    def restore(self, committed):
        for block, duals in zip(self.blocks, committed):
            block.restore(duals)

    def close(self):
        pass


class DaskBlocks:
    """The blocks on a cluster: built on the workers from X's row chunks (one task per block),
    then one actor call per block and round on the worker that holds it."""

    has_latency = True

    def __init__(self, client, X, y, weights, loss_name, loss_params, bias):
        """weights: None or a dask array with y's chunks. The blocks' summaries (labels, counts,
        weight sums) come back as they are built: the caller decides the labelling from them."""
        from distributed.scheduler import KilledWorker
        from distributed.client import FutureCancelledError
        # What a lost worker raises (OSError: a closed connection).
        self.lost_errors = (MissingBlock, LostWorker, KilledWorker, FutureCancelledError,
                            OSError)
        self.client = client
        self.token = f"fastdual-{next(_TOKENS)}-{np.random.SeedSequence().entropy}"
        self.x_parts = list(X.to_delayed().ravel())
        self.y_parts = list(y.to_delayed().ravel())
        self.w_parts = (list(weights.to_delayed().ravel()) if weights is not None
                        else [None] * len(self.x_parts))
        self.sizes = [int(rows) for rows in X.chunks[0]]
        self.spec = [loss_name, loss_params, None, bias]
        # The actors go to the workers there are while the blocks are built (one exchange for
        # both); a block built elsewhere gets its worker's actor at its first round.
        self._drop_actors()
        placing = self._submit_actors(client.scheduler_info()["workers"])
        built = client.gather([self._build(k) for k in range(len(self.x_parts))])
        self._take_actors(placing)
        self.addresses = [address for address, _ in built]
        self.summaries = [summary for _, summary in built]

    def __len__(self):
        return len(self.addresses)

    def label(self, labelling):
        """The labelling every block takes at its first round (a block rebuilt later at once)."""
        self.spec[2] = self.labelling = labelling

    def _build(self, k, duals=None):
        parts = [self.x_parts[k], self.y_parts[k]] + ([self.w_parts[k]] if self.w_parts[k]
                                                      is not None else [])
        computed = self.client.compute(parts)
        x, y = computed[:2]
        w = computed[2] if len(computed) > 2 else None
        return self.client.submit(_build, x, y, w, self.token, k, *self.spec, duals, pure=False)

    def _submit_actors(self, addresses):
        """The actors' tasks for those of `addresses` that have none: {address: future}."""
        return {address: self.client.submit(_BlockActor, self.token, actor=True, pure=False,
                                            workers=[address], allow_other_workers=False)
                for address in sorted(set(addresses) - set(self.actors))}

    def _take_actors(self, placing):
        """The placed actors' handles, bound to this client (a handle made by Future.result
        binds to the default client, which need not be the one training); their tasks' futures
        are kept (the actors live while they are). A worker that left meanwhile is a
        LostWorker, not a wait for ever (its actor's task would wait for that worker)."""
        from distributed import Actor, wait
        for address, future in placing.items():
            while True:
                try:
                    wait([future], timeout=ACTOR_POLL_SECONDS)
                    break
                except TimeoutError:
                    if address not in self.client.scheduler_info()["workers"]:
                        self._drop_actors()
                        raise LostWorker(f"the worker {address} left the cluster") from None
            if future.status != "finished":
                future.result()                       # (raises the task's error)
            with self.client.as_current():
                self.actors[address] = Actor(_BlockActor, address, future.key)
            self.actor_futures[address] = future

    def _drop_actors(self):
        self.actors, self.actor_futures = {}, {}

    def step(self, v, *args):
        """One round: one call to the actor of each worker, for the steps of all the blocks it
        holds (no task through the scheduler: 2-5 ms a round-trip on one machine instead of
        12-20; v goes to each worker once and is not carried in the scheduler's task graph)."""
        self._take_actors(self._submit_actors(self.addresses))
        held = {}
        for k, address in enumerate(self.addresses):
            held.setdefault(address, []).append(k)
        with self.client.as_current():
            calls = [(blocks, self.actors[address].step(blocks, self.labelling, v, *args))
                     for address, blocks in held.items()]
        results = [None] * len(self.addresses)
        for blocks, call in calls:
            for k, result in zip(blocks, self._wait(call, blocks[0])):
                results[k] = result
        return results

    def _wait(self, call, k):
        """The result of a call to the worker that holds block k; LostWorker when that worker
        has left the cluster meanwhile (a call to a dead worker may otherwise wait for Dask's
        connect timeout)."""
        while True:
            try:
                return call.result(timeout=ACTOR_POLL_SECONDS)
            except TimeoutError:
                if call.done():            # (finished just now)
                    continue
                if self.addresses[k] not in self.client.scheduler_info()["workers"]:
                    self._drop_actors()
                    raise LostWorker(f"the worker {self.addresses[k]} holding block {k} "
                                     "left the cluster")
            except (OSError, MissingBlock):
                self._drop_actors()
                raise
            except RuntimeError as exc:       # (Actor: "Worker holding Actor was lost")
                if "lost" not in str(exc):
                    raise
                self._drop_actors()
                raise LostWorker(str(exc)) from exc

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
        self._drop_actors()        # (placed again on the workers there are at the next round)

    def close(self):
        """Forget the blocks and their actors on every worker (without waiting for it)."""
        self._drop_actors()
        try:
            self.client.run(_forget, self.token, wait=False)
        except Exception:    # pragma: no cover - a cluster already gone keeps nothing
            pass


def _check_arrays(X, y, sample_weight, da):
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
    if sample_weight is not None:
        if not isinstance(sample_weight, da.Array) or sample_weight.ndim != 1:
            raise TypeError(f"sample_weight must be None or a 1-D dask array, got "
                            f"{type(sample_weight).__name__}")
        if tuple(sample_weight.chunks[0]) != tuple(X.chunks[0]):
            raise ValueError(f"sample_weight must have X's row chunks {X.chunks[0]}, got "
                             f"{sample_weight.chunks[0]}")
    if 0 in X.chunks[0]:
        raise ValueError(f"every chunk of X needs rows; chunk {X.chunks[0].index(0)} has none")


def _refuse_pure_l1(l1_ratio):
    if l1_ratio == 1.0:
        raise ValueError("fastdual.dask.train needs an l2 term (l1_ratio < 1): CoCoA+'s local "
                         "subproblems are those of a strongly convex penalty; train pure l1 "
                         "with a small l2 part, e.g. l1_ratio=0.99")


def _refuse_classes(loss, classes):
    if classes.shape[0] != 2:
        raise ValueError(f"loss={loss!r} needs two classes in y, got {classes.shape[0]}")


def _computed(client, X, y, sample_weight):
    """Futures of X's, y's and the weights' chunks (in that order; computed on the workers)."""
    arrays = [X, y] + ([sample_weight] if sample_weight is not None else [])
    return [client.compute(list(array.to_delayed().ravel())) for array in arrays]


def _stored_bytes(client, chunks):
    """The bytes the computed chunks take on the workers (Dask's sizeof: a CSR block's values,
    indices and row pointers), asked of the scheduler once they are there."""
    from distributed import wait
    futures = [future for array in chunks for future in array]
    wait(futures)
    for future in futures:
        if future.status != "finished":
            future.result()                  # (raises the chunk's error)
    sizes = client.nbytes(keys=[future.key for future in futures], summary=False)
    return sum(sizes.get(future.key, 0) for future in futures)


def _fetch_directly(client):
    """Whether `gather` fetches the chunks from the workers themselves rather than through the
    scheduler: as the client is set (Client(direct_to_workers=...), Dask's setting), else when
    every worker is on this machine (a loopback or in-process address, e.g. a LocalCluster's),
    where the connection can be made (news20's 14.7 MiB: 13-22 ms against 29-63 ms)."""
    if client.direct_to_workers is not None:
        return bool(client.direct_to_workers)
    from distributed.comm import parse_address
    from distributed.comm.addressing import get_address_host

    def local(address):
        scheme, _ = parse_address(address)
        if scheme == "inproc":
            return True
        host = get_address_host(address).strip("[]")
        return host == "localhost" or host == "::1" or host.startswith("127.")

    workers = client.scheduler_info().get("workers", {})
    return bool(workers) and all(local(address) for address in workers)


def _train_here(client, chunks, n, *, loss, loss_params, alpha, C, l1_ratio, bias,
                intercept_scaling, class_weight, tol, max_epochs, local_epochs, seed, verbose,
                callback, on_interrupt):
    """gather: the chunks fetched to this process, concatenated in order, and trained by
    fastdual.train with the cluster's objective and refusals."""
    parts = client.gather(chunks, direct=_fetch_directly(client))
    X = (sp.vstack(parts[0], format="csr") if sp.issparse(parts[0][0])
         else np.concatenate([np.asarray(part) for part in parts[0]]))
    y = np.concatenate([np.asarray(part) for part in parts[1]])
    weights = np.concatenate([np.asarray(part) for part in parts[2]]) if len(parts) > 2 else None
    _refuse_pure_l1(l1_ratio)
    if get_loss_spec(loss).task == "binary":
        _refuse_classes(loss, check_labels(y, n)[0])
    if verbose:
        print(f"fastdual.dask: {n} rows fetched to this process and trained here (gather)")
    model = _train_in_process(X, y, loss=loss, alpha=alpha, C=C, l1_ratio=l1_ratio,
                              fit_intercept=bias != 0.0, intercept_scaling=intercept_scaling,
                              regularize_intercept=True, sample_weight=weights,
                              class_weight=class_weight, tol=tol, max_epochs=max_epochs,
                              random_state=seed, verbose=verbose, callback=callback,
                              on_interrupt=on_interrupt, **loss_params)
    model.recoveries_ = 0
    model.rounds_ = []
    return model


class BlockProblem:
    """The problem of data held in blocks, for the one training loop: what the loop and the
    model assembly ask of a problem (fastdual._problem.Problem's description, layout and
    certificate). Its certificate is the one the driver's last round computed block by block
    (_core/gap.pyx block_sums, then combine): the loop certifies the state that round held."""

    def __init__(self, n_samples, n_features, bias, classes, task, loss_name, loss_params,
                 alpha, l1_ratio, intercept_scaling):
        self.n_samples, self.n_features, self.bias = n_samples, n_features, bias
        self.classes, self.task = classes, task
        self.loss_name, self.loss_params = loss_name, loss_params
        self.alpha, self.l1_ratio = alpha, l1_ratio
        self.l2, self.l1 = alpha * (1.0 - l1_ratio), alpha * l1_ratio
        self.intercept_scaling = intercept_scaling
        self.fit_intercept = bias != 0.0
        self.free_intercept = False
        self.certified = None          # (w, duals, primal, dual, gap) of the last round

    def describe(self):
        return describe_objective(self.loss_name, self.loss_params, self.task, self.alpha,
                                  self.l1_ratio, self.fit_intercept, self.intercept_scaling,
                                  False, self.n_features)

    def coefficients(self, w):
        return w[:self.n_features], w[self.n_features] * self.bias

    def dual_coef(self, duals):
        return duals

    def feasible_duals(self, duals):
        return duals

    def certificate(self, w, duals, l2=None, v_out=None, feasible=False, exact_v=False):
        certified = self.certified
        if certified is None or w is not certified[0] or duals is not certified[1]:
            raise ValueError("a problem held in blocks certifies the states its rounds hold, "
                             "no other point")
        return certified[2:]

    def scaling_advice(self):
        return ""


class CoCoA:
    """CoCoA+'s driver for the one loop (docs/math.md Sec. 4j): `epoch()` is one round, one
    call per block: mix the duals toward the margin duals by the step the driver chose, certify
    the state the block holds at the broadcast v, then run the round's local epochs of SDCA on
    the local subproblem. `point()` is the state the round certified (the loop's certificate is
    that round's, summed over the blocks); the epochs it reports are the passes of local work
    behind that state. A lost worker costs a round: the blocks go back to the committed duals
    and the round before runs again.

    local_epochs: an int (that many epochs every round) or "auto": the next round's epochs from
    this round's measured times, as many as fit in LATENCY_MULTIPLE times the round's latency
    (auto_epochs: 1 to MAX_AUTO_EPOCHS epochs; blocks in this process have no latency: 1)."""

    name = "cocoa+"
    helper_l2 = 0.0

    def __init__(self, problem, blocks, local_epochs, seed):
        self.problem, self.blocks = problem, blocks
        self.auto = local_epochs == "auto"
        self.local_epochs = 1 if self.auto else local_epochs
        self.seed = seed
        self.v = np.zeros(problem.n_features + 1)
        self.mix = 0.0                  # the mix step the next round applies first
        self.probe_wait = self.probe_in = 0   # rounds without the mix's sums (_schedule)
        self.committed_schedule = (0, 0)
        self.committed = [np.zeros(rows) for rows in blocks.sizes]
        self.committed_v, self.committed_mix = self.v, 0.0
        self.round = 0                  # rounds completed
        self.done_epochs = 0            # the local epochs of the last round completed
        self.restoring = False
        self.failures, self.failed_round = 0, -1
        self.recoveries = 0
        self.log = []                   # one record per round completed (Model.rounds_)

    def epoch(self):
        problem, blocks = self.problem, self.blocks
        l2, l1 = problem.l2, problem.l1
        goal = self.round + 1
        while self.round < goal:
            epochs = self.local_epochs
            try:
                if self.restoring:   # (a worker lost while restoring is a failed round too)
                    blocks.restore(self.committed)
                    self.restoring = False
                start = time.perf_counter()
                probe = self.probe_in == 0
                before = (self.probe_wait, self.probe_in)
                parts = blocks.step(self.v, l2, l1, problem.n_samples, len(blocks), epochs,
                                    self.seed + self.round, self.round, self.mix, probe)
                wall = time.perf_counter() - start
            except blocks.lost_errors as exc:
                self.failures, self.failed_round = self.failures + 1, self.round
                if self.failures > MAX_RECOVERIES:
                    raise RuntimeError(
                        f"fastdual.dask: a worker was lost in round {self.round} and the round "
                        f"failed {self.failures} time(s) ({type(exc).__name__}: {exc}); no model "
                        "is returned. Check the cluster's workers (memory limits, restarts) and "
                        "train again.") from exc
                # Back to the last committed state: the round before this one runs again (the
                # start itself when round 0 fails), its duals as committed (mixed already).
                self.round = max(self.round - 1, 0)
                self.v, self.mix = self.committed_v, 0.0
                self.probe_wait, self.probe_in = self.committed_schedule
                self.restoring = True
                self.recoveries += 1
                continue
            if self.round > self.failed_round:
                self.failures = 0
            self.committed = [p[0] for p in parts]
            self.committed_v, self.committed_schedule = self.v, before
            share = _add([p[4] for p in parts])
            w = soft_threshold(self.v, l1 / l2) if l1 else self.v
            primal, dual, gap = _gap.combine(w, share, sum(p[2] for p in parts),
                                             sum(p[3] for p in parts), sum(p[5] for p in parts),
                                             problem.n_samples, l2, l1)
            problem.certified = (w, np.concatenate(self.committed), primal, dual, gap)
            # The next v from the duals themselves (no drift) plus this round's changes.
            self.v = share + _add([p[1] for p in parts])
            self.mix = self._mix([p[6] for p in parts]) if probe else 0.0
            self._schedule(probe)
            self.log.append(self._measure(parts, epochs, wall))
            # (the state this round certified is the previous round's local work)
            behind, self.done_epochs = self.done_epochs, epochs
            self.round += 1
        return behind if self.round > 1 else 0

    def _mix(self, extras):
        """The step t of the next round's mix (1 - t) duals + t a(w), a(w) the margin duals of
        this round's w, that maximises the dual over MIX_STEPS (t = 0 is the duals after this
        round's local work): the dual of each from the blocks' conjugate sums and v mixed the
        same way, through the certificate's combine. Moves self.v to the mixed point's v.

        Why: the blocks' own steps are damped by sigma' = K; where rows of different blocks
        share directions (a9a's binary features, unit rows), the duals of one block can take
        over what another's give (A_1 da_1 = -A_2 da_2, w unchanged) only at the pace of that
        damping, and the dual lags far behind w (docs/math.md Sec. 4j). The margin duals a(w)
        are w's own; the segment towards them settles that exchange across all blocks at once."""
        problem = self.problem
        margin_v = _add([e[0] for e in extras])
        conj = np.sum([e[1] for e in extras], axis=0)
        if problem.l1:       # (g* of the elastic net at each mixed v: the certificate's)
            duals = [_gap.combine(v, v, 0.0, conj_sum, 0.0, problem.n_samples, problem.l2,
                                  problem.l1)[1]
                     for v, conj_sum in (((1.0 - t) * self.v + t * margin_v, c)
                                         for t, c in zip(MIX_STEPS, conj))]
        else:                # g* = ||v||^2 / 2 along the segment: three products, once
            vv, vm, mm = self.v @ self.v, self.v @ margin_v, margin_v @ margin_v
            s = 1.0 - MIX_STEPS
            duals = (conj / problem.n_samples - 0.5 * problem.l2
                     * (s * s * vv + 2 * s * MIX_STEPS * vm + MIX_STEPS * MIX_STEPS * mm))
        best = float(MIX_STEPS[int(np.argmax(duals))])
        if best:
            self.v = (1.0 - best) * self.v + best * margin_v
        return best

    def _schedule(self, probed):
        """When the blocks next compute the mix's sums (two passes and the conjugate at 9
        points a row, d-vectors more to return): every round while the mix moves the duals;
        after a probe that keeps them (step 0), 1, 2, 4, ... 16 rounds without."""
        if not probed:
            self.probe_in -= 1
        elif self.mix > 0:
            self.probe_wait = self.probe_in = 0
        else:
            self.probe_wait = min(max(2 * self.probe_wait, 1), 16)
            self.probe_in = self.probe_wait

    def _measure(self, parts, epochs, wall):
        """The round's record, and local_epochs="auto"'s choice of the next round's epochs."""
        certify = max(e[2] for _, _, _, _, _, _, e in parts)     # (and the mix's sums)
        local = max(e[3] for _, _, _, _, _, _, e in parts)
        work = max(e[2] + e[3] for _, _, _, _, _, _, e in parts)
        latency = max(wall - work, 0.0) if self.blocks.has_latency else 0.0
        record = {"round": self.round, "local_epochs": epochs, "mix": self.mix,
                  "wall_seconds": wall, "work_seconds": work, "certify_seconds": certify,
                  "local_seconds": local, "latency_seconds": latency}
        if self.auto:
            self.local_epochs = auto_epochs(latency, local / epochs)
        return record

    def check_due(self, epoch):
        return True                    # every round computes its certificate anyway

    def point(self):
        return self.problem.certified[:2]

    def after_check(self, checkpoint):
        pass


def _train_blocks(blocks, n, d, *, loss, loss_params, alpha, C, l1_ratio, bias,
                  intercept_scaling, class_weight, tol, max_epochs, local_epochs, seed, verbose,
                  callback, on_interrupt):
    """The one loop over blocks (on a cluster or in this process): labels and weights from the
    blocks' summaries, the objective as train's, CoCoA+'s rounds, the model."""
    spec = get_loss_spec(loss)
    summaries = blocks.summaries
    if spec.task == "binary":
        classes = np.unique(np.concatenate([labels for labels, _, _ in summaries]))
        _refuse_classes(loss, classes)
        counts, sums = np.zeros(2), np.zeros(2)
        for labels, count, total in summaries:
            where = np.searchsorted(classes, labels)
            np.add.at(counts, where, count)
            np.add.at(sums, where, total)
        per_class = (np.ones(2) if class_weight is None
                     else class_multipliers(class_weight, classes, counts.astype(np.int64)))
        total_weight = float(per_class @ sums)
    else:
        if class_weight is not None:
            raise ValueError(f"class_weight is for classification; loss={loss!r} is a "
                             "regression loss")
        classes, per_class = None, 1.0
        total_weight = float(sum(total[0] for _, _, total in summaries))
    if not total_weight > 0:
        raise ValueError("sample_weight must have a positive sum (the weights are all zero)")
    alpha, l1_ratio = map_strength(alpha, C, l1_ratio, total_weight)
    _refuse_pure_l1(l1_ratio)
    # The weights normalised to mean 1 over all blocks, as train normalises them.
    blocks.label((classes, per_class * (n / total_weight)))
    problem = BlockProblem(n, d, bias, classes, spec.task, loss, loss_params, alpha, l1_ratio,
                           intercept_scaling)
    driver = CoCoA(problem, blocks, local_epochs, seed)
    model = _fit.solve(problem, driver=driver, solver=driver.name, options={}, seed=seed,
                       tol=tol, max_epochs=max_epochs, check_every=1, verbose=verbose,
                       callback=callback, on_interrupt=on_interrupt)
    model.recoveries_ = driver.recoveries
    model.rounds_ = driver.log
    return model


def _arguments(loss, loss_params, tol, max_epochs, max_rounds, local_epochs, random_state,
               fit_intercept, intercept_scaling, regularize_intercept, callback, on_interrupt):
    """train's and train_local's arguments checked as fastdual.train checks them."""
    spec, _, loss_params = make_loss(loss, loss_params)
    if isinstance(local_epochs, str):
        if local_epochs != "auto":
            raise ValueError(f"local_epochs must be a positive int or 'auto', got "
                             f"{local_epochs!r}")
    else:
        local_epochs = check_int("local_epochs", local_epochs, 1)
    if max_rounds is not None:
        warnings.warn("max_rounds is deprecated: max_epochs counts passes over the data, "
                      "max_rounds * local_epochs of them", DeprecationWarning, stacklevel=3)
        if local_epochs == "auto":     # (the budget in rounds needs a fixed round: the old one)
            local_epochs = 1
        max_epochs = check_int("max_rounds", max_rounds, 1) * local_epochs
    for name, value in (("fit_intercept", fit_intercept),
                        ("regularize_intercept", regularize_intercept)):
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{name} must be True or False, got {value!r}")
    if fit_intercept and not regularize_intercept:
        raise ValueError("fastdual.dask.train fits LIBLINEAR's regularised intercept "
                         "(regularize_intercept=True) or none: CoCoA+'s local SDCA cannot keep "
                         "a free intercept's dual constraint; train it with fastdual.train")
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable, got {callback!r}")
    intercept_scaling = check_positive("intercept_scaling", intercept_scaling)
    return dict(loss=loss, loss_params=loss_params,
                tol=check_positive("tol", tol, allow_zero=True),
                max_epochs=check_int("max_epochs", max_epochs, 1), local_epochs=local_epochs,
                seed=check_seed(random_state), bias=intercept_scaling if fit_intercept else 0.0,
                intercept_scaling=intercept_scaling, callback=callback,
                on_interrupt=check_choice("on_interrupt", on_interrupt, ("raise", "return")))


def train(X, y, *, loss=DEFAULTS["loss"], alpha=None, C=None, l1_ratio=0.0, sample_weight=None,
          class_weight=None, fit_intercept=True, intercept_scaling=1.0,
          regularize_intercept=DEFAULTS["regularize_intercept"], tol=DEFAULTS["tol"],
          max_epochs=DEFAULTS["max_epochs"], local_epochs="auto", random_state=None,
          client=None, gather="auto",
          verbose=0, callback=None, on_interrupt="raise", max_rounds=None, **loss_params):
    """Train on a Dask cluster by CoCoA+ and certify the model by the global duality gap.

    The objective and the arguments are fastdual.train's (the same defaults, loss parameters,
    sample_weight, class_weight, tol, max_epochs, callback, verbose, on_interrupt), with:
    X : dask array (n, d) chunked by rows only (numpy or scipy CSR blocks); y : dask array (n,)
    with the same row chunks, sample_weight None or one with them too. client: a
    distributed.Client (default: the current one). l1_ratio in [0, 1) (the elastic net; pure
    l1 needs an l2 term here); the intercept regularised (LIBLINEAR's) or none. local_epochs:
    SDCA epochs per block and round, or "auto" (the default): as many epochs as fit in
    LATENCY_MULTIPLE times the previous round's measured latency, 1 to MAX_AUTO_EPOCHS
    (an int gives the same model bit for bit for the same seed; "auto" depends on the times).
    max_epochs budgets the passes of local work (a round is local_epochs passes). Returns a fastdual.Model with coef_, intercept_, the gathered
    dual_coef_ and the certificate primal_/dual_/gap_ of exactly them; n_epochs_ counts the
    passes behind it, history_ has one record per round, and so has rounds_ (the round's
    local_epochs, mix step and seconds: wall, work, certify, local, latency).

    gather: where small data are trained. "auto" (the default): when X's chunks, y's and the
    weights' take at most GATHER_BYTES on the cluster (32 MiB, as the workers count them), they
    are fetched to this process and trained by fastdual.train in one piece (its default solver;
    the same model, bit for bit, as fastdual.train on the concatenated arrays; rounds_ is then
    empty): a solve on data that small costs less than a few rounds. True: always so; False:
    always CoCoA+ on the workers."""
    da, default_client = _require_dask()
    _check_arrays(X, y, sample_weight, da)
    run = _arguments(loss, loss_params, tol, max_epochs, max_rounds, local_epochs,
                     random_state, fit_intercept, intercept_scaling, regularize_intercept,
                     callback, on_interrupt)
    if isinstance(gather, (bool, np.bool_)):
        gather = bool(gather)
    elif not (isinstance(gather, str) and gather == "auto"):
        raise ValueError(f"gather must be 'auto', True or False, got {gather!r}")
    client = default_client() if client is None else client
    # The chunks computed once (held while the blocks are built from the same keys).
    chunks = None if gather is False else _computed(client, X, y, sample_weight)
    if chunks is not None and (gather is True or _stored_bytes(client, chunks) <= GATHER_BYTES):
        return _train_here(client, chunks, int(X.shape[0]), alpha=alpha, C=C,
                           l1_ratio=l1_ratio, class_weight=class_weight, verbose=verbose,
                           **run)
    blocks = DaskBlocks(client, X, y, sample_weight, run["loss"], run["loss_params"],
                        run["bias"])
    del chunks
    try:
        return _train_blocks(blocks, int(X.shape[0]), int(X.shape[1]), alpha=alpha, C=C,
                             l1_ratio=l1_ratio, class_weight=class_weight, verbose=verbose,
                             **run)
    finally:
        blocks.close()


def train_local(parts, *, loss=DEFAULTS["loss"], alpha=None, C=None, l1_ratio=0.0,
                sample_weight=None, class_weight=None, fit_intercept=True,
                intercept_scaling=1.0, regularize_intercept=DEFAULTS["regularize_intercept"],
                tol=DEFAULTS["tol"], max_epochs=DEFAULTS["max_epochs"], local_epochs="auto",
                random_state=None, verbose=0, callback=None, on_interrupt="raise",
                max_rounds=None, **loss_params):
    """train's rounds on blocks held in this process (`parts`: a list of (X, y) row blocks;
    sample_weight: None or one array per block): exactly the cluster's model for the same
    blocks and seed, without a cluster (the scaling study, tests)."""
    run = _arguments(loss, loss_params, tol, max_epochs, max_rounds, local_epochs,
                     random_state, fit_intercept, intercept_scaling, regularize_intercept,
                     callback, on_interrupt)
    blocks = LocalBlocks(parts, run["loss"], run["loss_params"], run["bias"], sample_weight)
    n = sum(blocks.sizes)
    d = blocks.blocks[0].matrix.n_features if parts else 0
    return _train_blocks(blocks, n, d, alpha=alpha, C=C, l1_ratio=l1_ratio,
                         class_weight=class_weight, verbose=verbose, **run)
