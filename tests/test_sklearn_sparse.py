"""fastdual.sklearn's sparse estimators: Lasso, ElasticNet, LassoCV, ElasticNetCV against
scikit-learn's own, l1 / elastic-net logistic regression through LinearClassifier against
LogisticRegression, and scikit-learn's estimator checks."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn.linear_model as sk
from sklearn.exceptions import ConvergenceWarning as SklearnConvergenceWarning
from sklearn.model_selection import KFold
from sklearn.utils.estimator_checks import parametrize_with_checks

import fastdual
from conftest import WEIGHT_EQUIVALENCE
from fastdual.sklearn import ElasticNet, ElasticNetCV, Lasso, LassoCV, LinearClassifier


CV_WEIGHTS = {
    check: "on this check's data (30 features, 15 distinct rows) the best alpha is the grid's "
           "smallest, alpha_max / 1000, where the fit interpolates (14 features nonzero) and cd "
           "needs about 1500 epochs, more than max_epochs=1000: the weighted and the repeated "
           "fits, both stopped there, differ by 1e-3"
    for check in WEIGHT_EQUIVALENCE}


def expected_failures(estimator):
    if isinstance(estimator, (LassoCV, ElasticNetCV)):
        return CV_WEIGHTS
    if isinstance(estimator, LinearClassifier):
        return WEIGHT_EQUIVALENCE
    return {}


@parametrize_with_checks([Lasso(), ElasticNet(), LassoCV(alphas=10),
                          ElasticNetCV(alphas=10, l1_ratio=[0.5, 1.0]),
                          LinearClassifier(loss="logistic", l1_ratio=1.0,
                                           regularize_intercept=False, solver="cd")],
                         expected_failed_checks=expected_failures)
def test_scikit_learn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SklearnConvergenceWarning)
        # (scikit-learn's checks set max_iter on an estimator that has the parameter; here it
        # is max_epochs' deprecated name, tested in test_sklearn.py)
        warnings.filterwarnings("ignore", "max_iter is deprecated", DeprecationWarning)
        check(estimator)


def regression(n=120, d=40, seed=0, sparse=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    if sparse:
        X[rng.random(X.shape) < 0.6] = 0.0
    y = X[:, :6] @ rng.standard_normal(6) + 0.3 * rng.standard_normal(n) + 2.0
    return (sp.csr_matrix(X) if sparse else X), y


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("alpha", [0.3, 0.01])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_lasso_and_elastic_net_are_scikit_learns(alpha, fit_intercept, sparse):
    X, y = regression(sparse=sparse)
    w = np.random.default_rng(1).uniform(0.5, 2.0, y.shape[0])
    pairs = [(Lasso(alpha=alpha, fit_intercept=fit_intercept, tol=0, max_epochs=300),
              sk.Lasso(alpha=alpha, fit_intercept=fit_intercept, tol=1e-14, max_iter=10**5)),
             (ElasticNet(alpha=alpha, l1_ratio=0.3, fit_intercept=fit_intercept, tol=0,
                         max_epochs=300),
              sk.ElasticNet(alpha=alpha, l1_ratio=0.3, fit_intercept=fit_intercept, tol=1e-14,
                            max_iter=10**5))]
    for ours, theirs in pairs:
        for weights in (None, w):
            ours.fit(X, y, sample_weight=weights)
            theirs.fit(X, y, sample_weight=weights)
            np.testing.assert_allclose(ours.coef_, theirs.coef_, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(ours.intercept_, theirs.intercept_, rtol=1e-10,
                                       atol=1e-12)
            assert ours.model_.solver == "cd" and ours.model_.intercept_mode == (
                "free" if fit_intercept else "none")
            cert = fastdual.duality_gap(X, y, ours.coef_, ours.intercept_ if fit_intercept
                                        else None, loss="squared", alpha=alpha,
                                        l1_ratio=ours.l1_ratio, sample_weight=weights,
                                        regularize_intercept=False,
                                        dual_coef=ours.model_.dual_coef_)
            assert (cert.primal, cert.gap) == (ours.primal_, ours.gap_)
            assert ours.gap_ <= 1e-12 * ours.primal_ and ours.n_iter_ >= 300


def test_lasso_tol_is_the_relative_duality_gap_and_warm_start_pays():
    X, y = regression()
    lasso = Lasso(alpha=0.01, tol=1e-8).fit(X, y)
    assert lasso.converged_ and lasso.gap_ / lasso.primal_ <= 1e-8
    warm = Lasso(alpha=0.01, tol=1e-8, warm_start=True).fit(X, y)
    first = warm.n_iter_
    warm.set_params(alpha=0.009).fit(X, y)
    cold = Lasso(alpha=0.009, tol=1e-8).fit(X, y)
    assert warm.n_iter_ < cold.n_iter_ and first > 0
    np.testing.assert_allclose(warm.coef_, cold.coef_, rtol=1e-3, atol=1e-6)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_lasso_cv_picks_scikit_learns_alpha(sparse):
    X, y = regression(n=150, d=30, seed=2, sparse=sparse)
    cv = KFold(5)
    ours = LassoCV(cv=cv, alphas=30, tol=1e-12).fit(X, y)
    theirs = sk.LassoCV(cv=cv, alphas=30, tol=1e-12, max_iter=10**5).fit(X, y)
    # the grids: the same alpha_max (ours n eps above, for rounding), the same log spacing
    np.testing.assert_allclose(ours.alphas_, theirs.alphas_, rtol=1e-12)
    np.testing.assert_allclose(ours.mse_path_, theirs.mse_path_, rtol=1e-5)
    assert ours.alpha_ == pytest.approx(theirs.alpha_, rel=1e-12)
    np.testing.assert_allclose(ours.coef_, theirs.coef_, rtol=1e-4, atol=1e-6)
    assert ours.mse_path_.shape == (30, 5) and ours.converged_


def test_elastic_net_cv_picks_scikit_learns_alpha_and_l1_ratio():
    X, y = regression(n=150, d=30, seed=3)
    cv = KFold(4)
    ours = ElasticNetCV(l1_ratio=[0.2, 0.7, 1.0], cv=cv, alphas=20, tol=1e-12).fit(X, y)
    theirs = sk.ElasticNetCV(l1_ratio=[0.2, 0.7, 1.0], cv=cv, alphas=20, tol=1e-12,
                             max_iter=10**5).fit(X, y)
    np.testing.assert_allclose(ours.alphas_, theirs.alphas_, rtol=1e-12)
    np.testing.assert_allclose(ours.mse_path_, theirs.mse_path_, rtol=1e-5)
    assert ours.alpha_ == pytest.approx(theirs.alpha_, rel=1e-12)
    assert ours.l1_ratio_ == theirs.l1_ratio_
    assert ours.mse_path_.shape == (3, 20, 4)
    given = np.geomspace(1.0, 0.01, 7)
    fixed = ElasticNetCV(alphas=given, cv=3, tol=1e-8).fit(X, y)
    assert np.array_equal(fixed.alphas_, given) and fixed.alpha_ in given


@pytest.mark.parametrize("C", [0.05, 1.0])
def test_l1_logistic_is_logistic_regressions(C):
    rng = np.random.default_rng(4)
    X = rng.standard_normal((200, 20))
    y = np.where(X[:, :3] @ [1.0, -2.0, 1.0] + 0.5 * rng.standard_normal(200) > 0.3, 1, 0)
    # a free intercept: saga's objective; LIBLINEAR's regularised one: liblinear's
    for regularize_intercept, solver in ((False, "saga"), (True, "liblinear")):
        # (tol=0 runs every epoch: with pure l1 a gap at rounding, 1e-15, still leaves the
        # coefficients 1e-7 apart, for lack of strong convexity)
        ours = LinearClassifier(loss="logistic", l1_ratio=1.0, C=C, solver="cd",
                                regularize_intercept=regularize_intercept, tol=0,
                                max_epochs=500).fit(X, y)
        theirs = sk.LogisticRegression(l1_ratio=1.0, C=C, solver=solver, tol=1e-15,
                                       max_iter=10**5, random_state=1).fit(X, y)
        np.testing.assert_allclose(ours.coef_, theirs.coef_, rtol=1e-10, atol=1e-11)
        np.testing.assert_allclose(ours.intercept_, theirs.intercept_, rtol=1e-10, atol=1e-11)
        assert ours.model_.solver == "cd" and ours.gap_ <= 1e-14 * ours.primal_
        assert np.count_nonzero(ours.coef_) == np.count_nonzero(theirs.coef_) < 20
        np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), rtol=1e-7)


def test_bad_parameters_name_themselves():
    X, y = regression(n=40, d=8)
    with pytest.raises(ValueError, match="alpha must be"):
        Lasso(alpha=0.0).fit(X, y)
    with pytest.raises(ValueError, match="l1_ratio must be in"):
        ElasticNet(l1_ratio=2.0).fit(X, y)
    with pytest.raises(ValueError, match="alphas must be strictly decreasing"):
        LassoCV(alphas=[0.1, 1.0]).fit(X, y)
    with pytest.raises(ValueError, match=r"eps must be a number in \(0, 1\)"):
        LassoCV(eps=2.0).fit(X, y)
    with pytest.raises(ValueError, match="l1_ratio must be a number or a non-empty list"):
        ElasticNetCV(l1_ratio=[]).fit(X, y)
