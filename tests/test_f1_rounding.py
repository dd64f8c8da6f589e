"""f1_hinge certificates at a tiny smoothing parameter: the Gibbs distribution's expected F1
loss and flip probabilities match an exact evaluation over all 2^n labelings (decimal
arithmetic, 80 digits), and a long run's certificate is a true bound (gap >= 0 to rounding,
the dual never above P(0) >= P*)."""
import itertools
import warnings
from decimal import Decimal, localcontext

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fastdual
from fastdual.solvers import _f1
from fastdual.solvers.f1 import GIBBS_ACCURACY, smallest_mu


def exact_gibbs(scores, y, mu):
    """(E_p[Delta], P(y'_i != y_i)) under p(y') ~ exp(E(y') / mu), E(y') = Delta(y', y) +
    (1/n) sum_i s_i (y'_i - y_i), by enumeration in 80-digit decimals."""
    n = len(y)
    positives = int(np.sum(y > 0))
    with localcontext() as ctx:
        ctx.prec = 80
        labelings, energies, losses = [], [], []
        for labeling in itertools.product([-1.0, 1.0], repeat=n):
            labeling = np.array(labeling)
            b = int(np.sum((y > 0) & (labeling < 0)))
            c = int(np.sum((y < 0) & (labeling > 0)))
            loss = Decimal(b + c) / Decimal(2 * positives - b + c)
            energy = loss + sum(Decimal(float(scores[i])) * Decimal(float(labeling[i] - y[i]))
                                for i in range(n)) / n
            labelings.append(labeling != y)
            energies.append(energy)
            losses.append(loss)
        top, mu = max(energies), Decimal(float(mu))
        weights = [((e - top) / mu).exp() for e in energies]
        total = sum(weights)
        expected = sum(w * d for w, d in zip(weights, losses)) / total
        flips = [sum(w for w, f in zip(weights, labelings) if f[i]) / total for i in range(n)]
        return float(expected), np.array([float(q) for q in flips])


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 8),
       log_mu=st.sampled_from([-16, -14, -12, -10, -8, -6, -3, -1]),
       log_scale=st.sampled_from([-12, -6, -2, 0, 1]))
def test_the_gibbs_pass_is_exact_to_rounding_at_any_mu(seed, n, log_mu, log_scale):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    y[0] = 1.0
    scores = rng.standard_normal(n) * 10.0 ** log_scale
    # the certificate's mu: at least the smallest the rounding of scores / mu allows
    mu = max(10.0 ** log_mu, smallest_mu(scores))
    flips = np.empty(n)
    _, expected, _ = _f1.gibbs(scores, y, mu, flips)
    exact_expected, exact_flips = exact_gibbs(scores, y, mu)
    assert expected == pytest.approx(exact_expected, abs=GIBBS_ACCURACY)
    np.testing.assert_allclose(flips, exact_flips, rtol=0, atol=GIBBS_ACCURACY)


def test_the_long_run_of_the_probe_gives_a_true_bound():
    """This run's smoothing fell to mu = 1.7e-16 and its certificate was -1.2e-3 with
    converged_=True (dual_ above P(0), so above the optimum)."""
    X = np.array([2.621881441666105, -0.18768000112912475, 0.12157088011396491,
                  2.5865648914603856, 1.9102388769705647, 4.0468278741826])[:, None]
    y = np.array([1, -1, 1, -1, -1, -1])
    kw = dict(loss="f1_hinge", alpha=0.16734658452531312, l1_ratio=0.6403867607531537,
              intercept_scaling=0.3)
    p_zero = fastdual.duality_gap(X, y, np.zeros(1), 0.0, **kw).primal
    for tol in (1e-10, 1e-13):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
            model = fastdual.train(X, y, tol=tol, max_epochs=3000, **kw)
        assert model.gap_ >= -4 * np.finfo(float).eps * abs(model.primal_)
        assert model.dual_ <= p_zero * (1 + 4 * np.finfo(float).eps)
        # the dual is that of the distribution the model's duals name, evaluated exactly
        n = len(y)
        scores, mu = model.dual_coef_[:n], model.dual_coef_[n]
        expected, flips = exact_gibbs(scores, np.where(y > 0, 1.0, -1.0), mu)
        signed = np.where(y > 0, 1.0, -1.0)
        image = -(2.0 / n) * np.array([X[:, 0] @ (signed * flips), 0.3 * np.sum(signed * flips)])
        l2, l1 = kw["alpha"] * (1 - kw["l1_ratio"]), kw["alpha"] * kw["l1_ratio"]
        excess = np.maximum(np.abs(image) - l1, 0.0)
        assert model.dual_ == pytest.approx(expected - excess @ excess / (2 * l2), abs=1e-12)
