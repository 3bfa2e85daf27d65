"""The language server's features: one table, each row the attribute the server gives
it and where its class is. What a feature needs is its constructor's parameters, and
``lsp/wiring.py`` resolves them when the server starts: a new feature is a module, a row
here, and in ``server.py`` its typed attribute and the handlers that call it
(``tests/unit/test_architecture.py`` checks the table and the attributes agree).

Only names and paths are here, so the server reads the table before the features'
modules (and the rest of Loom) are imported (bench/bench_startup.py)."""

from __future__ import annotations

#: attribute on the server → ``module:Class``
TABLE: dict[str, str] = {
    "diagnostics": "loom.lsp.features.diagnostics:Diagnostics",
    "editing": "loom.lsp.features.editing:Editing",
    "moves": "loom.lsp.features.moves:Moves",
    "generation": "loom.lsp.features.generation:Generating",
    "command_lines": "loom.lsp.features.command_lines:CommandLines",
    "collaborator": "loom.lsp.features.collaborator:Collaborator",
    "filling": "loom.lsp.features.filling:Filling",
    "navigation": "loom.lsp.features.navigation:Navigation",
    "library": "loom.lsp.features.library:Library",
    "files": "loom.lsp.features.files:Files",
    "identity": "loom.lsp.features.identity:Identity",
    "probabilities": "loom.lsp.features.probabilities:Probabilities",
    "scoring": "loom.lsp.features.scoring:Scoring",
    "suggestions": "loom.lsp.features.suggestions:Suggestions",
    "semantic_results": "loom.lsp.features.semantic_delta:SemanticResults",
    "sync": "loom.lsp.features.sync:ChangeSync",
    "outage": "loom.lsp.features.outage:Outage",
    "exploring": "loom.lsp.features.exploring:Exploring",
}
