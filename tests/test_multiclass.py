"""k > 2 classes, one-vs-rest: the k binary problems (the pilot classes bit for bit), certified,
in any thread count, saved and loaded."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

import fastdual
from conftest import BINARY_LOSSES
from fastdual import _multiclass
from fastdual._core.multiclass import CrammerSinger, Multinomial


def multiclass_problem(n=240, d=7, k=4, seed=0, sparse=False):
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((k, d)) * 1.5
    labels = rng.integers(0, k, n)
    X = centers[labels] + rng.standard_normal((n, d))
    if sparse:
        X[rng.random((n, d)) < 0.4] = 0.0
        X = sp.csr_matrix(X)
    names = np.array(["cat", "dog", "emu", "fox", "gnu"][:k])
    return X, names[labels]


@pytest.mark.parametrize("loss", BINARY_LOSSES)
@pytest.mark.parametrize("solver", ["sdca", "spdc", "rda"])
def test_one_vs_rest_is_exactly_the_k_binary_problems(loss, solver):
    X, y = multiclass_problem(sparse=True, seed=1)
    kwargs = dict(loss=loss, alpha=1e-2, l1_ratio=0.2, solver=solver, tol=1e-3, max_epochs=30,
                  random_state=5, multiclass="ovr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
        model = fastdual.train(X, y, **kwargs)
        kwargs.pop("multiclass")
        binary = [fastdual.train(X, y == label, **kwargs) for label in model.classes_]
    assert model.coef_.shape == (4, 7) and model.intercept_.shape == (4,)
    assert model.classes_.tolist() == ["cat", "dog", "emu", "fox"]
    for m, single in enumerate(binary):
        assert np.array_equal(model.coef_[m], single.coef_)
        assert model.intercept_[m] == single.intercept_
        assert (model.class_primal_[m], model.class_dual_[m]) == (single.primal_, single.dual_)
        assert model.class_n_epochs_[m] == single.n_epochs_
    assert model.primal_ == pytest.approx(sum(b.primal_ for b in binary), rel=1e-15)
    assert model.converged_ == all(b.converged_ for b in binary)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_one_vs_rest_computes_the_row_norms_once_for_all_classes(monkeypatch, n_jobs):
    """The k class problems share the rows, the weights and the rows' squared norms: one pass
    for them however many classes (SDCA's steps need them in every class)."""
    from fastdual._core import rows as _rows
    from fastdual import _problem
    calls = []
    original = _rows.row_squared_norms
    monkeypatch.setattr(_problem._rows, "row_squared_norms",
                        lambda *a: calls.append(1) or original(*a))
    X, y = multiclass_problem(n=300, k=5, sparse=True, seed=3)
    weights = np.random.default_rng(4).uniform(0.5, 2.0, 300)
    model = fastdual.train(X, y, loss="squared_hinge", alpha=1e-2, solver="sdca", tol=1e-6,
                           random_state=0, multiclass="ovr", n_jobs=n_jobs,
                           sample_weight=weights)
    assert len(calls) == 1 and model.coef_.shape == (5, 7)
    for m, label in enumerate(model.classes_):
        single = fastdual.train(X, y == label, loss="squared_hinge", alpha=1e-2,
                                solver="sdca", tol=1e-6, random_state=0,
                                sample_weight=weights)
        if m < _multiclass.PILOT_CLASSES:
            assert np.array_equal(model.coef_[m], single.coef_)
        else:     # its checks scheduled from the pilots' rate: the same problem, certified
            assert model.class_primal_[m] == pytest.approx(single.primal_, rel=2e-6)


@pytest.mark.parametrize("loss, l1_ratio, solver", [("smooth_hinge", 0.0, "newton"),
                                                     ("logistic", 1.0, "cd")])
def test_threads_give_the_same_bits(loss, l1_ratio, solver):
    X, y = multiclass_problem(n=400, k=5, sparse=True, seed=2)
    objective = dict(loss=loss, alpha=1e-3, l1_ratio=l1_ratio, random_state=0)
    one = fastdual.train(X, y, n_jobs=1, **objective)
    two = fastdual.train(X, y, n_jobs=2, **objective)
    assert one.solver == two.solver == solver           # solver="auto"'s choice
    assert np.array_equal(one.coef_, two.coef_)
    assert np.array_equal(one.intercept_, two.intercept_)
    assert (one.dual_coef_ is None) == (two.dual_coef_ is None)
    if one.dual_coef_ is not None:
        assert np.array_equal(one.dual_coef_, two.dual_coef_)
    assert (one.primal_, one.dual_) == (two.primal_, two.dual_)


@settings(max_examples=20, deadline=None)
@given(loss=st.sampled_from(BINARY_LOSSES), k=st.integers(3, 5), seed=st.integers(0, 100),
       fit_intercept=st.booleans(), max_epochs=st.integers(1, 6))
def test_the_k_class_certificate_is_that_of_the_returned_model(loss, k, seed, fit_intercept,
                                                                 max_epochs):
    X, y = multiclass_problem(n=90, d=5, k=k, seed=seed)
    objective = dict(loss=loss, alpha=0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
        model = fastdual.train(X, y, max_epochs=max_epochs, tol=0.0, random_state=seed,
                               fit_intercept=fit_intercept, **objective)
    cert = fastdual.duality_gap(X, y, model.coef_, model.intercept_ if fit_intercept else None,
                                dual_coef=model.dual_coef_, **objective)
    assert (model.primal_, model.dual_) == (cert.primal, cert.dual)
    assert model.gap_ >= -1e-12 * abs(model.primal_)
    # The bound is a true one: the sum of the k optima lies within it (and within any other
    # certified bound, which weak duality makes true however close to the optimum it is).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
        optimum = fastdual.train(X, y, tol=1e-10, max_epochs=20_000, random_state=0,
                                 fit_intercept=fit_intercept, **objective)
    assert model.dual_ <= optimum.primal_ + 1e-9 and optimum.dual_ <= model.primal_ + 1e-9


@pytest.mark.parametrize("multiclass", ["ovr", "multinomial"])
def test_predictions_probabilities_and_scores(multiclass):
    X, y = multiclass_problem(n=300, k=3, seed=3)
    model = fastdual.train(X, y, loss="logistic", alpha=1e-3, tol=1e-6, random_state=0,
                           multiclass=multiclass)
    scores = model.decision_function(X)
    assert scores.shape == (300, 3)
    # (atol: a score near 0 is a difference of terms as large as the others)
    np.testing.assert_allclose(scores, X @ model.coef_.T + model.intercept_, rtol=1e-12,
                               atol=1e-14 * np.abs(scores).max())
    assert np.array_equal(model.predict(X), model.classes_[np.argmax(scores, axis=1)])
    assert np.mean(model.predict(X) == y) > 0.8
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.array_equal(np.argmax(proba, axis=1), np.argmax(scores, axis=1))
    with pytest.raises(ValueError, match="X has 6 features, but the model was trained on 7"):
        model.predict(X[:, :6])


def test_k_class_models_save_load_and_warm_start(tmp_path):
    X, y = multiclass_problem(n=200, k=4, seed=4)
    model = fastdual.train(X, y, loss="squared_hinge", alpha=1e-2, random_state=0)
    model.save(tmp_path / "model.npz")
    loaded = fastdual.load(tmp_path / "model.npz")
    for name in ("coef_", "intercept_", "dual_coef_", "class_certificates_"):
        assert np.array_equal(getattr(loaded, name), getattr(model, name))
    assert loaded.classes_.tolist() == model.classes_.tolist()
    assert (loaded.primal_, loaded.gap_, loaded.task) == (model.primal_, model.gap_, "multiclass")
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    warm = fastdual.train(X, y, loss="squared_hinge", alpha=1e-2, random_state=0,
                          warm_start=loaded)
    # From the optimum, each class stops at its first check: at most one step of its solver.
    assert warm.converged_ and np.all(warm.class_n_epochs_ < model.class_n_epochs_)
    with pytest.raises(ValueError, match="warm_start must be a one-vs-rest model"):
        fastdual.train(X, y, loss="squared_hinge", warm_start=fastdual.train(X, y == "cat"))


def test_bad_multiclass_arguments_are_refused():
    X, y = multiclass_problem(n=60, k=3)
    with pytest.raises(ValueError, match=r"multiclass must be None or one of \['ovr', "
                                         r"'crammer_singer', 'multinomial'\], got 'ecoc'"):
        fastdual.train(X, y, loss="logistic", multiclass="ecoc")
    with pytest.raises(ValueError, match=r"n_jobs must be"):
        fastdual.train(X, y, n_jobs=0)
    with pytest.raises(ValueError, match=r"coef has 2 rows but y has 3 classes"):
        fastdual.duality_gap(X, y, np.zeros((2, 7)))


@pytest.mark.parametrize("change, message", [
    (lambda a: a.update(classes=a["classes"][:3]), r"one per row of coef"),
    (lambda a: a.update(intercept=a["intercept"][:2]), r"intercept must have shape \(4,\)"),
    (lambda a: a.update(coef=a["coef"][0]), r"coef must be 2-D"),
])
def test_damaged_k_class_files_are_refused(tmp_path, change, message):
    X, y = multiclass_problem(n=80, k=4, seed=6)
    fastdual.train(X, y, loss="hinge", alpha=1e-2).save(tmp_path / "model.npz")
    with np.load(tmp_path / "model.npz") as archive:
        arrays = dict(archive)
    change(arrays)
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ValueError, match=message):
        fastdual.load(tmp_path / "bad.npz")


# -- Crammer-Singer and multinomial: vector duals -------------------------------------------

def np_joint_objective(X, labels, coef, intercept, strategy, alpha):
    """P(W) with an independent NumPy evaluation of the k-class losses (intercept regularised
    as a feature of value 1)."""
    Z = X @ coef.T + intercept
    n = X.shape[0]
    rows = np.arange(n)
    if strategy == "multinomial":
        top = Z.max(axis=1)
        losses = top + np.log(np.exp(Z - top[:, None]).sum(axis=1)) - Z[rows, labels]
    else:
        margins = 1.0 + Z - Z[rows, labels][:, None]
        margins[rows, labels] = 0.0
        losses = margins.max(axis=1)
    return losses.mean() + 0.5 * alpha * (np.sum(coef ** 2) + np.sum(intercept ** 2))


@pytest.mark.parametrize("strategy", ["crammer_singer", "multinomial"])
def test_the_vector_step_maximises_its_subproblem(strategy):
    """The kernel's step against SLSQP on the same k-dimensional concave problem."""
    from scipy.optimize import minimize
    loss = CrammerSinger() if strategy == "crammer_singer" else Multinomial()
    rng = np.random.default_rng(7)
    for trial in range(30):
        k = int(rng.integers(3, 7))
        y = int(rng.integers(k))
        z = rng.standard_normal(k) * rng.choice([0.3, 3.0])
        q = rng.uniform(0.05, 5.0)
        p = rng.dirichlet(np.ones(k))                   # a feasible start
        a0 = -p * rng.uniform(0, 1)
        a0[y] = 0.0
        a0[y] = -a0.sum()
        if strategy == "multinomial":
            a0 = np.eye(k)[y] - p
        labels = np.array([y])

        def value(a):
            dual = loss.values(a[None, :], labels, dual=True)[0]
            return dual - z @ (a - a0) - q / 2 * np.sum((a - a0) ** 2)

        got = loss.step_of(z, a0, y, q)
        assert np.isfinite(loss.values(got[None, :], labels, dual=True)[0])
        if strategy == "multinomial":
            # over p = e_y - a in the simplex
            def negative(p_):
                p_ = np.clip(p_, 1e-300, None)
                return -(-(p_ * np.log(p_)).sum() + z @ (p_ - (np.eye(k)[y] - a0))
                         - q / 2 * np.sum((p_ - (np.eye(k)[y] - a0)) ** 2))
            best = minimize(negative, np.full(k, 1.0 / k), method="SLSQP",
                            bounds=[(0, 1)] * k, constraints=[{"type": "eq",
                                                                "fun": lambda p_: p_.sum() - 1}],
                            options={"ftol": 1e-15, "maxiter": 1000})
            brute = -best.fun
        else:
            def negative(a):
                return -(-a[np.arange(k) != y].sum() - z @ (a - a0)
                         - q / 2 * np.sum((a - a0) ** 2))
            bounds = [(None, 0.0) if j != y else (None, 1.0) for j in range(k)]
            best = minimize(negative, a0, method="SLSQP", bounds=bounds,
                            constraints=[{"type": "eq", "fun": lambda a: a.sum()}],
                            options={"ftol": 1e-15, "maxiter": 1000})
            brute = -best.fun
        # Crammer-Singer's step is exact; the multinomial one leaves at most a 1e-3 fraction
        # of its gain (tests/test_multinomial_step.py tests that claim in detail).
        slack = 1e-3 * max(value(got) - value(a0), 0.0) if strategy == "multinomial" else 0.0
        assert value(got) >= brute - slack - 1e-9 * (1 + abs(brute)), (trial, value(got), brute)


def test_crammer_singer_matches_liblinear_s4():
    ll = pytest.importorskip("liblinear.liblinearutil")   # liblinear-official
    parameter, problem, ll_train = ll.parameter, ll.problem, ll.train
    X, y = multiclass_problem(n=150, d=5, k=3, seed=8)
    X = X / np.linalg.norm(X, axis=1, keepdims=True)
    labels = np.searchsorted(np.unique(y), y)
    C = 1.0
    alpha = 1.0 / (C * X.shape[0])
    ll = ll_train(problem((labels + 1).astype(float).tolist(), X.tolist()),
                  parameter(f"-s 4 -c {C} -e 1e-10 -q"))
    W = np.zeros((3, 5))
    for position, label in enumerate(ll.get_labels()):     # LIBLINEAR's order of appearance
        W[int(label) - 1] = ll.get_decfun(position)[0]
    model = fastdual.train(X, y, loss="hinge", multiclass="crammer_singer", alpha=alpha,
                           fit_intercept=False, tol=1e-9, max_epochs=50_000, random_state=0)
    ours = np_joint_objective(X, labels, model.coef_, np.zeros(3), "crammer_singer", alpha)
    theirs = np_joint_objective(X, labels, W, np.zeros(3), "crammer_singer", alpha)
    assert ours == pytest.approx(model.primal_, rel=1e-12)
    assert ours == pytest.approx(theirs, rel=1e-6)
    assert model.dual_ <= theirs + 1e-12           # the certificate bounds LIBLINEAR's too


def test_multinomial_matches_scikit_learn():
    from sklearn.linear_model import LogisticRegression
    X, y = multiclass_problem(n=200, d=6, k=4, seed=9)
    labels = np.searchsorted(np.unique(y), y)
    alpha = 1e-2
    reference = LogisticRegression(C=1.0 / (alpha * X.shape[0]), fit_intercept=False,
                                   tol=1e-12, max_iter=10_000).fit(X, y)
    model = fastdual.train(X, y, loss="logistic", alpha=alpha, fit_intercept=False, tol=1e-10,
                           random_state=0, max_epochs=20_000)
    assert model.multiclass == "multinomial" and model.converged_
    ours = np_joint_objective(X, labels, model.coef_, np.zeros(4), "multinomial", alpha)
    theirs = np_joint_objective(X, labels, reference.coef_, np.zeros(4), "multinomial", alpha)
    assert ours == pytest.approx(theirs, rel=1e-6)
    np.testing.assert_allclose(model.predict_proba(X), reference.predict_proba(X), atol=1e-5)


@settings(max_examples=25, deadline=None)
@given(strategy=st.sampled_from(["crammer_singer", "multinomial"]), seed=st.integers(0, 500),
       l1_ratio=st.sampled_from([0.0, 0.5]), max_epochs=st.integers(1, 8),
       fit_intercept=st.booleans(), weighted=st.booleans())
def test_the_joint_certificate_is_that_of_the_returned_model(strategy, seed, l1_ratio,
                                                             max_epochs, fit_intercept, weighted):
    X, y = multiclass_problem(n=60, d=5, k=3, seed=seed, sparse=seed % 2 == 0)
    loss = "hinge" if strategy == "crammer_singer" else "logistic"
    weights = np.random.default_rng(seed).uniform(0, 2, 60) if weighted else None
    objective = dict(loss=loss, alpha=0.05, l1_ratio=l1_ratio, multiclass=strategy,
                     sample_weight=weights)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
        model = fastdual.train(X, y, max_epochs=max_epochs, tol=0.0, random_state=seed,
                               fit_intercept=fit_intercept, **objective)
        optimum = fastdual.train(X, y, max_epochs=3000, tol=1e-9, random_state=0,
                                 fit_intercept=fit_intercept, **objective)
    cert = fastdual.duality_gap(X, y, model.coef_, model.intercept_ if fit_intercept else None,
                                dual_coef=model.dual_coef_, **objective)
    assert (model.primal_, model.dual_) == (cert.primal, cert.dual)
    # Weak duality both ways: each dual value is below the other's primal.
    assert model.dual_ <= optimum.primal_ + 1e-12 and optimum.dual_ <= model.primal_ + 1e-12


_OPTIMA = {}


@settings(max_examples=40, deadline=None)
@given(strategy=st.sampled_from(["crammer_singer", "multinomial"]), seed=st.integers(0, 10**6),
       spread=st.sampled_from([0.1, 1.0, 10.0]))
def test_random_feasible_vector_duals_are_lower_bounds(strategy, seed, spread):
    """Weak duality for random points of the dual domains, against the optimum's primal."""
    X, y = multiclass_problem(n=50, d=4, k=3, seed=10)
    labels = np.searchsorted(np.unique(y), y)
    rng = np.random.default_rng(seed)
    loss, vector_loss = {"crammer_singer": ("hinge", CrammerSinger()),
                         "multinomial": ("logistic", Multinomial())}[strategy]
    if strategy not in _OPTIMA:
        _OPTIMA[strategy] = fastdual.train(X, y, loss=loss, multiclass=strategy, alpha=0.1,
                                           tol=1e-9, max_epochs=20_000, random_state=0)
    optimum = _OPTIMA[strategy]
    p = rng.dirichlet(np.ones(3) * spread, size=50) * rng.uniform(0, 1, (50, 1))
    if strategy == "multinomial":
        duals = np.eye(3)[labels] - p / p.sum(axis=1, keepdims=True)
    else:
        duals = -p
        duals[np.arange(50), labels] = 0.0
        duals[np.arange(50), labels] = -duals.sum(axis=1)
    assert np.all(np.isfinite(vector_loss.values(duals, labels, dual=True)))
    cert = fastdual.duality_gap(X, y, optimum.coef_, optimum.intercept_, loss=loss,
                                multiclass=strategy, alpha=0.1, dual_coef=duals.T)
    assert cert.dual <= optimum.primal_ + 1e-12


def test_joint_strategies_refuse_what_they_cannot_do():
    X, y = multiclass_problem(n=60, k=3)
    with pytest.raises(ValueError, match=r"multiclass='crammer_singer' needs loss in "
                                         r"\['hinge', 'smooth_hinge'\]; loss='logistic' trains "
                                         r"k classes with multiclass in \['ovr', 'multinomial'\]"):
        fastdual.train(X, y, loss="logistic", multiclass="crammer_singer")
    with pytest.raises(ValueError, match=r"trained by solver='sdca'"):
        fastdual.train(X, y, loss="logistic", solver="spdc", multiclass="multinomial")
    with pytest.raises(ValueError, match=r"needs an l2 term"):
        fastdual.train(X, y, loss="logistic", l1_ratio=1.0, multiclass="multinomial")
    # (without multiclass=, pure l1 logistic is one-vs-rest: the joint strategy needs l2)
    assert fastdual.train(X, y, loss="logistic", l1_ratio=1.0, alpha=0.01).coef_.shape[0] == 3
    with pytest.raises(ValueError, match=r"has no free intercept"):
        fastdual.train(X, y, loss="logistic", regularize_intercept=False, solver="sdca")


def test_joint_models_save_load_and_warm_start(tmp_path):
    X, y = multiclass_problem(n=120, k=3, seed=11)
    model = fastdual.train(X, y, loss="hinge", multiclass="crammer_singer", alpha=0.05,
                           tol=1e-6, random_state=0)
    model.save(tmp_path / "cs.npz")
    loaded = fastdual.load(tmp_path / "cs.npz")
    assert loaded.multiclass == "crammer_singer" and loaded.class_certificates_ is None
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    warm = fastdual.train(X, y, loss="hinge", multiclass="crammer_singer", alpha=0.05,
                          tol=1e-6, random_state=0, warm_start=loaded)
    assert warm.converged_ and warm.n_epochs_ <= max(3, model.n_epochs_ // 5)


@pytest.mark.parametrize("multiclass, loss", [("ovr", "smooth_hinge"),
                                              ("crammer_singer", "hinge"),
                                              ("multinomial", "logistic")])
def test_an_integer_class_weight_is_that_many_copies_of_the_class(multiclass, loss):
    X, y = multiclass_problem(n=90, d=4, k=3, seed=12)
    kwargs = dict(loss=loss, multiclass=multiclass, alpha=0.05, tol=1e-10, max_epochs=50_000,
                  random_state=0)
    weighted = fastdual.train(X, y, class_weight={"dog": 3}, **kwargs)
    rows = np.concatenate([np.arange(90)] + [np.flatnonzero(y == "dog")] * 2)
    repeated = fastdual.train(X[rows], y[rows], **kwargs)
    assert weighted.primal_ == pytest.approx(repeated.primal_, rel=1e-8)
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, rtol=1e-4, atol=1e-6)


def test_balanced_class_weights_follow_scikit_learn():
    from sklearn.utils.class_weight import compute_class_weight
    X, y = multiclass_problem(n=100, d=4, k=3, seed=13)
    y[:40] = "cat"
    expected = compute_class_weight("balanced", classes=np.unique(y), y=y)
    explicit = dict(zip(np.unique(y).tolist(), expected.tolist()))
    kwargs = dict(loss="logistic", alpha=0.05, tol=1e-8, random_state=0)
    balanced = fastdual.train(X, y, class_weight="balanced", **kwargs)
    by_hand = fastdual.train(X, y, class_weight=explicit, **kwargs)
    assert np.array_equal(balanced.coef_, by_hand.coef_)
    binary = fastdual.train(X, y == "cat", class_weight="balanced", **kwargs)
    assert binary.converged_


def test_bad_class_weights_are_refused():
    X, y = multiclass_problem(n=60, k=3)
    with pytest.raises(ValueError, match=r"class_weight has labels that are not in y: \['yak'\]"):
        fastdual.train(X, y, class_weight={"yak": 2.0})
    with pytest.raises(ValueError, match=r"class_weight\['dog'\] must be a finite number >= 0"):
        fastdual.train(X, y, class_weight={"dog": -1.0})
    with pytest.raises(ValueError, match=r"class_weight must be None, 'balanced' or a dict"):
        fastdual.train(X, y, class_weight="auto")
    with pytest.raises(ValueError, match=r"class_weight is for classification"):
        fastdual.train(X, np.arange(60.0), loss="squared", class_weight="balanced")


@pytest.mark.parametrize("gamma", [0.5, 2.0])
def test_the_smoothed_crammer_singer_step_and_loss(gamma):
    """gamma > 0: the step against SLSQP, the loss against a numerical maximisation over b, and
    the binary case (k = 2) against fastdual's smooth hinge."""
    from scipy.optimize import minimize
    loss = CrammerSinger(gamma)
    rng = np.random.default_rng(14)
    for trial in range(20):
        k = int(rng.integers(3, 6))
        y = int(rng.integers(k))
        z = rng.standard_normal(k) * 2
        q = rng.uniform(0.1, 3.0)
        a0 = np.zeros(k)
        got = loss.step_of(z, a0, y, q)
        labels = np.array([y])

        def negative(a):
            others = np.arange(k) != y
            return -(-a[others].sum() - gamma / 2 * np.sum(a[others] ** 2) - z @ (a - a0)
                     - q / 2 * np.sum((a - a0) ** 2))
        bounds = [(None, 0.0) if j != y else (None, 1.0) for j in range(k)]
        best = minimize(negative, a0, method="SLSQP", bounds=bounds,
                        constraints=[{"type": "eq", "fun": lambda a: a.sum()}],
                        options={"ftol": 1e-15, "maxiter": 1000})
        assert -negative(got) >= -best.fun - 1e-9
        # phi_gamma(z) = max_{b >= 0, sum b <= 1} sum_j b_j u_j - gamma/2 ||b||^2
        u = 1.0 + z - z[y]
        u[y] = 0.0

        def objective_b(b):
            return -(b @ u - gamma / 2 * b @ b)
        b_bounds = [(0.0, 0.0) if j == y else (0.0, 1.0) for j in range(k)]
        b_best = minimize(objective_b, np.zeros(k), method="SLSQP", bounds=b_bounds,
                          constraints=[{"type": "ineq", "fun": lambda b: 1.0 - b.sum()}],
                          options={"ftol": 1e-15, "maxiter": 1000})
        value = loss.values(z[None, :], labels)[0]
        # The closed form is the maximum: at least SLSQP's value, and close to it.
        assert value >= -b_best.fun - 1e-9 * abs(b_best.fun)
        assert value == pytest.approx(-b_best.fun, rel=1e-6)
        # Fenchel-Young with equality at the margin duals.
        a = loss.margin_duals_of(z[None, :], labels)[0]
        dual = loss.values(a[None, :], labels, dual=True)[0]
        assert value == pytest.approx(-a @ z + dual, abs=1e-12)
    # k = 2, y = 0: max_{0 <= b <= 1} b u - gamma/2 b^2 with u = 1 + z_1, the smoothed hinge:
    # 0 for u <= 0, u^2 / (2 gamma) below gamma, u - gamma/2 beyond.
    z2 = np.column_stack([np.zeros(50), rng.standard_normal(50) * 3])
    values = loss.values(z2, np.zeros(50, dtype=np.intp))
    u = 1.0 + z2[:, 1]
    expected = np.where(u <= 0, 0.0, np.where(u < gamma, u * u / (2 * gamma), u - gamma / 2))
    np.testing.assert_allclose(values, expected, rtol=1e-14, atol=1e-15)


def test_smooth_hinge_crammer_singer_trains_certified():
    X, y = multiclass_problem(n=120, d=5, k=4, seed=15)
    model = fastdual.train(X, y, loss="smooth_hinge", gamma=0.5, multiclass="crammer_singer",
                           alpha=0.01, tol=1e-8, random_state=0, max_epochs=20_000)
    assert model.converged_ and model.loss_params == {"gamma": 0.5}
    cert = fastdual.duality_gap(X, y, model.coef_, model.intercept_, loss="smooth_hinge",
                                gamma=0.5, multiclass="crammer_singer", alpha=0.01,
                                dual_coef=model.dual_coef_)
    assert (cert.primal, cert.dual) == (model.primal_, model.dual_)
    hinge = fastdual.train(X, y, loss="hinge", multiclass="crammer_singer", alpha=0.01,
                           tol=1e-8, random_state=0, max_epochs=20_000)
    assert model.primal_ < hinge.primal_        # the smoothed loss is below the hinge


@pytest.mark.parametrize("q, p, z", [
    (1000.0, [0.27736, 0.28240, 0.23806, 0.20218], [-182.0, -32.0, 261.0, -49.0]),
    (3790.0, [0.263, 0.186, 0.269, 0.172, 0.110], [924.8, -179.8, 96.0, -378.3, 771.9]),
])
def test_the_multinomial_step_is_exact_with_large_curvature_and_margins(q, p, z):
    """Large q and margins hundreds apart (unscaled data, large C): the step stays finite and
    is the maximiser to its accuracy (a 1e-3 fraction of the gain; these once gave NaN and a
    wrong step), and the exact solver it falls back on is the maximiser."""
    from scipy.optimize import minimize
    p, z = np.array(p) / np.sum(p), np.array(z)
    k, y = p.shape[0], 0
    a0 = np.eye(k)[y] - p
    got = Multinomial().step_of(z, a0, y, q)
    assert np.all(np.isfinite(got))

    def value(p_new):
        p_new = np.clip(p_new, 1e-300, None)
        return -(p_new * np.log(p_new)).sum() + z @ (p_new - p) - q / 2 * np.sum((p_new - p) ** 2)
    best = minimize(lambda v: -value(v), p, method="SLSQP", bounds=[(0, 1)] * k,
                    constraints=[{"type": "eq", "fun": lambda v: v.sum() - 1}],
                    options={"ftol": 1e-15, "maxiter": 1000})
    gain = value(np.eye(k)[y] - got) - value(p)
    assert value(np.eye(k)[y] - got) >= -best.fun - 1e-3 * gain - 1e-9 * abs(best.fun)
    exact = Multinomial().exact_step_of(z, a0, y, q)
    assert value(np.eye(k)[y] - exact) >= -best.fun - 1e-9 * abs(best.fun)


def test_crammer_singer_duals_whose_own_entry_disagrees_are_not_certified():
    """a_y must equal -sum_{j != y} a_j: v is built from the stored a_y, so a dual_coef that
    breaks it gets no bound (-inf), never a negative gap."""
    X, y = multiclass_problem(n=30, d=3, k=3, seed=16)
    model = fastdual.train(X, y, loss="hinge", multiclass="crammer_singer", alpha=1.0,
                           tol=1e-9, random_state=0, max_epochs=10_000)
    labels = np.searchsorted(np.unique(y), y)
    duals = model.dual_coef_.copy()
    duals[labels, np.arange(30)] = np.random.default_rng(0).uniform(0, 1, 30)
    cert = fastdual.duality_gap(X, y, model.coef_, model.intercept_, loss="hinge",
                                multiclass="crammer_singer", alpha=1.0, dual_coef=duals)
    assert cert.dual == -np.inf and cert.gap > 0


def _interrupt_in_class(label, at_epoch=2):
    """A callback that raises KeyboardInterrupt (as Ctrl-C does) in one class's training."""
    def callback(info):
        if info["class"] == label and info["epoch"] >= at_epoch:
            raise KeyboardInterrupt
    return callback


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_ctrl_c_in_one_vs_rest_returns_the_certified_classes(n_jobs):
    X, y = multiclass_problem(n=200, seed=3)
    objective = dict(loss="smooth_hinge", alpha=1e-5)
    with pytest.warns(fastdual.ConvergenceWarning, match="interrupted"):
        model = fastdual.train(X, y, tol=1e-12, max_epochs=400, check_every=1, n_jobs=n_jobs,
                               on_interrupt="return", random_state=0,
                               callback=_interrupt_in_class("dog"), **objective)
    assert model.coef_.shape == (4, 7)
    # The classes after the interrupted one stop at once (one-by-one: they certify their start).
    if n_jobs == 1:
        assert model.class_n_epochs_.tolist()[2:] == [0, 0]
    assert model.class_n_epochs_.max() < 400
    # Still a certificate of the sum of the k objectives, for exactly the arrays returned.
    cert = fastdual.duality_gap(X, y, model.coef_, model.intercept_, dual_coef=model.dual_coef_,
                                multiclass="ovr", **objective)
    assert cert.primal == pytest.approx(model.primal_, rel=1e-12)
    assert cert.dual == pytest.approx(model.dual_, rel=1e-12)
    assert model.gap_ >= 0


def test_ctrl_c_in_one_vs_rest_raises_with_the_model():
    X, y = multiclass_problem(n=200, seed=3)
    with pytest.raises(fastdual.TrainingInterrupted) as caught:
        fastdual.train(X, y, loss="smooth_hinge", alpha=1e-5, tol=1e-12, max_epochs=400,
                       check_every=1, callback=_interrupt_in_class("emu"))
    model = caught.value.model
    assert model is not None and model.coef_.shape == (4, 7)
    # (the interrupted class returns its best certified point: the check of epoch 1 or 2, the
    # first two epochs being SDCA's before Newton, whose hinge-type primal is not monotone)
    assert model.class_n_epochs_[3] == 0 and model.class_n_epochs_[2] >= 1


@pytest.mark.parametrize("loss, strategy", [("hinge", "crammer_singer"),
                                            ("smooth_hinge", "crammer_singer"),
                                            ("logistic", "multinomial")])
@pytest.mark.parametrize("l1_ratio", [0.0, 0.3])
def test_the_vector_gap_is_nonnegative_and_equals_primal_minus_dual(loss, strategy, l1_ratio):
    """Random feasible vector duals (the margin duals of random W, shrunk towards 0): the
    certificate's Fenchel-Young gap is >= 0 and equals P - D to rounding."""
    X, y = multiclass_problem(n=60, d=5, k=4, seed=21)
    labels = np.searchsorted(np.unique(y), y)
    rng = np.random.default_rng(3)
    vector_loss = (CrammerSinger(1.0 if loss == "smooth_hinge" else 0.0)
                   if strategy == "crammer_singer" else Multinomial())
    for trial in range(5):
        coef, intercept = rng.standard_normal((4, 5)), rng.standard_normal(4)
        margins = X @ rng.standard_normal((5, 4)) * 3
        duals = vector_loss.margin_duals_of(np.ascontiguousarray(margins),
                                            labels.astype(np.intp))
        duals = duals * rng.random(60)[:, None]
        cert = fastdual.duality_gap(X, y, coef, intercept, loss=loss, multiclass=strategy,
                                    alpha=0.1, l1_ratio=l1_ratio, dual_coef=duals.T,
                                    refine_epochs=0)
        assert np.isfinite(cert.dual) and cert.gap >= 0.0
        assert cert.gap == pytest.approx(cert.primal - cert.dual, rel=0,
                                         abs=1e-13 * max(1.0, abs(cert.primal)))


@pytest.mark.parametrize("strategy", ["crammer_singer", "multinomial"])
@pytest.mark.parametrize("sparse", [False, True])
def test_the_vector_certificate_is_the_same_in_chunks_of_rows(monkeypatch, strategy, sparse):
    """_core/gap.primal_dual_vector computes its margins and V chunk by chunk of rows: chunks of
    one row and chunks that leave a short last one give the bits of one chunk, and P is the
    NumPy objective."""
    from fastdual._core import gap as _gap
    X, y = multiclass_problem(n=83, d=6, k=4, seed=4, sparse=sparse)
    labels = np.searchsorted(np.unique(y), y).astype(np.intp)
    rng = np.random.default_rng(5)
    W = rng.standard_normal((7, 4))
    vector_loss = CrammerSinger() if strategy == "crammer_singer" else Multinomial()
    Xd = X.toarray() if sparse else X
    duals = vector_loss.margin_duals_of(np.ascontiguousarray(Xd @ W[:6] + W[6]) * 0.5, labels)
    duals = np.ascontiguousarray(duals * rng.random(83)[:, None])
    weights = rng.uniform(0.0, 2.0, 83)
    weights[::9] = 0.0
    Xs = sp.csr_matrix(X)
    kernel = ((Xs.data, Xs.indices.astype(np.intc), Xs.indptr.astype(np.intc)) if sparse else
              (np.ascontiguousarray(X).ravel(), np.empty(0, np.intc), np.empty(0, np.intc)))
    alpha = 0.1

    def certificate():
        v = np.empty_like(W)
        return _gap.primal_dual_vector(*kernel, 83, 6, 1.0, labels, weights, W, duals, alpha,
                                       0.0, vector_loss, v), v

    whole, v_whole = certificate()
    for rows in (1, 10, 82):
        monkeypatch.setattr(_gap, "MARGIN_CHUNK_BYTES", rows * 8 * 4)
        chunked, v_chunked = certificate()
        assert chunked == whole
        np.testing.assert_array_equal(v_chunked, v_whole)
    # P and V against NumPy
    per_row = np.array([np_joint_objective(Xd[i:i + 1], labels[i:i + 1], W[:6].T, W[6],
                                           strategy, 0.0) for i in range(83)])
    primal = np.mean(weights * per_row) + 0.5 * alpha * np.sum(W ** 2)
    assert whole[0] == pytest.approx(primal, rel=1e-12)
    v_np = (Xd * (weights / (alpha * 83))[:, None]).T @ duals
    np.testing.assert_allclose(v_whole[:6], v_np, rtol=1e-12, atol=1e-15)
