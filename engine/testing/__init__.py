"""Test support that ships with the library, apart from the engine's modules: a real
OpenAI-compatible fake server (`fake_openai`) and a real `kioku serve` run in a thread or a
process (`serve`), for callers' own tests as for this project's."""
