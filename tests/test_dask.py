"""fastdual.dask: CoCoA+ on a LocalCluster (two workers, threads), against single-machine
training, its global certificate against the shared gap function on the gathered data."""
import numpy as np
import pytest

import dask.array as da
from distributed import Client, LocalCluster

import fastdual
import fastdual.dask
from conftest import problem_for


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster) as c:
        yield c


def as_dask(X, y, rows):
    return da.from_array(X, chunks=(rows, -1), asarray=False), da.from_array(y, chunks=rows)


@pytest.mark.parametrize("loss, sparse", [("logistic", True), ("smooth_hinge", False),
                                          ("squared", True), ("hinge", False)])
def test_equals_single_machine_and_certifies_like_the_gap_function(client, loss, sparse):
    X, y = problem_for(loss, n=300, d=8, seed=1, sparse=sparse)
    Xd, yd = as_dask(X, y, 110)                 # 3 blocks, the last one short
    alpha, tol = 0.05, 1e-5
    model = fastdual.dask.train(Xd, yd, loss=loss, alpha=alpha, tol=tol, max_rounds=500,
                                local_epochs=5, random_state=0, client=client)
    assert model.converged_ and model.relative_gap_ <= tol
    reference = fastdual.train(X, y, loss=loss, alpha=alpha, solver="sdca", tol=1e-12,
                               max_epochs=100_000)
    assert reference.primal_ <= model.primal_ <= reference.primal_ * (1 + 1.01 * tol)
    cert = fastdual.duality_gap(X, y, model.coef_, model.intercept_, loss=loss, alpha=alpha,
                                dual_coef=model.dual_coef_)
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


def test_blocks_travel_between_processes():
    """A block (rows, duals and the loss) pickles and unpickles to the same state, as Dask
    does when it moves one between worker processes."""
    import pickle
    X, y = problem_for("hinge", n=40, d=3, seed=4, sparse=True)
    block = fastdual.dask.Block(X, y, "hinge", {}, np.unique(y), 1.0, 0)
    block.duals[:] = np.linspace(0, 1, 40)
    again = pickle.loads(pickle.dumps(block))
    np.testing.assert_array_equal(again.duals, block.duals)
    w = np.linspace(-1, 1, 4)
    assert again.certificate(w, 0.1, 40)[:2] == block.certificate(w, 0.1, 40)[:2]


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
    with pytest.raises(ValueError, match="l1_ratio=0"):
        fastdual.dask.train(Xd, yd, loss="logistic", l1_ratio=0.5, client=client)
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
    assert float(gap) <= 1e-4
