"""A primal second-order solver: truncated Newton (preconditioned conjugate gradient on
Hessian-vector products over the rows, or the d x d Hessian formed and factored when that is
cheaper; Armijo line search) for the smooth losses with the l2 penalty or the elastic net
(orthant-wise steps; docs/math.md, "Newton"). `epoch()` runs one Newton iteration and returns
the passes over the data it made (the training loop counts epochs in passes): the gradient, the
Hessian's diagonal, one per CG iteration (or one to form the Hessian), the step's margins and
each projected trial's. The certificate is the shared one, with the duals of the iterate's
margins.
"""
import numpy as np

from fastdual._core import rows as _rows
from fastdual._core.linalg import axpy, dot, nrm2
from fastdual.solvers import _newton
from fastdual.losses import get_loss_spec
from fastdual.solvers.common import (OWN_CHOLESKY_MAX, Option, penalised_dot, penalty,
                                     soft_threshold, solve_spd)

TINY = np.finfo(float).tiny

# scipy.linalg (gram.pyx's rank-k update, for the blocked Hessian of dense rows) is imported
# only where it is used: importing fastdual, and a Newton run that forms no blocked Hessian,
# stay free of it (0.05-0.2 s of a process's start-up; docs/benchmarks.md N, G2c).

ARMIJO = 1e-4
# The preconditioner (1 - m) l2 + m (diag(H) + l2), m = PRECONDITIONER_MIX: LIBLINEAR's.
PRECONDITIONER_MIX = 0.01
# CG's k-th step ends the solve when it lowers the quadratic model Q(s) = g.s + s.H s / 2 by at
# most eta / k of Q's value so far (Nash and Sofer's test, as LIBLINEAR's truncated Newton),
# eta = min(CG_QUADRATIC_TOL, ||g|| / ||g_prev||): the last Newton step's reduction of the
# gradient, so that the solves tighten as Newton converges (docs/math.md Sec. 4f). Ratios
# only: the same at every scale of the objective.
CG_QUADRATIC_TOL = 0.5
# ... but where the model is the objective (a quadratic loss, the l2 penalty alone), CG is
# restarted only for the loop's certificate: it runs to a residual of CG_RESIDUAL_TOL ||g||.
CG_RESIDUAL_TOL = 0.1
# linear_solver="auto": the direct solve when forming the Hessian (the cheaper of
# sum_i nnz_i^2 / 2 scattered multiply-adds and the blocks' cost below) and factoring it,
# (d + 1)^3 / 3 (at BLAS speed by LAPACK above common.OWN_CHOLESKY_MAX unknowns: factor_cost),
# costs less than this many CG passes of 2 nnz each (the CG iterations a Newton step takes at
# small alpha; docs/math.md Sec. 4f).
DIRECT_CG_PASSES = 10
MARGIN_REFRESH = 8
# A piecewise quadratic loss's line search: where the Newton step overshoots the minimum along
# it (the objective's slope at t = 1 is above LINE_TOL |f'(0)|, f'(0) < 0 its slope at 0), the
# first trial is that minimum, found to |f'(t)| <= LINE_TOL |f'(0)| by Newton's method on t in
# at most LINE_STEPS evaluations (docs/math.md 4f, "The line search past the minimum").
LINE_TOL = 0.1
LINE_STEPS = 30
# may_reach: a certificate is made once the relative gap ||g||^2 / (2 l2) / |P| known from the
# gradient is at most this many times tol (the certificate sums the same gap otherwise, so it
# may differ by rounding).
KNOWN_GAP_SLACK = 2.0
DIRECT_MAX_FEATURES = 2000
# Forming the Hessian: a stored pair of a row's entries costs one scattered multiply-add
# (rows.hessian_matrix); BLAS's rank-k update over HESSIAN_BLOCK_ROWS rows
# gathered dense does (d + 1)^2 / 2 per row at about BLAS_SPEEDUP times that speed (measured on
# ijcnn1, satimage, a9a, mushrooms, w8a and dense Gaussian sets; docs/math.md, 4f): the
# blocks are used when they cost less.
HESSIAN_BLOCK_ROWS = 64
BLAS_SPEEDUP = 7.0
# ... but only where the scattered form costs more than this many multiply-adds: the blocks
# need scipy.linalg's BLAS, whose import costs a process about 0.05 s once, and below this a
# whole direct fit pays at most about 3 ms more scattered than by blocks (measured, logistic to
# 1e-6, dense Gaussian rows: 4000 x 12 9.6 against 6.6 ms, 20000 x 8 23 against 20 ms; at
# 4000 x 30, 1.8e6, 27 against 9.5 ms: a process that fits many such problems would lose).
OWN_HESSIAN_WORK = 3e5


