"""The F1-score structured problem (loss="f1_hinge", seed 004 Example 3), which solver="agm"
alone trains: the problem and its certificate over Gibbs distributions (F1Problem), its
validation (build_f1_problem), and AGM's smoothed primal form of its risk (F1Form). The risk's
dynamic program is the kernel fastdual/solvers/_f1.pyx; docs/math.md Sec. 4i.
"""
from dataclasses import dataclass

import numpy as np

from fastdual._core import rows as _rows
from fastdual._problem import Problem, build_problem
from fastdual.solvers import _f1
from fastdual.solvers.agm_forms import PrimalForm

# The per-element memory of the F1 dynamic program's tables (float64), at most this many.
F1_TABLE_LIMIT = 2.5e8


@dataclass
class F1Problem(Problem):
    """The F1-score max-margin problem (seed 004 Example 3): P(w) = l2/2 ||w||^2 + l1 ||w||_1 +
    R(w), R the worst labeling's 1 - F1 plus margin terms (fastdual/solvers/_f1.pyx). Its dual
    points are Gibbs distributions over the labelings, p(y') ~ exp(E_theta(y') / mu), given as
    duals = (theta_1..theta_n, mu): any such vector is a distribution, so the certificate
    recomputed from it is valid whatever it holds (docs/math.md Sec. 4i)."""

    refinable = False
    not_refinable = ("refine_epochs is SDCA's refinement of per-sample duals; "
                     "loss='f1_hinge' has none")

    @property
    def n_duals(self):
        return self.n_samples + 1      # the scores and mu

    def _margins(self, w):
        return self.X.matvec(w[:self.n_features]) + self.bias * w[self.n_features]

    def penalty(self, w):
        return 0.5 * self.l2 * float(w @ w) + self.l1 * float(np.sum(np.abs(w)))

    def dual_value(self, duals):
        """D(p) = E_p[Delta] - l2 g*(-A^T p / l2), A^T p = X^T (-(2/n) y q) (q the flip
        probabilities), g*(v) = 1/2 ||soft_threshold(v, l1/l2)||^2."""
        n = self.n_samples
        flips = np.empty(n)
        _, expected, _ = _f1.gibbs(np.ascontiguousarray(duals[:n]), self.y, float(duals[n]),
                                   flips)
        gamma = np.empty(self.n_features + 1)
        _rows.transpose_times(*self.X.kernel_args, n, self.n_features, self.bias,
                              -(2.0 / n) * self.y * flips, gamma)
        excess = np.maximum(np.abs(gamma) - self.l1, 0.0)
        return expected - float(excess @ excess) / (2.0 * self.l2)

    def certificate(self, w, duals, l2=None, v_out=None, feasible=False, exact_v=False):
        """(P, D, P - D): the F1 risk's dual is over labelings, with no per-sample
        Fenchel-Young terms to sum."""
        w = np.asarray(w, dtype=np.float64)
        primal = self.penalty(w) + _f1.worst_labeling(np.ascontiguousarray(self._margins(w)),
                                                      self.y)
        dual = self.dual_value(self.feasible_duals(duals))
        return primal, dual, primal - dual

    def feasible_duals(self, duals):
        duals = np.asarray(duals, dtype=np.float64)
        n = self.n_samples
        what = (f"dual_coef of an f1_hinge model is (scores of the n = {n} samples, mu > 0), "
                f"finite, shape ({n + 1},)")
        if duals.shape != (n + 1,):
            raise ValueError(f"{what}; got shape {duals.shape}")
        if not np.isfinite(duals).all():
            raise ValueError(f"{what}; it contains NaN or infinity")
        if not duals[n] > 0.0:
            raise ValueError(f"{what}; its last entry mu is {float(duals[n])!r}")
        floor = smallest_mu(duals[:n])
        if duals[n] < floor:
            duals = duals.copy()
            duals[n] = floor
        return duals

    def duals_from_margins(self, w):
        """The Gibbs distribution at w's margins with the best of a few mu (one dynamic program
        each)."""
        margins = self._margins(np.asarray(w, dtype=np.float64))
        candidates = [np.append(margins, 10.0 ** -k / self.n_samples) for k in range(-1, 7)]
        return max(candidates, key=self.dual_value)


# The accuracy the Gibbs distribution's E_p[Delta] and flip probabilities are computed to, at
# least (absolute; Delta is in [0, 1]): smallest_mu keeps mu where the rounding allows it.
GIBBS_ACCURACY = 1e-9


