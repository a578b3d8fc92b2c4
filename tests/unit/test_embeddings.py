"""The bundled offline model: checksums, parity with fastembed, and no network."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from contextware.core.errors import EmbeddingError
from contextware.storage import embeddings

TEXTS = [
    "We use ruff format with line length 100; never black.",
    "pytest-xdist deadlocked on the shared Postgres fixture.",
    "where do we define the data models?",
    "x" * 3000,  # longer than 256 tokens: truncated like fastembed does
]


def test_bundled_model_files_verify():
    model, tokenizer = embeddings.bundled_model_files()
    embeddings.verify_file(model, embeddings.MODEL_SHA256)
    embeddings.verify_file(tokenizer, embeddings.TOKENIZER_SHA256)


def test_a_tampered_file_fails_its_checksum(tmp_path):
    model, _ = embeddings.bundled_model_files()
    fake = tmp_path / "model.onnx"
    fake.write_bytes(model.read_bytes()[:-1] + b"\x00")
    with pytest.raises(EmbeddingError, match="checksum"):
        embeddings.verify_file(fake, embeddings.MODEL_SHA256)


@pytest.mark.slow
def test_vectors_are_normalised_384d():
    vecs = embeddings.BundledEmbedder().embed(TEXTS)
    assert vecs.shape == (4, 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    sims = vecs @ vecs.T
    assert sims[0, 1] < 0.5 and sims[0, 0] > 0.999


@pytest.mark.slow
def test_same_vectors_as_fastembed_with_the_same_files(tmp_path):
    """Our direct onnxruntime path must equal fastembed's own pipeline on the bundled files."""
    from fastembed import TextEmbedding

    model, tokenizer = embeddings.bundled_model_files()
    folder = tmp_path / "minilm"
    folder.mkdir()
    os.symlink(model, folder / "model.onnx")
    os.symlink(tokenizer, folder / "tokenizer.json")
    (folder / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 256, "do_lower_case": True}))
    (folder / "special_tokens_map.json").write_text(
        json.dumps(
            {
                "cls_token": "[CLS]",
                "sep_token": "[SEP]",
                "pad_token": "[PAD]",
                "unk_token": "[UNK]",
                "mask_token": "[MASK]",
            }
        )
    )
    (folder / "config.json").write_text(json.dumps({"model_type": "bert", "pad_token_id": 0}))
    reference = np.array(
        list(TextEmbedding("sentence-transformers/all-MiniLM-L6-v2", specific_model_path=str(folder)).embed(TEXTS))
    )
    ours = embeddings.BundledEmbedder().embed(TEXTS)
    cos = (reference * ours).sum(axis=1) / np.linalg.norm(reference, axis=1)
    assert cos.min() > 0.9999, cos


def test_disabled_model_raises_embedding_error(monkeypatch):
    monkeypatch.setenv("CONTEXTWARE_DISABLE_EMBEDDINGS", "1")
    with pytest.raises(EmbeddingError, match="disabled"):
        embeddings.BundledEmbedder().embed(["x"])


def test_unknown_configured_model_is_a_clear_error(monkeypatch):
    from contextware.core.errors import ConfigError

    monkeypatch.setenv("CONTEXTWARE_EMBED_MODEL", "no-such/model")
    embeddings._CACHE.clear()
    with pytest.raises(ConfigError, match="not a fastembed text model"):
        embeddings.get_embedder()
    embeddings._CACHE.clear()


@pytest.mark.slow  # over 7 s: the full suite runs it, the fast subset does not
def test_long_texts_run_in_bounded_pieces_with_the_same_vectors():
    """A hook turn cut into 27 chunks of 1,500 characters: each model run holds at most RUN_TOKENS
    tokens (one run of all 27 took a hook process to 1.1-1.5 GB), and the vectors are those of
    each text embedded alone."""
    import numpy as np

    from contextware.storage.embeddings import RUN_TOKENS, BundledEmbedder

    embedder = BundledEmbedder()
    texts = [f"chunk {i}: " + "the export job retries the upload to the bucket " * 30 for i in range(27)]
    texts.append("a short one")
    runs = [(len(encodings), mask.shape[1]) for encodings, mask, _ in embedder._batches(texts)]
    assert sum(rows for rows, _ in runs) == len(texts)
    assert all(rows == 1 or rows * width <= RUN_TOKENS for rows, width in runs)
    together = embedder.embed(texts)
    alone = np.concatenate([embedder.embed([t]) for t in texts])
    assert np.allclose(together, alone, atol=1e-5)
