-- The plugin's version: the same as the server's (loom.__version__ in server/loom/__init__.py;
-- tests/unit/test_packaging.py checks they agree). :checkhealth loom compares it with the
-- version `loom serve` reports.
return "0.1.0"
