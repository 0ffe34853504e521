"""The package version (a module of its own so that modules can import it without importing the package's
lazy Python API)."""

__version__ = "0.1.0"
