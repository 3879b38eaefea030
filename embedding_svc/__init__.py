"""EmbeddingService: batched ONNX text embeddings (BGE family) behind gRPC.

Modules, one responsibility each: ``models`` (the frozen model-description registry and
where each model's files are), ``tokenize`` (text → token ids, prefix and truncation),
``backend`` (ONNX inference and pooling), ``batcher`` (the dynamic batch queue), ``engine``
(one model's tokenizer + backend + batcher), ``service`` (the gRPC front) and ``pull``
(downloading model files from the Hugging Face hub).
"""
