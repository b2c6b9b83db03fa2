"""Storage backends other than the files under `data/` (which the stores keep themselves).

`engine.storage.postgres` keeps diary turns, their search index, core facts with history, the
short-term window and the journal's job queue in PostgreSQL, for several hosts sharing one store.
"""
