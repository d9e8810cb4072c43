"""``bench sweep CONFIG.yaml``: a resumable grid of tracked runs.

A YAML config names methods x datasets x splits x epsilons x seeds (plus attacks on every trained model and
audit modes). Every *cell* of the grid is one tracked MLflow run made through :func:`bench.api.run` (one
method, one dataset, one split, one epsilon, one seed); audit cells are one :func:`bench.api.audit` run each.
The entry point is :func:`bench.api.sweep`; the command :mod:`bench.commands.sweep`.

Modules, one job each: :mod:`~bench.sweep.config` reads and validates a config, :mod:`~bench.sweep.cells`
expands it into cells with stable identities, :mod:`~bench.sweep.state` reads their state from MLflow and
reclaims orphaned runs, :mod:`~bench.sweep.execute` runs one cell through the job functions and classifies how
it ended, :mod:`~bench.sweep.export` keeps an ``--export`` file whole (every cell FINISHED in the store has its
record there), :mod:`~bench.sweep.runner` drives the whole grid on an executor (:mod:`bench.executors`).

Resuming: a rerun skips FINISHED cells, retries FAILED ones up to ``--max-retries``, leaves cells RUNNING in a
live sweep alone and reclaims (marks KILLED, then reruns) those of a dead one, child runs included. On Ray a cell
whose worker process or node died is retried by Ray; the new attempt marks the dead one's runs KILLED first. Cells that
cannot run (a split the method does not support, a split the dataset does not have) are skipped with their
reason, never crash the sweep. After SIGINT or SIGTERM no cell starts; the cells in flight end KILLED. With
``--export``, a sweep appends the records the file lacks of cells FINISHED in the store as it starts and as it ends
(interrupted too), so a sweep killed between a cell's FINISHED and its line, or stopped while cells finished, loses
none. ``--dry-run`` prints the plan: what would run, what is done, and how many finished cells the export lacks.
"""

from bench.sweep.cells import Cell, SweepConfig
from bench.sweep.config import SweepError, build_config, load_config
from bench.sweep.runner import run_sweep
from bench.sweep.state import cell_states, owner_alive, owner_id, reclaim_orphans

__all__ = ["Cell", "SweepConfig", "SweepError", "build_config", "cell_states", "load_config", "owner_alive",
           "owner_id", "reclaim_orphans", "run_sweep"]
