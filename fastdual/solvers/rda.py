"""Regularized dual averaging (seed 003): the state every RDA entry point shares, and the
driver of train(solver="rda") around the kernel of _rda.pyx.

Variants (docs/math.md, "RDA"):
  basic            Algorithm 1 with h = 1/2 ||w||^2, beta_t = gamma sqrt(t): eq. (10) for pure
                   l1, and its l2 / elastic-net analogue.
  enhanced         Algorithm 2: h = 1/2 ||w||^2 + rho ||w||_1, threshold l1 + gamma rho / sqrt(t).
  strongly_convex  beta_t = 0 (Sec. 2.2): the l2^2 and mixed l1/l2^2 closed forms; needs l2 > 0.
  accelerated      Algorithm 3 with eqs. (37)-(38); smooth losses.

The RDA state (RDAState) lives apart from any data set, so that the same steps run over the
rows of one matrix (train), over chunks (fastdual.OnlineRDA) or over files (train_stream), and it
is saved as plain arrays.
"""
import numpy as np

from fastdual.solvers import _rda
from fastdual.solvers.common import Option

VARIANTS = ("basic", "enhanced", "strongly_convex", "accelerated")
DEFAULT_GAMMA = 1.0
DEFAULT_RHO = 1.0
MIN_BLOCK = 1 << 16


