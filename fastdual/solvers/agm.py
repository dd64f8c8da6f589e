"""Nesterov's accelerated gradient with estimate functions (seed 004, AGM-EF): train(solver="agm").

Two engines minimise a composite J(x) = f(x) + Psi(x), f smooth, Psi simple, with the Euclidean
prox-function d(x) = 1/2 ||x||_M^2 (a diagonal metric M; `Form.distance` and `Form.prox` are the
only places that know it, so another Bregman distance is one more form method):

  memory="infinite"  Algorithm 1 (fixed L) / Algorithm 2 (adaptive L): the estimate function
                     psi_k = Delta(x, x_0) + sum_i a_i [Psi(x) + l_f(x; u_i)], kept as the
                     weighted average of the gradients and constants (divided by A_k, eq. 16).
  memory="one"       Algorithm 3 (fixed L) / Algorithm 4 (adaptive L): the model compressed to
                     q_k = c_k Delta(x, z_k) + q_k(z_k) each iteration.

and two forms give them an f and a Psi (docs/math.md Sec. 4h):

  PrimalForm  x = w (the intercept feature last): f = (1/n) sum_i c_i phi_mu(x_i . w), Psi = the
              penalty (l2/2 ||w||^2 + l1 ||w||_1, the composite step of Sec. 5.5.2; nothing on a
              free intercept). Smooth losses directly; non-smooth ones smoothed (Sec. 5.1.1, eq. 53
              with d2 = a^2/2) with mu lowered by continuation as the certified gap requires, or
              fixed by smoothing=mu (eq. 57: mu = eps / D gives an eps-accurate J).
  DualForm    x = the duals: f = -D (eq. 39; the SVM dual of eq. 41 with a free intercept), Psi
              the indicator of the loss's box and, with a free intercept, the hyperplane
              sum_i c_i a_i = 0, onto which every step projects with the O(n) projection.

The certificate is the shared one (Theorem 10): the primal form reports x_k with the weighted
average of the duals alpha(u_i) of its gradient points (eq. 22, or eq. 35 for one memory); the
dual form reports its x_k with the weighted average of the primal points w(u_i) (and, with a free
intercept, the intercept that minimises the primal for that w). Each "epoch" of the training loop
is one iteration: a gradient pass and a pass for the new point's image, per trial of L.
"""
import numpy as np

from fastdual._loop import Option
from fastdual.losses import get_loss_spec, losses_with
from fastdual.projection import project_box_hyperplane
from fastdual._core import f1 as _f1, projection as _projection
from fastdual._core import rows as _rows
from fastdual.solvers import _agm
from fastdual.solvers.common import penalty, soft_threshold

# Losses whose dual -phi*(-a) is smooth on its (box) domain, so that form="dual" applies.
MAX_TRIALS = 64            # doublings of L in one iteration (2^64: far past any true L)
RESTART_AT = 1e150         # A_k beyond this (gap bound 1/A_k far below rounding): restart
POWER_ITERATIONS = 100
SMOOTHING_START = 1.0      # the first mu of the continuation (the smooth hinge's own scale)
SMOOTHING_FACTOR = 10.0    # mu is divided by this at each stage
EPS = np.finfo(float).eps
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


def between(x, y, share):
    """x + share (y - x) as a new vector, with no other temporary."""
    out = np.subtract(y, x)
    out *= share
    out += x
    return out


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


class F1Form(PrimalForm):
    """The F1-score risk (seed 004 Example 3) in the primal: f = R_mu (the entropy-smoothed
    risk, its gradient by the dynamic program of Algorithms 5-6, fastdual/_core/f1.pyx), Psi the
    penalty. Its dual point is the Gibbs distribution at x_k's margins with the current mu."""

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


def _slack(*terms):
    """Rounding allowance of the estimate-function test J(x) <= psi(z) (sums of these terms)."""
    return 64.0 * EPS * sum(abs(t) for t in terms)


class LipschitzSearch:
    """L of one iteration: fixed, or the seed's adaptive search (Alg. 2 / 4): start each iteration
    at L_k / (gamma_d gamma_u), multiply by gamma_u until the iteration's test passes."""

    def __init__(self, L, adaptive, gamma_u, gamma_d, ceiling=np.inf):
        self.L = L
        # A proven upper bound on the Lipschitz constant: the test must pass there, so a
        # failure at it is rounding (the estimate functions' sums carry errors of order
        # eps A_k |G_k| in the dual form), and the iteration goes on with it.
        self.ceiling = ceiling
        self.adaptive = adaptive
        self.gamma_u = gamma_u
        self.gamma_d = gamma_d
        self.trials = 0             # trials of the last iteration (> 1: L was raised)

    def candidates(self, first=None):
        """The L to try in turn: L_k / gamma_d (or `first`), times gamma_u after each failure,
        up to the ceiling; the fixed L alone when not adaptive."""
        if not self.adaptive:
            yield self.L
            return
        L = self.L / self.gamma_d if first is None else first
        for _ in range(MAX_TRIALS):
            if L >= self.ceiling:
                break
            yield L
            L *= self.gamma_u
        yield max(self.ceiling, L)


