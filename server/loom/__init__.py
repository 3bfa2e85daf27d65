"""Loom: branching trees of human and model writing, as documents in the editor."""
__version__ = "0.1.0"