def check_variant(variant, gamma, rho, output, l2, free_intercept, smooth):
    """(gamma, rho) to use, or a ValueError naming the argument that does not fit."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {list(VARIANTS)}, got {variant!r}")
    if output not in ("last", "average"):
        raise ValueError(f"output must be 'last' or 'average', got {output!r}")
    for name, value in (("rda_gamma", gamma), ("rho", rho)):
        if value is not None and (isinstance(value, bool) or not np.isfinite(value)
                                  or not value > 0):
            raise ValueError(f"{name} must be a positive finite number or None, got {value!r}")
    if rho is not None and variant != "enhanced":
        raise ValueError(f"rho is the parameter of variant='enhanced', got rho={rho!r} with "
                         f"variant={variant!r}")
    if variant == "strongly_convex":
        if gamma is not None:
            raise ValueError("variant='strongly_convex' has beta_t = 0: it takes no rda_gamma")
        if l2 == 0.0:
            raise ValueError("variant='strongly_convex' needs an l2 term (l1_ratio < 1)")
        if free_intercept:
            raise ValueError("variant='strongly_convex' has no proximal term for a free "
                             "intercept; use variant='basic' or regularize_intercept=True")
        return 0.0, 0.0
    if variant == "accelerated":
        if not smooth:
            raise ValueError("variant='accelerated' needs a smooth loss (squared, logistic, "
                             "squared_hinge, smooth_hinge)")
        if output == "average":
            raise ValueError("variant='accelerated' outputs its own weighted average w_t; "
                             "output='average' is for the dual-averaging variants")
    gamma = DEFAULT_GAMMA if gamma is None else float(gamma)
    rho = (DEFAULT_RHO if rho is None else float(rho)) if variant == "enhanced" else 0.0
    return gamma, rho


class RDAState:
    """Gradient sums, the lazily updated weighted sums, and the step count of one RDA run.

    Arrays: g, s (float64), last (int64), all of length n_features + 1 (intercept last),
    hist (2, block + 2) and clock (STEPS, BLOCK_START, HIST_END). plan: the kernel's constants.
    """

    def __init__(self, n_features, *, variant, gamma, rho, output, l1, l2, free_intercept,
                 lipschitz=0.0, block=None):
        self.n_features = n_features
        self.variant, self.output = variant, output
        self.gamma, self.rho = gamma, rho
        self.l1, self.l2, self.lipschitz = l1, l2, lipschitz
        self.free_intercept = free_intercept
        accelerated = variant == "accelerated"
        track = accelerated or output == "average"
        # Steps per block of the prefix sums: at least d + 1, so that the O(d) settling at a
        # block's end costs O(1) per step (block= is for tests, which exercise many blocks).
        block = max(MIN_BLOCK, n_features + 1) if block is None else int(block)
        icpt = (0.0, 0.0, 0.0) if free_intercept else (l1, l2, rho)
        self.plan = _rda.make_plan_args(accelerated, track, gamma, lipschitz, l1, l2, rho,
                                        *icpt, block)
        self.g = np.zeros(n_features + 1)
        self.s = np.zeros(n_features + 1 if track else 1)
        self.last = np.zeros(n_features + 1 if track else 1, dtype=np.int64)
        self.hist = np.zeros((2, block + 2 if track else 1))
        # Blocks start at tau = 1 for dual averaging (the first defined tau is 2) and at
        # tau = 0 for the accelerated method; with last = 0 every sum starts from the start.
        self.clock = np.zeros(3, dtype=np.int64)
        # Dual averaging's floor of beta_t (raised by the kernel to the rows' curvature).
        self.floor = np.zeros(1)

    @property
    def steps(self):
        return int(self.clock[0])

    def run(self, matrix, bias, y, sample_weight, loss, rows):
        """One step per entry of rows (indices into the matrix), in place."""
        data, indices, indptr = matrix.kernel_args
        if rows.shape[0] == 0:
            return
        _rda.rda_steps(data, indices, indptr, matrix.n_features, bias, y, sample_weight, loss,
                       rows, self.g, self.s, self.last, self.hist, self.clock, self.plan,
                       self.floor)

    def coefficients(self):
        """The model's w (intercept feature last): the last iterate, the average of the
        iterates, or accelerated RDA's w_t; zero before the first step."""
        out = np.zeros(self.n_features + 1)
        if self.steps == 0:
            return out
        return _rda.rda_output(self.g, self.s, self.last, self.hist, self.clock, self.plan,
                               float(self.floor[0]), self.output == "average", out)

    # -- persistence as plain arrays (fastdual.OnlineRDA.save) -----------------------------------
    SETTINGS = ("variant", "output", "gamma", "rho", "l1", "l2", "lipschitz", "free_intercept")
    ARRAYS = ("g", "s", "last", "hist", "clock", "floor")

    def settings(self):
        return {name: getattr(self, name) for name in self.SETTINGS}

    def arrays(self):
        return {name: getattr(self, name) for name in self.ARRAYS}

    @classmethod
    def restore(cls, n_features, settings, arrays):
        """The state saved by settings() / arrays(), checked for shape and type."""
        check_variant(settings["variant"],
                      settings["gamma"] if settings["variant"] != "strongly_convex" else None,
                      settings["rho"] if settings["variant"] == "enhanced" else None,
                      settings["output"], settings["l2"], settings["free_intercept"], True)
        for name in ("l1", "l2", "lipschitz"):
            value = settings[name]
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not 0.0 <= value < np.inf:
                raise ValueError(f"the saved RDA state's {name} must be a finite number >= 0, "
                                 f"got {value!r}")
        state = cls(n_features, **settings)
        for name in cls.ARRAYS:
            expected = getattr(state, name)
            if name == "floor" and name not in arrays:
                continue            # (a state saved before the floor existed starts at 0)
            value = np.asarray(arrays[name])
            if value.shape != expected.shape or value.dtype != expected.dtype:
                raise ValueError(f"the saved RDA state's {name} has shape {value.shape} and "
                                 f"dtype {value.dtype}, expected {expected.shape} {expected.dtype}")
            if value.dtype.kind == "f" and not np.isfinite(value).all():
                raise ValueError(f"the saved RDA state's {name} contains NaN or infinity")
            if name == "floor" and not value[0] >= 0.0:
                raise ValueError(f"the saved RDA state's floor must be >= 0, got {value[0]!r}")
            setattr(state, name, np.array(value))
        steps, start, end = (int(v) for v in state.clock)
        block = state.plan[-1]
        room = block if state.variant == "accelerated" else block - 1
        tracked = state.s.shape[0] > 1
        if steps < 0 or (tracked and not (0 <= start <= steps + 1 and steps - start <= room
                                           and start <= end <= steps + 2
                                           and end - start <= block + 1)):
            raise ValueError(f"the saved RDA state's clock {state.clock.tolist()} is not one a "
                             "stream reaches (steps, block start, prefix end)")
        if tracked and state.last.size and not (np.all(state.last[:-1] >= start)
                                                and np.all(state.last <= steps + 1)):
            raise ValueError("the saved RDA state's last-update times lie outside its block")
        return state


