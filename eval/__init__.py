"""haygraph eval package."""
