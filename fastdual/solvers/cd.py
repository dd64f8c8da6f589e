"""Primal coordinate descent over the features with working sets (docs/math.md, 4k): the
smooth per-sample losses, with pure l1, the elastic net or l2, the intercept regularised or free.

Each `epoch()` is one outer step: one pass computes every coordinate's violation of its
optimality condition (the distance of 0 to the subdifferential of the objective in w_j), the
working set grows to the support and the most violating coordinates (twice the support, at least
P0), and cyclic sweeps over it, in blocks of ANDERSON_K (each full block Anderson-extrapolated),
run until they have solved the working set to a fraction INNER_TOL of the outer violation or
have read INNER_PASSES passes' entries of X. It returns the passes over the data it made. The
certificate is the shared one, with duals from margins (for pure l1 those of the extrapolated
sweeps, rescaled to feasibility by the gap function, which keeps the better of them and w's own).

The proximal Newton steps (the default for the losses whose curvature varies) minimise their
model by sweeps over the working set's columns, or, on tall data with few columns, by many cheap
sweeps on the model's Gram matrix over the working set (docs/math.md 4k): collinear columns (one-
hot groups with an intercept) make coordinate descent drift slowly along X's null space, and a
pure-l1 certificate lags until the drift is done.

Gap-safe screening (`screening=True`, docs/math.md 4l): after each certificate, the features
whose sphere test proves w*_j = 0 are set to 0 and dropped for the rest of the training (the
score pass and the working sets skip them); a warm start is certified and screened at once.

X is read by columns (`Matrix.columns()`): a CSC or Fortran-ordered X as it is, any other
converted once (docs/solvers/cd.md says what that costs).
"""
import math

import numpy as np

from fastdual._core import rows as _rows
from fastdual.losses import get_loss_spec
from fastdual.solvers import _cd, _newton
from fastdual.solvers.common import Option, penalty, solve_spd

P0 = 10             # the first working set's size (and the smallest)
INNER_TOL = 0.3     # sweep the working set until its violation is below this times the outer one
INNER_PASSES = 10.0  # ... or until the sweeps have read this many passes' entries of X
ANDERSON_K = 5      # sweeps between Anderson extrapolations
# proximal Newton: sweeps over the working set's model per step, at most (the first sweep and
# four blocks of ANDERSON_K, each block extrapolated)
MODEL_SWEEPS = 1 + 4 * ANDERSON_K
MODEL_TOL = 0.3     # ... stopping once the model's violation is below this times the set's
#                     tolerance; in the column sweeps of the losses whose models adapt
#                     (adaptive_model), or below model_eps times the first epoch's largest
#                     violation, the looser (docs/math.md 4k, "How exactly each model is
#                     minimised"): model_eps starts at MODEL_EPS_START (a warm start's at
#                     WARM_MODEL_EPS), is multiplied by MODEL_EPS_FACTOR after a full step of
#                     the line search (or none), divided by it (at most back to
#                     MODEL_EPS_START) after a shortened one
MODEL_EPS_START, MODEL_EPS_FACTOR = 1.0, 0.25
MODEL_EPS_LEAST = 1e-20   # (below which MODEL_TOL governs in any run: no underflow to 0)
# A warm start (a path's next alpha) is near its optimum: its models start at MODEL_TOL's
# tolerance and loosen only after a shortened step.
WARM_MODEL_EPS = MODEL_EPS_LEAST
SIGMA = 0.01        # the line search's sufficient decrease (LIBLINEAR's newGLMNET's)
LINE_SEARCH_STEPS = 30
MODEL_FLOOR = 1e-4  # the model's curvature along j: at least this times the global bound L_j
GRAM_SWEEPS = 1000  # the model on its Gram matrix: sweeps per step, at most
GRAM_ROW_ENTRIES = 40  # ... used while the rows' mean entries in W are at most this (twice the
#                        20 column sweeps a step the rule was measured against)
GRAM_SIZE = 2048    # ... and |W| at most this (the matrix: |W|^2 doubles)
# The support's Newton step (docs/math.md 4k): a dense |S| x |S| factorisation, for supports of
# at most SUPPORT_SIZE weights; its multiply-adds count as FACTOR_ENTRIES of an entry of X read
# (on news20 a sparse read cost 75-110 times a multiply-add of the factorisation). It runs after
# an epoch whose support changed in at most SUPPORT_CHANGE of its entries, once cd has read
# SUPPORT_RATIO times the last step's cost since it.
SUPPORT_SIZE = 2500
# Above SUPPORT_SIZE, for the losses whose models adapt (adaptive_model: logistic), the step
# takes a block of the support: its SUPPORT_BLOCK features of the largest column norms (on raw
# text the frequent words, collinear with the rows' lengths: where the valleys are) and the
# intercept, the other weights held; the piecewise-quadratic losses take no step there.
SUPPORT_BLOCK = 100
FACTOR_ENTRIES = 1.0 / 64.0
SUPPORT_CHANGE = 0.1
SUPPORT_RATIO = 0.25
# The step's system carries the model's floor times a damping in [DAMPING_LEAST, 1]: divided by
# 1 / DAMPING_DOWN after a full step that changed no sign, multiplied by DAMPING_UP otherwise.
DAMPING_DOWN, DAMPING_UP, DAMPING_LEAST = 0.01, 10.0, 1e-8
# Pure l1: a certificate is not tried while the last score pass's largest violation is above
# CHECK_VIOLATION times tol times l1 (may_reach): the margin duals are then scaled by at least
# 1 + violation / l1 to feasibility, and on news20's classes no check passed above a tenth of l1
# at tol 1e-4 (docs/math.md 4k, "Which checks are tried").
CHECK_VIOLATION = 1000.0
EPS = np.finfo(float).eps


