"""SPDC (seed 002, Algorithms 1, 2 and 3): the driver around the epoch kernel of _spdc.pyx.

Step sizes from Theorem 1 (eq. 12), or Theorem 6 (eq. 24) for weighted sampling, unless given.
Sample weights c_i are the seed's problem with rows sqrt(c_i) x_i (see _spdc.pyx), so the norms
below are sqrt(c_i) ||x_i|| (the intercept feature included).

Perturbations (Sec. 3), the certificate always being that of the user's problem:
- a non-smooth loss (gamma = 0): phi* gains delta/2 alpha^2, which makes it delta-strongly
  convex; delta starts at 1e-2 P(0) / B^2 (B the largest |dual| the loss allows) and shrinks
  tenfold whenever the certified gap falls below delta B^2, the most the perturbation can cost,
  but never below eps max(P(0), 1) / B^2, where that cost is rounding next to P(0) (a zero P(0),
  e.g. when every row of positive weight has zero loss at w = 0, would otherwise give delta = 0
  and infinite dual steps);
- pure l1 (no l2 term): g gains working_l2/2 ||w||^2, lowered by SDCA's continuation test.
"""
import numpy as np

from fastdual._core.sampling import alias_table
from fastdual.solvers import _spdc
from fastdual.solvers.common import Option, helper_can_shrink, soft_threshold


def inclusion_probabilities(q, m):
    """p_i = min(1, c q_i) with c >= m such that sum_i p_i = m (q a distribution, m <= n): the
    samples that would exceed 1 are fixed at 1 and the rest rescaled, until none exceeds it."""
    p = m * q
    capped = np.zeros(q.shape[0], dtype=bool)
    while np.any(p[~capped] > 1.0):
        capped |= p >= 1.0
        free = ~capped
        p = np.where(capped, 1.0, q * (m - capped.sum()) / max(q[free].sum(), 1e-300))
    return p


