"""ONNX inference and pooling for one model.

``OnnxBackend.run`` takes a batch of encoded texts, pads them to the longest, feeds the graph
only the inputs it declares (``input_ids``, ``attention_mask`` and, where present,
``token_type_ids``), pools the last hidden state the way the model's spec says (CLS or
masked mean) and optionally L2-normalizes. Thread counts and graph optimization are set
explicitly; one backend is driven by one inference thread at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnxruntime as ort

from embedding_svc.models import ModelSpec, Pooling
from embedding_svc.tokenize import Encoded

Matrix = npt.NDArray[np.float32]


def pad(batch: Sequence[Encoded], pad_id: int = 0) -> dict[str, npt.NDArray[np.int64]]:
    """Right-pads a batch to its longest text."""
    width = max(item.length for item in batch)
    ids = np.full((len(batch), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(batch), width), dtype=np.int64)
    types = np.zeros((len(batch), width), dtype=np.int64)
    for row, item in enumerate(batch):
        ids[row, : item.length] = item.ids
        mask[row, : item.length] = 1
        types[row, : item.length] = item.type_ids
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def pool(hidden: Matrix, mask: npt.NDArray[np.int64], pooling: Pooling) -> Matrix:
    if pooling is Pooling.CLS:
        return hidden[:, 0, :].astype(np.float32, copy=True)
    weights = mask[:, :, None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    counts = np.clip(weights.sum(axis=1), 1e-9, None)
    result: Matrix = (summed / counts).astype(np.float32)
    return result


def l2_normalize(vectors: Matrix) -> Matrix:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    result: Matrix = (vectors / np.clip(norms, 1e-12, None)).astype(np.float32)
    return result


class OnnxBackend:
    def __init__(self, spec: ModelSpec, onnx_file: Path, *, intra_op_threads: int) -> None:
        self.spec = spec
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = intra_op_threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        self._session = ort.InferenceSession(
            str(onnx_file), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._inputs = [i.name for i in self._session.get_inputs()]
        unknown = set(self._inputs) - {"input_ids", "attention_mask", "token_type_ids"}
        if unknown:
            raise ValueError(f"{onnx_file}: unsupported graph inputs {sorted(unknown)}")
        self._output = self._session.get_outputs()[0].name
        width = self._session.get_outputs()[0].shape[-1]
        if isinstance(width, int) and width != spec.dimensions:
            raise ValueError(
                f"{onnx_file}: hidden size {width} does not match {spec.name}'s {spec.dimensions}"
            )

    def run(self, batch: Sequence[Encoded]) -> Matrix:
        """Unnormalized pooled vectors, one row per text."""
        feeds = pad(batch)
        outputs = self._session.run([self._output], {k: feeds[k] for k in self._inputs})
        hidden = np.asarray(outputs[0], dtype=np.float32)
        return pool(hidden, feeds["attention_mask"], self.spec.pooling)
