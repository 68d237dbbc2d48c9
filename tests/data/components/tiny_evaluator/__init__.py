"""A tiny evaluation entry point for the evaluate_model tests (see ``tiny_evaluator.evaluate``)."""
