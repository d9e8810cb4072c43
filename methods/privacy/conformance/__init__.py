"""Accountant conformance: a versioned corpus of accounting cases, each with a sound lower limit on epsilon and
independent reference values, and the tool that runs any accountant over it (``bench accountants check``).

Importable without torch or PyG (like :mod:`methods.privacy`): the cases are ledger events as data."""
