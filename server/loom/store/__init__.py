"""Storage: the peewee schema (``schema.py``), migrations (``db.py``), and ``Workspace``
(``workspace.py``), the façade every layer above reaches the database through, composed of
repositories with one job each (participants, positions, sessions, documents, the summary
queue, turns, provenance, bulk rows for the importers, the purge…). Only modules here run
queries (``tests/unit/test_architecture.py`` checks it). On PostgreSQL, ``roles.py`` and
``role_guards.py`` hold the team's grants and the triggers that keep what a role may write
to what Loom itself writes (docs/team.md)."""
