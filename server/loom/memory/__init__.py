"""A participant's working memory: operational memory (``operational.py``: pins, stashes,
the trace of what it did, as the context blocks an agent reads) and token counting
(``counting.py``) for the budgets that bound them."""
