"""Nesterov's accelerated gradient with estimate functions (seed 004, AGM-EF): train(solver="agm").

Two engines minimise a composite J(x) = f(x) + Psi(x), f smooth, Psi simple, with the Euclidean
prox-function d(x) = 1/2 ||x||_M^2 of the form's diagonal metric M:

  memory="infinite"  Algorithm 1 (fixed L) / Algorithm 2 (adaptive L): the estimate function
                     psi_k = Delta(x, x_0) + sum_i a_i [Psi(x) + l_f(x; u_i)], kept as the
                     weighted average of the gradients and constants (divided by A_k, eq. 16).
  memory="one"       Algorithm 3 (fixed L) / Algorithm 4 (adaptive L): the model compressed to
                     q_k = c_k Delta(x, z_k) + q_k(z_k) each iteration.

with L fixed or found by the adaptive search of Algorithms 2 and 4 (LipschitzSearch). The forms
give them an f and a Psi (docs/math.md Sec. 4h): fastdual.solvers.agm_forms (the smoothed
primal; the dual, with a free intercept's hyperplane) and fastdual.solvers.f1 (the smoothed
F1-score risk). The driver AGM picks the form, lowers the primal form's smoothing by
continuation, and hands the loop the form's pair to certify. `epoch()` runs one iteration and
returns the passes over the data it made (the loop counts epochs in passes): a gradient pass and
a pass for the new point's image, per trial of L.
"""
import numpy as np

from fastdual.losses import get_loss_spec, losses_with
from fastdual.solvers.agm_forms import (DualForm, PrimalForm, dot_difference,
                                        largest_eigenvalue, optimized_prox_weights)
from fastdual.solvers.common import Option, soft_threshold
from fastdual.solvers.f1 import F1Form

# Losses whose dual -phi*(-a) is smooth on its (box) domain, so that form="dual" applies.
MAX_TRIALS = 64            # doublings of L in one iteration (2^64: far past any true L)
RESTART_AT = 1e150         # A_k beyond this (gap bound 1/A_k far below rounding): restart
POWER_ITERATIONS = 100
SMOOTHING_START = 1.0      # the first mu of the continuation (the smooth hinge's own scale)
SMOOTHING_FACTOR = 10.0    # mu is divided by this at each stage
EPS = np.finfo(float).eps


def between(x, y, share):
    """x + share (y - x) as a new vector, with no other temporary."""
    out = np.subtract(y, x)
    out *= share
    out += x
    return out


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
    needs = frozenset()
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
    retired_passes = 0        # the passes of the forms the continuation replaced
    reported_passes = 0       # the passes epoch() has reported so far

    def _smoothed_form(self, mu):
        problem = self.problem
        return F1Form(problem, mu) if self.structured else PrimalForm(problem, mu, self.weights)

    def start_from(self, w):
        if self.form.name == "primal":
            self.start = np.array(w, dtype=np.float64)

    def epoch(self):
        """One iteration (every trial of L in it); returns the passes over the data it made,
        with those of a restart after the last check."""
        if self.engine is None:
            self.engine = self.engine_class(self.form, self.form.start(self.start), self.search)
            self.start = None          # (the engine holds its own start)
        self.engine.step()
        total = self.retired_passes + self.form.passes
        passes, self.reported_passes = total - self.reported_passes, total
        return passes

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
            self.retired_passes += self.form.passes
            self.form = self._smoothed_form(self.mu)
            self.search.L *= SMOOTHING_FACTOR     # the curvature of phi_mu scales as 1/mu
            self.search.ceiling = self.form.ceiling()
            self.engine = self.engine_class(self.form, engine.x, self.search)
