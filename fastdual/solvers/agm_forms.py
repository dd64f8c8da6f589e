"""AGM's forms (seed 004; fastdual.solvers.agm runs its engines on them): each gives the engines
a composite J(x) = f(x) + Psi(x) to minimise, f smooth, Psi simple (docs/math.md Sec. 4h):

  PrimalForm  x = w (the intercept feature last): f = (1/n) sum_i c_i phi_mu(x_i . w), Psi = the
              penalty (l2/2 ||w||^2 + l1 ||w||_1, the composite step of Sec. 5.5.2; nothing on a
              free intercept). Smooth losses directly; non-smooth ones smoothed (Sec. 5.1.1, eq. 53
              with d2 = a^2/2) with mu lowered by continuation as the certified gap requires, or
              fixed by smoothing=mu (eq. 57: mu = eps / D gives an eps-accurate J).
  DualForm    x = the duals: f = -D (eq. 39; the SVM dual of eq. 41 with a free intercept), Psi
              the indicator of the loss's box and, with a free intercept, the hyperplane
              sum_i c_i a_i = 0, onto which every step projects with the O(n) projection.

A form states f's Lipschitz start and a proven ceiling, its value and gradient (with the
gradient point's counterpart across the duality: alpha(u) for the primal, w(u) for the dual),
Psi's prox step and the distance Delta(x, y) = 1/2 ||x - y||_M^2 of the prox-function
d(x) = 1/2 ||x||_M^2 (a diagonal metric M: `distance` and `prox` are the only places that know
it, so another Bregman distance is one more form method), and the pair the loop certifies by the
shared certificate (Theorem 10): the primal form reports x_k with the weighted average of the
duals alpha(u_i) of its gradient points (eq. 22, or eq. 35 for one memory); the dual form reports
its x_k with the weighted average of the primal points w(u_i) (and, with a free intercept, the
intercept that minimises the primal for that w: best_intercept). Also here, what the forms build
on: the power iteration for lambda_max(X^T C X)/n, Sec. 5.6's optimized prox-function, and the
sums over differences taken slice by slice (the forms' distance; the one-memory engine's linear
term).
"""
import numpy as np

from fastdual._core import projection as _projection
from fastdual._core import rows as _rows
from fastdual.projection import project_box_hyperplane
from fastdual.solvers import _agm
from fastdual.solvers.common import penalty, soft_threshold

CHUNK = 1 << 16            # entries per slice of the sums over differences (no whole temporary)


def dot_difference(g, x, y):
    """<g, x - y> without a temporary of the vectors' length."""
    return float(sum(g[k:k + CHUNK] @ (x[k:k + CHUNK] - y[k:k + CHUNK])
                     for k in range(0, x.shape[0], CHUNK)))


def half_squared_distance(x, y, metric=None):
    """1/2 sum_j m_j (x_j - y_j)^2 (m = 1 without a metric), slice by slice."""
    total = 0.0
    for k in range(0, x.shape[0], CHUNK):
        diff = x[k:k + CHUNK] - y[k:k + CHUNK]
        diff *= diff
        total += float(diff.sum() if metric is None else metric[k:k + CHUNK] @ diff)
    return 0.5 * total


def largest_eigenvalue(problem, iterations, rtol=1e-4, vector=False):
    """lambda_max(X^T C X) / n (intercept feature included) by power iteration from a fixed
    start: a lower estimate that approaches the true value from below (and, with vector, its
    unit eigenvector estimate)."""
    n, d = problem.n_samples, problem.n_features
    args = (*problem.X.kernel_args, n, d, problem.bias)
    v = np.ones(d + 1) / np.sqrt(d + 1)
    z, out = np.empty(n), np.empty(d + 1)
    value = 0.0
    for _ in range(iterations):
        _rows.margins(*args, v, z)
        _rows.transpose_times(*args, problem.sample_weight * z, out)
        new = float(v @ out) / n
        norm = float(np.linalg.norm(out))
        if not norm > 0.0:
            return (value, v) if vector else value
        v = out / norm
        if abs(new - value) <= rtol * new:
            return (new, v) if vector else new
        value = new
    return (value, v) if vector else value


def optimized_prox_weights(problem):
    """Sec. 5.6: the smoothing prox-function d(a) = 1/2 sum_i b_i^2 a_i^2 with
    b_i^2 = |x_i . v*|, v* the top eigenvector of X^T C X (6 power iterations, as the seed
    suggests), scaled to mean_i c_i b_i^2 = 1 so that the smoothing's bias bound (eq. 54) is
    the Euclidean one's; floored at 1e-3 of the mean (a row orthogonal to v* would otherwise
    make phi_mu infinitely curved)."""
    _, v = largest_eigenvalue(problem, 6, rtol=0.0, vector=True)
    z = np.empty(problem.n_samples)
    _rows.margins(*problem.X.kernel_args, problem.n_samples, problem.n_features,
                  problem.bias, v, z)
    b2 = np.abs(z)
    c = problem.sample_weight
    mean = float(c @ b2) / problem.n_samples
    if not mean > 0.0:
        return None
    b2 = np.maximum(b2 / mean, 1e-3)
    return b2 / (float(c @ b2) / problem.n_samples)


