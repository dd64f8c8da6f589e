"""The house's layers: no module imports one above it, no import circle (module-level or inside
functions), and a loss reaches the solvers only through the capabilities it states."""
import ast
import pathlib

import numpy as np
import pytest

import fastdual
from fastdual import losses
from fastdual.solvers import SOLVERS, get_solver

PACKAGE = pathlib.Path(fastdual.__file__).parent

# Bands, bottom to top. A module may import its own band or any band below, never one above.
BANDS = [
    ["_version", "_defaults", "_core"],
    ["_validation", "losses", "projection"],
    ["_loop", "_problem", "model"],
    ["solvers"],
    ["_fit"],
    ["_multiclass"],
    ["_api", "formats"],
    ["online", "selection", "plotting"],
    ["sklearn", "dask", "cli", "liblinear_format", "__main__", "__init__"],
]


def band_of(module):
    """The band of a module path such as fastdual.solvers.sdca (its top-level part)."""
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else "__init__"
    for number, names in enumerate(BANDS):
        if top in names:
            return number
    raise AssertionError(f"{module} is in no band: add it to BANDS")


def module_name(path):
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def imports_of(path):
    """Every fastdual module a source file imports, at module level or inside functions (a
    .pyx file's Python imports and cimports too)."""
    source = path.read_text()
    found = set()
    if path.suffix == ".py":
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module)
                found |= {f"{node.module}.{alias.name}" for alias in node.names}
    else:
        for line in source.splitlines():
            words = line.split()
            if len(words) >= 2 and words[0] in ("from", "import", "cimport"):
                found.add(words[1])
                if len(words) >= 4 and words[2] in ("import", "cimport"):
                    found |= {f"{words[1]}.{name.strip(',')}" for name in words[3:]}
    return {name for name in found if name.startswith("fastdual")
            and _exists(name)}


def _exists(name):
    path = PACKAGE.parent.joinpath(*name.split("."))
    return (path.with_suffix(".py").exists() or path.with_suffix(".pyx").exists()
            or path.with_suffix(".pxd").exists() or (path / "__init__.py").exists())


def sources():
    return sorted(p for p in PACKAGE.rglob("*") if p.suffix in (".py", ".pyx", ".pxd"))


def test_no_module_imports_one_above_it():
    upward = []
    for path in sources():
        module = module_name(path)
        for name in imports_of(path):
            if name == "fastdual":
                continue
            if band_of(name) > band_of(module):
                upward.append(f"{module} imports {name}")
    assert not upward, "\n".join(upward)


def test_no_import_circle():
    graph = {}
    for path in sources():
        module = module_name(path)
        graph.setdefault(module, set()).update(
            name for name in imports_of(path) if name != module and name != "fastdual"
            and not module.startswith(name + "."))   # a package's own __init__ runs first
    # Collapse submodule names onto the modules the graph knows.
    known = set(graph)

    def node(name):
        while name not in known and "." in name:
            name = name.rsplit(".", 1)[0]
        return name

    edges = {m: {node(n) for n in targets if node(n) != m} for m, targets in graph.items()}
    # fastdual/__init__ re-exports everything; fastdual.solvers/__init__ is the registry of
    # its own submodules: neither is a layer of its own.
    edges.pop("fastdual", None)
    for targets in edges.values():
        targets.discard("fastdual")
    state = {}

    def visit(m, trail):
        state[m] = "open"
        for t in sorted(edges.get(m, ())):
            if t == "fastdual.solvers" and m.startswith("fastdual.solvers."):
                continue
            if state.get(t) == "open":
                raise AssertionError("import circle: " + " -> ".join(trail + [m, t]))
            if t not in state:
                visit(t, trail + [m])
        state[m] = "done"

    for m in sorted(edges):
        if m not in state:
            visit(m, [])


def test_the_band_test_sees_an_upward_import(tmp_path):
    """The scanner finds an import inside a function (what the circles were closed with)."""
    path = tmp_path / "probe.py"
    path.write_text("def f():\n    from fastdual._api import train\n    return train\n")
    assert "fastdual._api" in imports_of(path)


def test_declared_capabilities_agree_with_the_loss_objects():
    for name, spec in losses.LOSSES.items():
        if spec.structured:
            continue
        loss = spec.factory(**spec.params)
        assert ("smooth" in spec.capabilities) == (loss.gamma > 0.0), name
        assert ("box" in spec.capabilities) == bool(loss.has_box), name
        # piecewise quadratic: smooth, and its curvature takes a few values only (one per
        # piece: at most 3 over margins spread across every piece); the others take many
        rng = np.random.default_rng(0)
        y = (np.where(rng.random(4000) < 0.5, 1.0, -1.0) if spec.task == "binary"
             else rng.normal(size=4000))
        z = y + rng.normal(scale=2.0, size=4000)
        curvatures = np.unique(np.asarray(loss.curvatures(y, z)))
        assert ("piecewise_quadratic" in spec.capabilities) == (
            loss.gamma > 0.0 and curvatures.shape[0] <= 3), name
        assert ("quadratic" in spec.capabilities) == (
            loss.gamma > 0.0 and curvatures.shape[0] == 1), name


def test_every_solver_trains_exactly_the_losses_its_needs_allow():
    from fastdual._problem import build_problem
    from conftest import problem_for
    for loss, spec in losses.LOSSES.items():
        if spec.structured:
            continue
        X, y = problem_for(loss, n=20, d=3, seed=0)
        problem = build_problem(X, y, loss=loss, alpha=0.1, C=None, l1_ratio=0.0,
                                fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                                loss_params={})
        for name, driver in SOLVERS.items():
            if driver.needs <= spec.capabilities:
                assert get_solver(name, problem) is driver
            else:
                with pytest.raises(ValueError, match=f"loss={loss!r} is trained by solver in"):
                    get_solver(name, problem)


def test_newton_refuses_a_non_smooth_loss_and_names_the_solvers_that_train_it():
    X, y = np.random.default_rng(0).normal(size=(20, 3)), np.arange(20) % 2
    with pytest.raises(ValueError, match=r"needs a loss that is smooth.*'agm', 'rda', 'sdca', "
                                         r"'spdc'"):
        fastdual.train(X, y, loss="hinge", solver="newton")
