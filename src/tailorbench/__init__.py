"""tailorbench: human-grounded evaluation of LLM personalization."""

__version__ = "0.1.0"
