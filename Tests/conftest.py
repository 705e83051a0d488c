"""What every pytest suite under Tests/ shares.

- `Tests/Support` (latchkey_process, browser_sign_in, https_documents) on the import path.
- `serving(tmp_path_factory, *args)` (in latchkey_process): `latchkey serve` on a fresh SQLite
  store, stopped (and required to exit cleanly) at the end of the `with` block.
- `server`: that server for one test module, with `--dev` (a demo user and native app), or with
  the module's own `SERVE_ARGS` instead. A module that needs more than arguments defines its own
  `server` fixture, which takes precedence.
"""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "Support"))
from latchkey_process import serving  # noqa: E402


@pytest.fixture(scope="module")
def server(request, tmp_path_factory):
    with serving(tmp_path_factory, *getattr(request.module, "SERVE_ARGS", ["--dev"])) as started:
        yield started
