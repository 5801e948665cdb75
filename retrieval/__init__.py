"""haygraph retrieval package."""
