"""Declared contracts between the generic components and a user's training package.

The library never imports model code. ``prepare_dataset`` reads data whose schema is declared
in :mod:`.transactions` and writes the manifest of :mod:`.dataset_manifest`;
``evaluate_model`` runs the user's evaluation entry point with the flags of
:mod:`.evaluation` and reads back the metrics file that module defines. Each module is pure
(no I/O, no third-party imports). A training package does not import them: it keeps the
contract as documented in docs/components.md, and tests check the reference trainer against
these modules.
"""