class Engine:
    """What both memories do to their points: u between z and x (margins or v alike, no pass),
    and x moved towards the new z, whose image costs the iteration's second pass."""

    def between(self, theta):
        """(u, image of u) for u = theta z + (1 - theta) x."""
        return (between(self.z, self.x, 1.0 - theta),
                between(self.image_z, self.image_x, 1.0 - theta))

    def towards(self, z, share):
        """(x', image of z, image of x') for x' = x + share (z - x)."""
        image_z = self.form.image(z)
        return (between(self.x, z, share), image_z, between(self.image_x, image_z, share))


class InfiniteMemory(Engine):
    """Algorithms 1-2 with d = 1/2||.||_M^2, lambda_1 = 0 and lambda = lambda_2 (Psi's strong
    convexity). psi_k / A_k = Delta(x, x_0) / A_k + Psi(x) + <G_k, x> + C_k, with G_k and C_k the
    a_i-weighted averages of grad f(u_i) and f(u_i) - <grad f(u_i), u_i>."""

    def __init__(self, form, x, search):
        self.form = form
        self.search = search
        self.restart(x, form.image(x))
        self.averaged = None

    def restart(self, x, image):
        self.x0 = x.copy()
        self.x, self.z = x.copy(), x.copy()
        self.image_x, self.image_z = image, image.copy()
        self.A = 0.0
        self.G = np.zeros_like(x)
        self.C = 0.0
        self.defect = 0.0            # max(0, J(x_k) - psi_k(z_k) / A_k): rounding, if any

    def _model(self, z, psi_z, G, C, A):
        """psi_k(z) / A_k at its minimiser z (eq. 16), and its terms (for the rounding slack)."""
        terms = (self.form.distance(z, self.x0) / A, psi_z, float(G @ z), C)
        return sum(terms), terms

    def model_value(self):
        """min psi_k / A_k: Lemma 4 says J(x_k) is at most this."""
        return self._model(self.z, self.form.penalty(self.z), self.G, self.C, self.A)[0]

    def step(self):
        form, search = self.form, self.search
        lam, A = form.strong_convexity, self.A
        for trials, L in enumerate(search.candidates(), 1):
            # a: the positive root of (a + A)(lam A + 1) + a lam A = L a^2 (Alg. 1 step 5).
            B = 2.0 * lam * A + 1.0
            a = (B + np.sqrt(B * B + 4.0 * L * A * (lam * A + 1.0))) / (2.0 * L)
            A1 = A + a
            tau1 = 1.0 + lam * A
            tau = tau1 + lam * a * A / A1
            u, image_u = self.between(a * tau1 / (tau * A1))      # step 7
            f_u, g, other = form.gradient(u, image_u)
            share = a / A1
            G = between(self.G, g, share)
            C = self.C + share * (f_u - float(g @ u) - self.C)
            z, psi_z = form.prox(self.x0, G, 1.0 / A1)
            x, image_z, image_x = self.towards(z, share)
            passed = True
            if not search.adaptive:
                break
            value = form.value(x, image_x)
            model, terms = self._model(z, psi_z, G, C, A1)
            # A_k+1 J(x_k+1) - psi_k+1(z_k+1) <= A_k J(x_k) - psi_k(z_k) once L is large enough
            # (the proof of Lemma 4), so only what this step adds is tested: a defect left by
            # rounding in an earlier step cannot push L up without bound.
            defect = value - model
            passed = defect <= (A / A1) * self.defect + _slack(value, *terms)
            if passed or L >= search.ceiling:
                break
        self.defect = max(defect, 0.0) if search.adaptive else 0.0
        search.L, search.trials = L, trials
        self.averaged = other if self.averaged is None else between(self.averaged, other, share)
        self.x, self.z, self.image_x, self.image_z = x, z, image_x, image_z
        self.G, self.C = G, C
        self.A = A1
        if A1 > RESTART_AT or not passed:
            # Failing at the ceiling is rounding in the sums (eps A_k |G_k|): a fresh estimate
            # function from x_k (A = 0) starts the accumulation again.
            self.restart(x, image_x)