def hessian_costs(problem):
    """(scattered, blocked, nnz): forming X^T diag(h) X by scattered products, or by dense
    blocks, in units of one scattered multiply-add, and the stored entries (a pass's cost)."""
    d1 = problem.n_features + 1
    if problem.X.is_sparse:
        row_nnz = np.diff(np.asarray(problem.X.indptr, dtype=np.float64))
        scattered, nnz = 0.5 * float(row_nnz @ row_nnz), float(np.sum(row_nnz))
    else:
        scattered = 0.5 * problem.n_samples * problem.n_features ** 2
        nnz = float(problem.n_samples * problem.n_features)
    blocked = 0.5 * problem.n_samples * d1 ** 2 / BLAS_SPEEDUP
    return scattered, blocked, nnz


def factor_cost(d1):
    """Cholesky of a d1 x d1 matrix, d1^3 / 3 multiply-adds, in scattered multiply-adds: by
    fastdual's own loop up to OWN_CHOLESKY_MAX unknowns, by LAPACK's (blocked BLAS, at least
    BLAS_SPEEDUP times the speed: measured 13-20 times at 301 and 401 unknowns) above."""
    work = d1 ** 3 / 3.0
    return work if d1 <= OWN_CHOLESKY_MAX else work / BLAS_SPEEDUP


def direct_passes(problem, costs=None):
    """A direct solve's price in CG passes (2 nnz multiply-adds each): forming the Hessian (as
    by_blocks says) and factoring it. costs: hessian_costs(problem) if the caller has them."""
    scattered, blocked, nnz = hessian_costs(problem) if costs is None else costs
    forming = blocked if by_blocks(scattered, blocked) else scattered
    return (forming + factor_cost(problem.n_features + 1)) / max(2.0 * nnz, 1.0)


def direct_pays(problem, costs=None):
    """Whether the direct solve is linear_solver="auto"'s to take: d + 1 <= DIRECT_MAX_FEATURES
    and its price below DIRECT_CG_PASSES passes of CG."""
    if problem.n_features + 1 > DIRECT_MAX_FEATURES:
        return False
    return direct_passes(problem, costs) < DIRECT_CG_PASSES


def by_blocks(scattered, blocked):
    """Whether the Hessian is formed by BLAS's blocks (gram.pyx) rather than scattered
    (rows.hessian_matrix): where they cost less, unless the scattered form is cheap anyway."""
    return blocked < scattered and scattered > OWN_HESSIAN_WORK


