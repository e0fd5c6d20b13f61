"""The rewriter behind `locktune rewrite` (passes in engine.py; docs/rewrite.md)."""
