"""Where the repository's folders are, for tests that run its files."""
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench"
SUPPORT = Path(__file__).resolve().parent
