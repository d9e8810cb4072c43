"""The suite's error types: a leaf module (no torch), so the accountant and the CLI can raise them cheaply.

* :class:`BenchError` and its subclasses: caused by input or the environment. The CLI prints one ``error:``
  line and exits 2; raised before any run is opened.
* :class:`ContractViolation`: a method (or an attack, an audit target) returned something the interface
  forbids -- a spent epsilon above the target, probabilities of the wrong shape, a missing ledger. A bug in
  the method, found while a run is open: the run ends FAILED and the CLI exits 1.
"""

from __future__ import annotations


class BenchError(Exception):
    """An error caused by user input or the environment, reported as one clear line."""


class BudgetError(BenchError, ValueError):
    """A privacy budget that is invalid or that a method cannot meet."""


class ConfigError(BenchError, ValueError):
    """Unknown or malformed hyperparameters, method names or settings."""


class BenchWarning(UserWarning):
    """Input that runs but may not mean what its user thinks (a delta no guarantee survives): the CLI prints it as
    one ``warning:`` line on stderr."""


class ContractViolation(RuntimeError):
    """A method's output breaks the interface contract (a bug in the method, not bad input)."""


class InterfaceError(BenchError, ContractViolation):
    """A method (typically a plugin) misses part of the interface: no ``Fitted``, no ledger, a private-inference
    claim without a declared release. Not a privacy finding: ``bench verify`` meets it in a fit made before any run
    opens and the CLI prints one ``error:`` line naming what is missing (exit 2); inside a run it is a
    :class:`ContractViolation` like any other."""
