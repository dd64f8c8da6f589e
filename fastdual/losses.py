"""Loss names -> Cython loss objects, their task and their parameters.

Adding a loss = one class in _core/losses.pyx + one row here + its property tests.
"""
from dataclasses import dataclass, field

from fastdual._core import losses as _losses


@dataclass(frozen=True)
class LossSpec:
    name: str
    factory: type
    task: str                       # "binary" or "regression"
    params: dict = field(default_factory=dict)   # parameter name -> default
    description: str = ""
    # A risk over the whole labeling, not a sum over samples (f1_hinge): trained by
    # fastdual.train with solver="agm" and certified by fastdual.duality_gap only.
    structured: bool = False


LOSSES = {
    spec.name: spec
    for spec in [
        LossSpec("hinge", _losses.Hinge, "binary", {}, "max(0, 1 - yz), LIBLINEAR's L1-loss SVM"),
        LossSpec("squared_hinge", _losses.SquaredHinge, "binary", {},
                 "max(0, 1 - yz)^2, LIBLINEAR's L2-loss SVM"),
        LossSpec("smooth_hinge", _losses.SmoothHinge, "binary", {"gamma": 1.0},
                 "hinge smoothed on [1 - gamma, 1] (1/gamma-smooth)"),
        LossSpec("logistic", _losses.Logistic, "binary", {}, "log(1 + exp(-yz))"),
        LossSpec("squared", _losses.Squared, "regression", {}, "(z - y)^2 / 2, ridge / elastic net"),
        LossSpec("absolute", _losses.Absolute, "regression", {}, "|z - y|"),
        LossSpec("epsilon_insensitive", _losses.EpsilonInsensitive, "regression",
                 {"epsilon": 0.1}, "max(0, |z - y| - epsilon), SVR"),
        # (validated through the hinge's per-sample checks; its own risk is solvers/_f1.pyx)
        LossSpec("f1_hinge", _losses.Hinge, "binary", {},
                 "max over labelings of 1 - F1 + margin terms (seed 004 eq. 43, Joachims' "
                 "multivariate SVM); solver='agm'", structured=True),
    ]
}


def get_loss_spec(name):
    if not isinstance(name, str) or name not in LOSSES:
        raise ValueError(f"loss must be one of {sorted(LOSSES)}, got {name!r}")
    return LOSSES[name]


def make_loss(name, loss_params, structured=False):
    """Return (spec, loss object, the full parameter dict) for a loss name and its parameters.
    A structured loss (f1_hinge) only for the callers that know it (structured=True): every
    per-sample path refuses it here, by name."""
    spec = get_loss_spec(name)
    if spec.structured and not structured:
        raise ValueError(f"loss={name!r} is a risk over the whole labeling: it is trained by "
                         "fastdual.train(..., solver='agm') and certified by "
                         "fastdual.duality_gap, for binary labels only")
    unknown = sorted(set(loss_params) - set(spec.params))
    if unknown:
        accepted = sorted(spec.params) or "none"
        raise ValueError(f"unknown parameter(s) {unknown} for loss={name!r}; it accepts: {accepted}")
    params = {**spec.params, **loss_params}
    for key, value in params.items():
        try:
            params[key] = float(value)
        except (TypeError, ValueError):
            raise TypeError(f"{key} must be a number, got {value!r}") from None
    return spec, spec.factory(**params), params
