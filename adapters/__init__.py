"""haygraph adapters package."""
