"""``label-use`` (node level): the validation and test labels are private units' data no ledger covers, so a
method may not read them (choosing an epoch on private validation labels is an unaccounted release). With every
one of them changed (same seed), every served output must stay bit-identical."""

from __future__ import annotations

from audits.checks.base import PASS, VIOLATION, Check, skipped, timed
from audits.checks.registry import ANY, register


@register("label-use", order=5, units={"node"}, kinds=ANY, statistical=False, group="structural",
          other_units="labels are public at the {unit} level")
def label_use(b, alpha: float) -> Check:
    import dataclasses

    import torch

    held = b.task.val_mask | b.task.test_mask
    if not bool(held.any()):
        return skipped("label-use", b.seed, "no validation or test node")
    data = b.task.data.clone()
    y = data.y.clone()
    y[held] = (y[held] + 1) % int(b.task.num_classes)
    data.y = y
    other, secs = timed(lambda: b.fit(dataclasses.replace(b.task, data=data)))
    diff = float((other.predict_proba() - b.base.predict_proba()).abs().max())
    bad = diff > 0 or not torch.equal(other.predict_proba(), b.base.predict_proba())
    return Check("label-use", b.seed, VIOLATION if bad else PASS,
                 f"max |dp| {diff:.3g} with {int(held.sum())} val/test labels changed", "0",
                 "served outputs depend on validation or test labels" if bad else "", seconds=secs)
