"""Hard data for every solver: rows of large norm (entries up to 1e3), constant columns,
duplicated columns and near-separable data. Each training returns a finite model whose
certificate is the one duality_gap recomputes for it (gap >= 0 up to rounding), or a clear
error; never a NaN model. Also the divergences these data caused once: RDA's steps on rows of
large norm (smooth losses), SPDC's perturbation when P(0) = 0."""
import re
import warnings

import numpy as np
import pytest

import fastdual
from conftest import REGRESSION_LOSSES, np_objective

KINDS = ["large_rows", "constant_columns", "duplicated_columns", "near_separable"]
# Option sets per solver: the variants that change the steps (each is a separate training).
SOLVER_OPTIONS = {
    "rda": [dict(variant="basic"), dict(variant="enhanced", output="average"),
            dict(variant="strongly_convex"), dict(variant="accelerated")],
    "spdc": [dict(batch_size=1), dict(batch_size=3, sampling="weighted")],
    "sdca": [dict(), dict(acceleration=True)],
}
REFUSALS = (r"needs an l2 term|needs a smooth loss|no proximal term for a free|needs sampling|"
            r"with the l2 penalty only|trains the l2 penalty only")


def hard_data(kind, loss, seed=0, n=30, d=5):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    w = rng.standard_normal(d)
    if kind == "large_rows":
        X *= 10.0 ** rng.uniform(0.0, 3.0, (n, 1))          # entries up to ~1e3
    elif kind == "constant_columns":
        X[:, 1] = 3.0
        X[:, 3] = 0.0
    elif kind == "duplicated_columns":
        X[:, 2] = X[:, 0]
        X[:, 4] = X[:, 0]
    margins = X @ w
    if loss in REGRESSION_LOSSES:
        return X, margins + (0.0 if kind == "near_separable" else 0.3 * rng.standard_normal(n))
    if kind == "near_separable":
        # separable with a tiny margin, one label flipped
        X += np.outer(np.sign(margins) * 1e-3, w / np.linalg.norm(w))
        y = np.where(margins > 0, 1.0, -1.0)
        y[0] = -y[0]
        return X, y
    return X, np.where(margins + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)


def cases():
    for solver, driver in sorted(fastdual.SOLVERS.items()):
        for loss in sorted(fastdual.losses.losses_with(driver.needs)):
            if loss == "f1_hinge":
                continue
            for kind in KINDS:
                yield solver, loss, kind


@pytest.mark.parametrize("solver, loss, kind", list(cases()))
def test_hard_data_gives_a_finite_certified_model_or_a_clear_error(solver, loss, kind):
    X, y = hard_data(kind, loss, seed=len(loss) + len(kind))
    for k, options in enumerate(SOLVER_OPTIONS.get(solver, [dict()])):
        for l1_ratio, regularize_intercept in ((0.0, True), (0.5, k % 2 == 0)):
            if not regularize_intercept and not fastdual.SOLVERS[solver].free_intercept:
                regularize_intercept = True
            objective = dict(loss=loss, alpha=1e-3, l1_ratio=l1_ratio,
                             regularize_intercept=regularize_intercept)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
                try:
                    model = fastdual.train(X, y, solver=solver, max_epochs=6, tol=0.0,
                                           random_state=1, **objective, **options)
                except ValueError as error:
                    assert re.search(REFUSALS, str(error)), error
                    continue
            assert np.all(np.isfinite(model.coef_)) and np.isfinite(model.intercept_)
            cert = fastdual.duality_gap(X, y, model.coef_, model.intercept_,
                                        dual_coef=model.dual_coef_, **objective)
            assert (model.primal_, model.dual_, model.gap_) == (cert.primal, cert.dual, cert.gap)
            assert np.isfinite(model.primal_) and np.isfinite(model.gap_)
            assert model.gap_ >= -1e-12 * abs(model.primal_), (options, l1_ratio)
            expected = np_objective(
                X, y, model.coef_, model.intercept_, loss=loss, l2=1e-3 * (1 - l1_ratio),
                l1=1e-3 * l1_ratio, fit_intercept=True, regularize_intercept=regularize_intercept)
            assert model.primal_ == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("loss", ["squared", "squared_hinge", "squared_epsilon_insensitive",
                                  "logistic"])
@pytest.mark.parametrize("variant", ["basic", "enhanced", "strongly_convex"])
@pytest.mark.parametrize("output", ["last", "average"])
def test_rda_on_rows_of_large_norm_converges_instead_of_diverging(loss, variant, output):
    """Entries up to 1e3 and a small l2: the seed's beta_t = gamma sqrt(t) (or 0) took steps
    far beyond 1 / (the rows' curvature) and the iterate overflowed within a few epochs; with
    beta's floor at the rows' curvature the run is finite and its certified gap falls."""
    X, y = hard_data("large_rows", loss, seed=3, n=40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
        model = fastdual.train(X, y, loss=loss, solver="rda", variant=variant, output=output,
                               alpha=1e-3, max_epochs=60, tol=0.0, check_every=1,
                               random_state=0)
    assert np.all(np.isfinite(model.coef_))
    primal_zero = fastdual.duality_gap(X, y, np.zeros(X.shape[1]), 0.0, loss=loss,
                                       alpha=1e-3).primal
    # a real descent from w = 0, certified
    assert model.primal_ < primal_zero
    assert 0.0 <= model.gap_ < model.history_[0]["gap"]


def test_rda_probe_case_strongly_convex_squared():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 5)) * 4
    y = X @ rng.standard_normal(5)
    model = fastdual.train(X, y, loss="squared", solver="rda", variant="strongly_convex",
                           alpha=1e-3, max_epochs=2000, tol=1e-2)
    assert model.converged_ and np.all(np.isfinite(model.coef_))
    # the same optimum as scikit-learn's ridge (l2 on the intercept feature too: compare P)
    from sklearn.linear_model import Ridge
    Xb = np.column_stack([X, np.ones(30)])
    ridge = Ridge(alpha=30 * 1e-3, fit_intercept=False).fit(Xb, y)
    best = np_objective(X, y, ridge.coef_[:-1], ridge.coef_[-1], loss="squared", l2=1e-3, l1=0.0,
                        fit_intercept=True)
    assert best <= model.primal_ <= best + model.gap_ + 1e-12


@pytest.mark.parametrize("batch_size", [1, 2, 3])
@pytest.mark.parametrize("tol", [1e-4, 0.0])
def test_spdc_with_zero_loss_at_zero_returns_the_zero_model(batch_size, tol):
    """Every row of positive weight has zero loss at w = 0 (so P(0) = 0 and w = 0 is optimal):
    the perturbation of a non-smooth loss started at delta = 0 and the dual steps were
    infinite (NaN model)."""
    X = np.array([[1.26, -0.13], [0.64, 0.10], [-0.54, 0.36]])
    y = np.array([0.23, -0.02, 0.36])
    model = fastdual.train(X, y, loss="epsilon_insensitive", epsilon=0.3,
                           sample_weight=[1.0, 0.0, 0.0], solver="spdc", batch_size=batch_size,
                           alpha=0.03, tol=tol, max_epochs=20)
    np.testing.assert_array_equal(model.coef_, 0.0)
    assert model.primal_ == 0.0 and model.gap_ == 0.0
