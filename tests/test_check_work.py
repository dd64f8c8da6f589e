"""The adaptive schedule waits for a pass's worth of work before a certificate (the driver's
check_work()): SDCA's shrunk epochs visit few rows while a certificate visits all of them, so
checks come only after the epochs since the last one visited n rows; an explicit check_every
is kept as given."""
import numpy as np
import pytest

import fastdual
from fastdual.solvers import sdca
from conftest import problem_for


def visits(monkeypatch):
    """Record the rows each SDCA epoch visits (its active rows) and the epochs checked."""
    record = []
    original = sdca.SDCA._sdca_epoch

    def epoch(self):
        record.append(self.n_active)
        return original(self)

    monkeypatch.setattr(sdca.SDCA, "_sdca_epoch", epoch)
    return record


@pytest.mark.parametrize("loss, alpha, seed", [("hinge", 1e-1, 0), ("squared_hinge", 1e-3, 2)])
def test_shrunk_epochs_are_checked_after_n_rows(monkeypatch, loss, alpha, seed):
    # (cases where the schedule alone checks 8-9 times after fewer than n rows)
    X, y = problem_for(loss, n=400, d=30, seed=seed)
    rows = visits(monkeypatch)
    checks = []
    model = fastdual.train(X, y, loss=loss, alpha=alpha, solver="sdca", tol=1e-6,
                           max_epochs=5000, random_state=0,
                           callback=lambda info: checks.append(info["epoch"]))
    assert model.converged_
    n = X.shape[0]
    assert min(rows) < n                       # shrinking skipped rows
    previous = 0
    for epoch in checks:
        assert sum(rows[previous:epoch]) >= n
        previous = epoch


@pytest.mark.filterwarnings("ignore::fastdual.ConvergenceWarning")     # 40 epochs
def test_an_explicit_check_every_is_kept(monkeypatch):
    X, y = problem_for("hinge", n=400, d=30, seed=3)
    rows = visits(monkeypatch)
    checks = []
    fastdual.train(X, y, loss="hinge", alpha=1e-2, solver="sdca", tol=1e-10, max_epochs=40,
                   random_state=0, check_every=1,
                   callback=lambda info: checks.append(info["epoch"]))
    assert min(rows) < X.shape[0]
    assert checks == list(range(1, len(rows) + 1))
