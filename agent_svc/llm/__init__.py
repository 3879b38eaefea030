"""LLM back-ends behind one interface: an OpenAI-compatible endpoint, or llama.cpp in-process."""
