"""Where a cited quote lies in its evidence chunk: `haygraph.control.planning.quote_location`.

Kept as this module's name for the service and its tests; the answer (`reader_answer`) uses the same
function to find the unit that holds the reader's span.
"""

from __future__ import annotations

from haygraph.control.planning.quote_location import MIN_BLOCK_CHARS, locate_quote

__all__ = ["MIN_BLOCK_CHARS", "locate_quote"]
