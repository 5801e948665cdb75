"""The context window: what goes into a model prompt and how much of it fits.

- `tokens` — token counters with real tokenizers (`TokenCounter`, `get_token_counter`);
- `budget` — shares of the window and the pure allocation (`BudgetConfig`, `allocate_budget`);
- `prompt_assembly` — the budgeted, measured generation prompt (`assemble_prompt`);
- `reduction` — long tool results cut to their contract key fields;
- `entities` — rule-based key facts (dates, amounts, ids, declared kinds);
- `history` — last turns verbatim, older turns folded into a running summary;
- `memory` — one turn's entity memory and history folding;
- `schema_cost` — token cost of the tool schemas shown to a model.

Depends only on the base modules of `haygraph.control` and on `haygraph.control.tools`.
"""
