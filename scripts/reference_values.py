"""Write the shipped reference values (``src/biaslens/data/files/references/``) from the papers'
released outputs: ``python scripts/reference_values.py DATA_DIR`` (DATA_DIR holds ``sib/data/
spur_mgc_raw/`` and ``sib/detect_wino_raw.tar.gz``, as the project's shared dataset folder
does)."""

from __future__ import annotations

import sys
from pathlib import Path

from biaslens.common import atomic
from biaslens.methods.sib.detect.references import ARCHIVE, SIB_DETECT_FILE, sib_detect_references
from biaslens.methods.sib.mgc.audit_role import SIB_MGC_FILE, sib_mgc_references


def main(data_dir: str) -> None:
    for file, table in (
        (SIB_MGC_FILE, sib_mgc_references(Path(data_dir) / "sib" / "data" / "spur_mgc_raw")),
        (SIB_DETECT_FILE, sib_detect_references(Path(data_dir) / ARCHIVE)),
    ):
        file.parent.mkdir(parents=True, exist_ok=True)
        atomic.write_csv(file, table)
        print(f"{file}: {len(table)} rows from {table['model'].nunique()} models")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "../shared/datasets")
