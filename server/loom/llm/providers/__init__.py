"""Provider implementations; import them through :func:`loom.llm.registry.make_provider`."""
