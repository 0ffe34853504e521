"""Per-user memory: a JSONL store, importers from chat logs, and retrieval (lexical, dense, hybrid) for the RAG
setting and the construction pipeline. Heavy libraries (bm25s, torch) are imported inside the retrievers."""
