"""A progress bar on stderr for long runs on a terminal (tqdm; this module is imported only then)."""

from __future__ import annotations

import sys

# Shown only once a run has taken this long: a quick run stays silent even on a terminal.
DELAY_S = 0.5


class ProgressBar:
    """Called with how many more files are done; ``close()`` removes the bar."""

    def __init__(self, total: int) -> None:
        from tqdm import tqdm

        self._bar = tqdm(total=total, unit="file", file=sys.stderr, delay=DELAY_S, leave=False, dynamic_ncols=True, desc="tensorconv")

    def __call__(self, done: int) -> None:
        self._bar.update(done)

    def close(self) -> None:
        self._bar.close()
