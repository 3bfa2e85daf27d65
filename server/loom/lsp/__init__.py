"""The language server (a shell over the core): ``server.py`` registers pygls' handlers and
builds the feature objects; ``host.py`` is what the features may ask of the server (send an
edit, show a message, run a command now or in a worker); ``documents.py`` holds the open
``loom:`` documents and ``buffer.py`` (pure) tracks each node's range through edits;
``rpc.py`` answers every request whatever arrives; ``args.py`` reads requests' arguments.
docs/architecture.md walks one keypress through it; docs/lsp.md is the protocol."""
