"""Turn planning: what to do with a question and how to answer it, as pure functions.

- `input_check` — clean the raw question and refuse unusable input;
- `chitchat` — greetings, thanks, closings and small talk;
- `routing` — the offline router (`RouteDecision`, `route_question` over the tools' triggers);
- `rewrite` — offline query rewriting;
- `model_calls` — routing, rewriting and grounded generation with a chat model (structured output);
- `tool_choice` — `plan_turn`: the route and the tool calls of a turn, model or rules;
- `relevance` — the evaluate step's absolute evidence quality;
- `answerability` — the evaluate step's decision: does the evidence answer the question (shipped weights);
- `readable` — Markdown and HTML reduced to readable text for quoted units;
- `answer_units` — the units a quote is made of (list items with their continuation, parameters with
  their default, sentences, table rows, FAQ pairs);
- `extractive` — the offline answer made of evidence units with their ids;
- `tool_reply` — the reply and status of a tool turn;
- `injection` — instruction-like spans in evidence: detection, neutralisation, relay check.

Depends only on the base modules of `haygraph.control`, on `tools` and on `window`; never on `graph`.
"""