def lipschitz_constant(problem_loss, squared_norms, sample_weight):
    """L of Algorithm 3 for the average loss: mean c_i ||x_i||^2 / gamma_loss (an upper bound on
    the largest eigenvalue of the Hessian of (1/n) sum_i c_i phi(x_i . w))."""
    return float(np.mean(sample_weight * squared_norms)) / problem_loss.gamma


class RDA:
    name = "rda"
    # the loss capabilities it trains (fastdual.losses): any per-sample loss
    needs = frozenset({"per_sample"})
    pure_l1 = True
    free_intercept = True
    warm_start = False      # dual averaging starts from its own gradient sums, not from a model
    options = {
        "variant": Option("basic", choices=VARIANTS,
                          help="basic (Algorithm 1), enhanced (Algorithm 2, rho), "
                               "strongly_convex (beta_t = 0; needs l2), accelerated "
                               "(Algorithm 3; smooth losses)"),
        "rda_gamma": Option(None, kind=float,
                            help=f"the seed's gamma: beta_t = gamma sqrt(t) (default "
                                 f"{DEFAULT_GAMMA:g}; named so beside smooth_hinge's gamma)"),
        "rho": Option(None, kind=float, help=f"enhanced l1-RDA's rho (default {DEFAULT_RHO:g})"),
        "output": Option("last", choices=("last", "average"),
                         help="the last iterate or the average of all iterates"),
        "lipschitz": Option(None, kind=float,
                            help="L of the accelerated variant (default: mean c_i ||x_i||^2 "
                                 "over the loss's smoothness)"),
        "shuffle": Option(True, kind=bool,
                          help="a fresh permutation each epoch (False: the rows in order)"),
    }

    def __init__(self, problem, options, seed, initial_duals=None):
        if initial_duals is not None:
            raise ValueError("solver='rda' does not take warm_start: dual averaging starts from "
                             "its own gradient sums (fastdual.OnlineRDA keeps them between calls)")
        self.problem = problem
        smooth = problem.loss.gamma > 0.0
        gamma, rho = check_variant(options["variant"], options["rda_gamma"], options["rho"],
                                   options["output"], problem.l2, problem.free_intercept, smooth)
        lipschitz = 0.0
        if options["variant"] == "accelerated":
            lipschitz = options["lipschitz"] or lipschitz_constant(
                problem.loss, problem.squared_norms(), problem.sample_weight) or 1.0
        elif options["lipschitz"] is not None:
            raise ValueError("lipschitz is the parameter of variant='accelerated', got "
                             f"lipschitz={options['lipschitz']!r} with "
                             f"variant={options['variant']!r}")
        self.state = RDAState(problem.n_features, variant=options["variant"], gamma=gamma,
                              rho=rho, output=options["output"], l1=problem.l1, l2=problem.l2,
                              free_intercept=problem.free_intercept, lipschitz=lipschitz)
        self.shuffle = options["shuffle"]
        self.rng = np.random.default_rng(seed)
        self.order = np.arange(problem.n_samples, dtype=np.intp)

    helper_l2 = 0.0

    def epoch(self):
        problem = self.problem
        rows = self.rng.permutation(problem.n_samples).astype(np.intp) if self.shuffle \
            else self.order
        self.state.run(problem.X, problem.bias, problem.y, problem.sample_weight, problem.loss,
                       rows)

    def check_due(self, epoch):
        return None

    def point(self):
        return self.state.coefficients(), None

    def after_check(self, checkpoint):
        pass
