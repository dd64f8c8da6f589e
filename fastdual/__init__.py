"""fastdual: regularized linear models by dual coordinate methods, certified by their duality gap."""

__version__ = "0.1.0"