class Newton:
    name = "newton"
    # the loss capabilities it trains (fastdual.losses): the smooth per-sample losses
    needs = frozenset({"per_sample", "smooth"})
    pure_l1 = False
    free_intercept = True
    options = {
        "max_cg": Option(250, kind=int,
                         help="conjugate-gradient iterations per Newton step at most"),
        "linear_solver": Option("auto", choices=("auto", "cg", "direct"),
                                help="the Newton system by conjugate gradient on Hessian-vector "
                                     "products, or directly (the d x d Hessian formed in one "
                                     "pass, Cholesky); auto: direct when that costs less than "
                                     "DIRECT_CG_PASSES passes of CG"),
    }

    def __init__(self, problem, options, seed, initial_duals=None):
        self.problem = problem
        self.max_cg = options["max_cg"]
        n, d = problem.n_samples, problem.n_features
        # The intercept feature (index d) is penalised unless the intercept is free: the
        # penalty's vectors are the scalars l2, l1 with that one entry corrected, never d-vectors.
        self.free_last = bool(problem.free_intercept)
        self.w = np.zeros(d + 1)
        if initial_duals is not None:       # w(duals) = grad g*(v(duals))
            v = problem.dual_vector(initial_duals)
            self.w = soft_threshold(v, problem.l1 / problem.l2) if problem.l1 else v
        capabilities = get_loss_spec(problem.loss_name).capabilities
        self.exact_model = problem.l1 == 0.0 and "quadratic" in capabilities
        # (the objective along a line is then piecewise quadratic: _line_start's Newton on t
        # ends in a few steps; with l1, the orthant's projection bends the line)
        self.cut_overshoot = (problem.l1 == 0.0 and "piecewise_quadratic" in capabilities
                              and not self.exact_model)
        choice = options["linear_solver"]
        self.costs = None if choice == "cg" else hessian_costs(problem)
        direct = direct_pays(problem, self.costs) if choice == "auto" else choice == "direct"
        # "auto" where the direct solve pays, for a loss with curvature everywhere (logistic):
        # CG first, and direct steps from the first CG solve that costs the direct solve's price
        # (direct_price passes; docs/math.md 4f, "CG first"). Direct from the start for the
        # piecewise quadratic losses (the squared loss: one step solves it; the squared and
        # smoothed hinges: exact steps find the pieces in a few iterations).
        self.direct_price = None
        if choice == "auto" and direct and "piecewise_quadratic" not in capabilities:
            self.direct_price = direct_passes(problem, self.costs)
            direct = False
        self.direct = False
        self.hessian = None
        self.hessian_block = None       # the dense rows' scratch of the blocked Hessian
        if direct:
            self._go_direct()
        self.z = np.empty(n)
        self.fresh_margins = False         # z = X w, and slope, curve the loss's terms at z
        self.data_term = 0.0               # (then sum_i c_i phi(z_i))
        self.updates = 0
        self.slope = np.empty(n)
        self.curve = np.empty(n)
        self.dz = np.empty(n)
        self.direction_margins = np.empty(n)    # X d of CG's direction d
        self.step_margins = False
        self.trial_z = np.empty(n) if problem.l1 > 0.0 else None   # a projected trial's X w
        self.buffer = np.empty(d + 1)      # the kernels' d-vector output (H times a direction)
        self.diagonal = np.empty(d + 1)    # diag(X^T D X) at w, the preconditioner's
        self.diagonal_fresh = False        # (computed with the gradient, in its pass, for CG)
        self.passes = 0                    # passes over the data so far
        self.reported = 0                  # ... of which epoch() has returned
        self.at_w = None                   # (P(w), gradient) of the iterate, once computed
        # Whether may_reach knows the iterate's certificate, that of w with its margins' duals:
        # ||g||^2 / (2 l2) with the l2 penalty alone (the intercept regularised or absent)
        self.knows_gap = (problem.l1 == 0.0 and problem.l2 > 0.0 and not self.free_last)
        self.known = None                  # that relative gap, as the last may_reach found it
        self.previous_norm = None          # the last iteration's gradient norm

    helper_l2 = 0.0

    def _go_direct(self):
        """Direct steps from now on: the Hessian's scratch (and the blocks', for dense rows)."""
        n, d1 = self.problem.n_samples, self.problem.n_features + 1
        self.direct = True
        self.direct_price = None
        self.hessian = np.empty((d1, d1))
        if by_blocks(*self.costs[:2]):
            self.hessian_block = np.empty((min(HESSIAN_BLOCK_ROWS, max(n, 1)), d1))

    def start_from(self, w):
        """A warm start from a model's coefficients (intercept feature last): a primal solver
        starts better from the model's w than from w(duals) of another alpha."""
        self.w = np.array(w, dtype=np.float64)
        self.fresh_margins = False
        self.at_w = None
        self.previous_norm = None

    def _margins(self, w, out):
        problem = self.problem
        self.passes += 1
        _rows.margins(*problem.X.kernel_args, problem.n_samples, problem.n_features,
                        problem.bias, w, out)

    def _add_l2(self, v, out):
        """out += l2 p * v in place (p_j = 1, 0 on a free intercept's entry): the penalty's
        gradient and Hessian-vector term, without a temporary d-vector."""
        l2 = self.problem.l2
        axpy(l2, v, out)
        if self.free_last:
            out[-1] -= l2 * v[-1]
        return out

    def _hessian_times(self, v, margins=None):
        """H v into the buffer (overwritten by the next call); with margins, X v there too."""
        problem = self.problem
        self.passes += 1
        _rows.hessian_vector(*problem.X.kernel_args, problem.n_samples, problem.n_features,
                             problem.bias, self.curve, v, self.buffer, margins)
        self.buffer *= 1.0 / problem.n_samples
        return self._add_l2(v, self.buffer)

    def _direct_step(self, gradient, free):
        """-H^-1 g over the free coordinates, H's upper triangle formed in one pass and
        factored by Cholesky; None if H is not positive definite there."""
        problem = self.problem
        H = self.hessian
        self.passes += 1
        if self.hessian_block is None:
            _rows.hessian_matrix(*problem.X.kernel_args, problem.n_samples, problem.n_features,
                                 problem.bias, self.curve, H)
        else:
            from fastdual._core.gram import blocked_hessian_matrix
            blocked_hessian_matrix(*problem.X.kernel_args, problem.n_samples,
                                   problem.n_features, problem.bias, self.curve, H,
                                   self.hessian_block)
        H /= problem.n_samples
        # (its upper triangle and diagonal are all solve_spd reads: no mirrored lower half)
        H[np.diag_indices_from(H)] += problem.l2
        if self.free_last:
            H[-1, -1] -= problem.l2
            if not H[-1, -1] > 0.0:       # no margin with curvature: as in _cg_step
                H[-1, -1] = problem.l2
        if free is None:
            solution = solve_spd(H, gradient)
        else:
            index = np.flatnonzero(free)
            solution = solve_spd(H[np.ix_(index, index)], gradient[index])
        if solution is None:
            return None
        if free is None:
            return np.negative(solution, out=solution)
        step = np.zeros_like(gradient)
        step[index] = -solution
        return step

    def _cg_step(self, gradient, free, tol, norm):
        """Preconditioned conjugate gradient on H s = -g (over the free coordinates), until a
        step lowers the quadratic model by at most tol / k of its value (k: the step's number;
        CG_QUADRATIC_TOL), or, where the model is exact, until the residual is at most
        CG_RESIDUAL_TOL ||g|| (norm). The preconditioner is LIBLINEAR's mix of
        the identity and the Jacobi diagonal, (1 - PRECONDITIONER_MIX) l2 +
        PRECONDITIONER_MIX diag(H) (docs/math.md Sec. 4f). Six d-vectors besides w and g: the
        step, the residual, the direction, its image H d (the buffer), the preconditioner and
        the preconditioned residual, all updated in place."""
        problem = self.problem
        n, l2 = problem.n_samples, problem.l2
        if not self.diagonal_fresh:       # (the direct solve's fallback)
            self.passes += 1
            _rows.transpose_times(*problem.X.kernel_args, n, problem.n_features, problem.bias,
                                  self.curve, self.diagonal, True)
        precond = self.diagonal             # in place: (1 - m) l2 p + m (diag/n + l2 p)
        precond *= PRECONDITIONER_MIX / n
        self.diagonal_fresh = False
        precond += l2
        damp_last = False
        if self.free_last:
            precond[-1] -= l2
            # No margin with curvature (the smooth hinge at w = 0: every margin where the loss
            # turns linear): the Newton system has no solution along the free intercept, and
            # CG's step would grow without bound there. For this step its entry gets the
            # curvature l2 of a penalised one: a positive definite system, a descent direction.
            damp_last = not precond[-1] > 0.0
            if damp_last:
                precond[-1] = l2
        step = np.zeros_like(gradient)
        residual = -gradient
        z = residual / precond
        direction = z.copy()
        rz = dot(residual, z)
        # X step, summed from each direction's X d, which the product computes on its way
        # (one pass fewer an iteration), where every row has curvature: a row without would be
        # read for X d alone at every CG step (docs/math.md 4f).
        direction_margins = (self.direction_margins if np.all(self.curve != 0.0) else None)
        if direction_margins is not None:
            self.dz[:] = 0.0
        self.step_margins = direction_margins is not None
        model = 0.0                          # Q(step) < 0
        for k in range(1, self.max_cg + 1):
            hd = self._hessian_times(direction, direction_margins)
            if damp_last:
                hd[-1] += l2 * direction[-1]
            if free is not None:
                hd[~free] = 0.0
            curvature = dot(direction, hd)
            if not curvature > 0.0:          # flat or not convex along it: stop here
                if not np.any(step):
                    step[:] = residual       # (no progress yet: steepest descent)
                    self.step_margins = False
                break
            alpha = rz / curvature
            axpy(alpha, direction, step)
            if direction_margins is not None:
                axpy(alpha, direction_margins, self.dz)
            axpy(-alpha, hd, residual)
            # The step lowers Q by alpha r.d - alpha^2 d.H d / 2 = alpha rz / 2 (CG's r.d = rz
            # and alpha d.H d = rz).
            if self.exact_model:
                if nrm2(residual) <= CG_RESIDUAL_TOL * norm:
                    break
            else:
                decrease = 0.5 * alpha * rz
                model -= decrease
                if k * decrease <= tol * -model:
                    break
            if self.direct_price is not None and k >= self.direct_price:
                # This solve has cost what a direct one would: its step as it is (each CG
                # iterate is a descent direction), and direct steps from the next iteration on.
                self._go_direct()
                break
            np.divide(residual, precond, out=z)
            rz_next = dot(residual, z)
            direction *= rz_next / rz
            direction += z
            rz = rz_next
        return step

    def _penalty(self, w):
        return penalty(w, self.problem.l2, self.problem.l1, self.free_last)

    def epoch(self):
        """One Newton iteration; returns the passes over the data it made (with the gradient
        pass may_reach made for it, if it did)."""
        self._iterate()
        passes, self.reported = self.passes - self.reported, self.passes
        return passes

    def _gradient(self):
        """(P(w), the gradient at w) of the iterate, computed once per iterate: by the
        iteration, or before it by may_reach. The pass also leaves CG's preconditioner diagonal
        at w (diagonal_fresh) unless the direct solve forms the Hessian."""
        if self.at_w is not None:
            return self.at_w
        problem = self.problem
        n = problem.n_samples
        w = self.w
        if not self.fresh_margins:  # (else z = X w already, and the loss's terms at z: the
            self._margins(w, self.z)  # accepted trial's, from the line search)
            self.data_term = _newton.loss_terms(problem.y, problem.sample_weight, self.z,
                                                problem.loss, self.slope, self.curve)
            self.fresh_margins = True
        value = self.data_term / n + self._penalty(w)
        gradient = np.empty(w.shape[0])
        self.passes += 1
        self.diagonal_fresh = not self.direct
        if self.diagonal_fresh:             # CG's preconditioner in the gradient's pass
            _rows.gradient_and_diagonal(*problem.X.kernel_args, n, problem.n_features,
                                        problem.bias, self.slope, self.curve, gradient,
                                        self.diagonal)
        else:
            _rows.transpose_times(*problem.X.kernel_args, n, problem.n_features, problem.bias,
                                  self.slope, gradient)
        gradient *= 1.0 / n
        self._add_l2(w, gradient)
        self.at_w = (value, gradient)
        return self.at_w

    def may_reach(self, tol):
        """Whether the certificate of the iterate may reach tol (the "auto" schedule's
        question). With the l2 penalty alone (the intercept regularised or absent) the
        certificate of w with its margins' duals is ||g||^2 / (2 l2) exactly (docs/math.md 4f):
        the iteration's own gradient, computed here one iteration early (the next iteration
        uses it, so no pass is added but at the last), gives it. False while that relative gap
        is above KNOWN_GAP_SLACK * tol; otherwise (an l1 term, a free intercept) always True."""
        self.known = None
        if not self.knows_gap:
            return True
        value, gradient = self._gradient()
        norm = nrm2(gradient)
        self.known = norm * norm / (2.0 * self.problem.l2) / max(abs(value), TINY)
        return not self.known > KNOWN_GAP_SLACK * tol

    def known_gap(self):
        """The relative gap of the iterate's certificate that the last may_reach computed
        without it, or None (solver="auto"'s stall test reads it where no check is made)."""
        return self.known

    def _iterate(self):
        problem = self.problem
        n = problem.n_samples
        y, c, loss = problem.y, problem.sample_weight, problem.loss
        w = self.w
        value, gradient = self._gradient()
        self.at_w = None
        self.fresh_margins = False          # (the line search's trials overwrite the terms)
        # The elastic net (docs/math.md Sec. 4f): the orthant-wise Newton step. The pseudo-
        # gradient is the minimum-norm subgradient; the free coordinates are the nonzero ones
        # and the zeros that it moves; the step stays in the orthant of w (a zero's orthant is
        # the sign opposite its pseudo-gradient), where l1 ||w||_1 is linear.
        free, orthant = None, None
        if problem.l1 > 0.0:
            lam = np.full(w.shape[0], problem.l1)
            if self.free_last:
                lam[-1] = 0.0
            gradient = np.where(w != 0, gradient + lam * np.sign(w),
                                soft_threshold(gradient, lam))
            orthant = np.where(w != 0, np.sign(w), -np.sign(gradient))
            free = orthant != 0
            del lam
        norm = nrm2(gradient)
        if not norm > 0.0:
            return
        tol = CG_QUADRATIC_TOL
        if self.previous_norm is not None:
            tol = min(tol, norm / self.previous_norm)
            if self.direct_price is not None and not norm < self.previous_norm:
                # CG first (logistic): a truncated step that did not lower the gradient's norm
                # (w8a at alpha 1e-8: 7.4e4 and 7.4e4 known gaps); exact steps from here
                self._go_direct()
        self.previous_norm = norm
        self.step_margins = False           # (whether _cg_step left X step in dz)
        step = self._direct_step(gradient, free) if self.direct else None
        if step is None:
            step = self._cg_step(gradient, free, tol, norm)
        slope = dot(gradient, step)
        if not slope < 0.0:
            step, slope = -gradient, -norm * norm
            self.step_margins = False
        if not self.step_margins:
            self._margins(step, self.dz)
        trial = np.empty_like(w)
        t = 1.0
        known_sum = None                  # (the data term at t, when the terms are at t)
        if self.cut_overshoot:
            t, known_sum = self._line_start(step, slope)
        for halvings in range(61):
            if halvings == 60:
                # 60 halvings did not do: the last trial is the minimiser along s of the
                # objective's upper bound by the loss's smoothness (phi'' <= 1/gamma), whose
                # decrease is at least half the slope's (docs/math.md 4f). Where no margin has
                # curvature (the smoothed hinge at w = 0: every margin on the loss's linear
                # stretch) H is l2 alone and s = -g / l2, out of all proportion at a small l2
                # (1e20 times too long at alpha = 1e-20).
                shortest = self._bounded_step(step, slope)
                if not 0.0 < shortest < t:
                    break
                t = shortest
            np.multiply(step, t, out=trial)
            trial += w
            decrease = t * slope                  # <g, trial - w>
            # (each trial's loss terms overwrite the iteration's, which CG has used: the
            # accepted trial's are the next iteration's)
            crossed = None
            if orthant is not None:
                crossed = trial * orthant < 0     # projected back onto the orthant's face
                if not np.any(crossed):
                    crossed = None
            if crossed is None and known_sum is not None:
                data_sum, known_sum = known_sum, None
            elif crossed is None:
                data_sum = _newton.loss_terms(y, c, self.z, loss, self.slope, self.curve,
                                              self.dz, t)
            else:
                decrease -= float(gradient[crossed] @ trial[crossed])
                trial[crossed] = 0.0
                trial_z = self.trial_z
                self._margins(trial, trial_z)
                data_sum = _newton.loss_terms(y, c, trial_z, loss, self.slope, self.curve)
            trial_value = data_sum / n + self._penalty(trial)
            if trial_value <= value + ARMIJO * decrease:
                self.w = trial
                # The next iteration's margins, without a pass (a full pass every
                # MARGIN_REFRESH iterations keeps rounding from accumulating).
                self.updates += 1
                if self.updates % MARGIN_REFRESH:
                    if crossed is not None:
                        self.z[:] = trial_z
                    else:
                        self.z += t * self.dz     # (the bits the trial's terms were taken at)
                    self.fresh_margins = True
                    self.data_term = data_sum
                return
            t *= 0.5
        # No decrease at any step length: w is optimal to rounding; keep it.

    def _line_start(self, step, slope):
        """(t, the data term at t or None) of the line search's first trial, for a piecewise
        quadratic loss: t = 1, with the loss's terms at 1, unless the objective's slope f'(1)
        along the step is above LINE_TOL |f'(0)|, the step past the minimum (the smoothed
        hinge's linear stretches have no curvature: the Newton model does not see where they
        end). Then t in (0, 1) is the minimum, to |f'(t)| <= LINE_TOL |f'(0)|, by Newton's
        method on t kept inside the bracket [low, high] of the minimum by bisection: f is
        convex and piecewise quadratic along the step, f'(t) = sum_i c_i phi'(z_i + t dz_i)
        dz_i / n + l2 (w.P s + t s.P s), f''(t) = sum_i c_i phi''(.) dz_i^2 / n + l2 s.P s
        (P: a free intercept's entry excluded). The first Newton step is from t = 1's terms,
        the others from line_derivatives."""
        problem = self.problem
        n, l2 = problem.n_samples, problem.l2
        y, c, loss, z, dz = problem.y, problem.sample_weight, problem.loss, self.z, self.dz
        ws = penalised_dot(self.w, step, self.free_last)
        ss = penalised_dot(step, step, self.free_last)
        data_sum = _newton.loss_terms(y, c, z, loss, self.slope, self.curve, dz, 1.0)
        d1 = dot(self.slope, dz) / n + l2 * (ws + ss)
        if not d1 > LINE_TOL * -slope:
            return 1.0, data_sum
        low, high, t = 0.0, 1.0, 1.0
        d2 = _newton.weighted_square_sum(self.curve, dz) / n + l2 * ss
        for _ in range(LINE_STEPS):
            t = t - d1 / d2 if d2 > 0.0 else 0.5 * (low + high)
            if not low < t < high:
                t = 0.5 * (low + high)
            first, second = _newton.line_derivatives(y, c, z, dz, t, loss)
            d1 = first / n + l2 * (ws + t * ss)
            if abs(d1) <= LINE_TOL * -slope:
                break
            if d1 < 0.0:
                low = t
            else:
                high = t
            d2 = second / n + l2 * ss
        return t, None

    def _bounded_step(self, step, slope):
        """-slope / A, A = s.(l2 P) s + sum_i c_i dz_i^2 / (gamma n): the minimiser along the
        step of the quadratic upper bound f(w) + t slope + t^2 A / 2 of the smooth part."""
        problem = self.problem
        # In units of the largest entry of s and X s, so that no square overflows (rows scaled
        # by 1e100, say): A and the slope are quadratic and linear in those units.
        scale = max(float(np.max(np.abs(step))), float(np.max(np.abs(self.dz), initial=0.0)))
        if not 0.0 < scale < np.inf:
            return 0.0
        s, dz = step / scale, self.dz / scale
        curvature = problem.l2 * penalised_dot(s, s, self.free_last)
        curvature += _newton.weighted_square_sum(problem.sample_weight, dz) / (
            problem.loss.gamma * problem.n_samples)
        return -slope / scale / scale / curvature if curvature > 0.0 else 0.0

    def check_due(self, epoch):
        return None

    def point(self):
        # The duals of w's margins: from the margins the line search left (no pass over X) when
        # they are w's, else computed by the certificate (None). Any feasible duals certify w;
        # these differ from a fresh pass's by rounding only.
        if self.fresh_margins:
            return self.w, self.problem.loss.duals_from_margins(self.problem.y, self.z)
        return self.w, None

    def after_check(self, checkpoint):
        pass
