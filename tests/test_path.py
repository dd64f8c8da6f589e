"""fastdual.path, fastdual.alpha_max and cross-validation over the path's alphas, against
independent references: hand-written loss derivatives and constant fits (alpha_max by its KKT
conditions), scikit-learn's enet_path and LassoCV, cold-started trainings."""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize_scalar
from sklearn.linear_model import LassoCV, enet_path
from sklearn.model_selection import KFold

import fastdual

# phi'(y, z) written out here, independently of fastdual's loss classes
DERIVATIVES = {
    "squared": lambda y, z: z - y,
    "logistic": lambda y, z: -y / (1.0 + np.exp(y * z)),
    "squared_hinge": lambda y, z: -2.0 * y * np.maximum(0.0, 1.0 - y * z),
}
VALUES = {
    "squared": lambda y, z: 0.5 * (z - y) ** 2,
    "logistic": lambda y, z: np.logaddexp(0.0, -y * z),
    "squared_hinge": lambda y, z: np.maximum(0.0, 1.0 - y * z) ** 2,
}


def data(loss, n=90, d=25, seed=0, weights=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[:, 3] *= 3.0
    score = X[:, :4] @ np.array([1.5, -2.0, 0.0, 0.7]) + 0.5 * rng.standard_normal(n)
    # targets with a nonzero mean / unbalanced classes, so that the free intercept matters
    y = score + 2.0 if loss == "squared" else np.where(score > 0.8, 1.0, -1.0)
    w = rng.uniform(0.2, 3.0, n) if weights else None
    return X, y, w


def reference_intercept(loss, y, c):
    """The constant minimising sum_i c_i phi(y_i, b): closed forms, checked by scipy."""
    pos, neg = c[y > 0].sum(), c[y < 0].sum()
    closed = {"squared": lambda: np.sum(c * y) / np.sum(c),
              "logistic": lambda: np.log(pos / neg),
              "squared_hinge": lambda: (pos - neg) / (pos + neg)}[loss]()
    numeric = minimize_scalar(lambda b: np.sum(c * VALUES[loss](y, b)), bracket=(-1.0, 1.0),
                              tol=1e-12).x
    assert abs(closed - numeric) < 1e-6
    return closed


def reference_gradient(X, y, c, loss, intercept):
    """(1/n) X'^T (c * phi'(y, z0)) at w = 0 by numpy, X' with the intercept's column when it
    is regularised; z0 the free intercept's best constant or 0."""
    n = X.shape[0]
    c = np.ones(n) if c is None else c * n / np.sum(c)
    z0 = reference_intercept(loss, y, c) if intercept == "free" else 0.0
    r = c * DERIVATIVES[loss](y, np.full(n, z0))
    columns = np.hstack([X, np.ones((n, 1))]) if intercept == "regularised" else X
    return columns.T @ r / n


INTERCEPTS = {"free": dict(fit_intercept=True, regularize_intercept=False),
              "regularised": dict(fit_intercept=True, regularize_intercept=True),
              "none": dict(fit_intercept=False)}


@pytest.mark.parametrize("weights", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("intercept", list(INTERCEPTS))
@pytest.mark.parametrize("loss", list(DERIVATIVES))
def test_alpha_max_is_the_smallest_alpha_with_w_zero_optimal(loss, intercept, weights):
    X, y, c = data(loss, weights=weights)
    l1_ratio = 0.8
    top = fastdual.alpha_max(X, y, loss=loss, l1_ratio=l1_ratio, sample_weight=c,
                             **INTERCEPTS[intercept])
    gradient = reference_gradient(X, y, c, loss, intercept)
    np.testing.assert_allclose(top, np.max(np.abs(gradient)) / l1_ratio, rtol=1e-12)
    # KKT at w = 0 (with the free intercept at its best constant): |g_j| <= alpha l1_ratio
    assert np.all(np.abs(gradient) <= top * (1 + 1e-9) * l1_ratio)
    assert not np.all(np.abs(gradient) <= top * (1 - 1e-6) * l1_ratio)
    # and cd's certified solutions agree: zero just above alpha_max, not just below (the
    # path starts from the best constant: a cold start may stop, certified to 1e-14, with a
    # coefficient of 1e-9 that its gap cannot tell from 0)
    path = fastdual.path(X, y, loss=loss, l1_ratio=l1_ratio, sample_weight=c, tol=1e-14,
                         alphas=[top * (1 + 1e-9), top * (1 - 1e-6)], max_epochs=5000,
                         **INTERCEPTS[intercept])
    assert not path.coefs[:, 0].any() and path.coefs[:, 1].any()


@pytest.mark.parametrize("weights", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("intercept", ["free", "regularised"])
@pytest.mark.parametrize("loss", list(DERIVATIVES))
def test_the_path_starts_at_zero_and_leaves_it_at_once(loss, intercept, weights):
    X, y, c = data(loss, weights=weights)
    tol = 1e-8
    path = fastdual.path(X, y, loss=loss, n_alphas=8, eps=0.1, sample_weight=c, tol=tol,
                         **INTERCEPTS[intercept])
    assert not path.coefs[:, 0].any() and path.nnz[0] == 0
    assert path.coefs[:, 1].any() and path.nnz[1] > 0
    np.testing.assert_allclose(path.alphas[-1] / path.alphas[0], 0.1)
    assert np.all(np.diff(path.alphas) < 0)
    if intercept == "free":       # the first model is the best constant
        n = X.shape[0]
        weights_ = np.ones(n) if c is None else c * n / c.sum()
        np.testing.assert_allclose(path.intercepts[0], reference_intercept(loss, y, weights_),
                                   rtol=1e-9, atol=1e-12)
    for model, gap, rel in zip(path.models, path.gaps, path.relative_gaps):
        assert model.converged_ and model.solver == "cd"
        assert gap == model.gap_ and rel == model.relative_gap_ <= tol


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("l1_ratio", [1.0, 0.5])
def test_the_squared_path_is_scikit_learns_enet_path(l1_ratio, sparse):
    X, y, _ = data("squared", n=70, d=30, seed=1)
    rng = np.random.default_rng(1)
    X[rng.random(X.shape) < 0.5] = 0.0
    path = fastdual.path(sp.csr_matrix(X) if sparse else X, y, l1_ratio=l1_ratio, n_alphas=30,
                         eps=1e-2, tol=1e-13, max_epochs=20_000)
    # enet_path has no intercept: with a free one the coefficients are those of the centred
    # problem, and the intercept is mean(y) - mean(X) . w
    Xc, yc = X - X.mean(axis=0), y - y.mean()
    top = np.max(np.abs(Xc.T @ yc)) / (X.shape[0] * l1_ratio)    # scikit-learn's alpha_max
    np.testing.assert_allclose(path.alphas, np.geomspace(top, top * 1e-2, 30), rtol=1e-12)
    alphas, coefs, _ = enet_path(Xc, yc, l1_ratio=l1_ratio, alphas=path.alphas, tol=1e-14,
                                 max_iter=100_000)
    for k in range(1, alphas.shape[0]):
        scale = np.linalg.norm(coefs[:, k])
        assert np.linalg.norm(path.coefs[:, k] - coefs[:, k]) <= 1e-6 * scale, k
    assert not path.coefs[:, 0].any() and not coefs[:, 0].any()
    np.testing.assert_allclose(path.intercepts, y.mean() - X.mean(axis=0) @ coefs,
                               rtol=1e-6, atol=1e-9)
    # each warm-started model is the cold-started training at its alpha
    for k in (3, 15, 29):
        cold = fastdual.train(X, y, loss="squared", alpha=alphas[k], l1_ratio=l1_ratio,
                              regularize_intercept=False, solver="cd", tol=1e-13)
        np.testing.assert_allclose(path.coefs[:, k], cold.coef_, rtol=1e-6,
                                   atol=1e-6 * np.abs(cold.coef_).max())


def test_path_unpacks_like_enet_path_and_warm_starts():
    X, y, _ = data("squared")
    path = fastdual.path(X, y, n_alphas=20, tol=1e-10)
    alphas, coefs, gaps = path
    assert alphas is path.alphas and coefs is path.coefs and gaps is path.gaps
    assert coefs.shape == (X.shape[1], 20) and path.intercepts.shape == (20,)
    assert np.array_equal(path.nnz, np.count_nonzero(coefs, axis=0))
    assert np.array_equal(path.epochs, [m.n_epochs_ for m in path.models])
    assert [m.alpha for m in path.models] == list(alphas)
    cold = [fastdual.train(X, y, loss="squared", alpha=a, l1_ratio=1.0, tol=1e-10,
                           regularize_intercept=False, solver="cd") for a in alphas]
    assert path.epochs.sum() < sum(m.n_epochs_ for m in cold)
    assert "20 alphas" in repr(path)


def test_a_k_class_path_is_one_vs_rest():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((120, 10))
    y = np.argmax(X[:, :3] + 0.3 * rng.standard_normal((120, 3)), axis=1)
    path = fastdual.path(X, y, loss="logistic", n_alphas=5, eps=0.2, tol=1e-8)
    assert path.coefs.shape == (3, 10, 5) and path.intercepts.shape == (3, 5)
    assert not path.coefs[..., 0].any() and path.coefs[..., 1].any()
    # the grid starts at the largest of the three binary problems' alpha_max
    tops = [fastdual.alpha_max(X, np.where(y == m, 1, -1), loss="logistic") for m in range(3)]
    np.testing.assert_allclose(path.alphas[0], max(tops), rtol=1e-12)
    assert all(m.multiclass == "ovr" and m.converged_ for m in path.models)


def test_given_alphas_and_elastic_net_and_pure_l2():
    X, y, _ = data("squared")
    path = fastdual.path(X, y, l1_ratio=0.0, alphas=[1.0, 0.1], tol=1e-14)
    # ridge with a free intercept in closed form: centred normal equations
    Xc, yc = X - X.mean(axis=0), y - y.mean()
    n = X.shape[0]
    ridge = np.linalg.solve(Xc.T @ Xc / n + 0.1 * np.eye(X.shape[1]), Xc.T @ yc / n)
    np.testing.assert_allclose(path.coefs[:, 1], ridge, rtol=1e-6, atol=1e-7)
    assert path.coefs[:, 0].all()       # l2 keeps every coefficient


BAD = [
    (dict(alphas=[0.1, 0.2]), "alphas must be strictly decreasing"),
    (dict(alphas=[0.1, 0.1]), "alphas must be strictly decreasing"),
    (dict(alphas=[1.0, -0.1]), "alphas must be finite and positive"),
    (dict(alphas=[1.0, np.nan]), "alphas must be finite and positive"),
    (dict(alphas=[]), "alphas must be a non-empty 1-D"),
    (dict(l1_ratio=1.5), r"l1_ratio must be in \[0, 1\]"),
    (dict(l1_ratio=0.0), "l1_ratio=0 .* no finite alpha_max"),
    (dict(n_alphas=0), "n_alphas must be >= 1"),
    (dict(eps=1.0), r"eps must be a number in \(0, 1\)"),
    (dict(eps=0.0), r"eps must be a number in \(0, 1\)"),
    (dict(alpha=0.1), "path sets alpha and warm_start itself"),
    (dict(loss="absolute"), "solver='cd'.*absolute.*sdca"),
]


@pytest.mark.parametrize("kwargs, message", BAD, ids=[m for _, m in BAD])
def test_bad_input_names_the_argument(kwargs, message):
    X, y, _ = data("squared", n=30, d=5)
    with pytest.raises(ValueError, match=message):
        fastdual.path(X, y, **kwargs)


def test_constant_targets_have_no_path():
    X, _, _ = data("squared", n=30, d=5)
    with pytest.raises(ValueError, match="alpha_max is 0"):
        fastdual.path(X, np.full(30, 2.0))


def test_cross_validation_on_the_path_is_lasso_cv():
    X, y, _ = data("squared", n=100, d=30, seed=4)
    folds = list(KFold(5).split(X))
    scores = fastdual.cross_validate(X, y, loss="squared", alphas="auto", n_alphas=40,
                                     folds=folds, tol=1e-14, l1_ratio=1.0)
    sk = LassoCV(cv=KFold(5), alphas=scores["alphas"], tol=1e-14, max_iter=100_000).fit(X, y)
    Xc, yc = X - X.mean(axis=0), y - y.mean()
    top = np.max(np.abs(Xc.T @ yc)) / X.shape[0]    # scikit-learn's alpha_max
    np.testing.assert_allclose(scores["alphas"], np.geomspace(top, top * 1e-3, 40), rtol=1e-12)
    np.testing.assert_allclose(scores["per_fold"].T, sk.mse_path_, rtol=1e-6)
    assert scores["best_alpha"] == pytest.approx(sk.alpha_, rel=1e-12)
    np.testing.assert_allclose(scores["mse"], sk.mse_path_.mean(axis=1), rtol=1e-6)
    np.testing.assert_allclose(scores["std"], sk.mse_path_.std(axis=1), rtol=1e-5)
    # the one-standard-error rule, by hand: the largest alpha within a standard error
    means, errors = sk.mse_path_.mean(axis=1), sk.mse_path_.std(axis=1) / np.sqrt(5)
    best = np.argmin(means)
    expected = max(a for a, m in zip(sk.alphas_, means) if m <= means[best] + errors[best])
    assert scores["alpha_1se"] == pytest.approx(expected, rel=1e-12)
    assert scores["alpha_1se"] >= scores["best_alpha"]


def test_cross_validation_on_the_path_classifies_and_checks_its_folds():
    X, y, _ = data("logistic", n=80, d=8)
    folds = list(KFold(4, shuffle=True, random_state=0).split(X))
    scores = fastdual.cross_validate(X, y, loss="logistic", alphas="auto", n_alphas=6,
                                     eps=0.05, folds=folds, tol=1e-6)
    assert scores["per_fold"].shape == (4, 6) and "accuracy" in scores
    assert scores["accuracy"][-1] > scores["accuracy"][0]
    # at an alpha above every fold's alpha_max each fold's model is the constant: its
    # training rows' majority class
    scores = fastdual.cross_validate(X, y, loss="logistic", alphas=[1e3, 1e-2], folds=folds,
                                     tol=1e-6)
    for f, (train_rows, test_rows) in enumerate(folds):
        majority = 1.0 if np.sum(y[train_rows] == 1) > np.sum(y[train_rows] == -1) else -1.0
        assert scores["per_fold"][f, 0] == np.mean(y[test_rows] == majority)
    with pytest.raises(ValueError, match="give Cs .* or alphas"):
        fastdual.cross_validate(X, y, Cs=[1.0], alphas="auto")
    with pytest.raises(ValueError, match="alphas must be 'auto'"):
        fastdual.cross_validate(X, y, alphas="all")
    with pytest.raises(ValueError, match=r"folds\[0\]'s test indices"):
        fastdual.cross_validate(X, y, alphas="auto", folds=[(np.arange(40), []),
                                                            (np.arange(40), [1])])


def test_plot_path_draws_every_coefficient_against_a_decreasing_alpha():
    matplotlib = pytest.importorskip("matplotlib")      # the "plot" extra
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    X, y, _ = data("squared", n=60, d=8)
    path = fastdual.path(X, y, n_alphas=12, eps=1e-2, tol=1e-8)
    fig = fastdual.plot_path(path, gaps=True)
    ax, gap_ax = fig.axes[:2]
    drawn = [line for line in ax.get_lines() if len(line.get_xdata()) == 12]
    entered = np.flatnonzero(path.coefs.any(axis=1))
    assert len(drawn) == entered.shape[0]
    for line, j in zip(drawn, entered):
        assert np.array_equal(line.get_xdata(), path.alphas)
        assert np.array_equal(line.get_ydata(), path.coefs[j])
    assert ax.get_xscale() == "log" and ax.xaxis_inverted()
    assert gap_ax.get_yscale() == "log"
    np.testing.assert_allclose(gap_ax.get_lines()[0].get_ydata(),
                               np.maximum(path.relative_gaps, np.finfo(float).tiny))
    plt.close(fig)
    fig = fastdual.plot_path(path, features=[0, 1], labels=["a", "b"])
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["a", "b"]
    plt.close(fig)
    with pytest.raises(ValueError, match="features must be indices"):
        fastdual.plot_path(path, features=[8])
    with pytest.raises(ValueError, match="labels has 1 entries for 2 features"):
        fastdual.plot_path(path, features=[0, 1], labels=["a"])


def test_the_sparse_models_page_runs(tmp_path, monkeypatch):
    """docs/sparse.md's examples, run as written, one namespace (the page's order)."""
    pytest.importorskip("matplotlib")
    import pathlib
    import re
    page = pathlib.Path(__file__).resolve().parent.parent / "docs" / "sparse.md"
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
    assert len(blocks) == 5
    monkeypatch.chdir(tmp_path)            # the page saves a figure
    namespace = {}
    for block in blocks:
        exec(compile(block, str(page), "exec"), namespace)
    assert namespace["path"].nnz[0] == 0 and namespace["path"].nnz[-1] == 10
    assert (tmp_path / "diabetes_path.png").exists()
    assert namespace["clf"].model_.solver == "cd" and namespace["cv"].converged_


def test_cross_validation_weighs_the_test_rows_as_repeated_rows():
    X, y, _ = data("squared", n=60, d=8, seed=5)
    counts = np.random.default_rng(5).integers(1, 4, 20)        # the test rows' weights
    train_rows, test_rows = np.arange(20, 60), np.arange(20)
    weights = np.concatenate([counts, np.ones(40)])
    weighted = fastdual.cross_validate(
        X, y, loss="squared", alphas="auto", n_alphas=5, sample_weight=weights, tol=1e-10,
        folds=[(train_rows, test_rows), (test_rows, train_rows)])
    # the same folds with each test row of the first fold repeated, and unweighted: the first
    # fold trains the same model and scores the same rows
    repeated_rows = np.repeat(test_rows, counts)
    Xr = np.vstack([X[repeated_rows], X[train_rows]])
    yr = np.concatenate([y[repeated_rows], y[train_rows]])
    m = repeated_rows.shape[0]
    repeated = fastdual.cross_validate(
        Xr, yr, loss="squared", alphas=weighted["alphas"], tol=1e-10,
        folds=[(np.arange(m, m + 40), np.arange(m)), (np.arange(m), np.arange(m, m + 40))])
    np.testing.assert_allclose(weighted["per_fold"][0], repeated["per_fold"][0], rtol=1e-9)
