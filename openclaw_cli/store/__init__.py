"""Session stores: one interface (base.SessionStore), legacy and SQLite implementations."""
