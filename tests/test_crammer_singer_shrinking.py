"""Crammer-Singer's shrinking of (sample, class) variables (LIBLINEAR -s 4's, docs/math.md
"Shrinking classes"): the step over a shrunk sample's active classes against a numerical
maximisation, the shrunk epochs' invariants, the same optimum as without shrinking, LIBLINEAR's
optimum, and the certificate of whatever point shrinking leaves."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

import fastdual
import fastdual._multiclass as multiclass_module
from fastdual._core.multiclass import CrammerSinger
from fastdual.solvers.vector_sdca import VectorSDCA


def cs_problem(n=300, d=8, k=5, seed=0, sparse=False, dtype=np.float64, noise=1.0):
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((k, d)) * 1.5
    labels = rng.integers(0, k, n)
    X = centers[labels] + noise * rng.standard_normal((n, d))
    if sparse:
        X[rng.random((n, d)) < 0.4] = 0.0
        X = sp.csr_matrix(X)
    return X.astype(dtype), labels


def np_cs_objective(X, labels, coef, intercept, alpha):
    Z = np.asarray(X @ coef.T, dtype=np.float64) + intercept
    rows = np.arange(Z.shape[0])
    margins = 1.0 + Z - Z[rows, labels][:, None]
    margins[rows, labels] = 0.0
    return margins.max(axis=1).mean() + 0.5 * alpha * (np.sum(coef ** 2)
                                                       + np.sum(intercept ** 2))


@pytest.fixture
def drivers(monkeypatch):
    """Train with the driver's shrinking set by `drivers.shrinking`; the drivers built are kept
    in `drivers.built`."""
    class Recorder:
        shrinking = True
        built = []

        def __call__(self, problem, seed, initial=None):
            driver = VectorSDCA(problem, seed, initial, shrinking=self.shrinking)
            self.built.append(driver)
            return driver
    recorder = Recorder()
    recorder.built = []
    monkeypatch.setattr(multiclass_module, "VectorSDCA", recorder)
    return recorder


@pytest.mark.parametrize("gamma", [0.0, 0.7])
def test_the_step_over_active_classes_maximises_its_subproblem(gamma):
    """cs_step_active against SLSQP on the subproblem over the active classes, with the label
    among them or held at its bound 1 (then the others sum to -1)."""
    from scipy.optimize import minimize
    loss = CrammerSinger(gamma)
    rng = np.random.default_rng(3)
    for trial in range(40):
        k = int(rng.integers(2, 7))
        label_active = trial % 2 == 0 or k == 1
        y = int(rng.integers(k)) if label_active else -1
        z = rng.standard_normal(k) * rng.choice([0.3, 3.0])
        q = rng.uniform(0.05, 5.0)
        others = np.arange(k) != y
        # A feasible start: the non-label duals <= 0, summing to -a_y (label active) or -1.
        a0 = -rng.dirichlet(np.ones(k)) * (rng.uniform(0, 1) if label_active else 1.0)
        if label_active:
            a0[y] = 0.0
            a0[y] = -a0.sum()

        def value(a):
            return (-gamma / 2 * np.sum(a[others] ** 2) - a[others].sum() * label_active
                    - z @ (a - a0) - q / 2 * np.sum((a - a0) ** 2))
        got = loss.active_step_of(z, a0, y, q)
        assert np.all(got[others] <= 0.0)
        if label_active:
            assert got[y] <= 1.0 and got.sum() == pytest.approx(0.0, abs=1e-14)
        else:
            assert got.sum() == pytest.approx(-1.0, abs=1e-14)
        bounds = [(None, 0.0) if j != y else (None, 1.0) for j in range(k)]
        target = 0.0 if label_active else -1.0
        best = minimize(lambda a: -value(a), a0, method="SLSQP", bounds=bounds,
                        constraints=[{"type": "eq", "fun": lambda a: a.sum() - target}],
                        options={"ftol": 1e-15, "maxiter": 1000})
        assert value(got) >= -best.fun - 1e-9 * (1 + abs(best.fun)), (trial, value(got), best)
    # With the label active, the step over all classes is the same function.
    z, a0 = rng.standard_normal(5), np.array([0.5, -0.2, -0.3, 0.0, 0.0])
    assert np.array_equal(loss.active_step_of(z, a0, 0, 0.8), loss.step_of(z, a0, 0, 0.8))
    with pytest.raises(ValueError, match=r"-1 <= y < k"):
        loss.active_step_of(z, a0, 5, 0.8)


def test_shrunk_epochs_keep_their_invariants_and_never_lower_the_dual(drivers):
    """After each epoch: every sample's classes are a permutation with the label where
    label_pos says, every shrunk class sits at its bound (0, or 1 for the label), V is V(duals),
    and the dual objective has not decreased (each step maximises a lower bound of it)."""
    X, labels = cs_problem(n=400, d=6, k=6, seed=4, sparse=True, noise=0.6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
        fastdual.train(X, labels, loss="hinge", multiclass="crammer_singer", alpha=1e-3,
                       max_epochs=1, tol=0.0, random_state=0)
    driver = drivers.built[-1]
    problem = driver.problem
    n, k = problem.n_samples, problem.n_classes
    last_dual = -np.inf
    shrunk_seen = samples_out = False
    for epoch in range(60):
        driver.epoch()
        classes, counts, positions = driver.classes, driver.n_classes, driver.label_pos
        assert np.array_equal(np.sort(classes, axis=1), np.tile(np.arange(k), (n, 1)))
        assert np.array_equal(classes[np.arange(n), positions], problem.labels)
        for i in range(n):
            for m in classes[i, counts[i]:]:
                bound = 1.0 if m == problem.labels[i] else 0.0
                assert driver.duals[i, m] == bound
        shrunk_seen = shrunk_seen or counts.min() < k
        samples_out = samples_out or driver.n_active < n
        np.testing.assert_allclose(driver.v, problem.dual_vector(driver.duals), rtol=1e-10, atol=1e-10)
        _, dual, _ = problem.certificate(driver.w, driver.duals)
        assert dual >= last_dual - 1e-12 * abs(dual)
        last_dual = dual
    assert shrunk_seen and samples_out       # the test saw shrinking at work


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("loss, gamma, alpha, l1_ratio, fit_intercept", [
    ("hinge", None, 1e-3, 0.0, True), ("hinge", None, 1e-2, 0.3, False),
    ("smooth_hinge", 0.5, 1e-2, 0.0, True)])
def test_shrinking_reaches_the_optimum_of_the_full_epochs(drivers, sparse, dtype, loss, gamma,
                                                          alpha, l1_ratio, fit_intercept):
    X, labels = cs_problem(n=300, d=8, k=5, seed=5, sparse=sparse, dtype=dtype)
    kwargs = dict(loss=loss, multiclass="crammer_singer", alpha=alpha, l1_ratio=l1_ratio,
                  fit_intercept=fit_intercept, tol=1e-12, max_epochs=100_000, random_state=1)
    if gamma is not None:
        kwargs["gamma"] = gamma
    shrunk = fastdual.train(X, labels, **kwargs)
    assert drivers.built[-1].shrinking
    drivers.shrinking = False
    full = fastdual.train(X, labels, **kwargs)
    assert not drivers.built[-1].shrinking
    assert shrunk.converged_ and full.converged_
    # Each certified: P - D <= 1e-12 P, so both primal values are within that of P*.
    assert shrunk.primal_ == pytest.approx(full.primal_, rel=2e-12)
    assert shrunk.dual_ <= full.primal_ and full.dual_ <= shrunk.primal_
    # P is l2-strongly convex: ||w - w*||^2 <= 2 gap / l2 for each, a certified distance.
    l2 = alpha * (1 - l1_ratio)
    bound = np.sqrt(2 * shrunk.gap_ / l2) + np.sqrt(2 * full.gap_ / l2)
    distance = np.sqrt(np.sum((shrunk.coef_ - full.coef_) ** 2)
                       + np.sum((shrunk.intercept_ - full.intercept_) ** 2))
    assert distance <= bound
    if gamma is None:
        # The plain hinge is polyhedral: both runs identify the optimum's faces and end on the
        # same point, far closer than the bound (the smoothed loss only approaches it at the
        # certified rate, sqrt(gap)).
        np.testing.assert_allclose(shrunk.coef_, full.coef_, rtol=0, atol=1e-8)
        np.testing.assert_allclose(shrunk.intercept_, full.intercept_, rtol=0, atol=1e-8)
    if gamma is None and l1_ratio == 0.0:
        Xd = X.toarray() if sparse else X
        ours = np_cs_objective(Xd.astype(np.float64), labels, shrunk.coef_, shrunk.intercept_,
                               alpha)
        assert ours == pytest.approx(shrunk.primal_, rel=1e-9)


@pytest.mark.parametrize("sparse", [False, True])
def test_shrinking_matches_liblinear_s4(sparse):
    """A problem large enough for shrinking to act (k = 6, intercept -B 1): LIBLINEAR's
    optimum (liblinear-official at -e 1e-6), certified by fastdual's dual bound."""
    ll = pytest.importorskip("liblinear.liblinearutil")
    X, labels = cs_problem(n=500, d=10, k=6, seed=6, sparse=sparse, noise=1.5)
    norms = np.sqrt(np.asarray((X.multiply(X) if sparse else X * X).sum(axis=1))).ravel()
    X = (sp.diags(1.0 / norms) @ X).tocsr() if sparse else X / norms[:, None]
    C = 2.0
    alpha = 1.0 / (C * X.shape[0])
    ll_model = ll.train(ll.problem((labels + 1).astype(float), X, 1.0),
                        ll.parameter(f"-s 4 -c {C} -e 1e-6 -B 1 -q"))
    W, b = np.zeros((6, 10)), np.zeros(6)
    for position, label in enumerate(ll_model.get_labels()):
        w, bias = ll_model.get_decfun(position)
        W[int(label) - 1], b[int(label) - 1] = w[:10], bias
    model = fastdual.train(X, labels, loss="hinge", multiclass="crammer_singer", alpha=alpha,
                           tol=1e-10, max_epochs=100_000, random_state=0)
    assert model.converged_
    Xd = X.toarray() if sparse else X
    ours = np_cs_objective(Xd, labels, model.coef_, model.intercept_, alpha)
    theirs = np_cs_objective(Xd, labels, W, b, alpha)
    assert ours == pytest.approx(model.primal_, rel=1e-10)
    assert ours == pytest.approx(theirs, rel=1e-6)
    assert model.dual_ <= theirs + 1e-12       # the certificate bounds LIBLINEAR's too
    np.testing.assert_allclose(model.coef_, W, atol=1e-3)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6), sparse=st.booleans(),
       dtype=st.sampled_from([np.float32, np.float64]), k=st.integers(3, 7),
       max_epochs=st.integers(1, 40), fit_intercept=st.booleans(),
       l1_ratio=st.sampled_from([0.0, 0.4]), gamma=st.sampled_from([0.0, 0.5]),
       weighted=st.booleans(), alpha=st.sampled_from([1e-3, 1e-2]))
