"""MCP adapters.

`server`: the knowledge base and tools as an MCP server (`haygraph serve-mcp`); `client`: tools of
other MCP servers as contract tools.
"""
