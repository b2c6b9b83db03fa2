"""The files backend: the documented layout under `data/agents/<character>/users/<user>/`, one
machine, indexes derived in `.cache/` (always safe to delete)."""
