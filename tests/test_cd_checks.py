"""Which certificates cd's runs try (docs/math.md 4k, "Which checks are tried"): with pure l1,
the "auto" schedule skips a check while the last score pass's largest violation is above
CHECK_VIOLATION * tol * l1 (cd's may_reach), where the margin duals' scaling to feasibility
keeps the gap far above tol; an explicit check_every and the last epoch are checked as
always."""
import math
import warnings

import pytest

import fastdual
from fastdual import _loop
from fastdual._problem import build_problem
from fastdual.solvers import cd as cd_module
from test_cd_raw_text import raw_text


@pytest.fixture(scope="module")
def data():
    return raw_text(n=1000, d=2000, seed=1)


def driver(X, y, **objective):
    objective = dict(dict(alpha=None, C=1.0, l1_ratio=1.0, fit_intercept=True,
                          intercept_scaling=1.0), **objective)
    problem = build_problem(X, y, loss="logistic", sample_weight=None, loss_params={},
                            **objective)
    return problem, cd_module.CD(problem, dict(working_set=True, anderson=True, newton=True,
                                               screening=True), seed=0)


def test_may_reach_reads_the_last_violation_for_pure_l1_only(data):
    problem, solver = driver(*data)
    assert not solver.may_reach(1e-4)          # before any score pass: nothing measured
    solver.epoch()
    limit = cd_module.CHECK_VIOLATION * 1e-4 * problem.l1
    assert solver.largest > 0.0
    assert solver.may_reach(1e-4) == (solver.largest <= limit)
    solver.largest = 0.99 * limit
    assert solver.may_reach(1e-4)
    solver.largest = 1.01 * limit
    assert not solver.may_reach(1e-4) and solver.may_reach(1.02e-4)
    # the elastic net and l2: no scaling to feasibility, always worth a check
    _, mixed = driver(*data, l1_ratio=0.5)
    mixed.largest = math.inf
    assert mixed.may_reach(1e-4)


def test_the_schedule_asks_may_reach_for_auto_only():
    class Driver:
        def __init__(self, answer):
            self.answer, self.asked = answer, []

        def may_reach(self, tol):
            self.asked.append(tol)
            return self.answer

    auto = _loop.CheckSchedule("auto", 1e-4, 100)
    assert auto.affords(Driver(True)) and not auto.affords(Driver(False))
    no, every = Driver(False), _loop.CheckSchedule(3, 1e-4, 100)
    assert every.affords(no) and no.asked == []


@pytest.mark.parametrize("loss, tol", [("logistic", 1e-6), ("squared_hinge", 1e-4)])
def test_checks_are_tried_below_the_threshold_only(data, loss, tol, monkeypatch):
    """Every check of a pure-l1 run but the last epoch's comes after a score pass whose largest
    violation was within the threshold; against the threshold disabled, fewer checks and the
    same certified optimum."""
    X, y = data
    runs, ratio = {}, cd_module.CHECK_VIOLATION
    point = cd_module.CD.point
    seen = []
    monkeypatch.setattr(cd_module.CD, "point",
                        lambda self: seen.append(self.largest) or point(self))
    for name, threshold in (("skipping", ratio), ("all", math.inf)):
        monkeypatch.setattr(cd_module, "CHECK_VIOLATION", threshold)
        seen.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
            model = fastdual.train(X, y, loss=loss, C=1.0, l1_ratio=1.0, solver="cd",
                                   fit_intercept=True, tol=tol, max_epochs=20000)
        runs[name] = (model, list(seen))
    skipping, seen_skipping = runs["skipping"]
    everything, seen_all = runs["all"]
    assert skipping.converged_ and everything.converged_
    problem, _ = driver(X, y)
    limit = ratio * tol * problem.l1
    assert all(largest <= limit for largest in seen_skipping)
    assert any(largest > limit for largest in seen_all)     # checks the threshold skips
    assert len(seen_skipping) < len(seen_all)
    assert abs(skipping.primal_ - everything.primal_) <= skipping.gap_ + everything.gap_


@pytest.mark.parametrize("working_set", [True, False])
def test_pure_l1_runs_are_checked_as_they_converge(working_set, monkeypatch):
    """Both epoch kinds measure the violation may_reach reads (the score pass; without working
    sets, the sweep itself): a pure-l1 run stops at the pass it would stop at with every check
    tried, not at max_epochs (before the sweep's violation was read, the run without working
    sets was checked at its last epoch only: 3,000 passes here against 1,308)."""
    X, y = raw_text(n=300, d=150, seed=3)
    runs = {}
    for name, threshold in (("skipping", cd_module.CHECK_VIOLATION), ("all", math.inf)):
        monkeypatch.setattr(cd_module, "CHECK_VIOLATION", threshold)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
            runs[name] = fastdual.train(X, y, loss="logistic", C=0.1, l1_ratio=1.0,
                                        solver="cd", working_set=working_set, tol=1e-4,
                                        max_epochs=3000)
    assert runs["skipping"].converged_ and runs["all"].converged_
    assert runs["skipping"].n_epochs_ == runs["all"].n_epochs_ < 3000
    assert len(runs["skipping"].history_) <= len(runs["all"].history_)
