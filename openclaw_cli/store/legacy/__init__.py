"""The legacy store kind: `sessions.json` plus JSONL transcripts."""