class PrimalForm:
    """J(w) = (1/n) sum_i c_i phi_mu(y_i, x_i . w) + Psi(w), Psi(w) = sum_j p_j (l2/2 w_j^2 +
    l1 |w_j|), p_j = 0 on a free intercept's entry, 1 elsewhere."""

    passes = 0           # passes over the data (image and gradient), counted per form

    name = "primal"

    def __init__(self, problem, mu, weights=None):
        self.problem = problem
        self.weights = weights      # the smoothing prox-function's b_i^2 (Sec. 5.6), or None
        n, d = problem.n_samples, problem.n_features
        self.size = d + 1
        # Psi's weights are l2 and l1 on every entry but a free intercept's (the last): two
        # scalars and that entry corrected, not d-vectors.
        self.free_last = bool(problem.free_intercept)
        self.l2, self.l1 = problem.l2, problem.l1
        # Psi is l2-strongly convex in d only when every entry is penalised (Remark 1).
        self.strong_convexity = 0.0 if problem.free_intercept else problem.l2
        self.mu = mu
        self.duals = np.empty(n)
        self.gradient_buffer = np.empty(d + 1)
        self.no_duals = np.empty(0)
        self.args = (*problem.X.kernel_args, n, d, problem.bias)

    def lipschitz(self, spectral):
        """L of f for lambda_max(X^T C X)/n = spectral: the loss is (1/gamma)-smooth (with the
        optimized prox-function a start for the adaptive search: rows are curved 1/(mu b_i^2))."""
        gamma = self.problem.loss.gamma if self.mu == 0.0 else self.mu
        return spectral / gamma

    def ceiling(self):
        """A proven bound on f's Lipschitz constant: lambda_max(X^T D X)/n <= its trace,
        sum_i c_i ||x_i||^2 / (n gamma_i), gamma_i the loss's smoothness (mu b_i^2)."""
        problem = self.problem
        gamma = self.problem.loss.gamma if self.mu == 0.0 else self.mu
        curvature = problem.sample_weight / (gamma if self.weights is None
                                             else gamma * self.weights)
        return float(curvature @ problem.squared_norms()) / problem.n_samples

    def start(self, w):
        return np.array(w, dtype=np.float64)

    def image(self, x):
        out = np.empty(self.problem.n_samples)
        self.passes += 1
        _rows.margins(*self.args, x, out)
        return out

    def penalty(self, x):
        return penalty(x, self.l2, self.l1, self.free_last)

    def value(self, x, image):
        problem = self.problem
        total = _agm.smoothed_loss(problem.y, problem.sample_weight, image, problem.loss,
                                   self.mu, self.no_duals, self.weights)
        return total / problem.n_samples + self.penalty(x)

    def gradient(self, u, image):
        """(f(u), grad f(u), alpha(u)): the duals a_i = -phi_mu'(x_i . u) are the dual point."""
        problem = self.problem
        n = problem.n_samples
        total = _agm.smoothed_loss(problem.y, problem.sample_weight, image, problem.loss,
                                   self.mu, self.duals, self.weights)
        self.passes += 1
        _rows.transpose_times(*self.args, -problem.sample_weight * self.duals,
                              self.gradient_buffer)
        # (the buffer itself: valid until the next gradient, which is all the engines need)
        np.divide(self.gradient_buffer, n, out=self.gradient_buffer)
        return total / n, self.gradient_buffer, self.duals.copy()

    def prox(self, center, gradient, rho):
        """(x, Psi(x)) for x = argmin rho/2 ||x - center||^2 + <gradient, x> + Psi(x): per entry
        soft_threshold(rho center - gradient, l1 p_j) / (rho + l2 p_j), in place in x."""
        x = np.multiply(center, rho)
        x -= gradient
        last = x[-1]
        if self.l1:
            negative = np.signbit(x)
            np.abs(x, out=x)
            x -= self.l1
            np.maximum(x, 0.0, out=x)
            np.negative(x, out=x, where=negative)
        x /= rho + self.l2
        if self.free_last:
            x[-1] = last / rho
        return x, self.penalty(x)

    @staticmethod
    def distance(x, y):
        return half_squared_distance(x, y)

    def point(self, x, image, averaged):
        return x, averaged

    def smoothed_dual(self, checkpoint):
        """D_mu of the checkpoint's duals: D minus what the smoothing subtracts,
        mu/(2n) sum_i c_i a_i^2."""
        problem, duals = self.problem, checkpoint.duals
        scale = problem.sample_weight if self.weights is None else (
            problem.sample_weight * self.weights)
        return checkpoint.dual - 0.5 * self.mu * float(scale @ (duals * duals)) / problem.n_samples


