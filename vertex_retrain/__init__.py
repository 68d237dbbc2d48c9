"""vertex-retrain: KFP v2 components and pipelines for Vertex AI custom training.

Importing the package imports nothing heavy; see docs/architecture.md for the layers.
"""

__version__ = "0.1.0"
