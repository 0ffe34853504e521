"""`tailor estimate`: human-anchored estimates (prediction-powered inference) of what people would say, from a
proxy that labels every item and people who label a sample (docs/estimate.md, docs/metrics.md)."""
