"""A real OpenClaw agent database (schemas 23-26): the store, its schema versions and its writes."""
