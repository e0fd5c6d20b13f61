"""locktune: find the locks that hold a C program back and run each on the algorithm that suits it."""

__version__ = "0.1.0"