class OneMemory(Engine):
    """Algorithms 3-4 with d = 1/2||.||_M^2 and lambda_1 = 0: q_k(x) = c_k Delta(x, z_k) + Q_k."""

    def __init__(self, form, x, search):
        self.form = form
        self.search = search
        self.restart(x, form.image(x))

    def restart(self, u0, image_u0):
        """Algorithm 3 steps 1-4 (Algorithm 4 steps 1-7): z_0 = argmin q_0."""
        form, search = self.form, self.search
        lam = form.strong_convexity
        f_u, g, other = form.gradient(u0, image_u0)
        for L in search.candidates(first=search.L):
            z, psi_z = form.prox(u0, g, L)
            Q = L * form.distance(z, u0) + f_u + dot_difference(g, z, u0) + psi_z
            image_z = form.image(z)
            if not search.adaptive:
                break
            value = form.value(z, image_z)
            if value - Q <= _slack(value, Q, f_u, psi_z) or L >= search.ceiling:
                break
        self.defect = max(value - Q, 0.0) if search.adaptive else 0.0
        search.L = L
        self.c = L + lam
        self.Q = Q
        self.contraction = 1.0       # prod_i (1 - a_i): J(x_k) - J(x) <= it (q_0(x) - J(x))
        self.x, self.z = z, z.copy()
        self.image_x, self.image_z = image_z, image_z.copy()
        self.averaged = other

    def step(self):
        form, search = self.form, self.search
        lam, c = form.strong_convexity, self.c
        for trials, L in enumerate(search.candidates(), 1):
            # a: the root in (0, 1) of (1 - a)(c + lam a) = L a^2 (Alg. 3 step 6), stably.
            b = c - lam
            a = 2.0 * c / (b + np.sqrt(b * b + 4.0 * (L + lam) * c))
            tau1 = (1.0 - a) * c
            tau = tau1 + lam * a * (1.0 - a)
            u, image_u = self.between(tau1 * a / tau)             # step 8
            f_u, g, other = form.gradient(u, image_u)
            z, psi_z = form.prox(self.z, g, tau1 / a)
            linear = f_u + dot_difference(g, z, u)
            Q = (1.0 - a) * (c * form.distance(z, self.z) + self.Q) + a * (linear + psi_z)
            x, image_z, image_x = self.towards(z, a)
            passed = True
            if not search.adaptive:
                break
            value = form.value(x, image_x)
            # J(x_k+1) - q_k+1(z_k+1) <= (1 - a)(J(x_k) - q_k(z_k)) once L is large enough
            # (Lemma 12's proof): only what this step adds is tested, as in InfiniteMemory.
            defect = value - Q
            passed = defect <= (1.0 - a) * self.defect + _slack(value, self.Q, linear, psi_z)
            if passed or L >= search.ceiling:
                break
        self.defect = max(defect, 0.0) if search.adaptive else 0.0
        search.L, search.trials = L, trials
        self.averaged = between(self.averaged, other, a)
        self.c = (1.0 - a) * c + lam * a
        self.Q = Q
        self.contraction *= 1.0 - a
        self.x, self.z, self.image_x, self.image_z = x, z, image_x, image_z
        if not passed:         # rounding (see InfiniteMemory): a fresh model from x_k
            self.restart(x, image_x)


ENGINES = {"infinite": InfiniteMemory, "one": OneMemory}


