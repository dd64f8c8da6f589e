"""Deprecated, kept for one release: LIBLINEAR's model files are in fastdual.formats.

save is formats.save_liblinear, load is formats.load_liblinear; importing this module warns.
"""
import warnings

from fastdual.formats import is_liblinear_file
from fastdual.formats import load_liblinear as load
from fastdual.formats import save_liblinear as save

__all__ = ["save", "load", "is_liblinear_file"]

warnings.warn("fastdual.liblinear_format is fastdual.formats (save_liblinear, load_liblinear); "
              "the name fastdual.liblinear_format goes away in the next release",
              DeprecationWarning, stacklevel=2)
