"""SillyTavern's files: character cards (PNG / JSON / CHARX), lorebooks (World Info JSON,
`lorebook_v3`) and chat logs (JSONL). Pure parsing and writing into typed records; what kioku
does with them lives in `engine/importers/`."""
