import numpy as np
import pytest

from haygraph.retrieval.model_paths import bundled_model_path
from haygraph.retrieval.onnx_encoder import OnnxSentenceEncoder, _pooling_mode, length_order


class TestLengthOrder:
    def test_longest_first_stable(self):
        assert length_order(["ab", "abcd", "a", "cd"]) == [1, 0, 3, 2]
        assert length_order([]) == []


class TestOpenSession:
    def test_a_damaged_export_names_the_folder_to_delete(self, tmp_path):
        pytest.importorskip("onnxruntime")
        from haygraph.retrieval.errors import ModelUnavailableError
        from haygraph.retrieval.onnx_encoder import open_session

        damaged = tmp_path / "export" / "model_int8.onnx"
        damaged.parent.mkdir()
        damaged.write_bytes(b"\x08\x07truncated")
        with pytest.raises(
            ModelUnavailableError, match=r"delete the folder .*export and the next run exports"
        ):
            open_session(damaged, None)


class TestPoolingMode:
    def test_reads_the_model_pooling(self, tmp_path):
        assert _pooling_mode(tmp_path) == "mean"  # no 1_Pooling: mean
        (tmp_path / "1_Pooling").mkdir()
        (tmp_path / "1_Pooling" / "config.json").write_text('{"pooling_mode_cls_token": true}')
        assert _pooling_mode(tmp_path) == "cls"


@pytest.mark.integration
class TestOnnxSentenceEncoder:
    def test_fp32_matches_torch_and_int8_is_close(self, tmp_path):
        from sentence_transformers import SentenceTransformer

        texts = ["annual leave policy", "x", "how many days of sick leave do I get per year " * 4]
        path = bundled_model_path()
        torch_vecs = SentenceTransformer(path, local_files_only=True).encode(texts, normalize_embeddings=True)
        fp32 = OnnxSentenceEncoder(path, tmp_path).encode(texts, batch_size=2)
        assert fp32.dtype == np.float32 and fp32.shape == (3, 384)
        assert (fp32 * torch_vecs).sum(axis=1).min() > 0.9999  # same vectors, input order kept
        int8 = OnnxSentenceEncoder(path, tmp_path, quantize=True).encode(texts)
        cos = (int8 * torch_vecs).sum(axis=1)
        assert 0.95 < cos.min() < 0.9999  # close, yet different: hence int8's own cache key
        assert (tmp_path / "model.onnx").is_file() and (tmp_path / "model_int8.onnx").is_file()

    def test_one_call_embeds_at_most_run_size_texts(self, tmp_path):
        texts = ["annual leave", "sick leave per year " * 3, "x", "parental leave policy", "badge"]
        encoder = OnnxSentenceEncoder(bundled_model_path(), tmp_path, run_size=2)
        encoder.warm_up()
        session, sizes = encoder._session, []

        class Counting:
            def run(self, outputs, feeds):
                sizes.append(len(feeds["input_ids"]))
                return session.run(outputs, feeds)

        encoder._session = Counting()
        small = encoder.encode(texts, batch_size=32)
        assert sizes == [2, 2, 1]
        whole = OnnxSentenceEncoder(bundled_model_path(), tmp_path, run_size=32).encode(texts)
        assert np.abs(small - whole).max() < 1e-4  # the run size changes speed, not vectors

    def test_an_int8_vector_depends_on_its_batch_unless_embedded_alone(self, tmp_path):
        long_text = "how many days of sick leave do I get per year, and who approves them " * 6
        encoder = OnnxSentenceEncoder(bundled_model_path(), tmp_path, quantize=True)
        alone = encoder.encode(["annual leave"])[0]
        assert np.array_equal(encoder.encode(["annual leave", long_text], batch_size=1)[0], alone)
        # one call for both: the quantisation scale is shared with the long text (hence queries go alone)
        assert not np.array_equal(encoder.encode(["annual leave", long_text])[0], alone)
