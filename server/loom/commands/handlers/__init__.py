"""The handlers the executor runs, one module per family of verbs (``content``: continue,
respond, annotate, link, edit; ``reader``: bookmarks, tags, pruning, deletion, search;
``navigation``; ``editor``: commit and the other editor verbs; ``fill``, ``score``,
``split``, ``explore``…). A handler takes the context (``commands.context.Ctx``: the
workspace, the actor, the tree, the subject model) and its command, writes through
``Workspace`` and returns a ``Result``; the catalogue names it (``handler="content.respond"``),
so a handler is found by its verb, never imported by hand."""
