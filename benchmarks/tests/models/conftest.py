"""The tests of benchmarks/models: its folder goes on sys.path (each script imports its siblings by their bare
names, as when it runs), at its end."""

import sys
from pathlib import Path

MODELS = Path(__file__).resolve().parents[2] / "models"
if str(MODELS) not in sys.path:
    sys.path.append(str(MODELS))
