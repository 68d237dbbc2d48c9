"""A tiny trainer package for python-package pool tests."""
