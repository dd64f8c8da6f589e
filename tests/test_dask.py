"""fastdual.dask: CoCoA+ on a LocalCluster (two workers, threads), against single-machine
training, its global certificate against the shared gap function on the gathered data."""
import time
import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array")              # the "dask" extra
distributed = pytest.importorskip("distributed")
Client, LocalCluster = distributed.Client, distributed.LocalCluster

import fastdual  # noqa: E402
import fastdual.dask  # noqa: E402
from conftest import problem_for

# The scheduler's HTTP server on a port the system picks: with dashboard_address=None it still
# binds to 8787 and, when another cluster on the machine has it, warns and moves.
FREE_PORT = ":0"


# The problems here are a few kilobytes, which train(gather="auto") fetches to this process; the
# tests of CoCoA+ keep them on the cluster (the size is still asked for), the gather tests below
# put the default back.
DEFAULT_GATHER_BYTES = fastdual.dask.GATHER_BYTES


@pytest.fixture(autouse=True)
def rounds_on_the_cluster(monkeypatch):
    monkeypatch.setattr(fastdual.dask, "GATHER_BYTES", -1)


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=FREE_PORT) as cluster, Client(cluster) as c:
        yield c


def as_dask(X, y, rows):
    return da.from_array(X, chunks=(rows, -1), asarray=False), da.from_array(y, chunks=rows)


@pytest.mark.parametrize("loss, sparse, l1_ratio", [
    ("logistic", True, 0.0), ("smooth_hinge", False, 0.0), ("squared", True, 0.0),
    ("hinge", False, 0.0), ("logistic", False, 0.5), ("squared", True, 0.8),
    ("hinge", True, 0.3), ("smooth_hinge", False, 0.6)])
def test_equals_single_machine_and_certifies_like_the_gap_function(client, loss, sparse,
                                                                   l1_ratio):
    X, y = problem_for(loss, n=300, d=8, seed=1, sparse=sparse)
    Xd, yd = as_dask(X, y, 110)                 # 3 blocks, the last one short
    alpha, tol = 0.05, 1e-5
    model = fastdual.dask.train(Xd, yd, loss=loss, alpha=alpha, l1_ratio=l1_ratio, tol=tol,
                                max_epochs=2500, local_epochs=5, random_state=0, client=client)
    assert model.converged_ and model.relative_gap_ <= tol
    reference = fastdual.train(X, y, loss=loss, alpha=alpha, l1_ratio=l1_ratio, solver="sdca",
                               tol=1e-12, max_epochs=100_000)
    assert reference.dual_ <= model.primal_ <= reference.primal_ * (1 + 1.01 * tol)
    if l1_ratio:    # the elastic net's zeros: those of the optimum, up to the tolerance
        assert np.count_nonzero(model.coef_) < X.shape[1] or \
            np.count_nonzero(reference.coef_) == X.shape[1]
    cert = fastdual.duality_gap(X, y, model.coef_, model.intercept_, loss=loss, alpha=alpha,
                                l1_ratio=l1_ratio, dual_coef=model.dual_coef_)
    assert cert.primal == pytest.approx(model.primal_, rel=1e-12)
    assert cert.dual == pytest.approx(model.dual_, rel=1e-12)
    np.testing.assert_array_equal(model.predict(X[:5]), fastdual.Model.predict(model, X[:5]))


def test_the_same_seed_and_chunking_give_the_same_model(client):
    X, y = problem_for("logistic", n=200, d=5, seed=2, sparse=True)
    Xd, yd = as_dask(X, y, 50)
    kwargs = dict(loss="logistic", alpha=0.05, tol=1e-4, local_epochs=3, random_state=3,
                  client=client)
    first = fastdual.dask.train(Xd, yd, **kwargs)
    second = fastdual.dask.train(Xd, yd, **kwargs)
    np.testing.assert_array_equal(first.coef_, second.coef_)
    assert first.intercept_ == second.intercept_ and first.gap_ == second.gap_


def assert_same_round(first, second):
    """Two results of Block.step: the same bits but for the measured seconds."""
    for a, b in zip(first[:6], second[:6]):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(first[6][:2], second[6][:2]):
        np.testing.assert_array_equal(a, b)


def test_blocks_travel_between_processes():
    """A block (rows, duals and the loss) pickles and unpickles to the same state, as Dask
    does when it moves one between worker processes."""
    import pickle
    X, y = problem_for("hinge", n=40, d=3, seed=4, sparse=True)
    block = fastdual.dask.Block(X, y, "hinge", {}, np.unique(y), 1.0, 0)
    block.duals[:] = np.linspace(0, 1, 40)
    again = pickle.loads(pickle.dumps(block))
    np.testing.assert_array_equal(again.duals, block.duals)
    v = np.linspace(-1, 1, 4)
    first, second = (b.step(v, 0.1, 0.0, 40, 2, 1, 0, 0) for b in (block, again))
    assert_same_round(first, second)


