"""The answer-or-refuse decision of the evaluate step, in one package.

- `signals`: what the evidence and the reader's reading say about the question (`SIGNALS`);
- `lexicon`: the asked-type lexicon (`asked_type`, `holds_type`, `ASKED_TYPES`, measure words);
- `rules`: the ordered registry of named rules (`RULES`), each with its ablation figure;
- `model`: the fitted logistic model and `AnswerabilityModel.decide` — rules before, the model, rules
  after — with `shipped_model` loading the weights shipped beside it.

Import from the modules (``from haygraph.control.planning.decision.model import shipped_model``): this
package imports nothing itself, as the sentence picker (`extractive`) reads `lexicon` and `signals`
reads the picker.
"""
