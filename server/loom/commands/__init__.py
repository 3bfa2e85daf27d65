"""The command language and its one write path.

Every change any participant makes is a command: the seeds' arrow language
(``→ continue n:3``) or an editor verb without a text form (``commit``, ``save``…). The
catalogue (``catalogue.py``) declares each verb once — its flags, options, help, spellings,
value kinds and handler — and the rest read it: the lexicon (``lexicon.py``: arrows, names),
the grammar (``grammar/``: text to a command object, with corrections), the command classes
and canonical text (``canonical.py``: a command back to the text that parses to it), help,
and the executor (``executor.py``: ``Executor.execute(command, actor)`` checks the
permission, takes the branch lock, runs the handler from ``handlers/`` and turns every
failure into a ``✗`` result). Handlers write only through ``store.workspace.Workspace``.
"""
