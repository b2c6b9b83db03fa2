"""Where the stores keep their data: one package per backend (`files`, `postgres`, `redis`), each
implementing the ports defined beside the logic they serve (`engine.stores.diary.port`, ...).
`engine.factory` is the only code that picks one."""
