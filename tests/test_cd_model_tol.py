"""solver="cd": how exactly each proximal Newton model is minimised (docs/math.md 4k, "How
exactly each model is minimised"). For the losses without the capability piecewise_quadratic
(logistic), the model's tolerance is the looser of MODEL_TOL times the working set's and
model_eps times the first epoch's largest violation; model_eps falls by MODEL_EPS_FACTOR after
a full step of the line search (or none) and rises by as much (at most to MODEL_EPS_START)
after a shortened one."""
import warnings

import numpy as np
import pytest

import fastdual
from fastdual._problem import build_problem
from fastdual.solvers import cd as cd_module
from test_cd_raw_text import raw_text


def make_driver(X, y, loss="logistic", newton=True):
    problem = build_problem(X, y, loss=loss, alpha=None, C=1.0, l1_ratio=1.0,
                            fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                            loss_params={})
    options = dict(working_set=True, anderson=True, newton=newton, screening=False)
    return cd_module.CD(problem, options, seed=0)


@pytest.fixture(scope="module")
def data():
    return raw_text(n=1000, d=2000, seed=1)


@pytest.mark.parametrize("loss, newton, adaptive", [
    ("logistic", True, True),
    ("logistic", False, False),         # no model: the sweeps with the global bound
    ("squared_hinge", True, False),     # piecewise quadratic: the model is the loss's own on
    ("smooth_hinge", True, False),      # the current margin set
    ("squared_epsilon_insensitive", True, False),   # (quadratic between its kinks too)
])
def test_which_problems_adapt_it(data, loss, newton, adaptive):
    assert make_driver(*data, loss=loss, newton=newton).adaptive_model is adaptive


def test_the_tolerance_is_the_looser_of_the_two(data):
    solver = make_driver(*data)
    solver.first_violation = 2.0
    solver.model_eps = 1.0
    assert solver._model_tol(1.0) == pytest.approx(2.0)
    solver.model_eps = 0.01
    assert solver._model_tol(1.0) == pytest.approx(cd_module.MODEL_TOL)
    assert solver._model_tol(0.01) == pytest.approx(0.02)
    fixed = make_driver(*data, loss="squared_hinge")
    fixed.first_violation, fixed.model_eps = 2.0, 1.0
    assert fixed._model_tol(1.0) == pytest.approx(cd_module.MODEL_TOL)


def test_full_steps_tighten_it_and_shortened_ones_loosen_it(data):
    solver = make_driver(*data)
    factor, start = cd_module.MODEL_EPS_FACTOR, cd_module.MODEL_EPS_START
    assert solver.model_eps == start and 0.0 < factor < 1.0
    # (the factors are powers of 2: every value below is exact, compared with ==)
    expected = start
    for t in (1.0, 1.0, 1.0, 0.5, 1.0, 0.25, 0.125, 0.5, 0.5, 1.0, 0.0, 0.0):
        solver._adapt_model_tol(t)
        # a full step, or none (the model's decrease at rounding), tightens; a shortened
        # step loosens, at most to the start
        expected = expected * factor if t in (1.0, 0.0) else min(expected / factor, start)
        assert solver.model_eps == expected
    # (the sequence reached the cap: a shortened step never loosens beyond the first models)
    assert expected == start * factor ** 3
    # A long run of full steps stops at MODEL_EPS_LEAST instead of underflowing to 0, from
    # where a shortened step could not loosen it again.
    for _ in range(2000):
        solver._adapt_model_tol(1.0)
    assert solver.model_eps == cd_module.MODEL_EPS_LEAST > 0.0
    solver._adapt_model_tol(0.5)
    assert solver.model_eps == pytest.approx(cd_module.MODEL_EPS_LEAST / factor, rel=1e-12,
                                             abs=0.0)