def test_a_round_run_twice_gives_the_same_result():
    """Dask may run a task again; a block's step for the same round starts from the same duals."""
    X, y = problem_for("logistic", n=50, d=4, seed=5, sparse=False)
    block = fastdual.dask.Block(X, y, "logistic", {}, np.unique(y), 1.0, 1)
    v = np.zeros(5)
    block.step(v, 0.1, 0.02, 100, 2, 2, 7, 0)
    first = block.step(v, 0.1, 0.02, 100, 2, 2, 7, 1, 0.25)
    again = block.step(v, 0.1, 0.02, 100, 2, 2, 7, 1, 0.25)
    assert_same_round(first, again)


def test_the_cluster_gives_the_rounds_of_the_algorithm_in_one_process(client):
    """The same rounds without Dask (the scaling study's simulation): the same model."""
    X, y = problem_for("smooth_hinge", n=240, d=6, seed=6, sparse=True)
    Xd, yd = as_dask(X, y, 60)
    kwargs = dict(loss="smooth_hinge", alpha=0.01, l1_ratio=0.2, tol=1e-5, local_epochs=2,
                  random_state=4)
    model = fastdual.dask.train(Xd, yd, client=client, **kwargs)
    local = fastdual.dask.train_local([(X[k:k + 60], y[k:k + 60]) for k in range(0, 240, 60)],
                                      **kwargs)
    np.testing.assert_array_equal(model.coef_, local.coef_)
    np.testing.assert_array_equal(model.dual_coef_, local.dual_coef_)
    assert (model.primal_, model.dual_, model.gap_, model.n_epochs_) == (
        local.primal_, local.dual_, local.gap_, local.n_epochs_)
    assert [h["gap"] for h in model.history_] == [h["gap"] for h in local.history_]


class FailingBlocks(fastdual.dask.LocalBlocks):
    """Blocks whose round fails from round `fail_from` on, as if workers kept being lost."""
    lost_errors = (fastdual.dask.MissingBlock,)
    fail_from = 3

    def __init__(self, *args):
        super().__init__(*args)
        self.restored = 0
        FailingBlocks.last = self

    def step(self, v, *args):
        if args[6] >= self.fail_from:       # (the round)
            raise fastdual.dask.MissingBlock("block 0 is not on worker tcp://lost")
        return super().step(v, *args)

    def restore(self, committed):
        self.restored += 1
        super().restore(committed)


def test_workers_lost_in_every_attempt_give_a_clear_error_and_no_model(monkeypatch):
    X, y = problem_for("logistic", n=100, d=4, seed=7, sparse=False)
    monkeypatch.setattr(fastdual.dask, "LocalBlocks", FailingBlocks)
    with pytest.raises(RuntimeError, match="a worker was lost in round 3.*no model"):
        fastdual.dask.train_local([(X[:50], y[:50]), (X[50:], y[50:])], loss="logistic",
                                  alpha=0.01, tol=1e-12, max_epochs=50)
    assert FailingBlocks.last.restored == fastdual.dask.MAX_RECOVERIES


def test_a_worker_killed_in_the_middle_of_training_costs_a_round_not_the_model(monkeypatch):
    """Worker processes; one is killed (SIGKILL) while round 3 runs. The round runs again from
    the committed duals on the workers there are, and the model is exactly the model of a run
    without the loss, its certificate that of the gap function."""
    import os
    import signal
    import threading
    X, y = problem_for("logistic", n=400, d=10, seed=8, sparse=True)
    Xd, yd = as_dask(X, y, 100)
    kwargs = dict(loss="logistic", alpha=0.01, tol=1e-8, local_epochs=1, random_state=2)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=FREE_PORT) as cluster, Client(cluster) as c:
        quiet = fastdual.dask.train(Xd, yd, client=c, **kwargs)
        step = fastdual.dask.DaskBlocks.step
        killed = []

        def step_with_a_loss(self, v, *args):
            if args[6] == 3 and not killed:     # (the round)
                pid = c.run(os.getpid)[self.addresses[0]]
                killed.append(pid)
                threading.Thread(target=os.kill, args=(pid, signal.SIGKILL)).start()
            return step(self, v, *args)

        monkeypatch.setattr(fastdual.dask.DaskBlocks, "step", step_with_a_loss)
        model = fastdual.dask.train(Xd, yd, client=c, **kwargs)
    assert killed and model.recoveries_ >= 1
    assert [h["epoch"] for h in model.history_] == list(range(model.n_epochs_ + 1))
    np.testing.assert_array_equal(model.coef_, quiet.coef_)
    np.testing.assert_array_equal(model.dual_coef_, quiet.dual_coef_)
    assert model.gap_ == quiet.gap_ and model.converged_
    cert = fastdual.duality_gap(X, y, model.coef_, model.intercept_, loss="logistic",
                                alpha=0.01, dual_coef=model.dual_coef_)
    assert cert.gap == pytest.approx(model.gap_, rel=1e-9, abs=1e-15)


