"""The collaborator exploring a tree on its own (``→ explore``): breadth-first
continuations by the subject model, each new branch scored by the collaborator's model
against a rubric, the weak ones pruned, the best expanded further; every write a command
through the executor. ``judge`` asks and reads the judge, ``search`` runs one exploration,
``service`` keeps a process's explorations (one per tree) and is the executor's
``explorer``."""