def test_the_line_search_drives_it(data, monkeypatch):
    """Through a run: each column-sweep model's line search moves model_eps by the rule (the
    Gram path's models are minimised to MODEL_TOL and leave it alone), and both full and
    shortened steps occur on this data."""
    X, y = data
    seen = []
    search = cd_module.CD._line_search

    def traced(self, ws, target, free_last, before):
        reads, t = search(self, ws, target, free_last, before)
        seen.append((self.model_eps, t, self._gram_buffers(ws) is None))
        return reads, t

    adapt = cd_module.CD._adapt_model_tol
    after = []

    def traced_adapt(self, t):
        adapt(self, t)
        after.append(self.model_eps)

    monkeypatch.setattr(cd_module.CD, "_line_search", traced)
    monkeypatch.setattr(cd_module.CD, "_adapt_model_tol", traced_adapt)
    model = fastdual.train(X, y, loss="logistic", C=1.0, l1_ratio=1.0, solver="cd",
                           fit_intercept=True, tol=1e-6, max_epochs=5000)
    assert model.converged_
    swept = [(eps, t) for eps, t, columns in seen if columns]
    assert len(after) == len(swept) > 0
    factor, start = cd_module.MODEL_EPS_FACTOR, cd_module.MODEL_EPS_START
    for (eps, t), new in zip(swept, after):
        assert new == pytest.approx(max(eps * factor, cd_module.MODEL_EPS_LEAST)
                                    if t in (1.0, 0.0) else min(eps / factor, start),
                                    rel=1e-12, abs=0.0)
    assert any(t == 1.0 for _, t in swept) and any(t < 1.0 for _, t in swept)


def adaptive_and_fixed(X, y, C, tol, monkeypatch):
    """The pure-l1 logistic model trained with the adaptive tolerance, and with models always
    minimised to MODEL_TOL (MODEL_EPS_START = 0: the looser tolerance never applies); both
    certified, at the same optimum within their gaps."""
    models = {}
    for name, start in (("adaptive", cd_module.MODEL_EPS_START), ("fixed", 0.0)):
        monkeypatch.setattr(cd_module, "MODEL_EPS_START", start)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
            models[name] = fastdual.train(X, y, loss="logistic", C=C, l1_ratio=1.0,
                                          solver="cd", fit_intercept=True, tol=tol,
                                          max_epochs=20000)
    adaptive, fixed = models["adaptive"], models["fixed"]
    assert adaptive.converged_ and fixed.converged_
    assert abs(adaptive.primal_ - fixed.primal_) <= adaptive.gap_ + fixed.gap_
    return adaptive, fixed


@pytest.mark.parametrize("C", [1.0, 10.0])
def test_raw_text_logistic_takes_fewer_passes(data, C, monkeypatch):
    """Raw counts (long rows, nearly separable at these C): the same certified optimum in at
    most 0.8 times the passes of models always minimised to MODEL_TOL (MODEL_EPS_START = 0
    makes the looser tolerance never apply). Passes are deterministic: no timing."""
    adaptive, fixed = adaptive_and_fixed(*data, C, 1e-6, monkeypatch)
    assert adaptive.n_epochs_ <= 0.8 * fixed.n_epochs_


def test_a_warm_start_begins_at_the_fixed_tolerance(monkeypatch):
    """A warm start (a path's next alpha) is near its optimum: its models start at MODEL_TOL's
    tolerance (model_eps at MODEL_EPS_LEAST; in effect warm starts keep the fixed tolerance).
    Along a logistic path on raw counts the passes are then those of models always minimised
    to MODEL_TOL (equal here; 3 % allowed), where starting each alpha at MODEL_EPS_START took
    11 % more."""
    X, y = raw_text(n=300, d=150, seed=3)
    solver = make_driver(X, y)
    solver.start_from(np.zeros(X.shape[1] + 1))
    assert solver.model_eps == cd_module.WARM_MODEL_EPS == cd_module.MODEL_EPS_LEAST
    passes = {}
    for name, start, warm in (("adaptive", cd_module.MODEL_EPS_START, cd_module.WARM_MODEL_EPS),
                              ("fixed", 0.0, 0.0)):
        monkeypatch.setattr(cd_module, "MODEL_EPS_START", start)
        monkeypatch.setattr(cd_module, "WARM_MODEL_EPS", warm)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
            path = fastdual.path(X, y, loss="logistic", l1_ratio=1.0, solver="cd", tol=1e-6,
                                 n_alphas=30)
        assert np.all(path.relative_gaps <= 1e-6)
        passes[name] = int(path.epochs.sum())
    assert passes["adaptive"] <= 1.03 * passes["fixed"]


@pytest.mark.parametrize("shape, C", [((1000, 2000, 1), 1.0), ((500, 1000, 2), 10.0)])
def test_tight_tolerances_take_no_more_passes(shape, C, monkeypatch):
    """At tol = 1e-10 the models' decrease reaches rounding (line searches with no step): the
    adaptive tolerance must not loosen there, or every model stays at one sweep and the run
    falls back to plain sweeps (4,558 passes against 247 on the first problem when it did).
    Within 1.2 times the passes of the fixed tolerance, the same certified optimum."""
    adaptive, fixed = adaptive_and_fixed(*raw_text(*shape), C, 1e-10, monkeypatch)
    assert adaptive.n_epochs_ <= 1.2 * fixed.n_epochs_