def test_labels_are_the_classes_of_all_blocks_not_of_each(client):
    """String labels sorted into blocks of one class each: the classes are found from all the
    blocks (as they are built), and the model equals the one trained on -1/+1 labels."""
    X, y = problem_for("logistic", n=120, d=5, seed=4, sparse=True)
    order = np.argsort(y, kind="stable")
    X, y = X[order], y[order]
    names = np.where(y > 0, "spam", "ham")
    rows = int(np.sum(y < 0))                      # the first block all "ham", the rest "spam"
    kwargs = dict(loss="logistic", alpha=0.05, tol=1e-6, local_epochs=2, random_state=0,
                  client=client)
    model = fastdual.dask.train(*as_dask(X, names, rows), **kwargs)
    signs = fastdual.dask.train(*as_dask(X, y, rows), **kwargs)
    assert list(model.classes_) == ["ham", "spam"]
    np.testing.assert_array_equal(model.coef_, signs.coef_)
    np.testing.assert_array_equal(model.predict(X[:3]), np.where(signs.predict(X[:3]) > 0,
                                                                  "spam", "ham"))


def test_the_workers_forget_the_blocks_after_training(client):
    X, y = problem_for("logistic", n=100, d=4, seed=5, sparse=False)
    fastdual.dask.train(*as_dask(X, y, 40), loss="logistic", alpha=0.05, client=client)

    def held():
        return sum(client.run(lambda: len(fastdual.dask._STATE)).values())

    for _ in range(100):          # (forgotten without the driver waiting for it)
        if held() == 0:
            break
        time.sleep(0.05)
    assert held() == 0


def test_bad_input_is_refused_by_name(client):
    X, y = problem_for("logistic", n=60, d=4, seed=3, sparse=False)
    Xd, yd = as_dask(X, y, 20)
    with pytest.raises(ValueError, match="chunked by rows only"):
        fastdual.dask.train(Xd.rechunk((20, 2)), yd, loss="logistic", client=client)
    with pytest.raises(ValueError, match="same row chunks"):
        fastdual.dask.train(Xd, yd.rechunk(30), loss="logistic", client=client)
    with pytest.raises(ValueError, match="needs rows"):
        fastdual.dask.train(da.from_array(X, chunks=((20, 0, 40), (4,))),
                            da.from_array(y, chunks=((20, 0, 40),)), loss="logistic",
                            client=client)
    with pytest.raises(ValueError, match=r"needs an l2 term \(l1_ratio < 1\)"):
        fastdual.dask.train(Xd, yd, loss="logistic", l1_ratio=1.0, client=client)
    with pytest.raises(TypeError, match="2-D dask array"):
        fastdual.dask.train(X, yd, loss="logistic", client=client)
    with pytest.raises(ValueError, match="two classes"):
        fastdual.dask.train(Xd, da.zeros(60, chunks=20), loss="logistic", client=client)


def test_the_cluster_page_example_runs_as_written(tmp_path):
    """docs/cluster.md's example, in a fresh interpreter (worker processes, as written)."""
    import pathlib
    import re
    import subprocess
    import sys
    page = pathlib.Path(__file__).resolve().parents[1] / "docs" / "cluster.md"
    code = re.search(r"```python\n(.*?)```", page.read_text(), re.S).group(1)
    script = tmp_path / "example.py"
    script.write_text(code)
    # (the fastdual these tests import: the installed package in CI, the source tree here)
    import os
    env = {**os.environ, "PYTHONPATH": str(pathlib.Path(fastdual.__file__).parents[1])}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=600, cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    rounds, gap = re.search(r"(\d+) rounds, relative gap (\S+)", out.stdout).groups()
    assert int(rounds) > 0 and float(gap) <= 1e-4


def blocks_of(X, y, rows):
    return [(X[k:k + rows], y[k:k + rows]) for k in range(0, X.shape[0], rows)]


