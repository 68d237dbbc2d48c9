"""A tiny training program for the component tests (see ``tiny_trainer.task``)."""
