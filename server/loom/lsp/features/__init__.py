"""The language server's features: one object (or, for read-only requests, one module) per
concern — editing and commits, generation, navigation, sync with the change log, the
collaborator, exploring, scoring, suggestions, diagnostics — each built by
``lsp/server.py`` over the ``Host`` and reaching the store only through commands and
``Workspace``. docs/architecture.md's feature table says what each owns."""
