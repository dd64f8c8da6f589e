"""SPDC (seed 002, Algorithms 1 and 2): the driver around the epoch kernel of _spdc.pyx.

Step sizes from Theorem 1 (eq. 12) unless given. Non-smooth losses (gamma = 0) are solved
through the seed's perturbation (Sec. 3): phi* gains delta/2 alpha^2, which makes it
delta-strongly convex. The certificate is always that of the unperturbed problem; delta starts
at 1e-2 P(0) / B^2 (B the largest |dual| the loss allows) and shrinks tenfold whenever the
certified gap falls below delta B^2, the most the perturbation can cost, so any tol is reached.
"""
import numpy as np

from fastdual._loop import Option
from fastdual.solvers import _spdc
from fastdual.solvers.sdca import soft_threshold


class SPDC:
    name = "spdc"
    losses = ("hinge", "squared_hinge", "smooth_hinge", "logistic", "squared", "absolute",
              "epsilon_insensitive")
    pure_l1 = False
    options = {
        "batch_size": Option(1, kind=int,
                             help="m of Algorithm 2 (1: Algorithm 1); an epoch is ceil(n/m) "
                                  "iterations"),
        "tau": Option(None, kind=float, help="primal step size (default: eq. 12)"),
        "sigma": Option(None, kind=float, help="dual step size (default: eq. 12)"),
        "theta": Option(None, kind=float, help="extrapolation, in (0, 1] (default: eq. 12)"),
    }

    def __init__(self, problem, options, seed, initial_duals=None):
        if options["theta"] is not None and options["theta"] > 1.0:
            raise ValueError(f"theta must be in (0, 1], got {options['theta']!r}")
        self.problem = problem
        n, d = problem.n_samples, problem.n_features
        self.batch_size = min(options["batch_size"], n)
        self.user_steps = options["tau"], options["sigma"], options["theta"]
        self.duals = np.zeros(n) if initial_duals is None else np.array(initial_duals, np.float64)
        # u = -(1/n) sum_i c_i alpha_i x_i, by the certificate's own pass (v_out = -u with l2 = 1).
        v = np.zeros(d + 1)
        if initial_duals is not None:
            problem.primal_dual(np.zeros(d + 1), self.duals, l2=1.0, v_out=v)
        self.u = -v
        self.w = soft_threshold(v / problem.l2, problem.l1 / problem.l2)
        self.w_prev = self.w.copy()
        self.last = np.zeros(d + 1, dtype=np.int64)
        self.now = 0
        self.scratch = np.zeros(d + 1)
        self.dual_change = np.zeros(self.batch_size)
        self.order = np.random.default_rng(seed).permutation(n).astype(np.intp)
        self.rng_state = np.random.SeedSequence(seed).generate_state(4, dtype=np.uint64)
        self.picks = np.empty(-(-n // self.batch_size) * self.batch_size, dtype=np.intp)

        self.radius = float(np.sqrt(np.max(problem.squared_norms())))
        self.weight_max = float(np.max(problem.sample_weight))
        self.delta = 0.0
        self.bound_sq = 0.0
        if problem.loss.gamma == 0.0:
            lower, upper = problem.loss.dual_bounds(problem.y)
            self.bound_sq = float(np.max(np.maximum(lower ** 2, upper ** 2)))
            p_zero = problem.primal_dual(np.zeros(d + 1), np.zeros(n))[0]
            self.delta = 1e-2 * max(p_zero, np.finfo(float).tiny) / self.bound_sq
        self._set_steps()

    def _set_steps(self):
        """tau, sigma, theta of eq. (12), for the batch size and the (perturbed) gamma; the
        weights c_i make phi_i = c_i phi (gamma / c_i)-strongly convex in the conjugate."""
        n, m, radius = self.problem.n_samples, self.batch_size, self.radius
        gamma = (self.problem.loss.gamma + self.delta) / self.weight_max
        lam = self.problem.l2
        tau, sigma, theta = self.user_steps
        self.tau = tau if tau is not None else np.sqrt(m * gamma / (n * lam)) / (2 * radius)
        self.sigma = sigma if sigma is not None else np.sqrt(n * lam / (m * gamma)) / (2 * radius)
        self.theta = theta if theta is not None else (
            1.0 - 1.0 / (n / m + 2 * radius * np.sqrt(n / (m * lam * gamma))))
        # The closed form's factor for delays up to a few epochs' worth of iterations (a
        # coordinate seen less often than that pays one expm1 when it is seen).
        self.decay = _spdc.decay_table(self.tau, lam, min(4 * (n // m + 1), 1 << 16))

    @property
    def helper_l2(self):
        return 0.0

    def epoch(self):
        problem = self.problem
        data, indices, indptr = problem.X.kernel_args
        _spdc.spdc_draw(self.rng_state, self.order, self.batch_size, self.picks)
        self.now = _spdc.spdc_epoch(
            data, indices, indptr, problem.n_samples, problem.n_features, problem.bias,
            problem.y, problem.sample_weight, self.duals, self.w, self.w_prev, self.last,
            self.u, self.scratch, self.dual_change, problem.loss, self.tau, self.sigma,
            self.theta, self.delta, problem.l2, problem.l1, self.decay, self.picks,
            self.batch_size, self.now)

    def check_due(self, epoch):
        return None

    def point(self):
        _spdc.spdc_flush(self.w, self.w_prev, self.last, self.u, self.tau, self.problem.l2,
                         self.problem.l1, self.decay, self.now)
        return self.w, self.duals

    def after_check(self, checkpoint):
        # point() flushed: every coordinate is at the current time, so the steps may change.
        if self.delta > 0.0 and checkpoint.gap <= self.delta * self.bound_sq:
            self.delta *= 0.1
            self._set_steps()
