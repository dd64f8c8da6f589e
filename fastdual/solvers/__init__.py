"""The solver registry: name -> driver class, each with the losses and the options it supports.

A driver (contract in fastdual._loop) declares
    name      the solver's name in train(solver=...)
    needs     the loss capabilities it needs (fastdual.losses: "per_sample", "smooth", ...)
    pure_l1   whether it trains l1_ratio = 1 (no l2 term)
    free_intercept  whether it trains an unpenalised intercept (regularize_intercept=False)
    options   {option name: fastdual._loop.Option}: what train(..., **options) may set
and, when it cannot start from a previous model (train's warm_start), warm_start = False
(read through takes_warm_start; a driver that does not declare it takes warm starts).
It is built as Driver(problem, options, seed, initial_duals). Adding a seed method = one module
here beside its kernel, and one row in SOLVERS.
"""
from fastdual.losses import get_loss_spec, losses_with
from fastdual.solvers.sdca import SDCA
from fastdual.solvers.spdc import SPDC
from fastdual.solvers.rda import RDA
from fastdual.solvers.newton import Newton
from fastdual.solvers.agm import AGM
from fastdual.solvers.cd import CD


SOLVERS = {driver.name: driver for driver in [SDCA, SPDC, RDA, Newton, AGM, CD]}


def get_solver(name, problem):
    """The driver class for a solver name that supports the problem's loss and penalty."""
    if not isinstance(name, str) or name not in SOLVERS:
        raise ValueError(f"solver must be one of {sorted(SOLVERS)}, got {name!r}")
    driver = SOLVERS[name]
    spec = get_loss_spec(problem.loss_name)
    if not driver.needs <= spec.capabilities:
        missing = sorted(driver.needs - spec.capabilities)
        able = sorted(k for k, v in SOLVERS.items() if v.needs <= spec.capabilities)
        raise ValueError(f"solver={name!r} does not support loss={problem.loss_name!r} (it needs "
                         f"a loss that is {' and '.join(missing)}: {losses_with(driver.needs)}); "
                         f"loss={problem.loss_name!r} is trained by solver in {able}")
    if problem.free_intercept and not driver.free_intercept:
        raise ValueError(f"solver={name!r} cannot fit a free intercept "
                         f"(regularize_intercept=False); use one of "
                         f"{sorted(k for k, v in SOLVERS.items() if v.free_intercept)}, or "
                         "regularize_intercept=True (LIBLINEAR's regularised intercept feature)")
    if problem.l2 == 0.0 and not driver.pure_l1:
        raise ValueError(f"solver={name!r} needs an l2 term (l1_ratio < 1); for pure l1 use "
                         f"one of {sorted(k for k, v in SOLVERS.items() if v.pure_l1)}")
    return driver


def takes_warm_start(name):
    """Whether the solver of that name starts from a previous model (train's warm_start)."""
    return getattr(SOLVERS[name], "warm_start", True)


def solver_options(driver, given):
    """Every option of the driver: the given ones checked, the others at their defaults."""
    unknown = sorted(set(given) - set(driver.options))
    if unknown:
        raise ValueError(f"solver={driver.name!r} has no option {', '.join(map(repr, unknown))}; "
                         f"its options are {sorted(driver.options) or 'none'}")
    return {name: option.check(name, given[name]) if name in given else option.default
            for name, option in driver.options.items()}