@pytest.mark.parametrize("loss, params", [("smooth_hinge", {"gamma": 0.3}),
                                          ("epsilon_insensitive", {"epsilon": 0.4}),
                                          ("logistic", {})])
def test_weights_class_weights_and_loss_parameters_are_trains(loss, params):
    """The objective of train with the same sample_weight, class_weight and loss parameters:
    the certificate of the blocks' model is duality_gap's on the gathered data, and its primal
    is within tol of train's optimum."""
    X, y = problem_for(loss, n=180, d=5, seed=12)
    weights = np.random.default_rng(0).uniform(0.2, 3.0, 180)
    objective = dict(loss=loss, C=0.2, sample_weight=weights, **params)
    if loss != "epsilon_insensitive":
        objective["class_weight"] = {1.0: 2.5}
    local = dict(objective, sample_weight=[weights[k:k + 60] for k in range(0, 180, 60)])
    tol = 1e-6
    model = fastdual.dask.train_local(blocks_of(X, y, 60), tol=tol, local_epochs=3,
                                      max_epochs=20_000, **local)
    reference = fastdual.train(X, y, solver="sdca", tol=1e-12, max_epochs=100_000, **objective)
    assert model.converged_ and model.loss_params == reference.loss_params
    assert model.alpha == pytest.approx(reference.alpha, rel=1e-14)
    assert reference.dual_ <= model.primal_ <= reference.primal_ + 1.01 * tol * abs(model.primal_)
    weighted = weights * (np.where(y > 0, 2.5, 1.0) if "class_weight" in objective else 1.0)
    cert = fastdual.duality_gap(X, y, model.coef_, model.intercept_, loss=loss,
                                alpha=model.alpha, sample_weight=weighted,
                                dual_coef=model.dual_coef_, **params)
    assert (cert.primal, cert.dual) == pytest.approx((model.primal_, model.dual_), rel=1e-12)


def test_sample_weights_on_a_cluster_are_the_blocks_in_one_process(client):
    X, y = problem_for("logistic", n=120, d=4, seed=13, sparse=True)
    weights = np.random.default_rng(1).uniform(0.5, 2.0, 120)
    kwargs = dict(loss="logistic", alpha=0.02, tol=1e-6, local_epochs=2, random_state=1)
    Xd, yd = as_dask(X, y, 40)
    model = fastdual.dask.train(Xd, yd, sample_weight=da.from_array(weights, chunks=40),
                                client=client, **kwargs)
    local = fastdual.dask.train_local(blocks_of(X, y, 40), **kwargs,
                                      sample_weight=[weights[k:k + 40] for k in (0, 40, 80)])
    np.testing.assert_array_equal(model.coef_, local.coef_)
    assert model.gap_ == local.gap_


def test_the_loop_gives_dask_its_callback_history_verbose_and_interrupt(capsys):
    X, y = problem_for("smooth_hinge", n=120, d=4, seed=14)
    seen = []
    model = fastdual.dask.train_local(blocks_of(X, y, 40), alpha=1e-3, tol=1e-12,
                                      max_epochs=50, verbose=1, local_epochs=2,
                                      callback=lambda info: seen.append(info) or len(seen) < 4)
    assert len(seen) == 4 and model.history_ == seen
    assert [h["epoch"] for h in seen] == [0, 2, 4, 6] and model.n_epochs_ == 6
    assert all(h["seconds"] >= 0 for h in seen)
    assert capsys.readouterr().out.splitlines()[0].split()[:2] == ["epoch", "primal"]

    def interrupt(info):
        if info["epoch"] >= 4:
            raise KeyboardInterrupt

    with pytest.raises(fastdual.TrainingInterrupted) as caught:
        fastdual.dask.train_local(blocks_of(X, y, 40), alpha=1e-3, tol=1e-12, max_epochs=50,
                                  callback=interrupt)
    interrupted = caught.value.model
    cert = fastdual.duality_gap(X, y, interrupted.coef_, interrupted.intercept_, alpha=1e-3,
                                dual_coef=interrupted.dual_coef_)
    assert (cert.primal, cert.dual) == pytest.approx((interrupted.primal_, interrupted.dual_),
                                                     rel=1e-12)


def test_plot_convergence_by_seconds_on_a_dask_model():
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    X, y = problem_for("logistic", n=80, d=3, seed=15)
    model = fastdual.dask.train_local(blocks_of(X, y, 40), loss="logistic", alpha=0.01)
    fastdual.plot_convergence(model, x="seconds")


