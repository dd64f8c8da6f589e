"""LIBLINEAR's model files both ways, with liblinear-official: a fastdual model predicts the
same through LIBLINEAR, a LIBLINEAR model the same through fastdual."""
import importlib
import sys

import numpy as np
import pytest
import scipy.sparse as sp

import fastdual
from fastdual import formats

_ll = pytest.importorskip("liblinear.liblinearutil")   # liblinear-official
load_model, parameter, predict, problem, save_model, train = (
    _ll.load_model, _ll.parameter, _ll.predict, _ll.problem, _ll.save_model, _ll.train)


def data(k=2, n=120, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    if k == 0:
        return X, X @ rng.standard_normal(d) + 0.1 * rng.standard_normal(n)
    centers = rng.standard_normal((k, d)) * 2
    labels = rng.integers(0, k, n)
    return X + centers[labels], np.array([3, -1, 7, 5][:k])[labels]


def liblinear_predict(model, X):
    labels, _, values = predict([], sp.csr_matrix(X), model, "-q")
    return np.array(labels), np.array(values)


@pytest.mark.parametrize("k, loss, options", [
    (2, "logistic", {}), (2, "squared_hinge", {"intercept_scaling": 2.0}),
    (3, "hinge", {"multiclass": "ovr"}), (4, "hinge", {"multiclass": "crammer_singer"}),
    (2, "squared_hinge", {"fit_intercept": False}), (0, "squared", {}),
    (0, "epsilon_insensitive", {"epsilon": 0.1}),
])
def test_a_fastdual_model_predicts_the_same_through_liblinear(tmp_path, k, loss, options):
    X, y = data(k)
    model = fastdual.train(X, y, loss=loss, C=1.0, tol=1e-2, random_state=0, **options)
    formats.save_liblinear(model, tmp_path / "m.model")
    theirs = load_model(str(tmp_path / "m.model"))
    labels, values = liblinear_predict(theirs, X)
    ours = model.decision_function(X)
    if k == 0:
        np.testing.assert_allclose(labels, ours, rtol=1e-12, atol=1e-12)
    else:
        assert np.array_equal(labels, model.predict(X))
    again = fastdual.load(tmp_path / "m.model")
    np.testing.assert_allclose(again.decision_function(X), ours, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("k, s, bias", [(2, 0, 1), (2, 2, -1), (2, 3, 1), (3, 1, 1),
                                        (4, 4, 1), (0, 11, 1), (0, 13, -1)])
def test_a_liblinear_model_predicts_the_same_through_fastdual(tmp_path, k, s, bias):
    X, y = data(k, seed=1)
    theirs = train(problem(y.astype(float).tolist(), sp.csr_matrix(X), bias),
                   parameter(f"-s {s} -c 1 -B {bias} -q"))
    save_model(str(tmp_path / "l.model"), theirs)
    model = fastdual.load(tmp_path / "l.model")
    labels, values = liblinear_predict(theirs, X)
    if k == 0:
        np.testing.assert_allclose(model.predict(X), labels, rtol=1e-12, atol=1e-12)
    else:
        assert np.array_equal(model.predict(X), labels)
        if k == 2:
            # LIBLINEAR's decision value is for its first label, fastdual's for classes_[1].
            np.testing.assert_allclose(model.decision_function(X), values[:, 0], rtol=1e-10,
                                       atol=1e-12)
    assert np.isnan(model.gap_)
    # ... and any loaded model can be certified on data.
    if k == 2 and s in (0, 2, 3):
        loss = {0: "logistic", 2: "squared_hinge", 3: "hinge"}[s]
        cert = fastdual.duality_gap(X, y, model.coef_, model.intercept_ if bias > 0 else None,
                                    loss=loss, C=1.0)
        assert cert.gap >= 0.0


def test_what_liblinear_cannot_hold_is_refused(tmp_path):
    X, y = data(3)
    with pytest.raises(ValueError, match=r"LIBLINEAR has no solver for loss='logistic' "
                                         r"\(multinomial\)"):
        formats.save_liblinear(fastdual.train(X, y, loss="logistic"), tmp_path / "m")
    with pytest.raises(ValueError, match=r"l1-regularized solvers train .* not loss='hinge'"):
        formats.save_liblinear(fastdual.train(X, y, loss="hinge", l1_ratio=1.0, tol=1.0,
                                              max_epochs=5), tmp_path / "m")
    with pytest.raises(ValueError, match=r"labels are integers"):
        formats.save_liblinear(fastdual.train(X, np.array(["a", "b", "c"])[y % 3],
                                              loss="hinge"), tmp_path / "m")
    (tmp_path / "bad.model").write_text("solver_type L2R_LR\nnr_class 2\nlabel 1 -1\n"
                                        "nr_feature 3\nbias -1\nw\n0.1\n0.2\n")
    with pytest.raises(ValueError, match=r"expected 3 weight rows of 1 numbers"):
        fastdual.load(tmp_path / "bad.model")


def test_the_former_module_name_warns_and_still_works(tmp_path, monkeypatch):
    monkeypatch.delitem(sys.modules, "fastdual.liblinear_format", raising=False)
    with pytest.warns(DeprecationWarning, match=r"fastdual\.liblinear_format is fastdual\.formats"):
        former = importlib.import_module("fastdual.liblinear_format")
    assert former.save is formats.save_liblinear
    assert former.load is formats.load_liblinear
    assert former.is_liblinear_file is formats.is_liblinear_file
    X, y = data(2)
    model = fastdual.train(X, y, loss="logistic", C=1.0, tol=1e-2, random_state=0)
    former.save(model, tmp_path / "m.model")
    assert former.is_liblinear_file(tmp_path / "m.model")
    np.testing.assert_allclose(former.load(tmp_path / "m.model").decision_function(X),
                               model.decision_function(X), rtol=1e-14, atol=1e-14)


def liblinear_objective(theirs, X, y, s, C, bias):
    """LIBLINEAR's primal of its own model (liblinear-official's w and b, numpy only):
    1/2 ||W||^2 (the bias feature's weight b / bias included) + C sum of the losses; one-vs-rest
    for k > 2 classes (the sum of the k problems), Crammer-Singer's joint loss for -s 4."""
    labels = theirs.get_labels()
    k = len(labels)
    rows = [theirs.get_decfun(m) for m in range(1 if k == 2 and s != 4 else k)]
    W = np.array([w for w, _ in rows])
    b = np.array([b for _, b in rows])
    Z = X @ W.T + b
    penalty = 0.5 * (np.sum(W ** 2) + (np.sum((b / bias) ** 2) if bias > 0 else 0.0))
    if s == 4:
        truth = np.array([labels.index(v) for v in y])
        margins = Z - Z[np.arange(len(y)), truth][:, None] + 1.0
        margins[np.arange(len(y)), truth] = 0.0
        return penalty + C * np.sum(margins.max(axis=1))
    signs = np.column_stack([np.where(y == label, 1.0, -1.0) for label in labels[:W.shape[0]]])
    u = signs * Z
    loss = {0: np.logaddexp(0.0, -u), 1: np.maximum(0.0, 1.0 - u) ** 2,
            3: np.maximum(0.0, 1.0 - u)}[s]
    return penalty + C * np.sum(loss)


@pytest.mark.parametrize("s, k, bias", [(1, 2, 1), (0, 2, 2), (3, 2, 1), (4, 3, 1), (0, 3, 1),
                                        (1, 4, -1)])
def test_a_loaded_liblinear_model_is_certified_on_its_own_objective(tmp_path, s, k, bias):
    """Whatever order LIBLINEAR's label line has (that of first appearance in its data: here
    the larger label first, or unsorted), the loaded model's classes are sorted and its rows
    and signs follow them, so duality_gap(X, y, model, C=C) certifies LIBLINEAR's own
    objective: the primal is LIBLINEAR's (numpy, from liblinear-official's w), the gap at
    least the true suboptimality (against LIBLINEAR's model at -e 1e-9) and not far above."""
    X, y = data(k, n=150, seed=3)
    C = 0.5
    n = X.shape[0]
    objective = {}
    for name, eps in (("default", ""), ("tight", "-e 1e-9")):
        theirs = train(problem(y.astype(float).tolist(), sp.csr_matrix(X), bias),
                       parameter(f"-s {s} -c {C} -B {bias} -q {eps}"))
        save_model(str(tmp_path / name), theirs)
        objective[name] = liblinear_objective(theirs, X, y, s, C, bias)
    assert theirs.get_labels() != sorted(theirs.get_labels())
    best = objective["tight"]
    for name in ("default", "tight"):
        model = fastdual.load(tmp_path / name)
        assert list(model.classes_) == sorted(set(y.tolist()))
        cert = fastdual.duality_gap(X, y, model, C=C)
        # fastdual's objective is LIBLINEAR's divided by C n
        assert cert.primal * C * n == pytest.approx(objective[name], rel=1e-9)
        assert cert.gap * C * n >= objective[name] - best - 1e-9 * best
        # ... and tight: within 10x the suboptimality, plus 1e-6 relative
        assert cert.gap * C * n <= 10 * (objective[name] - best) + 1e-6 * best


def test_a_loaded_models_label_order_survives_writing_it_back(tmp_path):
    X, y = data(3, seed=4)
    theirs = train(problem(y.astype(float).tolist(), sp.csr_matrix(X), 1),
                   parameter("-s 1 -c 1 -B 1 -q"))
    save_model(str(tmp_path / "l.model"), theirs)
    model = fastdual.load(tmp_path / "l.model")
    formats.save_liblinear(model, tmp_path / "again.model")
    first = (tmp_path / "l.model").read_text().splitlines()
    again = (tmp_path / "again.model").read_text().splitlines()
    assert again[2] == first[2] == "label " + " ".join(str(v) for v in theirs.get_labels())
    np.testing.assert_allclose(np.loadtxt(tmp_path / "again.model", skiprows=6),
                               np.loadtxt(tmp_path / "l.model", skiprows=6), rtol=1e-15)


def test_duality_gap_takes_a_model_and_its_objective():
    """duality_gap(X, y, model) certifies the model's own objective (loss, strength, intercept
    scaling, free intercept, k-class strategy); keywords the call sets win."""
    X, y = data(2, seed=5)
    for options in (dict(loss="hinge", C=0.3, intercept_scaling=2.0),
                    dict(loss="logistic", alpha=0.01, l1_ratio=0.5),
                    dict(loss="squared_hinge", C=1.0, regularize_intercept=False),
                    dict(loss="smooth_hinge", gamma=0.3, fit_intercept=False)):
        model = fastdual.train(X, y, tol=1e-6, random_state=0, **options)
        cert = fastdual.duality_gap(X, y, model)
        assert cert.primal == pytest.approx(model.primal_, rel=1e-12)
        assert cert.gap == pytest.approx(model.gap_, rel=1e-6, abs=1e-15)
        explicit = fastdual.duality_gap(
            X, y, model.coef_, model.intercept_ if model.fit_intercept else None,
            loss=model.loss, alpha=model.alpha, l1_ratio=model.l1_ratio,
            intercept_scaling=model.intercept_scaling,
            regularize_intercept=model.intercept_mode != "free", **model.loss_params)
        assert cert.primal == explicit.primal
    other = fastdual.duality_gap(X, y, model, loss="hinge", C=2.0)
    assert other.primal == fastdual.duality_gap(X, y, model.coef_, None, loss="hinge",
                                                C=2.0).primal
    X3, y3 = data(3, seed=6)
    for multiclass in ("ovr", "crammer_singer"):
        model = fastdual.train(X3, y3, loss="hinge", C=1.0, tol=1e-6, multiclass=multiclass,
                               random_state=0)
        assert fastdual.duality_gap(X3, y3, model).primal == pytest.approx(model.primal_,
                                                                           rel=1e-12)
    with pytest.raises(ValueError, match=r"intercept=None"):
        fastdual.duality_gap(X, y, model, 1.0)


def test_a_loaded_model_needs_its_strength(tmp_path):
    X, y = data(2)
    save_model(str(tmp_path / "l.model"),
               train(problem(y.astype(float).tolist(), sp.csr_matrix(X), 1),
                     parameter("-s 1 -q -B 1")))
    with pytest.raises(ValueError, match=r"give C= \(LIBLINEAR's -c\) or alpha="):
        fastdual.duality_gap(X, y, fastdual.load(tmp_path / "l.model"))


@pytest.mark.slow
def test_liblinears_mushrooms_model_certifies_at_its_true_gap(tmp_path, data_dir):
    """LIBLINEAR's -s 1 -B 1 model on mushrooms (labels 1 2, so the file's first label is the
    smaller): certified at its true small gap, not at a relative gap near 1."""
    import lzma
    from sklearn.datasets import load_svmlight_file
    path = tmp_path / "mushrooms"
    path.write_bytes(lzma.open(f"{data_dir}/mushrooms.xz").read())
    X, y = load_svmlight_file(str(path), zero_based=False)
    objective = {}
    for name, eps in (("default", ""), ("tight", "-e 1e-6")):
        theirs = train(problem(y.tolist(), X, 1), parameter(f"-s 1 -c 1 -B 1 -q {eps}"))
        save_model(str(tmp_path / name), theirs)
        objective[name] = liblinear_objective(theirs, X, y, 1, 1.0, 1)
    model = fastdual.load(tmp_path / "default")
    cert = fastdual.duality_gap(X, y, model, C=1.0)
    n = X.shape[0]
    assert cert.primal * n == pytest.approx(objective["default"], rel=1e-9)
    assert cert.gap * n >= objective["default"] - objective["tight"] - 1e-9
    assert cert.relative_gap < 0.01


GOOD = ("solver_type L2R_L2LOSS_SVC_DUAL\nnr_class 2\nlabel 1 -1\nnr_feature 2\nbias 1\nw\n"
        "0.5 \n-0.25 \n0.125 \n")


@pytest.mark.parametrize("change, message", [
    (("nr_class 2\nlabel 1 -1", "nr_class 1\nlabel 1"), r"a model of one class"),
    (("label 1 -1", "label 1 1"), r"nr_class 2 but the label line holds 2 labels, 1 distinct"),
    (("label 1 -1", "label 1 -1 7"), r"holds 3 labels"),
    (("label 1 -1\n", ""), r"a classifier, but the file has no label line"),
    (("L2R_L2LOSS_SVC_DUAL", "L2R_L2LOSS_SVR"), r"a regression, but the file has a label line"),
    (("bias 1", "bias inf"), r"must be finite"),
    (("label 1 -1", "label 4294967297 -1"), r"C ints"),
    (("label 1 -1", "label 1 \xe9"), r"ASCII text"),
])
def test_an_inconsistent_liblinear_file_is_refused(tmp_path, change, message):
    (tmp_path / "m").write_bytes(GOOD.replace(*change).encode("latin-1"))
    with pytest.raises(ValueError, match=message):
        fastdual.load(tmp_path / "m")


def test_bias_zero_is_no_intercept(tmp_path):
    """LIBLINEAR's -B 0 appends a feature of value 0: its weight multiplies nothing."""
    (tmp_path / "m").write_text(GOOD.replace("bias 1", "bias 0"))
    model = fastdual.load(tmp_path / "m")
    assert not model.fit_intercept and model.intercept_ == 0.0
    X = np.array([[1.0, 2.0], [-3.0, 1.0]])
    np.testing.assert_allclose(model.decision_function(X), X @ [0.5, -0.25])
    labels, _ = liblinear_predict(load_model(str(tmp_path / "m")), X)
    assert np.array_equal(model.predict(X), labels)
