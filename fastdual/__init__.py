"""fastdual: regularized linear models by dual coordinate methods, certified by their duality gap.

    import fastdual
    model = fastdual.train(X, y, loss="smooth_hinge")
    model.predict(X_test); model.gap_; model.history_

The public names are imported when first used (PEP 562), so that `import fastdual` and the
command line's `predict` load neither the training code nor scikit-learn.
"""
try:
    from fastdual._core import gap as _compiled  # noqa: F401  (the compiled kernels)
except ImportError as exc:  # pragma: no cover - depends on how the package was obtained
    import os as _os
    raise ImportError(
        f"fastdual's compiled extensions could not be imported from {_os.path.dirname(__file__)} "
        f"({exc}). If this is a source checkout, install it with `pip install .` and run from "
        "another directory (or build in place: `python setup.py build_ext --inplace`).") from exc

from fastdual._version import __version__

# public name -> the module that defines it (imported on first use)
_PUBLIC = {
    "train": "fastdual._api", "duality_gap": "fastdual._api", "Certificate": "fastdual._fit",
    "ConvergenceWarning": "fastdual._loop", "TrainingInterrupted": "fastdual._loop",
    "TrainingDiverged": "fastdual._loop",
    "load": "fastdual.formats", "LOSSES": "fastdual.losses", "Model": "fastdual.model",
    "OnlineRDA": "fastdual.online", "train_stream": "fastdual.online",
    "cross_validate": "fastdual.selection", "regularization_path": "fastdual.selection",
    "path": "fastdual.selection", "Path": "fastdual.selection",
    "alpha_max": "fastdual.selection", "plot_path": "fastdual.plotting",
    "plot_convergence": "fastdual.plotting", "SOLVERS": "fastdual.solvers",
    "projection": None,
}

__all__ = ["train", "duality_gap", "train_stream", "OnlineRDA", "cross_validate",
           "regularization_path", "path", "Path", "alpha_max", "plot_convergence", "plot_path", "load", "Model", "Certificate", "ConvergenceWarning",
           "TrainingInterrupted", "TrainingDiverged", "LOSSES", "SOLVERS", "projection",
           "__version__"]


def __getattr__(name):
    if name not in _PUBLIC:
        raise AttributeError(f"module 'fastdual' has no attribute {name!r}")
    import importlib
    module = _PUBLIC[name]
    value = (importlib.import_module(f"fastdual.{name}") if module is None
             else getattr(importlib.import_module(module), name))
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
