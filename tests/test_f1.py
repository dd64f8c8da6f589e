"""loss="f1_hinge" (seed 004 Example 3): the dynamic program of Algorithms 5-6 against brute
force over all 2^n labelings, its certificate, and training by AGM."""
import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, strategies as st

import fastdual
from conftest import binary_problem
from fastdual.solvers import _f1


def brute_force(scores, y, mu):
    """Every labeling y': E(y') = 1 - F1(y', y) + (1/n) sum_i s_i (y'_i - y_i), the Gibbs
    distribution p ~ exp(E / mu): (log Z, flip probabilities, E_p[1 - F1], E_p[E], max E)."""
    n = y.shape[0]
    labelings = np.array(list(itertools.product([-1.0, 1.0], repeat=n)))
    tp = np.sum((labelings > 0) & (y > 0), axis=1)
    fp = np.sum((labelings > 0) & (y < 0), axis=1)
    fn = np.sum((labelings < 0) & (y > 0), axis=1)
    delta = 1.0 - 2.0 * tp / (2.0 * tp + fp + fn)
    energy = delta + (labelings - y) @ scores / n
    top = energy.max()
    weights = np.exp((energy - top) / mu)
    p = weights / weights.sum()
    flips = p @ (labelings != y)
    return top / mu + np.log(weights.sum()), flips, p @ delta, p @ energy, top


@given(seed=st.integers(0, 10_000), n=st.integers(2, 10), log_mu=st.floats(-3, 0.5))
def test_dynamic_program_equals_brute_force(seed, n, log_mu):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    y[0] = 1.0                       # at least one positive (F1 needs one)
    scores = 2.0 * rng.standard_normal(n)
    mu = 10.0 ** log_mu
    log_z, flips, expected, energy, top = brute_force(scores, y, mu)
    got = np.empty(n)
    got_log_z, got_expected, got_energy = _f1.gibbs(scores, y, mu, got)
    assert got_log_z == pytest.approx(log_z, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(got, flips, rtol=1e-9, atol=1e-12)
    assert got_expected == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert got_energy == pytest.approx(energy, rel=1e-9, abs=1e-12)
    assert _f1.worst_labeling(scores, y) == pytest.approx(top, rel=1e-12, abs=1e-15)


def test_the_smoothed_risk_gradient_is_its_derivative():
    """d/ds_i of mu log Z is E_p[(y'_i - y_i) / n] = -2 y_i q_i / n (the gradient the solver
    multiplies by X^T), checked by central differences."""
    rng = np.random.default_rng(3)
    n, mu = 9, 0.07
    y = np.where(rng.random(n) < 0.4, 1.0, -1.0)
    y[0] = 1.0
    s = rng.standard_normal(n)
    flips = np.empty(n)
    _f1.gibbs(s, y, mu, flips)
    h = 1e-6
    for i in range(n):
        up, down = s.copy(), s.copy()
        up[i] += h
        down[i] -= h
        numeric = mu * (_f1.gibbs(up, y, mu, np.empty(n))[0]
                        - _f1.gibbs(down, y, mu, np.empty(n))[0]) / (2 * h)
        assert numeric == pytest.approx(-2.0 * y[i] * flips[i] / n, abs=1e-7)


@given(seed=st.integers(0, 10_000), log_mu=st.floats(-4, 0))
def test_weak_duality_for_random_gibbs_points(seed, log_mu):
    X, y = binary_problem(n=12, d=3, seed=seed)
    rng = np.random.default_rng(seed)
    dual = np.append(3.0 * rng.standard_normal(12), 10.0 ** log_mu)
    coef, intercept = rng.standard_normal(3), float(rng.standard_normal())
    cert = fastdual.duality_gap(X, y, coef, intercept, loss="f1_hinge", alpha=0.05,
                                dual_coef=dual)
    # the primal, independently: the worst labeling by brute force
    ypm = np.where(y > 0, 1.0, -1.0)
    top = brute_force(X @ coef + intercept, ypm, 1.0)[4]
    assert cert.primal == pytest.approx(top + 0.025 * (coef @ coef + intercept ** 2), rel=1e-12)
    assert cert.dual <= cert.primal + 1e-12


def test_training_certifies_the_returned_model_and_beats_the_hinge_svm_on_its_objective():
    X, y = binary_problem(n=80, d=5, seed=4, noise=0.8)
    alpha = 1e-2
    model = fastdual.train(X, y, loss="f1_hinge", alpha=alpha, tol=1e-4, max_epochs=100_000)
    assert model.converged_ and model.solver == "agm" and model.loss == "f1_hinge"
    cert = fastdual.duality_gap(X, y, model.coef_, model.intercept_, loss="f1_hinge",
                                alpha=alpha, dual_coef=model.dual_coef_)
    assert (cert.primal, cert.dual) == (model.primal_, model.dual_)
    hinge = fastdual.train(X, y, loss="hinge", alpha=alpha, tol=1e-8, max_epochs=100_000)
    other = fastdual.duality_gap(X, y, hinge.coef_, hinge.intercept_, loss="f1_hinge",
                                 alpha=alpha)
    assert model.primal_ <= other.primal + 1e-12
    # without dual_coef the certificate is built from the margins and is still a bound
    again = fastdual.duality_gap(X, y, model.coef_, model.intercept_, loss="f1_hinge",
                                 alpha=alpha)
    assert again.primal == model.primal_ and again.dual <= model.primal_


def test_model_round_trip_and_prediction(tmp_path):
    X, y = binary_problem(n=40, d=4, seed=5)
    model = fastdual.train(X, y, loss="f1_hinge", alpha=0.05, tol=1e-3, max_epochs=20_000)
    path = tmp_path / "f1.npz"
    model.save(path)
    loaded = fastdual.load(path)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    assert set(np.unique(model.predict(X))) <= set(np.unique(y))


@pytest.mark.parametrize("kwargs, match", [
    (dict(solver="sdca"), "trained by solver='agm'"),
    (dict(sample_weight=np.ones(30)), "takes no sample_weight"),
    (dict(l1_ratio=1.0), "needs an l2 term"),
    (dict(regularize_intercept=False), "has no free intercept"),
    (dict(class_weight="balanced"), "takes no class_weight"),
    (dict(form="dual"), "trains with form='primal'"),
])
def test_bad_f1_requests_are_clear_errors(kwargs, match):
    X, y = binary_problem(n=30, d=3, seed=6)
    with pytest.raises(ValueError, match=match):
        fastdual.train(X, y, loss="f1_hinge", alpha=0.1, **kwargs)


def test_other_entry_points_refuse_the_structured_loss():
    X, y = binary_problem(n=30, d=3, seed=7)
    with pytest.raises(ValueError, match="risk over the whole labeling"):
        fastdual.OnlineRDA(loss="f1_hinge", classes=np.unique(y)).partial_fit(X, y)
    y3 = np.arange(30) % 3
    with pytest.raises(ValueError, match="exactly two classes"):
        fastdual.train(X, y3, loss="f1_hinge", alpha=0.1)
    # the scikit-learn estimator trains it through fastdual.train (AGM), like train itself
    from fastdual.sklearn import LinearClassifier
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
        estimator = LinearClassifier(loss="f1_hinge", alpha=0.1, max_epochs=50).fit(X, y)
        direct = fastdual.train(X, y, loss="f1_hinge", alpha=0.1, max_epochs=50)
    np.testing.assert_array_equal(estimator.coef_.ravel(), direct.coef_)
