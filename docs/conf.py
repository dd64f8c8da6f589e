"""Sphinx configuration of fastdual's documentation site (built in CI with warnings as errors:
`sphinx-build -W -b html docs <out>`)."""
import os
import sys

try:    # the installed package (CI builds the site against the wheel it tests)
    import fastdual  # noqa: F401
except ImportError:  # a source tree with extensions built in place
    sys.path.insert(0, os.path.abspath(".."))

project = "fastdual"
author = "fastdual developers"
extensions = ["myst_parser", "sphinx.ext.autodoc"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]
myst_heading_anchors = 3
suppress_warnings = ["myst.xref_missing"]
autodoc_member_order = "bysource"
html_theme = "alabaster"


def _docstrings_verbatim(app, what, name, obj, options, lines):
    """fastdual's docstrings are plain text (formulas, `coef_`-style names): shown as written."""
    if lines:
        lines[:] = ["::", ""] + ["    " + line for line in lines] + [""]


def setup(app):
    app.connect("autodoc-process-docstring", _docstrings_verbatim)
