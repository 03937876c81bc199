"""The Gateway (spec D9, D20): OpenClaw's WebSocket protocol 4 — the client half the CLI delegates
mutations through (`client`, `discovery`), the server half `openclaw gateway run` serves
(`server`), and what both share (`protocol`). Both halves call the operations layer's method
table (`ops.methods`); neither implements an operation itself."""
