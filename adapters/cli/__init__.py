"""The `haygraph` command line.

`main` (the entry point), the agent commands (`agent`), `serve` / `serve-mcp` (`serve`), store and
settings commands (`store`, `settings`).
"""
