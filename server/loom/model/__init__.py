"""Entities and identifiers of the loom workspace, free of storage concerns."""
