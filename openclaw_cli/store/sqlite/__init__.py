"""Our SQLite store kind (spec D4): the store and its schema."""
