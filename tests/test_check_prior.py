"""One-vs-rest's check schedule from its pilot classes' convergence rate (_loop.CheckSchedule's
prior, _multiclass.class_prior): where the first interval goes, what the rate is, and that the
classes stay certified, with fewer certificates, the same bits in any thread count."""
import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import fastdual
from fastdual import _loop, _multiclass


def first_interval(prior, gap, tol=1e-4, max_epochs=1000):
    schedule = _loop.CheckSchedule("auto", tol, max_epochs, prior)
    assert schedule.due(1)
    schedule.checked(1, gap)
    return schedule.next_check - 1


def test_the_first_interval_is_seventy_percent_of_the_epochs_the_prior_rate_predicts():
    # tol 1e-4 from a relative gap of 0.5 at 0.7 per epoch: log(5000) / 0.7 = 12.2 epochs
    predicted = math.log(0.5 / 1e-4) / 0.7
    assert first_interval((-0.7, 50), 0.5) == math.floor(0.7 * predicted) == 8
    # at most the epochs the prior's problem ran, at least 2 when tol is over an epoch away
    assert first_interval((-0.7, 5), 0.5) == 5
    assert first_interval((-5.0, 50), 0.5) == 2         # 1.7 epochs predicted
    assert first_interval((-20.0, 50), 0.5) == 1        # predicted within the next epoch
    # without a prior, or with one that is not a falling rate, the intervals double from 1
    for prior in (None, (0.3, 50), (0.0, 50), (math.nan, 50), (-math.inf, 50), (-0.7, 0)):
        assert first_interval(prior, 0.5) == 1
    # a first check already at tol, or an explicit check_every, ignores it
    assert first_interval((-0.7, 50), 1e-5) == 1
    schedule = _loop.CheckSchedule(3, 1e-4, 100, (-0.7, 50))
    schedule.checked(1, 0.5)
    assert schedule.next_check == 4


def test_later_intervals_are_the_schedules_own():
    with_prior = _loop.CheckSchedule("auto", 1e-4, 1000, (-0.7, 50))
    without = _loop.CheckSchedule("auto", 1e-4, 1000)
    with_prior.checked(1, 0.5)
    without.checked(1, 0.5)
    # the same second check's gap, seen from the same last check, gives the same next interval
    # but for the doubling cap, which follows the interval taken
    for schedule in (with_prior, without):
        schedule.last, schedule.interval = (9, 1e-2), 8
        schedule.checked(11, 2e-3)
    assert with_prior.next_check == without.next_check


def test_the_convergence_rate_is_the_mean_slope_of_the_log_relative_gap():
    history = [{"epoch": 1, "primal": 2.0, "dual": 1.0, "gap": 1.0},
               {"epoch": 3, "primal": 2.0, "dual": 1.9, "gap": 0.1},
               {"epoch": 11, "primal": 2.0, "dual": 2.0 - 2e-4, "gap": 2e-4}]
    expected = (math.log(1e-4) - math.log(0.5)) / 10
    assert _loop.convergence_rate(history) == pytest.approx(expected, rel=1e-12)
    assert _loop.convergence_rate(history[:1]) is None
    assert _loop.convergence_rate([history[0], dict(history[0])]) is None      # one epoch
    assert _loop.convergence_rate([history[0], dict(history[2], gap=0.0)]) is None


def test_the_prior_is_the_fastest_pilot_with_its_epochs():
    class Result:
        def __init__(self, gaps):
            self.history = [{"epoch": e, "primal": 1.0, "dual": 1.0 - g, "gap": g}
                            for e, g in gaps]
    slow, fast = Result([(1, 0.5), (21, 5e-5)]), Result([(1, 0.5), (9, 5e-5)])
    outcomes = [(None, slow, None), (None, fast, None), (None, None, None),
                (None, Result([(1, 1e-5)]), None)]
    rate, epochs = _multiclass.class_prior(outcomes)
    assert rate == pytest.approx(math.log(1e-4) / 8) and epochs == 9
    assert _multiclass.class_prior([(None, None, None)]) is None


def text_like(n=600, d=400, k=9, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.03, random_state=seed, format="csr")
    X.data = rng.lognormal(0.0, 1.0, X.data.size)
    # the class of a row is its largest of the first k features (a random one if it has none)
    labels = np.asarray(X[:, :k].argmax(axis=1)).ravel()
    empty = np.asarray(X[:, :k].sum(axis=1)).ravel() == 0
    labels[empty] = rng.integers(0, k, n)[empty]
    return X, labels


def test_the_hinges_classes_take_no_prior():
    """The hinge's gap is neither monotone nor geometric (docs/math.md): every class is a pilot,
    the binary problem bit for bit."""
    X, y = text_like(seed=2)
    kwargs = dict(loss="hinge", C=1.0, tol=1e-4, solver="sdca", random_state=3)
    model = fastdual.train(X, y, multiclass="ovr", **kwargs)
    for m, label in enumerate(model.classes_):
        single = fastdual.train(X, np.where(y == label, 1.0, -1.0), **kwargs)
        assert np.array_equal(model.coef_[m], single.coef_)
        assert model.class_n_epochs_[m] == single.n_epochs_


@pytest.mark.parametrize("loss", ["squared_hinge", "smooth_hinge", "logistic"])
def test_one_vs_rest_with_the_prior_certifies_every_class_with_fewer_checks(loss, monkeypatch):
    X, y = text_like()
    kwargs = dict(loss=loss, C=1.0, tol=1e-4, solver="sdca", random_state=3,
                  multiclass="ovr", max_epochs=3000)
    model = fastdual.train(X, y, **kwargs)
    pilots = _multiclass.PILOT_CLASSES
    monkeypatch.setattr(_multiclass, "PILOT_CLASSES", 100)      # every class a pilot
    plain = fastdual.train(X, y, **kwargs)
    k = model.classes_.size
    assert k == 9 and model.converged_ and plain.converged_
    assert np.all(model.class_gap_ <= 1e-4 * np.abs(model.class_primal_))
    # the pilots are the same runs; the others certified to tol by fewer checks
    assert np.array_equal(model.coef_[:pilots], plain.coef_[:pilots])
    assert np.allclose(model.class_primal_, plain.class_primal_, rtol=2e-4, atol=0)
    ours = [sum(1 for h in model.history_ if h["class"] == c) for c in model.classes_[pilots:]]
    theirs = [sum(1 for h in plain.history_ if h["class"] == c) for c in plain.classes_[pilots:]]
    assert sum(ours) < sum(theirs)
    # and the final certificate is that of the returned model (the shared invariant)
    certificate = fastdual.duality_gap(X, y, model)
    assert certificate.gap == pytest.approx(model.gap_, rel=1e-12, abs=1e-15)


def test_one_vs_rest_with_the_prior_gives_the_same_bits_in_any_thread_count():
    X, y = text_like(seed=1)
    kwargs = dict(loss="squared_hinge", C=1.0, tol=1e-4, solver="sdca", random_state=0,
                  multiclass="ovr")
    one = fastdual.train(X, y, n_jobs=1, **kwargs)
    two = fastdual.train(X, y, n_jobs=2, **kwargs)
    assert np.array_equal(one.coef_, two.coef_) and np.array_equal(one.dual_coef_,
                                                                   two.dual_coef_)
    assert [h["epoch"] for h in one.history_] == [h["epoch"] for h in two.history_]
    assert (one.primal_, one.dual_, one.gap_) == (two.primal_, two.dual_, two.gap_)
