"""The loss table: name -> Cython loss object, task, parameters, and what the loss is.

Adding a loss = one class in _core/losses.pyx + one row here + its property tests. A solver
never asks for a loss by name: it declares the capabilities it needs (`needs`, a set of the
names below) and the registry (fastdual.solvers.get_solver) checks them once.

Capabilities (tests/test_losses.py holds each against the loss object's own constants):
  "per_sample"      a sum over samples of phi(y_i, x_i . w) with the scalar loss contract of
                    _core/losses.pxd (value, derivative, conjugate and its prox): SDCA, SPDC, RDA.
  "smooth"          phi is (1/gamma)-smooth, gamma > 0 its curvature bound (Loss.gamma): the
                    primal Newton, and SDCA's acceleration pays.
  "box"             the domain of phi* is a bounded interval the duals sit on the bounds of
                    (Loss.has_box): shrinking pays.
  "quadratic_dual"  -phi*(-a) is a concave quadratic (or linear) on an interval: AGM's dual form.
  "piecewise_quadratic"  phi is smooth and quadratic between finitely many points (its curvature
                    piecewise constant): a Newton model at z is phi itself on z's piece, which
                    cd minimises to its fixed tolerance (docs/math.md 4k).
  "quadratic"       phi is one quadratic (its curvature constant): with the l2 penalty alone the
                    primal Newton model is the objective itself (its CG runs to a residual
                    test, not the model's decrease; docs/math.md 4f).
  "structured"      a risk over the whole labeling, not a sum over samples (f1_hinge).
"""
from dataclasses import dataclass, field

from fastdual._core import losses as _losses

CAPABILITIES = ("per_sample", "smooth", "box", "quadratic_dual", "piecewise_quadratic",
                "quadratic", "structured")


@dataclass(frozen=True)
class LossSpec:
    name: str
    factory: type
    task: str                       # "binary" or "regression"
    params: dict = field(default_factory=dict)   # parameter name -> default
    description: str = ""
    capabilities: frozenset = frozenset()
    # The k-class problem with vector duals this binary loss extends to (multiclass=...), or None.
    joint: str = None

    @property
    def structured(self):
        return "structured" in self.capabilities


def _spec(name, factory, task, params, description, capabilities, joint=None):
    unknown = set(capabilities) - set(CAPABILITIES)
    assert not unknown, unknown
    return LossSpec(name, factory, task, params, description, frozenset(capabilities), joint)


LOSSES = {
    spec.name: spec
    for spec in [
        _spec("hinge", _losses.Hinge, "binary", {}, "max(0, 1 - yz), LIBLINEAR's L1-loss SVM",
              {"per_sample", "box", "quadratic_dual"}, joint="crammer_singer"),
        _spec("squared_hinge", _losses.SquaredHinge, "binary", {},
              "max(0, 1 - yz)^2, LIBLINEAR's L2-loss SVM",
              {"per_sample", "smooth", "box", "quadratic_dual", "piecewise_quadratic"}),
        _spec("smooth_hinge", _losses.SmoothHinge, "binary", {"gamma": 1.0},
              "hinge smoothed on [1 - gamma, 1] (1/gamma-smooth)",
              {"per_sample", "smooth", "box", "quadratic_dual", "piecewise_quadratic"},
              joint="crammer_singer"),
        _spec("logistic", _losses.Logistic, "binary", {}, "log(1 + exp(-yz))",
              {"per_sample", "smooth"}, joint="multinomial"),
        _spec("squared", _losses.Squared, "regression", {}, "(z - y)^2 / 2, ridge / elastic net",
              {"per_sample", "smooth", "quadratic_dual", "piecewise_quadratic", "quadratic"}),
        _spec("absolute", _losses.Absolute, "regression", {}, "|z - y|",
              {"per_sample", "box", "quadratic_dual"}),
        _spec("epsilon_insensitive", _losses.EpsilonInsensitive, "regression",
              {"epsilon": 0.1}, "max(0, |z - y| - epsilon), SVR", {"per_sample", "box"}),
        _spec("squared_epsilon_insensitive", _losses.SquaredEpsilonInsensitive, "regression",
              {"epsilon": 0.1}, "max(0, |z - y| - epsilon)^2 / 2, L2-loss SVR (LIBLINEAR -s "
              "11/12 at C / 2)", {"per_sample", "smooth", "piecewise_quadratic"}),
        # (validated through the hinge's per-sample checks; its own risk is solvers/_f1.pyx)
        _spec("f1_hinge", _losses.Hinge, "binary", {},
              "max over labelings of 1 - F1 + margin terms (seed 004 eq. 43, Joachims' "
              "multivariate SVM); solver='agm'", {"structured"}),
    ]
}


def losses_with(needs):
    """The names of the losses that have every capability in `needs`."""
    return [name for name, spec in LOSSES.items() if set(needs) <= spec.capabilities]


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
