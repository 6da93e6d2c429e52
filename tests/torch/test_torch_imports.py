"""What ``import noisygd`` and ``import noisygd.torch`` load, in a fresh interpreter: a torch
run's memory is its own (the benchmark compares peak resident sets with Opacus'), so neither
scikit-learn nor pandas may be imported by the package or by a PrivateTrainer run."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("torch")

HEAVY = ("sklearn", "pandas")


def _loaded_after(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; it prints a JSON object as its last line."""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_import_noisygd_is_light_and_keeps_its_public_names():
    got = _loaded_after(
        "import json, sys, noisygd\n"
        "print(json.dumps({'version': noisygd.__version__, 'loaded': sorted(\n"
        "    m for m in ('torch', 'scipy', 'sklearn', 'pandas', 'dp_accounting')\n"
        "    if m in sys.modules)}))")
    assert got == {"version": "0.1.0", "loaded": []}


def test_noisygd_torch_and_a_trainer_run_load_neither_sklearn_nor_pandas():
    got = _loaded_after(
        "import json, sys\n"
        "import noisygd.torch as nt\n"
        f"heavy = {HEAVY!r}\n"
        "after_import = sorted(m for m in heavy if m in sys.modules)\n"
        "import torch\n"
        "net = torch.nn.Linear(4, 2)\n"
        "X, y = torch.randn(40, 4), torch.randint(0, 2, (40,))\n"
        "tr = nt.PrivateTrainer(net, torch.optim.SGD(net.parameters(), lr=0.1),\n"
        "    torch.nn.CrossEntropyLoss(reduction='none'), noise_multiplier=1.0, delta=1e-5,\n"
        "    batch_size=8, steps=3, n_samples_public=40,\n"
        "    generator=torch.Generator().manual_seed(0)).fit(X, y)\n"
        "print(json.dumps({'import': after_import, 'public': sorted(nt.__all__),\n"
        "    'run': sorted(m for m in heavy if m in sys.modules),\n"
        "    'accountant': tr.privacy_.accountant}))")
    assert got["import"] == [] and got["run"] == []
    assert got["accountant"] == "pld"  # the PLD accountant (dp_accounting) still ran
    assert {"PrivateTrainer", "TorchOracle", "PoissonLoader", "TorchNoise"} <= set(got["public"])