class DualForm:
    """-D(a) (eq. 39): f(a) = l2 g*(v(a)) - (1/n) sum_i c_i (-phi*(-a_i)), v(a) = X^T C a/(l2 n),
    g*(v) = 1/2 ||soft_threshold(v, l1/l2)||^2; Psi = the indicator of the box (and of the free
    intercept's hyperplane). The metric is M = diag(c_i / n), in which f's curvature is
    lambda_max(X^T C X)/(l2 n) plus the loss's own gamma."""

    passes = 0           # passes over the data (image and gradient), counted per form

    name = "dual"

    def __init__(self, problem):
        if problem.l2 == 0.0:
            raise ValueError("solver='agm' with form='dual' needs an l2 term (l1_ratio < 1)")
        self.problem = problem
        n, d = problem.n_samples, problem.n_features
        self.size = n
        self.kappa = problem.l1 / problem.l2
        self.lower, self.upper = problem.loss.dual_bounds(problem.y)
        c = problem.sample_weight
        self.metric = np.where(c > 0.0, c, 1.0) / n
        self.root_metric = np.sqrt(self.metric)
        self.strong_convexity = 0.0
        self.slope = np.empty(n)
        self.margins = np.empty(n)
        self.no_margins = np.empty(0)
        self.args = (*problem.X.kernel_args, n, d, problem.bias)

    def lipschitz(self, spectral):
        return spectral / self.problem.l2 + self.problem.loss.gamma

    def ceiling(self):
        problem = self.problem
        trace = float(problem.sample_weight @ problem.squared_norms()) / problem.n_samples
        return self.lipschitz(trace)

    def start(self, duals):
        return self.problem.feasible_duals(duals).copy()

    def image(self, a):
        """v(a), with a free intercept's entry 0 (it is, on the hyperplane)."""
        problem = self.problem
        out = np.empty(problem.n_features + 1)
        self.passes += 1
        _rows.transpose_times(*self.args, problem.sample_weight * a, out)
        out /= problem.l2 * problem.n_samples
        if problem.free_intercept:
            out[problem.n_features] = 0.0
        return out

    def _w(self, v):
        return soft_threshold(v, self.kappa) if self.kappa else v

    def penalty(self, x):
        return 0.0

    def _data_term(self, a, margins, slope):
        problem = self.problem
        return _agm.dual_terms(problem.y, problem.sample_weight, a, margins, problem.loss,
                               slope) / problem.n_samples

    def value(self, a, v):
        w = self._w(v)
        return 0.5 * self.problem.l2 * float(w @ w) - self._data_term(a, self.no_margins,
                                                                      self.slope)

    def gradient(self, u, v):
        """(f(u), grad f(u), w(u)): the gradient is -(c_i / n) d/da_i [-phi*(-a_i) - z_i a_i]
        at the margins z = X w(u); w(u) is the primal point."""
        problem = self.problem
        w = self._w(v)
        self.passes += 1
        _rows.margins(*self.args, w, self.margins)
        data = self._data_term(u, self.margins, self.slope)
        return (0.5 * problem.l2 * float(w @ w) - data, -self.metric * self.slope,
                np.array(w, dtype=np.float64))

    def prox(self, center, gradient, rho):
        """(a, 0) for a = argmin rho/2 ||a - center||_M^2 + <gradient, a> over the feasible set:
        the M-weighted projection of center - gradient / (rho M) (seed 004 problem (64), O(n)).
        The free entries of a are differences of entries of that point, which grow with
        1/rho = A_k: their rounding, eps A_k |G|, is what limits the infinite-memory form."""
        target = center - gradient / (rho * self.metric)
        if self.problem.free_intercept:
            # The kernel itself: its inputs are the solver's own, already valid (the public
            # function's checks cost as much as the projection at this size).
            a = np.empty_like(target)
            status = _projection.box_hyperplane(target, self.lower, self.upper,
                                                self.problem.sample_weight, self.root_metric,
                                                0.0, a)[0]
            if status != 0:         # (a target that is not finite, say): the checked path
                a = project_box_hyperplane(target, self.lower, self.upper,
                                           self.problem.sample_weight, 0.0, d=self.root_metric)
        else:
            a = np.clip(target, self.lower, self.upper)
        return a, 0.0

    def distance(self, x, y):
        return half_squared_distance(x, y, self.metric)

    def point(self, a, image, averaged):
        problem = self.problem
        w = np.array(averaged, dtype=np.float64)
        if problem.free_intercept:
            d = problem.n_features
            w[d] = best_intercept(problem, problem.X.matvec(w[:d]), w[d])
        return w, a


def best_intercept(problem, margins, start):
    """The intercept feature's weight t minimising sum_i c_i phi(y_i, margins_i + B t) (B the
    feature's value): bisection on the sign of its (monotone) subgradient, after bracketing."""
    y, c, loss, B = problem.y, problem.sample_weight, problem.loss, problem.bias

    def slope(t):
        return float(c @ loss.derivatives(y, margins + B * t))

    step = 1.0 / B
    lo = hi = float(start)
    if slope(lo) > 0.0:
        for _ in range(200):
            lo -= step
            step *= 2.0
            if slope(lo) <= 0.0:
                break
    else:
        for _ in range(200):
            hi += step
            step *= 2.0
            if slope(hi) >= 0.0:
                break
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            break
        if slope(mid) > 0.0:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)
