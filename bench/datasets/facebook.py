"""Facebook100 schools (``facebook-<school>``), GAP's class-year task (Sajadmanesh et al. 2023).

The ``.mat`` file's ``local_info`` columns are (status, gender, major, minor, housing, year, high school). The
target is the class ``year``. Features are the one-hot encodings of status, gender, major, minor and housing,
with 0 (missing) encoded as all-zero; high school is dropped as in GAP. Nodes with a missing year are dropped,
then years with fewer than ``min_class_size`` nodes (default 1000, GAP's threshold), then nodes left isolated
(GAP removes isolated nodes too). One-hot columns are built after filtering, so none is empty.
"""

from __future__ import annotations

from pathlib import Path

from bench.datasets.base import DatasetError, Spec

OPTIONS = {"min_class_size": 1000}

# Facebook100 school names (Traud et al. 2012); the .mat files are named <School>.mat.
FB100_SCHOOLS = (
    "American75 Amherst41 Auburn71 BC17 BU10 Baylor93 Berkeley13 Bingham82 Bowdoin47 Brandeis99 Brown11 "
    "Bucknell39 Cal65 Caltech36 Carnegie49 Colgate88 Columbia2 Cornell5 Dartmouth6 Duke14 Emory27 FSU53 "
    "GWU54 Georgetown15 Hamilton46 Harvard1 Haverford76 Howard90 Indiana69 JMU79 JohnsHopkins55 Lehigh96 "
    "MIT8 MSU24 MU78 Maine59 Maryland58 Mich67 Michigan23 Middlebury45 Mississippi66 NYU9 Northeastern19 "
    "Northwestern25 NotreDame57 Oberlin44 Oklahoma97 Penn94 Pepperdine86 Princeton12 Reed98 Rice31 "
    "Rochester38 Rutgers89 Santa74 Simmons81 Smith60 Stanford3 Swarthmore42 Syracuse56 Temple83 "
    "Tennessee95 Texas80 Texas84 Trinity100 Tufts18 Tulane29 UC33 UC61 UC64 UCF52 UCLA26 UCSB37 UCSC68 "
    "UCSD34 UChicago30 UConn91 UF21 UGA50 UIllinois20 UMass92 UNC28 UPenn7 USC35 USF51 USFCA72 UVA16 "
    "Vanderbilt48 Vassar85 Vermont70 Villanova62 Virginia63 Wake73 WashU32 Wellesley22 Wesleyan43 "
    "William77 Williams40 Wisconsin87 Yale4"
).split()


def school_of(name: str, root: Path | None = None) -> str:
    key = name.lower()
    for s in FB100_SCHOOLS:
        if s.lower() == key:
            return s
    if root is not None and (root / "facebook100").is_dir():
        found = sorted(p.name for p in (root / "facebook100").iterdir() if p.name.lower() == key)
        if len(found) > 1:
            raise DatasetError(f"facebook-{name} is ambiguous: {root / 'facebook100'} holds {', '.join(found)}")
        if found:
            return found[0]
    raise DatasetError(f"unknown Facebook100 school {name!r}; examples: wisconsin87, berkeley13, uillinois20")


def _mat_file(school: str, root: Path | None) -> str:
    """The school's ``.mat`` file under the data root: ``facebook100/<School>/raw/<School>.mat`` (GAP's layout),
    else the LINKX copy ``LINKX/<school>/raw/data.mat`` (the same Facebook100 matrices, PyG's LINKXDataset
    layout), whichever exists (the first when neither does)."""
    gap = f"facebook100/{school}/raw/{school}.mat"
    linkx = f"LINKX/{school.lower()}/raw/data.mat"
    if root is not None and not (root / gap).is_file() and (root / linkx).is_file():
        return linkx
    return gap


def _builder(school: str, rel: str):
    def build(work: Path | None, opts: dict) -> dict:
        import numpy as np
        import scipy.io
        import torch
        from torch_geometric.data import Data

        path = work / rel
        try:
            mat = scipy.io.loadmat(str(path))
            info = np.asarray(mat["local_info"], dtype=np.int64)
            adj = mat["A"].tocsr()
        except (KeyError, ValueError, OSError) as e:
            raise DatasetError(f"{path} is not a Facebook100 .mat file with A and local_info ({e})") from None
        if info.ndim != 2 or info.shape[1] < 6 or adj.shape != (info.shape[0], info.shape[0]):
            raise DatasetError(f"{path}: local_info must be [N, >=6] and A [N, N]")
        min_size = int(opts["min_class_size"])
        year = info[:, 5]
        labelled = year > 0
        years, counts = np.unique(year[labelled], return_counts=True)
        kept_years = years[counts >= min_size]
        if kept_years.size < 2:
            raise DatasetError(f"facebook-{school.lower()}: fewer than 2 class years have >= {min_size} nodes; "
                               f"lower min_class_size")
        keep = labelled & np.isin(year, kept_years)
        changes = {"unlabelled_nodes_removed": int((~labelled).sum()),
                   "small_class_nodes_removed": int((labelled & ~keep).sum())}
        sub = adj[keep][:, keep]
        deg = np.asarray((sub != 0).sum(axis=1)).ravel() - (sub.diagonal() != 0)
        connected = deg > 0
        changes["isolated_nodes_removed"] = int((~connected).sum())
        idx = np.flatnonzero(keep)[connected]
        sub = adj[idx][:, idx].tocoo()
        cols = info[idx, :5]
        blocks = []
        for j in range(cols.shape[1]):
            c = cols[:, j]
            cats = np.unique(c[c > 0])
            blocks.append(c[:, None] == cats[None, :])
        x = torch.from_numpy(np.concatenate(blocks, axis=1).astype(np.float32))
        y = torch.from_numpy(np.searchsorted(kept_years, year[idx])).long()
        edge_index = torch.from_numpy(np.vstack([sub.row, sub.col]).astype(np.int64))
        data = Data(x=x, y=y, edge_index=edge_index, num_nodes=len(idx))
        return {"data": data, "num_classes": int(kept_years.size), "pre_changes": changes,
                "source": f"scipy.io.loadmat('{rel}') + GAP's year task"}

    return build


def spec(key: str, root: Path | None = None) -> Spec:
    """``facebook-<school>``: the school's ``.mat`` file (names matched case-insensitively; a school folder under
    ``root``'s ``facebook100/`` counts too; a LINKX copy of the school serves as well, e.g. facebook-cornell5)."""
    school = school_of(key[len("facebook-"):], root)
    rel = _mat_file(school, root)
    return Spec(key, f"Facebook100 {school}: predict class year (GAP's task)",
                lambda o: [rel], _builder(school, rel), dict(OPTIONS))


def schools_found(root: Path) -> list[str]:
    """The schools whose ``.mat`` file is under ``root`` (GAP's layout or LINKX's)."""
    found = set()
    if (root / "facebook100").is_dir():
        found |= {p.name for p in (root / "facebook100").iterdir() if (p / "raw" / f"{p.name}.mat").is_file()}
    if (root / "LINKX").is_dir():
        names = {s.lower(): s for s in FB100_SCHOOLS}
        found |= {names[p.name] for p in (root / "LINKX").iterdir()
                  if p.name in names and (p / "raw" / "data.mat").is_file()}
    return sorted(found)