class AGM:
    name = "agm"
    # the loss capabilities it trains (fastdual.losses): every loss, the structured F1 risk too
    needs = frozenset(set())
    pure_l1 = True
    free_intercept = True
    options = {
        "memory": Option("infinite", choices=tuple(ENGINES),
                         help="infinite: Algorithms 1-2 (estimate functions over all past "
                              "gradients); one: Algorithms 3-4 (the 1-memory model)"),
        "adaptive": Option(True, kind=bool,
                           help="tune L every iteration (Algorithms 2 and 4); False: the fixed L "
                                "of Algorithms 1 and 3, from power iteration"),
        "gamma_u": Option(2.0, kind=float, help="the adaptive search's up-scaling factor (> 1)"),
        "gamma_d": Option(2.0, kind=float,
                          help="the adaptive search's down-scaling factor (> 1)"),
        "form": Option("auto", choices=("auto", "primal", "dual"),
                       help="primal: minimise the (smoothed) primal; dual: maximise the dual "
                            "(eq. 39/41; losses with a smooth dual, l2 > 0); auto: the dual for "
                            "the hinge and absolute losses with a free intercept and l2 > 0 "
                            "(the SVM dual with bias), the primal otherwise"),
        "prox_function": Option("euclidean", choices=("euclidean", "optimized"),
                                help="the smoothing's prox-function (primal form, non-smooth "
                                     "losses): euclidean a^2/2, or Sec. 5.6's data-dependent "
                                     "b_i^2 a^2/2 from the top eigenvector"),
        "smoothing": Option(None, kind=float,
                            help="mu of the smoothed non-smooth loss in the primal form (eq. 53); "
                                 "None: continuation, mu divided by 10 whenever the certified gap "
                                 "is dominated by the smoothing"),
    }

    def __init__(self, problem, options, seed, initial_duals=None):
        self.problem = problem
        for name in ("gamma_u", "gamma_d"):
            if not options[name] > 1.0:
                raise ValueError(f"{name} must be > 1, got {options[name]!r}")
        smooth = problem.loss.gamma > 0.0
        capabilities = get_loss_spec(problem.loss_name).capabilities
        form = options["form"]
        if form == "auto":
            form = ("dual" if problem.free_intercept and not smooth and problem.l2 > 0.0
                    and "quadratic_dual" in capabilities else "primal")
        structured = self.structured = "structured" in capabilities
        if structured and form == "dual":
            raise ValueError("loss='f1_hinge' trains with form='primal' (its dual is over the "
                             "2^n labelings)")
        if form == "dual":
            if options["prox_function"] != "euclidean":
                raise ValueError("prox_function is the primal form's smoothing; form='dual' "
                                 "needs none")
            if "quadratic_dual" not in capabilities:
                raise ValueError(f"solver='agm' with form='dual' needs a loss whose dual is "
                                 f"smooth, one of {losses_with({'quadratic_dual'})}; loss="
                                 f"{problem.loss_name!r} trains with form='primal'")
            if options["smoothing"] is not None:
                raise ValueError("smoothing is the primal form's parameter; form='dual' needs "
                                 "none")
            self.form = DualForm(problem)
            self.mu = 0.0
            self.continuation = False
            start = np.zeros(problem.n_samples) if initial_duals is None else initial_duals
        else:
            if smooth and options["smoothing"] is not None:
                raise ValueError(f"smoothing is for the non-smooth losses; loss="
                                 f"{problem.loss_name!r} is smooth already")
            # (the F1 risk's energies move by about 1/n per flipped label: mu starts there)
            start_mu = SMOOTHING_START / problem.n_samples if structured else SMOOTHING_START
            self.mu = 0.0 if smooth else (options["smoothing"] or start_mu)
            self.continuation = not smooth and options["smoothing"] is None
            self.weights = None
            if options["prox_function"] == "optimized":
                if smooth or structured:
                    raise ValueError("prox_function='optimized' is the smoothing's (Sec. 5.6): "
                                     "for the hinge, absolute and epsilon-insensitive losses")
                self.weights = optimized_prox_weights(problem)
            self.form = self._smoothed_form(self.mu)
            start = np.zeros(problem.n_features + 1)
            if initial_duals is not None and not structured:   # w(duals) = grad g*(v(duals))
                v = problem.dual_vector(initial_duals)
                start = soft_threshold(v, problem.l1 / problem.l2) if problem.l1 else v
        self.start = start
        self.engine_class = ENGINES[options["memory"]]
        self.engine = None
        spectral = largest_eigenvalue(problem, POWER_ITERATIONS if not options["adaptive"]
                                      else 8)
        if not options["adaptive"]:
            spectral *= 1.05      # power iteration approaches lambda_max from below
        self.spectral = max(spectral, np.finfo(float).tiny)
        self.search = LipschitzSearch(self.form.lipschitz(self.spectral), options["adaptive"],
                                      options["gamma_u"], options["gamma_d"],
                                      self.form.ceiling())

    helper_l2 = 0.0

    def _smoothed_form(self, mu):
        problem = self.problem
        return F1Form(problem, mu) if self.structured else PrimalForm(problem, mu, self.weights)

    def start_from(self, w):
        if self.form.name == "primal":
            self.start = np.array(w, dtype=np.float64)

    def epoch(self):
        if self.engine is None:
            self.engine = self.engine_class(self.form, self.form.start(self.start), self.search)
            self.start = None          # (the engine holds its own start)
        self.engine.step()

    def check_due(self, epoch):
        return None

    def point(self):
        engine = self.engine
        return self.form.point(engine.x, engine.image_x, engine.averaged)

    def after_check(self, checkpoint):
        """The continuation of the smoothing (primal form, non-smooth loss, smoothing=None): once
        the smoothed problem's own certified gap is below half of what the smoothing adds to
        the true one, mu is divided by SMOOTHING_FACTOR and the method restarts from x_k."""
        if not self.continuation:
            return
        engine, mu = self.engine, self.mu
        smoothed_gap = (engine.form.value(engine.x, engine.image_x)
                        - engine.form.smoothed_dual(checkpoint))
        if smoothed_gap <= 0.5 * (checkpoint.gap - smoothed_gap):
            self.mu = mu / SMOOTHING_FACTOR
            self.form = self._smoothed_form(self.mu)
            self.search.L *= SMOOTHING_FACTOR     # the curvature of phi_mu scales as 1/mu
            self.search.ceiling = self.form.ceiling()
            self.engine = self.engine_class(self.form, engine.x, self.search)