def test_bad_targets_and_unsupported_objectives_are_refused_by_name():
    X, y = problem_for("squared", n=60, d=3, seed=16)
    y[7] = np.nan
    with pytest.raises(ValueError, match="y contains NaN"):
        fastdual.dask.train_local(blocks_of(X, y, 30), loss="squared")
    X, y = problem_for("logistic", n=60, d=3, seed=16)
    with pytest.raises(ValueError, match="regularize_intercept=True"):
        fastdual.dask.train_local(blocks_of(X, y, 30), loss="logistic",
                                  regularize_intercept=False)
    with pytest.raises(ValueError, match="unknown parameter"):
        fastdual.dask.train_local(blocks_of(X, y, 30), loss="logistic", gamma=2.0)
    with pytest.warns(DeprecationWarning, match="max_rounds is deprecated"):
        old = fastdual.dask.train_local(blocks_of(X, y, 30), loss="logistic", max_rounds=5,
                                        local_epochs=2, tol=0.0)
    assert old.n_epochs_ == 10


def binary_rows(n, d, seed):
    """Rows of 0/1 features scaled to unit norm (as a9a's): rows of different blocks share
    directions, the case where CoCoA+'s blocks trade duals slowly."""
    rng = np.random.default_rng(seed)
    X = (rng.random((n, d)) < 0.4).astype(float)
    X[X.sum(1) == 0, 0] = 1.0
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    scores = X @ rng.normal(size=d) + 0.3 * rng.normal(size=n)
    return X, np.where(scores > np.median(scores), 1.0, -1.0)


def test_smooth_hinge_reaches_a_tight_gap_in_few_rounds_with_the_margin_mix(monkeypatch):
    """Without the mix (MIX_STEPS = [0], CoCoA+'s rounds alone) the dual lags: 300 rounds
    leave the relative gap above 1e-6; with it 150 rounds reach it, and the optimum is
    train's."""
    X, y = binary_rows(600, 12, 0)
    parts = blocks_of(X, y, 300)
    kwargs = dict(loss="smooth_hinge", alpha=1e-3, tol=1e-6, local_epochs=4, random_state=0)
    model = fastdual.dask.train_local(parts, max_epochs=4 * 150, **kwargs)
    assert model.converged_ and model.relative_gap_ <= 1e-6
    assert any(record["mix"] > 0 for record in model.rounds_)
    reference = fastdual.train(X, y, loss="smooth_hinge", alpha=1e-3, solver="sdca",
                               tol=1e-12, max_epochs=100_000)
    assert reference.dual_ <= model.primal_ <= reference.primal_ * (1 + 1.01e-6)
    monkeypatch.setattr(fastdual.dask, "MIX_STEPS", np.array([0.0]))
    with pytest.warns(fastdual.ConvergenceWarning):
        plain = fastdual.dask.train_local(parts, max_epochs=4 * 300, **kwargs)
    assert not plain.converged_ and plain.relative_gap_ > 1e-6
    assert all(record["mix"] == 0 for record in plain.rounds_)