def smallest_mu(scores):
    """The smallest mu whose Gibbs distribution the dynamic program evaluates to GIBBS_ACCURACY.
    Its log-weights are -F1 / mu (exact to eps relative, _f1.pyx) plus sums of 2 s_i / (n mu),
    rounded to eps relative: the probabilities carry an error of about eps R,
    R = (2/n) sum_i |s_i| / mu (measured against an exact evaluation over all labelings, n up
    to 10: at most 1.3 eps R for R from 1e2 to 1e10; tests/test_f1_rounding.py); 4 eps R is
    allowed. Below that mu the certificate would be of no distribution at all (the dual came
    out above the optimum), so the dual point of (scores, mu) is the Gibbs distribution at
    max(mu, smallest_mu) (docs/math.md Sec. 4i); 1e-300 keeps 1 / mu finite."""
    n = scores.shape[0]
    scale = 2.0 / n * float(np.sum(np.abs(scores)))
    return max(4.0 * np.finfo(float).eps * scale / GIBBS_ACCURACY, 1e-300)


def build_f1_problem(X, y, objective):
    """The F1 problem, validated as the hinge's (binary labels, X, alpha/C, intercept), plus
    what the F1 risk needs: no sample weights, an l2 term, a regularised intercept, tables that
    fit in memory."""
    base = build_problem(X, y, **{**objective, "loss": "f1_hinge"}, structured=True)
    if objective.get("sample_weight") is not None:
        raise ValueError("loss='f1_hinge' takes no sample_weight (F1 counts samples)")
    if base.l2 == 0.0:
        raise ValueError("loss='f1_hinge' needs an l2 term (l1_ratio < 1)")
    if base.free_intercept:
        raise ValueError("loss='f1_hinge' has no free intercept; use regularize_intercept=True")
    positives = int(np.sum(base.y > 0))
    negatives = base.n_samples - positives
    cells = (positives + 1) * (positives + 2) / 2 + (negatives + 1) * (negatives + 2) / 2
    if cells > F1_TABLE_LIMIT:
        raise ValueError(f"loss='f1_hinge' keeps O(n_+^2 + n_-^2) = {cells:.3g} numbers "
                         f"(n_+ = {positives}, n_- = {negatives}), more than its limit "
                         f"{F1_TABLE_LIMIT:.3g} ({F1_TABLE_LIMIT * 8 / 2**30:.1f} GiB); train on "
                         "fewer samples")
    fields = {name: getattr(base, name) for name in Problem.__dataclass_fields__}
    return F1Problem(**fields)


class F1Form(PrimalForm):
    """The F1-score risk (seed 004 Example 3) in the primal: f = R_mu (the entropy-smoothed
    risk, its gradient by the dynamic program of Algorithms 5-6, fastdual/solvers/_f1.pyx), Psi
    the penalty. Its dual point is the Gibbs distribution at x_k's margins with the current
    mu."""

    def __init__(self, problem, mu):
        super().__init__(problem, mu)
        self.log_labelings = problem.n_samples * np.log(2.0)
        self.no_dual = np.empty(0)

    def lipschitz(self, spectral):
        """Of the flips' covariance over mu: spectral / mu bounds it when the flips are
        independent (a start for the adaptive search, and trace / mu its ceiling: the
        worst case (sum_i |a_i . v|)^2 / 4 <= n/4 sum_i (a_i . v)^2)."""
        return spectral / self.mu

    def ceiling(self):
        problem = self.problem
        return float(problem.sample_weight @ problem.squared_norms()) / problem.n_samples / self.mu

    def _risk(self, image, flips):
        log_z, expected, energy = _f1.gibbs(image, self.problem.y, self.mu, flips)
        return self.mu * (log_z - self.log_labelings), expected, energy, log_z

    def value(self, x, image):
        return self._risk(image, np.empty(self.problem.n_samples))[0] + self.penalty(x)

    def gradient(self, u, image):
        problem = self.problem
        n = problem.n_samples
        value = self._risk(image, self.duals)[0]
        self.passes += 1
        _rows.transpose_times(*self.args, -(2.0 / n) * problem.y * self.duals,
                              self.gradient_buffer)
        return value, self.gradient_buffer, self.no_dual

    def point(self, x, image, averaged):
        return x, np.append(image, self.mu)

    def smoothed_dual(self, checkpoint):
        """D_mu(p) = D(p) - mu (n log 2 - H(p)), H(p) = log Z - E_p[E] / mu the entropy of the
        checkpoint's Gibbs distribution."""
        n = self.problem.n_samples
        duals = checkpoint.duals
        log_z, _, energy = _f1.gibbs(np.ascontiguousarray(duals[:n]), self.problem.y,
                                     float(duals[n]), np.empty(n))
        entropy = log_z - energy / float(duals[n])
        return checkpoint.dual - self.mu * (self.log_labelings - entropy)