def anderson_weights(iterates):
    """The affine weights (summing to 1) of iterates[1:] whose combination of the consecutive
    differences has the least norm (Anderson extrapolation, docs/math.md 4k), or None if the
    differences are degenerate."""
    steps = np.diff(iterates, axis=0)
    try:
        weights = np.linalg.solve(steps @ steps.T, np.ones(steps.shape[0]))
    except np.linalg.LinAlgError:
        return None
    total = weights.sum()
    if not (np.isfinite(total) and total != 0.0):
        return None
    return weights / total


class CD:
    name = "cd"
    # the loss capabilities it trains (fastdual.losses): a derivative and a curvature bound
    needs = frozenset({"per_sample", "smooth"})
    pure_l1 = True
    free_intercept = True
    options = {
        "working_set": Option(True, kind=bool,
                              help="sweep a working set of the most violating coordinates, "
                                   "grown every epoch; False: every coordinate every sweep"),
        "anderson": Option(True, kind=bool,
                           help="Anderson extrapolation of the sweeps' iterates every "
                                f"{ANDERSON_K} sweeps, kept when it lowers the objective (with "
                                "newton, of the model's sweeps, kept when it lowers the model)"),
        "newton": Option(True, kind=bool,
                         help="proximal Newton steps on the working set (the losses whose "
                              "curvature varies: all but the squared loss); False: sweeps "
                              "with the loss's global curvature bound"),
        "support_newton": Option("auto", choices=("auto", "on", "off"),
                                 help="with newton and an l1 term: a Newton step on the "
                                      "support with the signs held, its Hessian factored, "
                                      "after an epoch whose model sweeps ended at their cap on "
                                      "a settled support, once cd has read a quarter of the "
                                      "last one's cost since it; above "
                                      f"{SUPPORT_SIZE} weights only for the logistic loss, "
                                      f"on its {SUPPORT_BLOCK} features of the largest column "
                                      "norms and the intercept; auto: on"),
        "screening": Option(True, kind=bool,
                            help="gap-safe screening: after each certificate, drop the features "
                                 "the certified dual point proves zero at the optimum"),
    }
    helper_l2 = 0.0
    # the certificate's v(duals) is read by the screening test, summed plainly (_loop)
    exact_dual_vector = False

    def __init__(self, problem, options, seed, initial_duals=None):
        self.problem = problem
        self.working_set = options["working_set"]
        self.anderson = options["anderson"]
        capabilities = get_loss_spec(problem.loss_name).capabilities
        quadratic = "quadratic_dual" in capabilities and "box" not in capabilities
        self.newton = options["newton"] and not quadratic
        choice = options.get("support_newton", "auto")
        self.support_newton = (self.newton and problem.l1 > 0.0 and not problem.free_intercept
                               and choice in ("auto", "on"))
        self.capped = False         # whether this epoch's column model sweeps ended at their cap
        self.since_support = 0.0    # entries read since the last support step
        self.support_cost = 0.0     # ... and what that step cost, in entries
        self.damping = 1.0          # the weight of the model's floor in the step (_damp)
        # The models' tolerance adapts to the line search's steps (_adapt_model_tol) but for the
        # losses with the capability piecewise_quadratic (squared and smoothed hinge, squared
        # epsilon-insensitive), whose Newton model is the loss itself on the current pieces:
        # those are minimised to MODEL_TOL throughout, and take no block steps.
        self.adaptive_model = self.newton and "piecewise_quadratic" not in capabilities
        self.model_eps = MODEL_EPS_START   # the models' tolerance, in first_violation units
        self.first_violation = 0.0          # the first epoch's largest violation (0: none yet)
        self.largest = math.inf             # the last score pass's (or sweep's) largest
        #                                     violation, inf before the first
        # (screening needs an l1 term: with l1 = 0 no feature is zero at the optimum)
        self.screening = options.get("screening", True) and problem.l1 > 0.0
        n, d = problem.n_samples, problem.n_features
        self.columns = problem.X.columns()
        self.cn = problem.sample_weight / n
        self.y = problem.y
        self.loss = problem.loss
        self.bias = problem.bias
        self.lipschitz = np.empty(d + 1)
        _cd.column_norms(*self.columns, n, d, self.cn, self.lipschitz)
        self.lipschitz[d] = problem.bias ** 2 * float(np.sum(self.cn))
        # ||x_j||_c = (sum_i c_i x_ij^2 / n)^(1/2): the screening test's column norms
        self.norms = np.sqrt(self.lipschitz) if self.screening else None
        self.lipschitz *= 1.0 / problem.loss.gamma
        # The squared loss's free intercept is eliminated in the sweeps (docs/math.md 4k): the
        # features step on the centred columns, whose curvatures are L_j - m_j^2 / sum(cn)
        # with m_j = sum_i cn_i x_ij.
        self.column_sums = np.empty(0)
        self.sweep_lipschitz = self.lipschitz
        if problem.free_intercept and problem.bias and quadratic:
            sums = np.empty(d + 1)
            _rows.transpose_times(*problem.X.kernel_args, n, d, 0.0, self.cn, sums)
            self.column_sums = sums[:d].copy()
            total = float(np.sum(self.cn))
            if total > 0.0:
                self.sweep_lipschitz = self.lipschitz.copy()
                centred = (self.lipschitz[:d]
                           - self.column_sums ** 2 / (total * problem.loss.gamma))
                # (a constant column's is 0 but for rounding: the intercept absorbs it)
                centred[centred <= 1e-12 * self.lipschitz[:d]] = 0.0
                self.sweep_lipschitz[:d] = centred
        # The features not screened, and the coordinates: those and the intercept's (index d)
        # when there is one.
        self.features = np.arange(d, dtype=np.int32)
        self.coordinates = np.arange(d + 1 if problem.bias else d, dtype=np.int32)
        self.screened = np.zeros(d, dtype=np.uint8)   # 1: screened, w_j = 0 for good
        self.n_screened = 0
        self.v_cert = np.empty(d + 1) if self.screening else None
        self.warm = False           # a warm start's first check is due at its first epoch
        nnz = int(self.columns[2][-1]) if problem.X.is_sparse else n * d
        self.pass_entries = float(max(nnz + (n if problem.bias else 0), 1))
        self.score_entries = self.pass_entries      # the score pass's entries (screening cuts)
        self.entries = 0.0          # entries of X read so far
        self.reported = 0           # passes reported to the loop so far
        self.scores = np.empty(d + 1)
        self.history = np.empty((ANDERSON_K + 1, 0))
        self.no_history = np.empty((0, 0))
        self.ws = self.coordinates
        self.recorded = 0           # rows of the history that are consecutive sweeps ending at w
        self.w = np.zeros(d + 1)
        self.z = np.zeros(n)
        self.u = np.empty(n)
        if self.newton:
            self.h = np.empty(n)        # the samples' curvatures at w
            self.r = np.empty(n)        # the Newton model's margins X (w_trial - w)
            self.q = np.empty(n)        # its derivative in the margins, g + h r
            self.trial = np.empty(d + 1)  # the model's minimiser on the working set
            self.floor = MODEL_FLOOR * self.lipschitz   # the model's least curvature
            # the margins' changes of the model's last ANDERSON_K + 1 sweeps (_model_sweeps)
            self.model_margins = np.empty((ANDERSON_K + 1, n)) if self.anderson else None
            self.packed_state = np.empty(_cd.packed_length(n))   # the sweeps' work space
        self._refresh()

    def _refresh(self):
        """u from the margins z (the squared loss's and the others' alike)."""
        _cd.derivatives(self.y, self.cn, self.loss, self.z, self.u)

    def start_from(self, w):
        """A warm start from a model's coefficients (intercept feature last)."""
        problem = self.problem
        self.w = np.array(w, dtype=np.float64)
        if not problem.bias:
            self.w[-1] = 0.0
        _rows.margins(*problem.X.kernel_args, problem.n_samples, problem.n_features,
                      problem.bias, self.w, self.z)
        self._refresh()
        self.model_eps = WARM_MODEL_EPS
        self.recorded = 0
        if self.screening:
            # The warm point, certified by the shared gap function (one pass over X), screens
            # before the first score pass; the first check comes after the first epoch.
            duals = problem.feasible_duals(self.loss.duals_from_margins(self.y, self.z))
            primal, dual, gap = problem.certificate(self.w, duals, v_out=self.v_cert,
                                                    feasible=True)
            self._screen(duals, primal, dual, gap)
            self.warm = True

    def _sweeps(self, coordinates, max_sweeps, budget, tol, history):
        problem = self.problem
        return _cd.sweeps(*self.columns, problem.n_samples, problem.n_features, self.bias,
                          self.y, self.cn, self.loss, self.w, self.z, self.u,
                          self.sweep_lipschitz, coordinates, problem.l2, problem.l1,
                          problem.free_intercept, max_sweeps, budget, tol, history,
                          self.column_sums)

    def epoch(self):
        """One outer step; returns the passes over the data it made."""
        if not self.working_set:
            # (the sweep's largest violation, each coordinate's measured before its step: the
            # score pass's measure, for may_reach)
            _, work, self.largest = self._sweeps(self.coordinates, 1, 0.0, 0.0,
                                                 self.no_history)
            self.recorded = 0
            return self._passes(work)
        problem = self.problem
        largest = _cd.scores(*self.columns, problem.n_samples, problem.n_features, self.bias,
                             self.u, self.w, problem.l2, problem.l1, problem.free_intercept,
                             self.features, self.lipschitz, self.scores)
        work = self.score_entries
        self.largest = largest
        if self.first_violation == 0.0:
            self.first_violation = largest
        if largest > 0.0:
            solve = self._newton_working_set if self.newton else self._solve_working_set
            ws = self._working_set()
            support = self.w[ws] != 0.0 if self.support_newton else None
            self.capped = False
            work += solve(ws, INNER_TOL * largest)
            if self.support_newton:
                work += self._settled_support_step(ws, support, work)
        return self._passes(work)

    def _settled_support_step(self, ws, support, work):
        """The support's Newton step after an epoch that read `work` entries, if its model
        sweeps ended at their cap (the valleys of long rows), the support (`support`: which of
        the working set's weights were nonzero before it; the support stays within the working
        set) changed in at most SUPPORT_CHANGE of its entries, and cd has read SUPPORT_RATIO
        times the last step's cost since it; a support above SUPPORT_SIZE with adaptive_model
        only (_support_step takes its block). Returns the step's work in entries (0: none)."""
        self.since_support += work
        now = self.w[ws] != 0.0
        size = np.count_nonzero(now)
        settled = np.count_nonzero(support != now) <= SUPPORT_CHANGE * size
        if not (self.capped and settled and 0 < size
                and (size <= SUPPORT_SIZE or self.adaptive_model)
                and self.since_support >= SUPPORT_RATIO * self.support_cost):
            return 0.0
        self.support_cost = self._support_step()
        self.since_support = 0.0
        return self.support_cost

    def _support_step(self):
        """A Newton step on the support S with the signs held (docs/math.md 4k, "The support's
        Newton step"): on the orthant of w's signs the objective is smooth on S. Its Newton
        system, (X_S^T diag(h) X_S + l2 I + the model's floor damped by _damp) s =
        -(g_S + l2 w_S + l1 sign(w_S)), is formed by model_gram in one pass over the rows and
        solved by Cholesky; then a backtracking search on the true objective, each trial
        projected on the orthant (a weight that would change sign becomes 0). Where the sweeps
        crawl along the valleys of a few long rows, the factorisation takes the whole valley at
        once. A support above SUPPORT_SIZE is stepped on its block (_support_block), the
        other weights held. Returns the work in entries of X (the factorisation's
        multiply-adds counted at FACTOR_ENTRIES each)."""
        problem = self.problem
        n, d = problem.n_samples, problem.n_features
        size = d + 1 if problem.bias else d
        support = np.flatnonzero(self.w[:size]).astype(np.int32)
        if support.shape[0] > SUPPORT_SIZE:
            support = self._support_block(support)
        m = support.shape[0]
        if m == 0:
            return 0.0
        loss = _newton.loss_terms(self.y, self.cn, self.z, self.loss, self.u, self.h)
        position = np.full(d + 1, -1, dtype=np.int32)
        position[support] = np.arange(m, dtype=np.int32)
        hessian, gradient = np.empty((m, m)), np.empty(m)
        products = _cd.model_gram(*problem.X.kernel_args, n, d, problem.bias, self.u, self.h,
                                  position, hessian, gradient, np.empty(m, dtype=np.int32),
                                  np.empty(m))
        # (the loss pass, the rows' pass counted whole, the Gram's multiply-adds, the
        # factorisation's)
        work = n + self.pass_entries + products + FACTOR_ENTRIES * m ** 3 / 3.0
        start = self.w[support]
        signs = np.sign(start)
        gradient += problem.l2 * start + problem.l1 * signs
        hessian[np.diag_indices(m)] += problem.l2 + self.damping * self.floor[support]
        step = solve_spd(hessian, gradient)
        if step is None:
            self._damp(False)
            return work
        np.negative(step, out=step)
        slope = float(gradient @ step)
        if not slope < 0.0:
            self._damp(False)
            return work
        r = self.r
        r[:] = 0.0
        _cd.add_columns(*self.columns, n, d, self.bias, support, step, r)
        work += self._entries(support)
        before = loss + penalty(start, problem.l2, problem.l1, False)
        t, projected = 1.0, None
        for _ in range(LINE_SEARCH_STEPS):
            trial = start + t * step
            crossed = np.sign(trial) != signs
            if np.any(crossed):
                trial[crossed] = 0.0
                if projected is None:
                    projected = np.empty(n)
                changes = projected
                changes[:] = 0.0
                _cd.add_columns(*self.columns, n, d, self.bias, support, trial - start,
                                changes)
                work += self._entries(support)
                scale = 1.0
            else:
                changes, scale = r, t
            after = (_newton.loss_sum(self.y, self.cn, self.z, changes, scale, self.loss)
                     + penalty(trial, problem.l2, problem.l1, False))
            work += n
            if after <= before + SIGMA * float(gradient @ (trial - start)):
                self._damp(t == 1.0 and not np.any(crossed))
                self.w[support] = trial
                self.z += scale * changes
                self._refresh()
                self.recorded = 0       # w is no longer the last recorded iterate
                return work
            t *= 0.5
        self._damp(False)
        return work

    def _support_block(self, support):
        """The block of a support larger than SUPPORT_SIZE that the step takes: its
        SUPPORT_BLOCK features of the largest column norms, and the intercept's coordinate if
        it is in the support (sorted)."""
        d = self.problem.n_features
        features = support[support < d]
        features = features[np.argsort(-self.lipschitz[features], kind="stable")[:SUPPORT_BLOCK]]
        block = np.sort(features)
        if support[-1] == d:
            block = np.append(block, d)
        return block.astype(np.int32)

    def _damp(self, trusted):
        """The support step's damping (the weight of the model's floor in its system), in the
        manner of Levenberg and Marquardt: 100 times less after a full step that changed no
        sign (the quadratic on the orthant held), 10 times more after any other outcome."""
        self.damping = (max(self.damping * DAMPING_DOWN, DAMPING_LEAST) if trusted
                        else min(self.damping * DAMPING_UP, 1.0))

    def _working_set(self):
        """The support, and the coordinates violating most: twice the support, at least P0,
        sorted (columns in memory order)."""
        d = self.problem.n_features
        scores = self.scores[:d + 1 if self.problem.bias else d]
        support = self.w[:scores.shape[0]] != 0.0
        if self.problem.bias:
            support[d] = True             # the intercept's coordinate: always swept
        scores[support] = np.inf
        # (the selection among the violating coordinates only: most scores are 0 in l1
        # problems, and selecting among many ties is slow)
        candidates = np.flatnonzero(scores > 0.0)
        size = max(P0, 2 * int(np.count_nonzero(support)))
        if size < candidates.shape[0]:
            candidates = candidates[np.argpartition(scores[candidates], -size)[-size:]]
        return np.sort(candidates).astype(np.int32)

    def _solve_working_set(self, ws, tol):
        """Sweeps over the working set, in blocks of ANDERSON_K recorded in the history, until
        its violation is at most tol or they have read INNER_PASSES passes' entries (each full
        block extrapolated with anderson=True); returns the entries read."""
        budget = INNER_PASSES * self.pass_entries
        if self.history.shape[1] != ws.shape[0]:
            self.history = np.empty((ANDERSON_K + 1, ws.shape[0]))
        self.ws, self.ws_entries = ws, self._entries(ws)
        work = 0.0
        while work < budget:
            sweeps, entries, violation = self._sweeps(ws, ANDERSON_K, budget - work, tol,
                                                      self.history)
            work += entries
            self.recorded = sweeps + 1    # history rows: consecutive sweeps' iterates, the last w
            if violation <= tol or sweeps < ANDERSON_K:
                break
            if self.anderson:
                work += self._extrapolate()
        return work

    def _newton_working_set(self, ws, tol):
        """Proximal Newton steps on the working set (docs/math.md 4k; LIBLINEAR's newGLMNET,
        skglm's ProxNewton): each minimises the data term's second-order model at w plus the
        penalty over the working set by up to MODEL_SWEEPS sweeps, then a backtracking line
        search on the true objective takes the longest step 2^-k giving a sufficient decrease.
        The model is minimised on its Gram matrix where that is the cheaper (_gram_buffers).
        Until w's own violation on the set is at most tol, or INNER_PASSES passes' entries.
        Returns the entries read (the Gram matrix's multiply-adds counted as entries)."""
        problem = self.problem
        n, d = problem.n_samples, problem.n_features
        budget = INNER_PASSES * self.pass_entries
        self.ws = ws
        curvature, hsums = np.empty(ws.shape[0]), np.empty(ws.shape[0])
        free_last = problem.free_intercept and problem.bias and ws[-1] == d
        work, stale = 0.0, False
        gram = self._gram_buffers(ws)
        while work < budget:
            # u, h and the loss at w in one pass over the margins
            loss = _newton.loss_terms(self.y, self.cn, self.z, self.loss, self.u, self.h)
            stale = False
            np.copyto(self.trial, self.w)
            if gram is not None:
                entries, violation = self._gram_model(ws, gram, tol)
            else:
                entries, violation = self._model_sweeps(ws, tol, curvature, hsums)
            work += entries + 2 * n
            if violation <= tol:
                break
            reads, t = self._line_search(ws, self.trial[ws], free_last, loss)
            work += reads
            if gram is None and self.adaptive_model:
                self._adapt_model_tol(t)
            if t == 0.0:
                # No sufficient decrease (at a precision where the objective's differences are
                # rounding): the sweeps with the global curvature bound, monotone by
                # construction, finish the working set (u is w's: w did not move).
                return work + self._solve_working_set(ws, tol)
            stale = True
        if stale:
            self._refresh()             # u for the margins the last step moved
        self.recorded = 0
        return work

    def _model_sweeps(self, ws, tol, curvature, hsums):
        """The proximal Newton model at w minimised over the working set by up to MODEL_SWEEPS
        sweeps of its columns (_cd.model_sweeps), the trial point into self.trial, its
        margins' change into self.r; with anderson, the trial points of every ANDERSON_K + 1
        sweeps extrapolated (the margins' changes r are affine in them: the same combination
        of theirs; the weights the last sweep left at 0 kept at 0), kept when the model is
        lower there. Collinear columns (raw counts, whose frequent features all follow the
        row's length) make the sweeps zigzag, and there the extrapolation is what reaches
        MODEL_TOL. Returns (the entries of X read, w's largest violation on the set)."""
        problem = self.problem
        n, d = problem.n_samples, problem.n_features
        trial, r, q, h, u = self.trial, self.r, self.q, self.h, self.u
        r[:] = 0.0
        q[:] = u
        args = (*self.columns, n, d, self.bias, h, trial, r, q, ws, self.floor, self.lipschitz,
                problem.l2, problem.l1, problem.free_intercept)
        model_tol = self._model_tol(tol)
        if not self.anderson:
            sweeps, entries, violation, last = _cd.model_sweeps(*args, MODEL_SWEEPS, tol,
                                                                model_tol, curvature, hsums,
                                                                self.packed_state)
            self.capped |= sweeps >= MODEL_SWEEPS and last > model_tol
            return entries, violation
        sweeps, entries, violation, last = _cd.model_sweeps(*args, 1, tol, model_tol,
                                                            curvature, hsums, self.packed_state)
        if sweeps == 0 or last <= model_tol:
            return entries, violation
        free_last = bool(problem.free_intercept and problem.bias and ws[-1] == d)
        m = ws.shape[0]
        points, margins = np.empty((ANDERSON_K + 1, m)), self.model_margins
        while sweeps < MODEL_SWEEPS:
            # a block of ANDERSON_K sweeps, its iterates recorded (row 0: where it starts); the
            # last may be shorter (MODEL_SWEEPS in all), and is not extrapolated
            block = min(ANDERSON_K, MODEL_SWEEPS - sweeps)
            done, read, _, last = _cd.model_sweeps(*args, block, tol, model_tol, curvature,
                                                   hsums, self.packed_state, True, points,
                                                   margins)
            sweeps += done
            entries += read
            if last <= model_tol or done < ANDERSON_K:
                break
            weights = anderson_weights(points)
            if weights is None:
                continue
            candidate, changes = weights @ points[1:], weights @ margins[1:]
            entries += m + ANDERSON_K * n
            # (the weights the last sweep set to 0 stay 0: no support the sweeps dropped)
            zeroed = (points[-1] == 0.0) & (candidate != 0.0)
            if free_last:
                zeroed[-1] = False
            if np.any(zeroed):
                _cd.add_columns(*self.columns, n, d, self.bias, ws[zeroed], -candidate[zeroed],
                                changes)
                candidate[zeroed] = 0.0
            if (float(u @ changes + 0.5 * (h @ (changes * changes)))
                    + penalty(candidate, problem.l2, problem.l1, free_last)
                    < float(u @ r + 0.5 * (h @ (r * r)))
                    + penalty(points[-1], problem.l2, problem.l1, free_last)):
                trial[ws] = candidate
                r[:] = changes
                np.multiply(h, r, out=q)
                q += u
        self.capped |= sweeps >= MODEL_SWEEPS and last > model_tol
        return entries, violation

    def _model_tol(self, tol):
        """The column sweeps' tolerance on the model, for a working set solved to `tol`:
        MODEL_TOL * tol, or model_eps times the first epoch's largest violation where that is
        the looser (docs/math.md 4k, "How exactly each model is minimised")."""
        if not self.adaptive_model:
            return MODEL_TOL * tol
        return max(MODEL_TOL * tol, self.model_eps * self.first_violation)

    def _adapt_model_tol(self, t):
        """After a line search that took the step t: a full step says the model held over the
        whole step, and the next is minimised MODEL_EPS_FACTOR times tighter; a shortened one
        says it stepped beyond where it holds, and the next is minimised that much looser (at
        most MODEL_EPS_START). No step at all (t = 0: the model's decrease at rounding level,
        near the optimum) tightens as a full step does: loosening there would leave every model
        at one sweep, each again with nothing to gain."""
        if t == 1.0 or t == 0.0:
            self.model_eps = max(self.model_eps * MODEL_EPS_FACTOR, MODEL_EPS_LEAST)
        else:
            self.model_eps = min(self.model_eps / MODEL_EPS_FACTOR, MODEL_EPS_START)

    def _gram_buffers(self, ws):
        """(position, gram, b, hd, scratch index, scratch value) for the model on its Gram
        matrix over the working set (docs/math.md 4k), or None where the column sweeps are the
        cheaper: the Gram matrix costs the sum over the rows of their entries in W squared,
        against MODEL_SWEEPS passes over W's columns, and a sweep on it |W|^2 against one pass
        (tall data with few columns, a9a's 123). Not with a free intercept (the column sweeps
        eliminate it)."""
        problem = self.problem
        m = ws.shape[0]
        if problem.free_intercept or m > GRAM_SIZE:
            return None
        entries = self._entries(ws)
        if m * m > entries or entries > GRAM_ROW_ENTRIES * problem.n_samples:
            return None
        position = np.full(problem.n_features + 1, -1, dtype=np.int32)
        position[ws] = np.arange(m, dtype=np.int32)
        return (position, np.empty((m, m)), np.empty(m), np.empty(m),
                np.empty(m, dtype=np.int32), np.empty(m))

    def _gram_model(self, ws, buffers, tol):
        """The proximal Newton model at w minimised over the working set on its Gram matrix
        (one pass over the rows builds it, then up to GRAM_SWEEPS sweeps of |W|^2 each): the
        trial point into self.trial, its margins' change into self.r. Returns (the work in
        entries of X, w's largest violation on the set)."""
        problem = self.problem
        n, d = problem.n_samples, problem.n_features
        position, gram, b, hd, scratch_index, scratch_value = buffers
        work = _cd.model_gram(*problem.X.kernel_args, n, d, problem.bias, self.u, self.h,
                              position, gram, b, scratch_index, scratch_value)
        hd[:] = 0.0
        _, flops, violation, _ = _cd.gram_sweeps(gram, b, self.trial, ws, self.floor,
                                                 self.lipschitz, hd, problem.l2, problem.l1,
                                                 GRAM_SWEEPS, tol, MODEL_TOL * tol)
        self.r[:] = 0.0
        step = self.trial[ws] - self.w[ws]
        if np.any(step):
            _cd.add_columns(*self.columns, n, d, self.bias, ws, step, self.r)
        return work + flops + self._entries(ws), violation

    def _line_search(self, ws, target, free_last, before):
        """w <- w + t (target - w) on the working set for the largest t in 1, 1/2, ... with
        P(w + t d) <= P(w) + SIGMA t Delta, Delta = g . r + pen(target) - pen(w) (< 0 for a
        step that decreases the model); the margins move by t r (u is left stale). `before`:
        the loss term at w. Returns (the entries read, t; 0 if w did not move)."""
        problem = self.problem
        start = self.w[ws]
        step = target - start
        before_penalty = penalty(start, problem.l2, problem.l1, free_last)
        decrease = (float(self.u @ self.r)
                    + penalty(target, problem.l2, problem.l1, free_last) - before_penalty)
        if not decrease < 0.0:
            return 0.0, 0.0
        t, reads = 1.0, 0.0
        for _ in range(LINE_SEARCH_STEPS):
            candidate = start + t * step
            after = (_newton.loss_sum(self.y, self.cn, self.z, self.r, t, self.loss)
                     + penalty(candidate, problem.l2, problem.l1, free_last))
            reads += self.problem.n_samples
            if after <= before + before_penalty + SIGMA * t * decrease:
                self.w[ws] = candidate
                self.z += t * self.r
                return reads, t
            t *= 0.5
        return reads, 0.0

    def _anderson_point(self, iterates):
        """The Anderson extrapolation of consecutive iterates on the working set (Bertrand &
        Massias 2021; docs/math.md 4k): the affine combination whose combination of the
        differences has the least norm, and its margins; None if the differences are
        degenerate."""
        weights = anderson_weights(iterates)
        if weights is None:
            return None
        candidate = weights @ iterates[1:]
        problem = self.problem
        z = self.z.copy()
        _cd.add_columns(*self.columns, problem.n_samples, problem.n_features, self.bias,
                        self.ws, candidate - iterates[-1], z)
        return candidate, z

    def _extrapolate(self):
        """The extrapolation of the last block, kept if it lowers the objective (the loss over
        the samples and the penalty over the working set: the other weights are the same).
        Returns the entries of X read."""
        extrapolated = self._anderson_point(self.history)
        if extrapolated is None:
            return 0.0
        candidate, z = extrapolated
        problem, ws = self.problem, self.ws
        free_last = problem.free_intercept and problem.bias and ws[-1] == problem.n_features
        before = (_newton.loss_sum(self.y, self.cn, self.z, self.z, 0.0, self.loss)
                  + penalty(self.w[ws], problem.l2, problem.l1, free_last))
        after = (_newton.loss_sum(self.y, self.cn, z, z, 0.0, self.loss)
                 + penalty(candidate, problem.l2, problem.l1, free_last))
        if after < before:
            self.w[ws] = candidate
            self.z = z
            self._refresh()
            self.recorded = 0          # w is no longer the last recorded iterate
        return self.ws_entries

    def _entries(self, ws):
        """The entries of X in the working set's columns (the intercept's counts n)."""
        indptr = self.columns[2]
        d, n = self.problem.n_features, self.problem.n_samples
        features = ws[ws < d]
        if self.problem.X.is_sparse:
            count = float(np.sum(indptr[features + 1] - indptr[features]))
        else:
            count = float(features.shape[0] * n)
        return count + (n if ws.shape[0] and ws[-1] == d else 0)

    def _passes(self, work):
        """Whole passes made so far, less those reported (at least one per epoch: every epoch
        reads at least one pass's entries)."""
        self.entries += work
        passes = max(int(self.entries // self.pass_entries) - self.reported, 1)
        self.reported += passes
        return passes

    def check_due(self, epoch):
        if self.warm:               # a warm start (a path's next alpha): certify at once
            self.warm = False
            return True
        return None

    def may_reach(self, tol):
        """Whether a certificate may reach tol now (the "auto" schedule's question): with pure
        l1, not while the last score pass's largest violation (measured before the epoch's
        solve; with working_set=False, the last sweep's) is above CHECK_VIOLATION * tol * l1;
        otherwise always."""
        if self.problem.l2 != 0.0 or self.problem.l1 == 0.0:
            return True
        return self.largest <= CHECK_VIOLATION * tol * self.problem.l1

    def dual_vector_out(self):
        """The buffer the certificate writes v(duals) into (the screening test's
        correlations), or None without screening."""
        return self.v_cert

    def point(self):
        """w, and duals from margins: for pure l1 those of the extrapolated last sweeps when
        there are three or more (celer's dual extrapolation, docs/math.md 4k: the gap function
        rescales them and keeps the better of them and the duals of w's own margins), else the
        duals of w's kept margins (no pass over X either way)."""
        z = self.z
        if self.problem.l2 == 0.0 and self.recorded >= 3:
            extrapolated = self._anderson_point(self.history[:self.recorded])
            if extrapolated is not None:
                z = extrapolated[1]
        return self.w, self.loss.duals_from_margins(self.y, z)

    def after_check(self, checkpoint):
        if self.screening:
            self._screen(checkpoint.duals, checkpoint.primal, checkpoint.dual, checkpoint.gap)

    def _screen(self, duals, primal, dual, gap):
        """The gap-safe sphere test (docs/math.md 4l) at a certified point: `duals` the
        feasible duals the certificate was given, v_cert their v, primal, dual and gap its
        values. The dual point theta is the duals (l2 > 0) or the duals scaled to feasibility
        (pure l1, the gap function's scale, with its gap recomputed for exactly that point);
        the strong concavity of the dual puts theta* within sqrt(2 gap / gamma) of it in the
        norm ||a||_c = (sum_i c_i a_i^2 / n)^(1/2). Features proved zero at the optimum are set
        to 0 (margins updated) and dropped for good."""
        problem, loss = self.problem, self.loss
        n, d = problem.n_samples, problem.n_features
        l2, l1 = problem.l2, problem.l1
        v = self.v_cert
        if l2 > 0.0:
            scale, factor = 1.0, l2          # x_j . (c theta) / n = l2 v_j
        else:
            # the penalised entries: every feature's and a regularised intercept's
            largest = float(np.max(np.abs(v[:d] if problem.free_intercept else v), initial=0.0))
            scale = l1 / largest if largest > l1 else 1.0
            factor = scale
            # the certificate kept the better of two dual points: recompute the gap of this one
            dual = float(np.dot(problem.sample_weight,
                                loss.dual_values(self.y, scale * duals))) / n
            gap = primal - dual
        if not (math.isfinite(gap) and math.isfinite(dual)):
            return
        # Rounding: the sums of n terms behind P, D and x_j . (c theta) / n are off by at most
        # about n eps times the sums of their terms' sizes; the radius covers both.
        rounding = n * EPS
        theta_norm = scale * math.sqrt(float(np.dot(self.cn, duals * duals)))
        gap = max(gap, 0.0) + rounding * (abs(primal) + abs(dual))
        radius = (math.sqrt(2.0 * gap / loss.gamma) + rounding * theta_norm) * (1.0 + rounding)
        if _cd.screen(v, factor, self.norms, radius, l1, self.features, self.screened) > 0:
            self._drop()

    def _drop(self):
        """Drop the features just screened: their weights to 0 (the margins with them), their
        scores to 0, out of the score pass for good."""
        problem = self.problem
        screened = self.screened[self.features].astype(bool)
        gone, self.features = self.features[screened], self.features[~screened]
        self.n_screened += gone.shape[0]
        self.coordinates = (np.append(self.features, np.int32(problem.n_features))
                            if problem.bias else self.features).astype(np.int32)
        self.scores[gone] = 0.0
        self.score_entries -= self._entries(gone)
        moved = gone[self.w[gone] != 0.0]
        if moved.shape[0]:
            _cd.add_columns(*self.columns, problem.n_samples, problem.n_features, self.bias,
                            moved, -self.w[moved], self.z)
            self.w[moved] = 0.0
            self._refresh()
            self.recorded = 0            # w is no longer the last recorded iterate