@pytest.mark.parametrize("loss", ["logistic", "smooth_hinge", "squared"])
def test_the_mix_never_lowers_the_dual(loss):
    """Each round's certified dual is at least the one before (CoCoA+'s step with sigma' = K is
    an ascent step, and the mix takes the best of a set of steps that includes 0)."""
    X, y = (binary_rows(300, 8, 1) if loss != "squared"
            else problem_for("squared", n=300, d=8, seed=1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
        model = fastdual.dask.train_local(blocks_of(X, y, 100), loss=loss, alpha=1e-3,
                                          tol=1e-12, local_epochs=2, max_epochs=2 * 40,
                                          random_state=1)
    duals = [h["dual"] for h in model.history_]
    assert all(b >= a - 1e-12 * abs(a) for a, b in zip(duals, duals[1:]))
    assert any(record["mix"] > 0 for record in model.rounds_)


def test_auto_local_epochs_reach_train_s_optimum_on_a_cluster(client):
    """The default local_epochs="auto" on the cluster: the certified optimum of single-machine
    training (coefficients to 1e-8), its certificate the gap function's on the gathered data,
    and every round's local work recorded in rounds_."""
    X, y = problem_for("logistic", n=300, d=6, seed=21, sparse=True)
    Xd, yd = as_dask(X, y, 150)
    model = fastdual.dask.train(Xd, yd, loss="logistic", alpha=0.01, tol=1e-12,
                                max_epochs=5000, random_state=0, client=client)
    reference = fastdual.train(X, y, loss="logistic", alpha=0.01, solver="newton", tol=1e-14)
    assert model.converged_
    assert abs(model.primal_ - reference.primal_) <= 1e-8 * reference.primal_
    # (P is l2-strongly convex: ||w - w*||^2 <= 2 (P(w) - P*) / l2 for both models)
    bound = np.sqrt(2 * (model.gap_ + reference.gap_) / 0.01)
    assert np.linalg.norm(np.append(model.coef_ - reference.coef_,
                                    model.intercept_ - reference.intercept_)) <= bound
    cert = fastdual.duality_gap(X, y, model.coef_, model.intercept_, loss="logistic",
                                alpha=0.01, dual_coef=model.dual_coef_)
    assert (cert.primal, cert.dual) == pytest.approx((model.primal_, model.dual_), rel=1e-12)
    rounds = model.rounds_
    assert len(rounds) == len(model.history_) >= 2       # (round r certifies history_[r])
    assert all(1 <= r["local_epochs"] <= fastdual.dask.MAX_AUTO_EPOCHS for r in rounds)
    # the passes behind each certified state: the local work of the rounds before it (the
    # last round's work went to a state the model does not hold)
    assert [h["epoch"] for h in model.history_] == list(
        np.cumsum([0] + [r["local_epochs"] for r in rounds[:-1]]))
    assert all(r["wall_seconds"] >= r["work_seconds"] > 0 for r in rounds)


class SlowBlocks(fastdual.dask.LocalBlocks):
    """Blocks in this process whose rounds take a fixed extra wait, as a cluster's latency."""
    has_latency = True
    wait = 0.05

    def step(self, v, *args):
        time.sleep(self.wait)
        return super().step(v, *args)


def test_auto_sizes_the_local_work_to_the_latency(monkeypatch):
    """With a 50 ms latency a round runs the whole epochs that fit in LATENCY_MULTIPLE times it
    (one epoch here takes far less), within the bound; an int local_epochs stays as given."""
    monkeypatch.setattr(fastdual.dask, "LocalBlocks", SlowBlocks)
    X, y = problem_for("logistic", n=2000, d=20, seed=22, sparse=False)
    parts = blocks_of(X, y, 1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
        model = fastdual.dask.train_local(parts, loss="logistic", alpha=1e-4, tol=1e-12,
                                          max_epochs=60, random_state=0)
    rounds = model.rounds_
    assert rounds[0]["local_epochs"] == 1 and rounds[0]["latency_seconds"] >= 0.045
    for before, after in zip(rounds, rounds[1:]):
        per_epoch = before["local_seconds"] / before["local_epochs"]
        fits = int(np.floor(fastdual.dask.LATENCY_MULTIPLE * before["latency_seconds"]
                            / per_epoch))
        assert after["local_epochs"] == min(max(fits, 1), fastdual.dask.MAX_AUTO_EPOCHS)
    assert max(r["local_epochs"] for r in rounds) > 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
        fixed = fastdual.dask.train_local(parts, loss="logistic", alpha=1e-4, tol=1e-12,
                                          max_epochs=30, local_epochs=3, random_state=0)
    assert {r["local_epochs"] for r in fixed.rounds_} == {3}


@pytest.mark.parametrize("latency, per_epoch, epochs", [
    (0.050, 0.004, 6),          # 25 ms of work fit 6 epochs of 4 ms (6.25)
    (0.008, 0.0035, 1),         # 4 ms: one epoch of 3.5 ms
    (0.050, 0.045, 1),          # less than one epoch fits: still one
    (0.0, 0.001, 1),            # no latency (blocks in this process)
    (1.0, 0.001, 16),           # 500 epochs fit: the bound
    (0.05, 0.0, 1)])            # an epoch too fast to time
def test_auto_epochs_fit_half_the_latency(latency, per_epoch, epochs):
    assert fastdual.dask.LATENCY_MULTIPLE == 0.5 and fastdual.dask.MAX_AUTO_EPOCHS == 16
    assert fastdual.dask.auto_epochs(latency, per_epoch) == epochs


def test_local_epochs_is_checked_by_name():
    X, y = problem_for("logistic", n=60, d=3, seed=23)
    for bad in ("fast", 0, 1.5):
        with pytest.raises((ValueError, TypeError), match="local_epochs"):
            fastdual.dask.train_local(blocks_of(X, y, 30), loss="logistic", local_epochs=bad)


class SlowCall:
    """An actor call that times out `waits` times before it has its result (or never)."""

    def __init__(self, waits):
        self.waits, self.polls = waits, 0

    def result(self, timeout=None):
        self.polls += 1
        if self.waits is None or self.polls <= self.waits:
            raise TimeoutError
        return "result"

    def done(self):
        return False


class FixedClient:
    def __init__(self, workers):
        self.workers = workers

    def scheduler_info(self):
        return {"workers": {address: {} for address in self.workers}}


def test_a_round_waits_for_a_live_worker_and_not_for_a_lost_one(monkeypatch):
    """A round's call to a block's actor is waited for while the block's worker is in the
    cluster, and given up (LostWorker: the round fails and runs again) once it is not, rather
    than waiting for Dask's connect timeout."""
    blocks = object.__new__(fastdual.dask.DaskBlocks)
    blocks.client = FixedClient(["tcp://alive"])
    blocks.addresses = ["tcp://alive", "tcp://gone"]
    blocks.actors = {"tcp://alive": "actor 0", "tcp://gone": "actor 1"}
    call = SlowCall(waits=3)
    assert blocks._wait(call, 0) == "result" and call.polls == 4
    assert blocks.actors == {"tcp://alive": "actor 0", "tcp://gone": "actor 1"}
    with pytest.raises(fastdual.dask.LostWorker, match="tcp://gone holding block 1"):
        blocks._wait(SlowCall(waits=None), 1)
    assert blocks.actors == {}             # (placed again after the blocks are restored)
    # an actor being placed on a worker that left: given up too, not waited for
    waits = []

    def never(futures, timeout=None):
        waits.append(timeout)
        raise TimeoutError

    monkeypatch.setattr(distributed, "wait", never)
    with pytest.raises(fastdual.dask.LostWorker, match="tcp://gone left"):
        blocks._take_actors({"tcp://gone": object()})
    assert waits == [fastdual.dask.ACTOR_POLL_SECONDS]


def test_the_blocks_of_one_worker_step_in_parallel_on_its_threads(client, monkeypatch):
    """One worker with two threads holding two blocks: each round's call runs the two blocks'
    steps at the same time (an actor's own calls would run them one after the other), and the
    model is the one of the same rounds in one process. The training's client is not the
    default one (another is open): the blocks' actors are its own."""
    X, y = problem_for("logistic", n=200, d=5, seed=9, sparse=True)
    spans = []
    step = fastdual.dask.Block.step

    def slow_step(self, *args):
        start = time.perf_counter()
        time.sleep(0.1)
        result = step(self, *args)
        spans.append((start, time.perf_counter()))
        return result

    monkeypatch.setattr(fastdual.dask.Block, "step", slow_step)
    kwargs = dict(loss="logistic", alpha=0.01, tol=1e-3, local_epochs=1, random_state=0)
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                      dashboard_address=FREE_PORT) as cluster, \
            Client(cluster, set_as_default=False) as c:
        model = fastdual.dask.train(*as_dask(X, y, 100), client=c, **kwargs)
    pairs = [spans[i:i + 2] for i in range(0, len(spans), 2)]
    assert len(pairs) == len(model.rounds_) >= 2
    assert all(max(a[0], b[0]) < min(a[1], b[1]) for a, b in pairs)
    local = fastdual.dask.train_local(blocks_of(X, y, 100), **kwargs)
    np.testing.assert_array_equal(model.coef_, local.coef_)
    np.testing.assert_array_equal(model.dual_coef_, local.dual_coef_)


# -- gather: small data trained in this process --------------------------------------------------

def stored_bytes(X, *vectors):
    """X's values, indices and row pointers (or its array) and the vectors, counted here."""
    sizes = [X.data.nbytes + X.indices.nbytes + X.indptr.nbytes] if hasattr(X, "indptr") \
        else [X.nbytes]
    return sum(sizes) + sum(v.nbytes for v in vectors)


@pytest.mark.parametrize("loss, sparse, dtype, options", [
    ("logistic", True, np.float64, {}),
    ("squared_hinge", True, np.float32, {"class_weight": {1.0: 3.0}, "intercept_scaling": 2.0}),
    ("smooth_hinge", False, np.float64, {"l1_ratio": 0.4, "fit_intercept": False}),
    ("squared", False, np.float32, {"C": 0.5})])
def test_small_data_are_trained_here_as_train_trains_them(client, monkeypatch, loss, sparse,
                                                          dtype, options):
    monkeypatch.setattr(fastdual.dask, "GATHER_BYTES", DEFAULT_GATHER_BYTES)
    X, y = problem_for(loss, n=150, d=6, seed=21, sparse=sparse)
    X = X.astype(dtype)
    weights = np.random.default_rng(2).uniform(0.5, 2.0, 150)
    Xd, yd = as_dask(X, y, 60)
    kwargs = dict(loss=loss, tol=1e-6, random_state=4, **options)
    if "C" not in options:
        kwargs["alpha"] = 0.01
    model = fastdual.dask.train(Xd, yd, sample_weight=da.from_array(weights, chunks=60),
                                client=client, **kwargs)
    regularized = {"regularize_intercept": True}
    reference = fastdual.train(X, y, sample_weight=weights, **kwargs, **regularized)
    assert model.rounds_ == [] and model.recoveries_ == 0 and model.solver == reference.solver
    np.testing.assert_array_equal(model.coef_, reference.coef_)
    np.testing.assert_array_equal(model.dual_coef_, reference.dual_coef_)
    assert model.intercept_ == reference.intercept_
    assert (model.primal_, model.dual_, model.gap_) == \
        (reference.primal_, reference.dual_, reference.gap_)
    assert model.converged_ and model.relative_gap_ <= 1e-6
    # The cluster's rounds on the same problem reach the same optimum.
    monkeypatch.setattr(fastdual.dask, "GATHER_BYTES", -1)
    rounds = fastdual.dask.train(Xd, yd, sample_weight=da.from_array(weights, chunks=60),
                                 client=client, max_epochs=20_000, **kwargs)
    assert rounds.solver == "cocoa+" and len(rounds.rounds_) > 0
    assert model.dual_ <= rounds.primal_ and rounds.dual_ <= model.primal_


def test_gather_auto_decides_by_the_bytes_the_chunks_take(client, monkeypatch):
    X, y = problem_for("logistic", n=200, d=30, seed=22, sparse=True)
    Xd, yd = as_dask(X, y, 70)
    size = stored_bytes(X, y)
    kwargs = dict(loss="logistic", alpha=0.01, tol=1e-4, random_state=0, client=client)
    for limit, here in ((int(1.05 * size), True), (int(0.95 * size), False)):
        monkeypatch.setattr(fastdual.dask, "GATHER_BYTES", limit)
        model = fastdual.dask.train(Xd, yd, **kwargs)
        assert (model.rounds_ == []) == here, (limit, size)
    # gather=True and False whatever the size (numpy's booleans as Python's).
    assert fastdual.dask.train(Xd, yd, gather=True, **kwargs).rounds_ == []
    assert fastdual.dask.train(Xd, yd, gather=np.True_, **kwargs).rounds_ == []
    monkeypatch.setattr(fastdual.dask, "GATHER_BYTES", 10 * size)
    assert fastdual.dask.train(Xd, yd, gather=False, **kwargs).solver == "cocoa+"


def test_gathered_training_refuses_what_the_cluster_refuses_and_has_the_loop(client, capsys):
    X, y = problem_for("logistic", n=60, d=4, seed=3, sparse=False)
    Xd, yd = as_dask(X, y, 20)
    here = dict(client=client, gather=True)
    with pytest.raises(ValueError, match=r"needs an l2 term \(l1_ratio < 1\)"):
        fastdual.dask.train(Xd, yd, loss="logistic", l1_ratio=1.0, **here)
    three = da.from_array(np.arange(60) % 3, chunks=20)
    with pytest.raises(ValueError, match="needs two classes in y, got 3"):
        fastdual.dask.train(Xd, three, loss="logistic", **here)
    for bad in ("yes", 1, None):
        with pytest.raises(ValueError, match="gather must be 'auto', True or False"):
            fastdual.dask.train(Xd, yd, loss="logistic", client=client, gather=bad)
    seen = []
    model = fastdual.dask.train(Xd, yd, loss="hinge", alpha=1e-3, tol=1e-12, max_epochs=400,
                                verbose=1, callback=lambda info: seen.append(info) or
                                len(seen) < 3, **here)
    assert len(seen) == 3 and model.history_ == seen
    assert "fetched to this process" in capsys.readouterr().out


class ClientOf:
    """What _fetch_directly reads of a client: its setting and its workers' addresses."""

    def __init__(self, direct, *addresses):
        self.direct_to_workers = direct
        self.addresses = addresses

    def scheduler_info(self):
        return {"workers": {address: {} for address in self.addresses}}


def test_chunks_are_fetched_from_the_workers_directly_only_on_this_machine(client):
    fetch = fastdual.dask._fetch_directly
    assert fetch(client)                                  # (in-process workers)
    assert fetch(ClientOf(None, "tcp://127.0.0.1:4001", "tcp://127.0.0.1:4002"))
    assert fetch(ClientOf(None, "tcp://[::1]:4001", "tcp://localhost:4002"))
    assert not fetch(ClientOf(None, "tcp://127.0.0.1:4001", "tcp://10.1.2.3:4002"))
    assert not fetch(ClientOf(None))
    assert not fetch(ClientOf(False, "tcp://127.0.0.1:4001"))    # the client's own setting
    assert fetch(ClientOf(True, "tcp://10.1.2.3:4002"))