def test_the_gap_of_a_shrinking_run_is_the_certificate_of_its_model(
        seed, sparse, dtype, k, max_epochs, fit_intercept, l1_ratio, gamma, weighted, alpha):
    """Stopped anywhere (shrunk samples and classes included), the model's primal_, dual_ and
    gap_ are those the shared certificate gives its coefficients and duals; the dual bounds
    the optimum's primal (weak duality) and the primal is at least the optimum's dual."""
    X, labels = cs_problem(n=120, d=5, k=k, seed=seed, sparse=sparse, dtype=dtype, noise=0.8)
    weights = np.random.default_rng(seed).uniform(0, 2, 120) if weighted else None
    objective = dict(loss="smooth_hinge" if gamma else "hinge", alpha=alpha, l1_ratio=l1_ratio,
                     multiclass="crammer_singer", sample_weight=weights)
    if gamma:
        objective["gamma"] = gamma
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
        model = fastdual.train(X, labels, max_epochs=max_epochs, tol=0.0, random_state=seed,
                               fit_intercept=fit_intercept, **objective)
        optimum = fastdual.train(X, labels, max_epochs=20_000, tol=1e-9, random_state=0,
                                 fit_intercept=fit_intercept, **objective)
    cert = fastdual.duality_gap(X, labels, model.coef_,
                                model.intercept_ if fit_intercept else None,
                                dual_coef=model.dual_coef_, **objective)
    assert (model.primal_, model.dual_, model.gap_) == (cert.primal, cert.dual, cert.gap)
    assert np.isfinite(model.dual_) and model.gap_ >= 0.0
    assert model.dual_ <= optimum.primal_ + 1e-12 * abs(optimum.primal_)
    assert optimum.dual_ <= model.primal_ + 1e-12 * abs(model.primal_)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), k=st.integers(2, 8),
       log_q=st.floats(-9.0, -3.0), gamma=st.sampled_from([0.0, 0.5]))
def test_a_step_of_tiny_weight_stays_in_the_dual_domain(seed, k, log_q, gamma):
    """A sample of tiny weight has a tiny q = c_i ||x_i||^2 / (l2 n): its step's rounding is
    amplified by 1 / (q + gamma), and with the label held at its bound 1 the others must still
    sum to -1 within the domain's rounding slack (they once missed it by 7e-14: the dual was
    -inf)."""
    rng = np.random.default_rng(seed)
    y = int(rng.integers(k))
    z = rng.standard_normal(k) * 3.0
    z[y] -= 5.0                              # the label's margin low: its dual goes to 1
    a = np.zeros(k)
    loss = CrammerSinger(gamma)
    for _ in range(3):
        a = np.asarray(loss.step_of(z, a, y, 10.0 ** log_q))
        value = np.asarray(loss.values(a[None, :].copy(), np.array([y], dtype=np.intp),
                                       dual=True))[0]
        assert np.isfinite(value)
        assert abs(np.sum(a)) <= 64 * 2.2e-16 * k