class SPDC:
    name = "spdc"
    # the loss capabilities it trains (fastdual.losses): any per-sample loss
    needs = frozenset({"per_sample"})
    pure_l1 = True
    free_intercept = False
    options = {
        "batch_size": Option(1, kind=int,
                             help="m of Algorithm 2 (1: Algorithm 1); an epoch is ceil(n/m) "
                                  "iterations"),
        "sampling": Option("uniform", choices=("uniform", "weighted"),
                           help="uniform (Algorithms 1, 2) or by row norm (Algorithm 3, eq. 20; "
                                "with batch_size > 1 the mini-batches of eq. 26)"),
        "sampling_mix": Option(None, kind=float,
                               help="the seed's alpha in eq. (20), in (0, 1) (default: eq. 25)"),
        "tau": Option(None, kind=float, help="primal step size (default: eq. 12)"),
        "sigma": Option(None, kind=float, help="dual step size (default: eq. 12)"),
        "theta": Option(None, kind=float, help="extrapolation, in (0, 1] (default: eq. 12)"),
    }

    def __init__(self, problem, options, seed, initial_duals=None):
        if options["theta"] is not None and options["theta"] > 1.0:
            raise ValueError(f"theta must be in (0, 1], got {options['theta']!r}")
        self.weighted = options["sampling"] == "weighted"
        mix = options["sampling_mix"]
        if mix is not None and not (self.weighted and mix < 1.0):
            raise ValueError(f"sampling_mix must be in (0, 1) and needs sampling='weighted', "
                             f"got {mix!r}")
        self.problem = problem
        n, d = problem.n_samples, problem.n_features
        self.batch_size = min(options["batch_size"], n)
        self.user_steps = options["tau"], options["sigma"], options["theta"]
        self.duals = np.zeros(n) if initial_duals is None else np.array(initial_duals, np.float64)
        # u = -(1/n) sum_i c_i alpha_i x_i (= -v(duals) at l2 = 1).
        v = np.zeros(d + 1)
        if initial_duals is not None:
            problem.dual_vector(self.duals, l2=1.0, out=v)
        self.u = -v
        # Pure l1: g gains the seed's perturbation working_l2/2 ||w||^2 (Sec. 3), lowered by
        # continuation as SDCA's helper is (after_check).
        self.continuation = problem.l2 == 0.0
        self.working_l2 = problem.l1 if self.continuation else problem.l2
        self.w = soft_threshold(v / self.working_l2, problem.l1 / self.working_l2)
        self.w_prev = self.w.copy()
        self.last = np.zeros(d + 1, dtype=np.int64)
        self.now = 0
        self.scratch = np.zeros(d + 1)
        self.scratch_u = np.zeros(d + 1 if self.weighted and self.batch_size > 1 else 1)
        self.dual_change = np.zeros(self.batch_size)
        self.order = np.random.default_rng(seed).permutation(n).astype(np.intp)
        self.rng_state = np.random.SeedSequence(seed).generate_state(4, dtype=np.uint64)
        self.picks = np.empty(-(-n // self.batch_size) * self.batch_size, dtype=np.intp)

        self.norms = np.sqrt(problem.sample_weight * problem.squared_norms())
        # (A problem whose rows are all zero has no data term: any step size solves it.)
        self.radius = float(np.max(self.norms)) or 1.0
        self.mix = mix
        self.delta = self.delta_floor = 0.0
        self.bound_sq = 0.0
        if problem.loss.gamma == 0.0:
            lower, upper = problem.loss.dual_bounds(problem.y)
            self.bound_sq = float(np.max(np.maximum(lower ** 2, upper ** 2)))
            p_zero = problem.primal_dual(np.zeros(d + 1), np.zeros(n))[0]
            self.delta_floor = np.finfo(float).eps * max(p_zero, 1.0) / self.bound_sq
            self.delta = max(1e-2 * p_zero / self.bound_sq, self.delta_floor)
        self.step_scale = np.ones(n)
        self.alias_keep = np.empty(0)
        self.alias = np.empty(0, dtype=np.intp)
        self.inclusion = np.empty(0)
        self.cumulative = np.empty(n)
        self._set_steps()

    def _set_steps(self):
        """tau, sigma, theta of eq. (12) for the batch size, or of eq. (24) for weighted
        sampling (with the mix of eq. (25) unless given), for the (perturbed) gamma."""
        n, m, radius = self.problem.n_samples, self.batch_size, self.radius
        gamma = self.problem.loss.gamma + self.delta
        lam = self.working_l2
        if self.weighted and m > 1:
            self._set_weighted_batch_steps(n, m, gamma, lam)
            return
        if self.weighted:
            mean = float(np.mean(self.norms))
            mix = self.mix
            if mix is None:                                   # eq. (25)
                rho = radius / mean - 1.0
                kappa = radius ** 2 / (lam * gamma)
                root = np.sqrt(rho) * (kappa / n) ** 0.25
                mix = 0.0 if rho <= np.sqrt(n / kappa) else (root - 1.0) / (root + rho)
            probabilities = (1.0 - mix) / n + mix * self.norms / max(np.sum(self.norms), 1e-300)
            self.step_scale = n * probabilities
            self.alias_keep, self.alias = alias_table(probabilities / probabilities.sum())
            radius = 1.0 / ((1.0 - mix) / radius + mix / mean)  # R_alpha of Theorem 6
            tau = np.sqrt(gamma / (n * lam)) / (2 * radius)
            sigma = np.sqrt(n * lam / gamma) / (2 * radius)
            theta = 1.0 - 1.0 / (n / (1.0 - mix) + radius * np.sqrt(n / (lam * gamma)))
            self.sampling_mix_ = mix
        else:
            tau = np.sqrt(m * gamma / (n * lam)) / (2 * radius)
            sigma = np.sqrt(n * lam / (m * gamma)) / (2 * radius)
            theta = 1.0 - 1.0 / (n / m + 2 * radius * np.sqrt(n / (m * lam * gamma)))
        self._use_steps(tau, sigma, theta, n, m, lam)

    def _use_steps(self, tau, sigma, theta, n, m, lam):
        given = self.user_steps
        self.tau = given[0] if given[0] is not None else tau
        self.sigma = given[1] if given[1] is not None else sigma
        self.theta = given[2] if given[2] is not None else theta
        # The closed form's factor for delays up to a few epochs' worth of iterations (a
        # coordinate seen less often than that pays one expm1 when it is seen).
        self.decay = _spdc.decay_table(self.tau, lam, min(4 * (n // m + 1), 1 << 16))

    def _set_weighted_batch_steps(self, n, m, gamma, lam):
        """Weighted mini-batches (eq. 26): inclusion probabilities p_i = min(1, m q_i) rescaled
        to sum to m, q_i the distribution of eq. (20) with the seed's suggested alpha = 1/2
        unless sampling_mix is given. The seed omits the step sizes of this variant; fastdual
        takes Theorem 1's with the sampling's own constants, R' = max_i ||x_i|| / s_i
        (s_i = n p_i / m) for R and max_i 1/p_i for n/m, which is Theorem 1 for uniform
        mini-batches and Theorem 6's R_alpha for m = 1 (docs/math.md, "SPDC")."""
        mix = 0.5 if self.mix is None else self.mix
        q = (1.0 - mix) / n + mix * self.norms / max(np.sum(self.norms), 1e-300)
        p = inclusion_probabilities(q / q.sum(), m)
        self.inclusion = p
        self.step_scale = n * p / m
        radius = float(np.max(self.norms / self.step_scale)) or 1.0
        tau = np.sqrt(m * gamma / (n * lam)) / (2 * radius)
        sigma = np.sqrt(n * lam / (m * gamma)) / (2 * radius)
        theta = 1.0 - 1.0 / (float(np.max(1.0 / p)) + 2 * radius * np.sqrt(n / (m * lam * gamma)))
        self.sampling_mix_ = mix
        self._use_steps(tau, sigma, theta, n, m, lam)

    @property
    def helper_l2(self):
        return self.working_l2 if self.continuation else 0.0

    def epoch(self):
        problem = self.problem
        data, indices, indptr = problem.X.kernel_args
        _spdc.spdc_draw(self.rng_state, self.order, self.batch_size, self.picks,
                        self.alias_keep, self.alias, self.inclusion, self.cumulative)
        self.now = _spdc.spdc_epoch(
            data, indices, indptr, problem.n_samples, problem.n_features, problem.bias,
            problem.y, problem.sample_weight, self.duals, self.w, self.w_prev, self.last,
            self.u, self.scratch, self.scratch_u, self.dual_change, self.step_scale,
            problem.loss, self.tau,
            self.sigma, self.theta, self.delta, self.working_l2, problem.l1, self.decay,
            self.picks, self.batch_size, self.now)

    def check_due(self, epoch):
        return None

    def point(self):
        _spdc.spdc_flush(self.w, self.w_prev, self.last, self.u, self.tau, self.working_l2,
                         self.problem.l1, self.decay, self.now)
        return self.w, self.duals

    def after_check(self, checkpoint):
        # point() flushed: every coordinate is at the current time, so the steps may change.
        changed = False
        if self.delta > self.delta_floor and checkpoint.gap <= self.delta * self.bound_sq:
            # the certified gap is down to what the perturbation costs
            self.delta = max(0.1 * self.delta, self.delta_floor)
            changed = True
        if self.continuation:
            # As SDCA's: once the working problem is solved well below the bias its helper term
            # puts on the l1 optimum, the helper shrinks tenfold (w and u carry over).
            if helper_can_shrink(self.problem, checkpoint, self.working_l2):
                self.working_l2 *= 0.1
                changed = True
        if changed:
            self._set_steps()
