"""Malformed input is refused with an error naming the argument, before any kernel reads it;
sample weights, however given, keep LIBLINEAR's C convention (C multiplies every weight)."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import fastdual
from conftest import binary_problem, np_objective, regression_problem

N, D = 30, 4
X, Y = binary_problem(n=N, d=D, seed=0)
XR, YR = regression_problem(n=N, d=D, seed=0)
COEF = np.array([0.5, -0.25, 0.125, 1.0])


def labels_with(value, index=3, base=Y):
    """Y as a list with one entry replaced (lists keep mixed types as they are)."""
    out = list(base)
    out[index] = value
    return out


def object_labels_with(value, index=3, base=Y):
    out = np.array(base, dtype=object)
    out[index] = value
    return out


def shortened(part, keep, fmt="csr", index_dtype=np.int32, container=sp.csr_matrix):
    """A sparse X whose `part` array is cut to `keep` entries after construction (scipy checks
    the lengths only when it builds the matrix), so the malformed matrix reaches fastdual."""
    M = container(X).asformat(fmt)
    M.indices = M.indices.astype(index_dtype)
    M.indptr = M.indptr.astype(index_dtype)
    full = int(M.indptr[-1])
    setattr(M, part, getattr(M, part)[:keep].copy())
    assert sp.issparse(M) and M.format == fmt and full == N * D
    assert len(getattr(M, part)) == keep < int(M.indptr[-1])
    return M


def wrapping_indptr():
    """int64 indptr whose row 1 pointer is 2**32 past its true value: invalid for scipy, but it
    narrows to the valid int32 pointer, so only a range check before narrowing can refuse it."""
    M = sp.csr_matrix(X)
    indptr = M.indptr.astype(np.int64)
    indptr[1] += 2**32
    M.indices = M.indices.astype(np.int64)
    M.indptr = indptr
    assert M.indptr.astype(np.int32)[1] == sp.csr_matrix(X).indptr[1]
    return M


def float_indices():
    """A CSR X whose column indices are floats with fractions (they used to be truncated)."""
    M = sp.csr_matrix(X)
    M.indices = M.indices.astype(np.float64) + 0.5
    return M


def nan_model(part="coef"):
    model = fastdual.train(X, Y, max_epochs=3, tol=0.0)
    if part == "coef":
        model.coef_[:] = np.nan
    else:
        model.intercept_ = np.inf
    model.dual_coef_ = None
    return model


def three_class_model():
    return fastdual.train(X, np.arange(N) % 3, max_epochs=3, tol=0.0)


def train(X_, y_, **kwargs):
    return lambda: fastdual.train(X_, y_, max_epochs=3, tol=0.0, random_state=0, **kwargs)


def gap(X_, y_, **kwargs):
    kwargs = {"loss": "hinge", "C": 1.0, **kwargs}
    return lambda: fastdual.duality_gap(X_, y_, COEF, 0.0, **kwargs)


CASES = [
    # targets: None, NaN/inf and mixed types name the bad values, never a class count
    ("y-list-None", train(X, labels_with(None)), ValueError, r"^y contains None at index 3$"),
    ("y-list-None-strings", train(X, labels_with(None, base=np.where(Y > 0, "a", "b"))),
     ValueError, r"^y contains None at index 3$"),
    ("y-object-None", train(X, object_labels_with(None)), ValueError, r"y contains None at index 3"),
    ("y-mixed-list", train(X, labels_with("a")), TypeError, r"^y mixes strings and numbers"),
    ("y-mixed-object", train(X, object_labels_with("a")), TypeError, r"^y mixes strings and numbers"),
    ("y-mixed-1-a-2.0", train(X, [1, "a", 2.0] + [1] * (N - 3)), TypeError,
     r"^y mixes strings and numbers"),
    ("y-object-nan", train(X, object_labels_with(np.nan)), ValueError,
     r"^y contains NaN or infinity"),
    ("y-float-nan", train(X, labels_with(np.nan)), ValueError, r"^y contains NaN or infinity"),
    ("y-float-inf", train(X, np.where(np.arange(N) == 3, np.inf, Y)), ValueError,
     r"^y contains NaN or infinity"),
    ("y-object-other", train(X, object_labels_with({"a": 1})), TypeError,
     r"^y must hold numbers or strings, got dict at index 3"),
    ("y-regression-None", train(XR, labels_with(None, base=YR), loss="squared"), ValueError,
     r"^y contains None at index 3$"),
    ("y-regression-mixed", train(XR, labels_with("a", base=YR), loss="squared"), TypeError,
     r"^y mixes strings and numbers"),
    ("y-regression-object-nan", train(XR, object_labels_with(np.nan, base=YR), loss="squared"),
     ValueError, r"^y contains NaN or infinity"),
    ("gap-y-None", gap(X, labels_with(None)), ValueError, r"^y contains None at index 3$"),
    ("gap-y-mixed", gap(X, labels_with("a")), TypeError, r"^y mixes strings and numbers"),
    ("gap-y-nan", gap(X, object_labels_with(np.nan)), ValueError, r"^y contains NaN or infinity"),
    # sample weights
    ("w-2d", train(X, Y, sample_weight=np.ones((N, 1))), ValueError, r"^sample_weight must be 1-D"),
    ("w-length", train(X, Y, sample_weight=np.ones(N - 1)), ValueError,
     rf"^sample_weight has {N - 1} entries but X has {N} samples"),
    ("w-empty", train(X, Y, sample_weight=[]), ValueError,
     rf"^sample_weight has 0 entries but X has {N} samples"),
    ("w-scalar-negative", train(X, Y, sample_weight=-1.0), ValueError, r"^sample_weight must be >= 0"),
    ("w-scalar-zero", train(X, Y, sample_weight=0.0), ValueError, r"positive sum"),
    ("w-scalar-nan", train(X, Y, sample_weight=np.nan), ValueError, r"^sample_weight contains NaN"),
    ("w-scalar-inf", train(X, Y, sample_weight=np.inf), ValueError, r"^sample_weight contains NaN"),
    ("w-string", train(X, Y, sample_weight="1"), TypeError, r"^sample_weight must be numeric"),
    ("gap-w-length", gap(X, Y, sample_weight=[1.0, 2.0]), ValueError,
     rf"^sample_weight has 2 entries but X has {N} samples"),
    # CSR arrays shorter than indptr says: refused before any kernel (or scipy's tocsr) reads them
    ("csr-data-short", train(shortened("data", 5), Y), ValueError,
     rf"^X\.data has 5 entries but indptr\[-1\] is {N * D}$"),
    ("csr-data-one-short", train(shortened("data", N * D - 1), Y), ValueError,
     rf"^X\.data has {N * D - 1} entries but indptr\[-1\] is {N * D}$"),
    ("csr-data-empty", train(shortened("data", 0), Y), ValueError,
     rf"^X\.data has 0 entries but indptr\[-1\] is {N * D}$"),
    ("csr-indices-short", train(shortened("indices", 9), Y), ValueError,
     rf"^X\.indices has 9 entries but indptr\[-1\] is {N * D}$"),
    ("csr-int64-data-short", train(shortened("data", 5, index_dtype=np.int64), Y), ValueError,
     rf"^X\.data has 5 entries but indptr\[-1\] is {N * D}$"),
    ("csr-int64-indices-short", train(shortened("indices", 9, index_dtype=np.int64), Y),
     ValueError, rf"^X\.indices has 9 entries but indptr\[-1\] is {N * D}$"),
    ("csc-data-short", train(shortened("data", 5, fmt="csc"), Y), ValueError,
     rf"^X\.data has 5 entries but indptr\[-1\] is {N * D}$"),
    ("csr-array-data-short", train(shortened("data", 5, container=sp.csr_array), Y), ValueError,
     rf"^X\.data has 5 entries but indptr\[-1\] is {N * D}$"),
    ("csr-int64-indptr-wraps", train(wrapping_indptr(), Y), ValueError,
     r"^X is not a valid CSR matrix: indptr has entries outside"),
    ("gap-csr-data-short", gap(shortened("data", 5), Y), ValueError,
     rf"^X\.data has 5 entries but indptr\[-1\] is {N * D}$"),
    ("gap-csr-indices-short", gap(shortened("indices", 9), Y), ValueError,
     rf"^X\.indices has 9 entries but indptr\[-1\] is {N * D}$"),
    # strengths and loss parameters at and past the ends of what trains a finite model
    ("C-tiny", train(X, Y, C=1e-320), ValueError,
     r"^C=1e-320 gives alpha = 1 / \(C \* sum of sample weights\) = inf, outside the range "
     r"fastdual trains in, \[1e-100, 1e\+300\]: C must be in \[3.33e-302, 3.33e\+98\]"),
    ("C-huge", train(X, Y, C=1e308), ValueError, r"^C=1e\+308 gives alpha = .* = 0, outside"),
    ("gap-C-huge", gap(X, Y, C=1e308), ValueError, r"^C=1e\+308 gives alpha"),
    ("C-weights-overflow", train(X, Y, sample_weight=1e308), ValueError,
     r"^sample_weight sums to more than the largest float, so alpha = 1 / \(C \* sum\) = 0"),
    ("alpha-tiny", train(X, Y, alpha=1e-101), ValueError, r"^alpha must be in \[1e-100, 1e\+300\]"),
    ("alpha-huge", train(X, Y, alpha=1e301), ValueError, r"^alpha must be in \[1e-100, 1e\+300\]"),
    ("gamma-inf", train(X, Y, loss="smooth_hinge", gamma=np.inf), ValueError,
     r"^gamma must be > 0 and finite, with 1/gamma finite, for smooth_hinge, got inf"),
    ("gamma-subnormal", train(X, Y, loss="smooth_hinge", gamma=1e-310), ValueError,
     r"^gamma must be > 0 and finite, with 1/gamma finite, for smooth_hinge, got 1e-310"),
    ("epsilon-inf", train(XR, YR, loss="epsilon_insensitive", epsilon=np.inf), ValueError,
     r"^epsilon must be >= 0 and finite"),
    ("y-regression-huge", train(XR, YR * 1e300, loss="squared"), ValueError,
     r"^y has values up to .* regression targets must be at most 1e\+100: rescale y"),
    ("intercept-scaling-huge", train(X, Y, intercept_scaling=1e300), ValueError,
     r"intercept_scaling=1e\+300 .* squared row norms overflow"),
    # free intercept and RDA's variants: combinations that cannot work, refused by name
    ("free-intercept-spdc", train(X, Y, regularize_intercept=False, solver="spdc"), ValueError,
     r"^solver='spdc' cannot fit a free intercept \(regularize_intercept=False\); use one of "
     r"\['agm', 'cd', 'newton', 'rda', 'sdca'\]"),
    ("free-intercept-sdca-l1", train(X, Y, regularize_intercept=False, solver="sdca",
                                     l1_ratio=0.5), ValueError,
     r"^solver='sdca' fits a free intercept \(regularize_intercept=False\) with the l2 penalty "
     r"only; for the elastic net or l1 with a free intercept use solver='agm', 'cd', 'newton' or 'rda'"),
    ("free-intercept-not-bool", train(X, Y, regularize_intercept="no"), TypeError,
     r"^regularize_intercept must be True or False"),
    ("gap-free-intercept-refine", gap(X, Y, regularize_intercept=False, refine_epochs=5,
                                      l1_ratio=0.5),
     ValueError,
     r"^refine_epochs must be 0 or None with a free intercept and an l1 term"),
    ("rda-variant", train(X, Y, solver="rda", variant="fast"), ValueError,
     r"^variant must be one of \['basic', 'enhanced', 'strongly_convex', 'accelerated'\]"),
    ("rda-rho-basic", train(X, Y, solver="rda", rho=1.0), ValueError,
     r"^rho is the parameter of variant='enhanced'"),
    ("rda-gamma-negative", train(X, Y, solver="rda", rda_gamma=-1.0), ValueError,
     r"^rda_gamma must be a positive finite number or None"),
    ("rda-strongly-convex-l1", train(X, Y, solver="rda", variant="strongly_convex", l1_ratio=1.0),
     ValueError, r"^variant='strongly_convex' needs an l2 term"),
    ("rda-strongly-convex-gamma", train(X, Y, solver="rda", variant="strongly_convex",
                                        rda_gamma=1.0), ValueError, r"takes no rda_gamma"),
    ("rda-strongly-convex-free", train(X, Y, solver="rda", variant="strongly_convex",
                                       regularize_intercept=False), ValueError,
     r"no proximal term for a free intercept"),
    ("rda-accelerated-hinge", train(X, Y, loss="hinge", solver="rda", variant="accelerated"),
     ValueError, r"^variant='accelerated' needs a smooth loss"),
    ("rda-accelerated-average", train(X, Y, solver="rda", variant="accelerated",
                                      output="average"), ValueError, r"outputs its own"),
    ("rda-lipschitz-basic", train(X, Y, solver="rda", lipschitz=1.0), ValueError,
     r"^lipschitz is the parameter of variant='accelerated'"),
    ("rda-warm-start", train(X, Y, solver="rda", warm_start=fastdual.train(X, Y)), ValueError,
     r"^solver='rda' does not take warm_start"),
    ("stream-epochs", lambda: fastdual.train_stream(iter([(X, Y)]), loss="hinge", max_epochs=0),
     ValueError, r"^max_epochs must be"),
    ("stream-missing-file", lambda: fastdual.train_stream("/nonexistent/data.svm"),
     FileNotFoundError, r"no such file"),
    # the probe's unclear and silent cases: each named
    ("csr-float-indices", train(float_indices(), Y), TypeError,
     r"^X\.indices must hold integers, got dtype float64$"),
    ("class-weight-all-zero", train(X, (Y > 0).astype(int), class_weight={0: 0.0, 1: 0.0}),
     ValueError, r"^class_weight \{0: 0\.0, 1: 0\.0\} gives every sample the weight 0$"),
    ("verbose-string", train(X, Y, verbose="loud"), TypeError,
     r"^verbose must be an integer >= 0 or a bool, got 'loud'$"),
    ("verbose-negative", train(X, Y, verbose=-1), TypeError, r"^verbose must be an integer >= 0"),
    ("warm-start-nan", train(X, Y, warm_start=nan_model()), ValueError,
     r"^warm_start's coef_ contains NaN or infinity$"),
    ("warm-start-inf-intercept", train(X, Y, warm_start=nan_model("intercept")), ValueError,
     r"^warm_start's intercept_ contains NaN or infinity$"),
    ("warm-start-k-class", train(X, Y, warm_start=three_class_model()), ValueError,
     r"^warm_start is a 3-class model \(coef_ of shape \(3, 4\)\); this problem is one binary"),
    ("predict-nan-model", lambda: fastdual.Model(np.full(D, np.nan), 0.0, np.array([0, 1]),
                                                 loss="hinge").predict(X),
     ValueError, r"^the model's coef_ or intercept_ contains NaN or infinity$"),
    ("predict-inf-intercept", lambda: fastdual.Model(COEF, np.inf, np.array([0, 1]),
                                                     loss="hinge").predict(X),
     ValueError, r"^the model's coef_ or intercept_ contains NaN or infinity$"),
]


@pytest.mark.parametrize("call, error, message", [case[1:] for case in CASES],
                         ids=[case[0] for case in CASES])
def test_bad_input_is_refused(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("labels, positive", [
    (Y.astype(int), 1), (Y, 1.0), ((Y > 0), True), (np.where(Y > 0, "yes", "no"), "yes"),
    (list(np.where(Y > 0, "yes", "no")), "yes"), (np.where(Y > 0, "b", "a").astype(object), "b"),
    (np.where(Y > 0, 7.5, 2).astype(object), 7.5), (list(np.where(Y > 0, 3, 10)), 10),
])
def test_consistent_labels_keep_working(labels, positive):
    """Two labels of one type: classes sorted, classes_[1] is +1 (the model of +-1 labels,
    with their signs swapped when the larger label is the negative class)."""
    ref = fastdual.train(X, Y, tol=0.0, max_epochs=5, random_state=0)
    model = fastdual.train(X, labels, tol=0.0, max_epochs=5, random_state=0)
    assert model.classes_.shape == (2,) and model.classes_[1] == positive
    assert sorted(model.classes_.tolist()) == model.classes_.tolist()
    sign = 1.0 if positive in np.asarray(labels)[Y > 0] else -1.0
    np.testing.assert_allclose(model.coef_, sign * ref.coef_, rtol=1e-12, atol=1e-15)


def _weights(c):
    return {"scalar": c, "0-d": np.array(c), "length-1": [c], "full": np.full(N, c)}


@pytest.mark.parametrize("c", [1.0, 2.0, 0.25, 3])
def test_constant_weights_are_a_factor_on_C(c):
    """Weight c on every sample, however given, is C * c without weights (exactly: powers of two,
    or an integer whose products are exact). Weights of 1 are no weights."""
    C = 0.5
    ref = fastdual.train(X, Y, C=C * c, tol=1e-10, max_epochs=5000, random_state=0)
    ref_cert = fastdual.duality_gap(X, Y, ref.coef_, ref.intercept_, C=C * c)
    for how, w in _weights(c).items():
        model = fastdual.train(X, Y, C=C, sample_weight=w, tol=1e-10, max_epochs=5000,
                               random_state=0)
        np.testing.assert_allclose(model.coef_, ref.coef_, rtol=1e-12, atol=1e-15, err_msg=how)
        assert model.alpha == pytest.approx(1.0 / (C * c * N), rel=1e-15), how
        cert = fastdual.duality_gap(X, Y, ref.coef_, ref.intercept_, C=C, sample_weight=w)
        # The gap itself is at rounding level of the primal (1e-12 relative): compared absolutely.
        np.testing.assert_allclose(cert, ref_cert, rtol=1e-12, atol=1e-14, err_msg=how)


@pytest.mark.parametrize("how", ["scalar", "length-1", "full"])
def test_constant_weights_match_an_independent_reference(how):
    """LIBLINEAR (through scikit-learn) with per-sample C_i = C c: its optimum is certified by
    fastdual under the same C, and its primal value is that of a plain NumPy objective."""
    from sklearn.linear_model import LogisticRegression
    C, c = 0.5, 3.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # liblinear's deprecation notices in new scikit-learn
        clf = LogisticRegression(C=C, solver="liblinear", tol=1e-12, max_iter=100_000,
                                 intercept_scaling=1.0).fit(X, Y, sample_weight=np.full(N, c))
    w, b = clf.coef_.ravel(), float(clf.intercept_[0])
    cert = fastdual.duality_gap(X, Y, w, b, loss="logistic", C=C, sample_weight=_weights(c)[how])
    assert cert.relative_gap < 1e-7
    assert cert.primal == pytest.approx(
        np_objective(X, Y, w, b, loss="logistic", l2=1.0 / (C * c * N), l1=0.0,
                     fit_intercept=True), rel=1e-10)
    model = fastdual.train(X, Y, loss="logistic", C=C, sample_weight=_weights(c)[how],
                           tol=1e-10, max_epochs=5000, random_state=0)
    np.testing.assert_allclose(np.append(model.coef_, model.intercept_), np.append(w, b),
                               rtol=1e-5, atol=1e-7)


def _unweighted(X_, y_, **kwargs):
    return fastdual.train(X_, y_, alpha=0.1, tol=1e-10, max_epochs=5000, random_state=0, **kwargs)


@pytest.mark.parametrize("value", [1e308, np.finfo(np.float64).max, 1e-300, 1e-320, 5e-324])
def test_extreme_constant_weights_are_no_weights_under_alpha(value):
    """Constant weights normalise to exactly 1, with no overflow of their sum (1e308) and no
    overflow of n / sum (subnormal weights)."""
    ref = _unweighted(X, Y)
    ref_cert = fastdual.duality_gap(X, Y, ref.coef_, ref.intercept_, alpha=0.1)
    for how, w in _weights(value).items():
        model = _unweighted(X, Y, sample_weight=w)
        assert np.isfinite(model.coef_).all() and np.isfinite(model.gap_), how
        np.testing.assert_allclose(model.coef_, ref.coef_, rtol=1e-12, atol=1e-15, err_msg=how)
        cert = fastdual.duality_gap(X, Y, ref.coef_, ref.intercept_, alpha=0.1, sample_weight=w)
        assert np.isfinite(cert.gap), how
        # The gap itself is at rounding level of the primal (1e-12 relative): compared absolutely.
        np.testing.assert_allclose(cert, ref_cert, rtol=1e-12, atol=1e-14, err_msg=how)


def test_huge_weights_on_some_samples_dominate_the_rest():
    """Weights 1e308 on 20 samples and 1 on 10: the 10 weigh 1e-308 relative to the 20, so the
    model solves the problem of the 20 alone (the mean-1 weights are n/20 there), to the accuracy
    tol certifies (strong convexity 0.1: |w - w*|^2 <= 2 gap / 0.1)."""
    w = np.where(np.arange(N) < 20, 1e308, 1.0)
    model = _unweighted(X, Y, sample_weight=w)
    ref = _unweighted(X[:20], Y[:20])
    assert np.isfinite(model.coef_).all() and np.isfinite(model.gap_)
    p_model, p_ref = (np_objective(X[:20], Y[:20], m.coef_, m.intercept_, loss="smooth_hinge",
                                   l2=0.1, l1=0.0, fit_intercept=True) for m in (model, ref))
    assert p_model == pytest.approx(p_ref, rel=1e-9)
    np.testing.assert_allclose(model.coef_, ref.coef_, atol=1e-4)


def test_tiny_weights_train_a_finite_model_under_C():
    """1e-300 on every sample: alpha = 1 / (C * 3e-299) is huge but finite."""
    model = fastdual.train(X, Y, C=1.0, sample_weight=1e-300, tol=1e-10, max_epochs=5000,
                           random_state=0)
    assert np.isfinite(model.coef_).all() and np.isfinite(model.gap_)
    assert model.alpha == pytest.approx(1.0 / (N * 1e-300), rel=1e-12)


def test_user_weights_are_not_modified():
    for w in (np.full(N, 1e308), np.linspace(1e-320, 1e-319, N), np.array([2.0]), np.array(2.0)):
        snapshot = w.copy()
        fastdual.train(X, Y, alpha=0.1, sample_weight=w, max_epochs=2, tol=0.0, random_state=0)
        np.testing.assert_array_equal(w, snapshot)


@pytest.mark.parametrize("case", [
    dict(alpha=1e-100), dict(alpha=1e300), dict(C=1e-300), dict(C=3e98),
    dict(loss="smooth_hinge", gamma=1e300), dict(loss="smooth_hinge", gamma=1e-300),
    dict(loss="epsilon_insensitive", epsilon=1e308), dict(loss="squared", l1_ratio=1.0,
                                                           alpha=1e-100),
    dict(intercept_scaling=1e-300), dict(scale_X=1e-200), dict(scale_X=1e100),
    dict(loss="squared", scale_y=1e99), dict(loss="logistic", alpha=0.1, sample_weight=1e308),
], ids=repr)
def test_extreme_but_accepted_settings_train_a_finite_certified_model(case):
    case = dict(case)
    scale_X, scale_y = case.pop("scale_X", 1.0), case.pop("scale_y", 1.0)
    regression = case.get("loss") in ("squared", "epsilon_insensitive")
    X_, y_ = (XR, YR * scale_y) if regression else (X, Y)
    X_ = X_ * scale_X
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
        model = fastdual.train(X_, y_, max_epochs=50, random_state=0, **case)
    assert np.isfinite(model.coef_).all() and np.isfinite(model.intercept_)
    assert np.isfinite([model.primal_, model.dual_, model.gap_]).all()
    assert model.gap_ >= -1e-12 * abs(model.primal_)
    objective = {k: v for k, v in case.items() if k != "intercept_scaling"}
    cert = fastdual.duality_gap(X_, y_, model.coef_, model.intercept_,
                                intercept_scaling=case.get("intercept_scaling", 1.0),
                                dual_coef=model.dual_coef_, **objective)
    assert cert.primal == pytest.approx(model.primal_, rel=1e-12)
    assert cert.dual == pytest.approx(model.dual_, rel=1e-12, abs=1e-300)


def test_a_diverging_solver_returns_no_model_and_auto_does_not_pick_it():
    """Unscaled regression data with pure l1 and a free intercept. RDA's steps used to diverge
    here (NaN within three epochs); with the floor under its beta_t they stay finite and the
    model is certified. A run that does diverge (SPDC with steps far beyond eq. 12's) is
    refused with an error that says so, and solver="auto" picks a method that stays finite."""
    from sklearn.datasets import make_regression
    X, y = make_regression(500, 500, n_informative=50, noise=5, random_state=0)
    objective = dict(loss="squared", alpha=0.1, l1_ratio=1.0, regularize_intercept=False)
    with pytest.warns(fastdual.ConvergenceWarning):
        rda = fastdual.train(X, y, solver="rda", max_epochs=50, **objective)
    assert np.all(np.isfinite(rda.coef_)) and np.isfinite(rda.primal_) and rda.gap_ >= 0
    with pytest.raises(fastdual.TrainingDiverged, match=r"spdc diverged: at epoch \d+ .*"
                                                        r"no model is returned"):
        fastdual.train(X, y, solver="spdc", tau=10.0, sigma=10.0, loss="squared", alpha=0.1)
    assert issubclass(fastdual.TrainingDiverged, FloatingPointError)
    model = fastdual.train(X, y, max_epochs=200, **objective)
    assert model.solver == "cd" and np.all(np.isfinite(model.coef_))
    assert np.isfinite(model.primal_) and 0 <= model.relative_gap_ <= 1e-3


@pytest.mark.parametrize("multiclass, loss", [("crammer_singer", "hinge"),
                                              ("multinomial", "logistic")])
def test_a_joint_k_class_certificate_refuses_non_finite_duals(multiclass, loss):
    """As the binary and one-vs-rest paths do: a NaN or infinite dual_coef is an error naming
    it, not a NaN certificate."""
    rng = np.random.default_rng(0)
    Xm = rng.standard_normal((90, 4))
    ym = np.arange(90) % 3
    model = fastdual.train(Xm, ym, loss=loss, multiclass=multiclass, alpha=0.1, tol=0.1)
    for bad in (np.nan, np.inf):
        with pytest.raises(ValueError, match=r"^dual_coef contains NaN or infinity"):
            fastdual.duality_gap(Xm, ym, model.coef_, model.intercept_, loss=loss, alpha=0.1,
                                 multiclass=multiclass, dual_coef=np.full((3, 90), bad))


def test_a_frame_of_nullable_integers_trains_as_its_numbers():
    """pandas' nullable dtypes ("Int64", "Float64", "boolean") reach numpy as objects: a frame
    without missing values trains on its numbers, the same model as from the float array; one
    with a missing value is refused by name."""
    pd = pytest.importorskip("pandas")
    counts = np.trunc(X * 10)
    frame = pd.DataFrame(counts).astype(int).astype("Int64")
    model = fastdual.train(frame, Y, random_state=0)
    np.testing.assert_array_equal(model.coef_, fastdual.train(counts, Y, random_state=0).coef_)
    frame.iloc[2, 1] = pd.NA
    with pytest.raises(ValueError, match=r"^X has missing values \(pandas NA\)"):
        fastdual.train(frame, Y)


def test_a_model_whose_coef_is_a_list_still_predicts():
    model = fastdual.train(X, Y, random_state=0)
    expected = model.predict(X)
    model.coef_ = model.coef_.tolist()
    np.testing.assert_array_equal(model.predict(X), expected)


def test_an_f1_certificate_names_what_is_wrong_with_its_duals():
    model = fastdual.train(X, Y, loss="f1_hinge", solver="agm", max_epochs=5, tol=0.0)
    zero_mu, nan_score = model.dual_coef_.copy(), model.dual_coef_.copy()
    zero_mu[-1], nan_score[0] = 0.0, np.nan
    for duals, fragment in ((zero_mu, r"; its last entry mu is 0\.0$"),
                            (nan_score, r"contains NaN or infinity$"),
                            (model.dual_coef_[:-1], r"shape \(31,\), got \(30,\)$")):
        with pytest.raises(ValueError, match=fragment):
            fastdual.duality_gap(X, Y, model.coef_, model.intercept_, loss="f1_hinge",
                                 dual_coef=duals)
