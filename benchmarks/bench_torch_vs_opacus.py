"""noisygd.torch beside Opacus 1.6 (hooks and ghost clipping) beside plain non-private torch.

One run, one script: every row runs in its own subprocess of this script (``--worker``), so
that its peak memory is its own. noisygd's rows and the non-private rows run in noisygd's
environment (``.venv``, torch 2.13.0); Opacus' rows run the same worker code with Opacus 1.6.0
from the peers' environment (``.venv-peers``; ``make bench-env``) and do not import noisygd:
in noisygd's interpreter, with only ``opacus`` and ``opt_einsum`` taken from the peers'
environment, when both hold the same torch, NumPy and SciPy (``_opacus_launch``: then every
row maps the same library files), else in the peers' interpreter. The main process
collects the rows and computes the PLD epsilon of the event
every DP-SGD row performed (``SelfComposed(PoissonSampled(q, Gaussian(z)), T)``) with
noisygd's PLD accountant, beside each library's own epsilon (noisygd: the tightest of its
accountants; Opacus: its default PRV accountant, and its RDP accountant).

Table 1, throughput: the same MLP (2 hidden layers of 256, ReLU) and the same small CNN (two
3x3 conv + ReLU + 2x2 max-pool blocks of 16 and 32 channels, a linear head), on scikit-learn's
bundled digits (8x8, 10 classes; 80/20 split) and on a synthetic set of CIFAR shape (3x32x32,
10 classes: a class mean plus Gaussian noise), batch 256 (Poisson, rate 256/n), noise
multiplier 1.0, clip 1.0, the same initial weights, optimiser (SGD, lr 0.5, momentum 0.9, on
the mean gradient over the expected batch; lr 0.05 without privacy, where the unclipped
gradient diverges at 0.5) and number of steps for every library. Accuracy is the mean over
``SEEDS`` runs (model initialisation, batches and noise seeded alike), timing and memory are
those of the first.
Every step after ``WARMUP`` untimed ones is timed alone. On CPU the step time is the mean
*process CPU time* per step (single-threaded workers: the compute of the step, not the time
other jobs of a shared machine held the cores; the wall-clock mean is ``wall_step_ms`` beside
it); on a GPU it is the mean wall time after synchronising. Examples per second is the batch
size over the step time. Memory: the worker's peak
resident set (``peak_memory_mb``, imports included: ``VmHWM``, the high-water mark of its own
address space; ``ru_maxrss`` would include the main process's peak, :func:`_peak_mb`) and
its growth during training
(``training_memory_mb``: peak minus the resident set before the first step), or
``torch.cuda.max_memory_allocated`` on a GPU. The main process writes the digits to an
``.npz`` and the CIFAR-shaped set (split, float32) to ``.npy`` files that the workers read
with NumPy: no worker imports scikit-learn, whose import (1.9 in noisygd's environment, 1.6
in the peers': about 175 and 150 MB) would otherwise be counted in every row's peak, 25 MB
more in noisygd's, nor generates the CIFAR-shaped set in float64. Accuracy is on the
held-out split after all steps.

Table 2: DP-FTRL, NoisyGD and DP-SGD (noisygd) and Opacus' DP-SGD (ghost clipping) on the CNN
on digits at epsilon 1, 2 and 8 (delta 1e-5), noise calibrated by each library.

Threads: ``--threads`` (default 1) for every worker alike; on a machine with 2 shared cores
OpenMP's thread synchronisation, not arithmetic, dominates small-tensor times.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PEERS_PYTHON = ROOT / ".venv-peers" / "bin" / "python"
BATCH = 256
NOISE = 1.0
CLIP = 1.0
LR = 0.5
LR_NONPRIVATE = 0.05  # the unclipped mean gradient diverges at 0.5 on the CNN
MOMENTUM = 0.9
DELTA = 1e-5
WARMUP = 3
SEED = 0
EPSILONS = (1.0, 2.0, 8.0)
TABLE2_EPOCHS = 15  # NoisySGD, DP-FTRL and Opacus; NoisyGD runs the same number of steps
STEPS = {"digits": 60, "cifar_shape": 30}
SEEDS = {"digits": 3, "cifar_shape": 1}  # accuracy: mean over seeds (timing: the first)


# ------------------------------------------------------------------------------ worker side
def save_digits(path: Path) -> Path:
    """scikit-learn's digits, saved by the main process as ``.npz`` for the workers."""
    import numpy as np
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    np.savez(path, X=X, y=y)
    return path


def _cifar_shape():
    """The synthetic CIFAR-shaped set (module doc): ``(X, y)`` in float64, and the rng after
    drawing them (it draws the split next)."""
    import numpy as np

    rng = np.random.default_rng(SEED)
    n, k = 5120, 10
    means = rng.normal(size=(k, 3, 32, 32))
    y = rng.integers(0, k, size=n)
    X = 0.08 * means[y] + rng.normal(size=(n, 3, 32, 32))
    return X, y, rng


def save_cifar_shape(path: Path) -> Path:
    """The CIFAR-shaped set, split and in float32 as the workers use it, saved by the main
    process as ``.npy`` files in the folder ``path``: generating it in float64 (several
    arrays of 126 MB) would otherwise set every worker's peak memory, the same for every
    library, above what training uses."""
    import numpy as np

    X, y, rng = _cifar_shape()
    tr, te = _split(len(X), rng)
    path.mkdir()
    for name, a in (("X_train", X[tr].astype(np.float32)), ("y_train", y[tr]),
                    ("X_test", X[te].astype(np.float32)), ("y_test", y[te])):
        np.save(path / f"{name}.npy", a)  # .npy: read straight into the array (an .npz
    return path                           # member is read into a buffer, then copied)


def _split(n: int, rng):
    """Training and test indices: a seeded 80/20 split."""
    perm = rng.permutation(n)
    cut = int(0.8 * n)
    return perm[:cut], perm[cut:]


def load(dataset: str, path: str | None = None):
    """``(X_train, y_train, X_test, y_test)`` as float32 / int64 tensors (no noisygd import).

    ``path``: the ``.npz`` of :func:`save_digits` or the folder of :func:`save_cifar_shape`,
    written by the main process (the workers read it with NumPy, so that no worker imports
    scikit-learn, whose import, about 150 MB of resident memory and of another size in each
    environment, is the harness's, not the library's, nor generates the CIFAR-shaped set);
    without it,
    the data are loaded or generated here (the same values)."""
    import numpy as np
    import torch

    def t(a, dtype):
        return torch.as_tensor(np.ascontiguousarray(a), dtype=dtype)

    if dataset != "digits":
        if path is not None:
            parts = tuple(np.load(Path(path) / f"{name}.npy")
                          for name in ("X_train", "y_train", "X_test", "y_test"))
        else:
            X, y, rng = _cifar_shape()
            tr, te = _split(len(X), rng)
            parts = (X[tr], y[tr], X[te], y[te])
        return tuple(t(a, torch.float32 if k % 2 == 0 else torch.int64)
                     for k, a in enumerate(parts))
    rng = np.random.default_rng(SEED)
    if path is None:
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
    else:
        with np.load(path) as f:
            X, y = f["X"], f["y"]
    X = (X / 16.0).reshape(-1, 1, 8, 8)
    tr, te = _split(len(X), rng)
    return (t(X[tr], torch.float32), t(y[tr], torch.int64), t(X[te], torch.float32),
            t(y[te], torch.int64))


def build(model: str, shape: tuple[int, ...], seed: int = SEED):
    """The MLP or the CNN for inputs of ``shape`` (C, H, W), seeded."""
    import torch
    from torch import nn

    torch.manual_seed(seed)
    c, h, w = shape
    if model == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(c * h * w, 256), nn.ReLU(),
                             nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    return nn.Sequential(
        nn.Conv2d(c, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * (h // 4) * (w // 4), 10))


def _peak_mb(device: str) -> float:
    import torch

    if device.startswith("cuda"):
        return torch.cuda.max_memory_allocated() / 2**20
    # VmHWM: the high-water mark of this process's own address space. ``ru_maxrss`` is not:
    # Linux folds into it the peak of the address space the process replaced at exec, which
    # for a worker spawned by ``subprocess`` (vfork, then exec) is the main process's, so
    # every worker's "peak" was at least the main process's peak so far (481 MB for each
    # CIFAR-shaped row of the last run, the non-private one included)
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:  # pragma: no cover - not Linux
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class StepTimer:
    """Per-step CPU and wall times after the warm-up steps (module doc)."""

    def __init__(self, sync, cpu: bool) -> None:
        self.sync, self.cpu = sync, cpu
        self.cpu_times: list[float] = []
        self.wall_times: list[float] = []
        self.last: tuple[float, float] | None = None

    def __call__(self, done: int) -> None:
        self.sync()
        now = (time.process_time(), time.perf_counter())
        if done > WARMUP and self.last is not None:
            self.cpu_times.append(now[0] - self.last[0])
            self.wall_times.append(now[1] - self.last[1])
        self.last = now

    def summary(self, examples: float) -> dict:
        k = len(self.wall_times)
        wall = sum(self.wall_times) / k
        step = sum(self.cpu_times) / k if self.cpu else wall
        return {"step_ms": 1e3 * step, "examples_per_s": examples / step,
                "wall_step_ms": 1e3 * wall, "timed_steps": k,
                "clock": "process CPU time" if self.cpu else "wall (synchronised)"}


def _accuracy(net, X, y) -> float:
    import torch

    with torch.no_grad():
        return float((net(X).argmax(1) == y).float().mean())


def worker(args: argparse.Namespace) -> dict:
    """One row: ``args.seeds`` trainings (seeds 0, 1, ...); time and memory of the first,
    accuracy of each (mean and standard deviation reported)."""
    import statistics

    import torch

    torch.set_num_threads(args.threads)
    data = tuple(t.to(args.device) for t in load(args.dataset, args.data))
    runs = [_train(args, data, seed) for seed in range(SEED, SEED + args.seeds)]
    out = runs[0]
    accs = [r["accuracy"] for r in runs]
    out.update(accuracy=statistics.fmean(accs), accuracies=accs, seeds=len(accs),
               accuracy_std=statistics.stdev(accs) if len(accs) > 1 else 0.0)
    out["python"] = sys.executable
    out["peak_memory_mb"] = _peak_mb(args.device)
    out["training_memory_mb"] = max(0.0, out["peak_memory_mb"] - out["rss_before_training_mb"])
    return out


def _train(args: argparse.Namespace, data: tuple, seed: int) -> dict:
    """One training run of a row (module doc)."""
    import torch

    device = args.device
    Xtr, ytr, Xte, yte = data
    net = build(args.model, tuple(Xtr.shape[1:]), seed).to(device)
    lr = LR if args.library != "nonprivate" else LR_NONPRIVATE
    opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=MOMENTUM)
    n = len(Xtr)
    q = BATCH / n
    out = {"library": args.library, "mode": args.mode, "model": args.model,
           "dataset": args.dataset, "n_train": n, "device": device, "threads": args.threads}
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    timer = StepTimer(sync, cpu=not device.startswith("cuda"))
    out["rss_before_training_mb"] = _rss_mb()
    if args.library == "noisygd":
        from noisygd.torch import PrivateTrainer

        kw = ({"noise_multiplier": NOISE, "steps": args.steps} if args.epsilon is None
              else {"epsilon": args.epsilon, "epochs": TABLE2_EPOCHS}
              if args.mode != "noisy_gd" else
              {"epsilon": args.epsilon, "steps": _table2_steps(n)})
        trainer = PrivateTrainer(
            net, opt, torch.nn.CrossEntropyLoss(reduction="none"), method=args.mode,
            delta=DELTA, clip=CLIP, batch_size=BATCH, n_samples_public=n,
            generator=torch.Generator(device=device).manual_seed(seed), **kw)
        timer(0)
        trainer.fit(Xtr, ytr, callback=timer)
        # Poisson: the expected batch per step (what Opacus' rows count); NoisyGD: all n
        out.update(noise_multiplier=trainer.plan_.noise_multiplier, steps=trainer.plan_.steps,
                   epsilon=trainer.privacy_.epsilon, accountant=trainer.privacy_.accountant,
                   event=trainer.privacy_.event.describe(),
                   **timer.summary(BATCH if args.mode != "noisy_gd" else n))
    elif args.library == "nonprivate":
        loss = torch.nn.CrossEntropyLoss()
        g = torch.Generator(device=device).manual_seed(seed)

        def step():
            idx = torch.randint(0, n, (BATCH,), generator=g, device=device)
            opt.zero_grad(set_to_none=True)
            loss(net(Xtr[idx]), ytr[idx]).backward()
            opt.step()

        timer(0)
        for k in range(args.steps):
            step()
            timer(k + 1)
        out.update(steps=args.steps, **timer.summary(BATCH))
    else:
        out.update(_opacus(args, net, opt, Xtr, ytr, q, timer, seed))
    out["accuracy"] = _accuracy(net, Xte, yte)
    return out


def _table2_steps(n: int) -> int:
    """NoisyGD's steps in table 2: as many as NoisySGD's (epochs / rate)."""
    import math

    return math.ceil(TABLE2_EPOCHS / (BATCH / n) - 1e-9)


def _opacus(args, net, opt, Xtr, ytr, q, timer, seed) -> dict:
    import warnings

    import opacus
    import torch
    from opacus import PrivacyEngine
    from opacus.accountants import RDPAccountant

    warnings.filterwarnings("ignore")
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(Xtr, ytr),
                                         batch_size=BATCH)
    engine = PrivacyEngine(accountant="prv")
    common = dict(module=net, optimizer=opt, data_loader=loader, max_grad_norm=CLIP,
                  grad_sample_mode=args.mode, criterion=torch.nn.CrossEntropyLoss(),
                  noise_generator=torch.Generator(device=args.device).manual_seed(seed))
    if args.epsilon is None:
        made = engine.make_private(noise_multiplier=NOISE, **common)
        total = args.steps
    else:
        made = engine.make_private_with_epsilon(target_epsilon=args.epsilon,
                                                target_delta=DELTA, epochs=TABLE2_EPOCHS,
                                                **common)
        total = None
    if args.mode == "ghost":
        model, optimizer, criterion, dl = made
    else:
        model, optimizer, dl = made
        criterion = torch.nn.CrossEntropyLoss()
    if total is None:
        total = TABLE2_EPOCHS * len(dl)
    done = 0
    timer(0)
    while done < total:
        for x, y in dl:  # the loader's draw and collation are part of Opacus' step
            optimizer.zero_grad(set_to_none=True)
            criterion(model(x), y).backward()
            optimizer.step()
            done += 1
            timer(done)
            if done == total:
                break
    z = optimizer.noise_multiplier
    rdp = RDPAccountant()
    rdp.history = [(z, q, total)]
    return {"noise_multiplier": z, "steps": total, "epsilon": engine.get_epsilon(DELTA),
            "accountant": "opacus prv", "epsilon_opacus_rdp": rdp.get_epsilon(DELTA),
            "opacus": opacus.__version__, **timer.summary(BATCH)}


# ------------------------------------------------------------------------------ main side
_FOLDER: list[Path] = []  # the main process's temporary folder (data files, Opacus' path)
_DATA: dict[str, Path] = {}  # each dataset's .npz, written once by the main process
_PEERS: dict[str, object] = {}  # how the Opacus rows run (_opacus_launch)
_SHARED = ("torch", "numpy", "scipy")  # the libraries every row must share


def _folder() -> Path:
    if not _FOLDER:
        import atexit
        import shutil
        import tempfile

        folder = tempfile.mkdtemp(prefix="bench_torch_")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        _FOLDER.append(Path(folder))
    return _FOLDER[0]


def _data_file(dataset: str) -> Path:
    if dataset not in _DATA:
        save = save_digits if dataset == "digits" else save_cifar_shape
        _DATA[dataset] = save(_folder() / (f"{dataset}.npz" if dataset == "digits"
                                           else dataset))
    return _DATA[dataset]


def _versions(python: str) -> dict:
    """Versions and locations of the shared libraries, Opacus and opt_einsum in ``python``."""
    code = ("import importlib, json, os\n"
            "out = {}\n"
            "for m in ('torch', 'numpy', 'scipy', 'opacus', 'opt_einsum'):\n"
            "    try:\n"
            "        mod = importlib.import_module(m)\n"
            "    except ImportError:\n"
            "        continue\n"
            "    out[m] = [getattr(mod, '__version__', ''), os.path.dirname(mod.__file__)]\n"
            "print(json.dumps(out))")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    res = subprocess.run([python, "-c", code], capture_output=True, text=True, env=env,
                         check=True)
    return json.loads(res.stdout)


def _opacus_launch() -> tuple[str, str | None]:
    """The interpreter and ``PYTHONPATH`` of the Opacus rows.

    When the peers' environment holds the same versions of torch, NumPy and SciPy as
    noisygd's, the Opacus rows run in noisygd's interpreter with only Opacus and its one
    dependency, ``opt_einsum`` (pure Python), imported from the peers' environment (a folder
    of links to them on ``PYTHONPATH``): every row then maps the same library files, and its
    peak resident memory, which counts their mapped pages, compares the libraries. Two
    installed copies of the same wheel are not mapped alike (the page cache holds their
    files in folios of different sizes, and a page fault maps a whole folio): measured here,
    importing NumPy maps 4.5 MB of its OpenBLAS from one environment and 2.2 MB from the
    other, and SciPy's imports 71.3 MB against 62.8 MB, which the rows' peaks would carry
    (docs/torch.md, "Benchmark"). Otherwise the peers' own interpreter runs them."""
    if not _PEERS:
        ours, peers = _versions(sys.executable), _versions(str(PEERS_PYTHON))
        same = all(m in ours and m in peers and ours[m][0] == peers[m][0] for m in _SHARED)
        if same and "opacus" in peers and "opt_einsum" in peers:
            path = _folder() / "opacus_only"
            path.mkdir(exist_ok=True)
            for m in ("opacus", "opt_einsum"):
                link = path / m
                if not link.exists():
                    link.symlink_to(peers[m][1], target_is_directory=True)
            _PEERS.update(python=sys.executable, pythonpath=str(path),
                          note="noisygd's interpreter, Opacus and opt_einsum from "
                               f"{PEERS_PYTHON.parents[1].name}",
                          versions={m: peers[m][0] for m in (*_SHARED, "opacus")})
        else:
            _PEERS.update(python=str(PEERS_PYTHON), pythonpath=None,
                          note=f"the peers' interpreter ({PEERS_PYTHON.parents[1].name})",
                          versions={m: v[0] for m, v in peers.items()})
    return str(_PEERS["python"]), _PEERS["pythonpath"]  # type: ignore[return-value]


def run_row(library: str, mode: str, model: str, dataset: str, *, steps: int, threads: int,
            device: str, epsilon: float | None = None) -> dict:
    """Run one worker in the right environment; returns its row (or the error)."""
    python, path = (_opacus_launch() if library == "opacus"
                    else (sys.executable, str(ROOT / "src")))
    cmd = [python, __file__, "--worker", "--library", library, "--mode", mode, "--model",
           model, "--dataset", dataset, "--steps", str(steps), "--threads", str(threads),
           "--device", device, "--seeds", str(SEEDS[dataset]),
           "--data", str(_data_file(dataset))]
    if epsilon is not None:
        cmd += ["--epsilon", str(epsilon)]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads),
           "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": str(threads)}
    env.pop("PYTHONPATH", None)  # the Opacus rows do not import noisygd
    if path is not None:
        env["PYTHONPATH"] = path
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800,
                         check=False)
    if res.returncode != 0:
        return {"library": library, "mode": mode, "model": model, "dataset": dataset,
                "error": res.stderr.strip().splitlines()[-1] if res.stderr else "failed"}
    return json.loads(res.stdout.strip().splitlines()[-1])


def pld_epsilon(row: dict) -> float | None:
    """noisygd's PLD epsilon of the event a DP-SGD row performed (Poisson rate, z, steps)."""
    from noisygd.accounting.events import Gaussian, PoissonSampled, SelfComposed
    from noisygd.accounting.registry import get_accountant

    if "noise_multiplier" not in row or row.get("mode") in ("noisy_gd", "dp_ftrl"):
        return None
    q = BATCH / row["n_train"]
    event = SelfComposed(PoissonSampled(q, Gaussian(row["noise_multiplier"])), row["steps"])
    return get_accountant("pld").epsilon(event, DELTA)


def throughput_rows(models, datasets, *, threads: int, device: str) -> list[dict]:
    rows = []
    for dataset in datasets:
        for model in models:
            steps = STEPS[dataset]
            for library, mode in (("nonprivate", "sgd"), ("noisygd", "noisy_sgd"),
                                  ("opacus", "hooks"), ("opacus", "ghost")):
                row = run_row(library, mode, model, dataset, steps=steps, threads=threads,
                              device=device)
                if "error" not in row:
                    row["epsilon_pld"] = pld_epsilon(row)
                rows.append(row)
                print(json.dumps(row), file=sys.stderr)
    return rows


def summary(rows: list[dict], model: str, dataset: str) -> dict:
    """The headline numbers of one (model, dataset) cell."""
    cell = {(r["library"], r["mode"]): r for r in rows
            if r["model"] == model and r["dataset"] == dataset and "error" not in r}
    ours, plain = cell.get(("noisygd", "noisy_sgd")), cell.get(("nonprivate", "sgd"))
    peers = [r for k, r in cell.items() if k[0] == "opacus"]
    best_peer = max(peers, key=lambda r: r["examples_per_s"]) if peers else None
    out = {"model": model, "dataset": dataset}
    if ours and plain:
        out.update(noisygd_examples_per_s=ours["examples_per_s"],
                   nonprivate_examples_per_s=plain["examples_per_s"],
                   noisygd_accuracy=ours["accuracy"],
                   step_time_vs_nonprivate=ours["step_ms"] / plain["step_ms"])
    if best_peer:
        out.update(opacus_examples_per_s=best_peer["examples_per_s"],
                   opacus_mode=best_peer["mode"], opacus_accuracy=best_peer["accuracy"])
    if ours and best_peer:
        out.update(speedup_vs_opacus_best=ours["examples_per_s"] / best_peer["examples_per_s"],
                   peak_memory_mb=ours["peak_memory_mb"],
                   opacus_peak_memory_mb=best_peer["peak_memory_mb"],
                   training_memory_mb=ours["training_memory_mb"],
                   opacus_training_memory_mb=best_peer["training_memory_mb"],
                   accuracy_minus_opacus=ours["accuracy"] - best_peer["accuracy"])
    return out


def epsilon_rows(*, threads: int, device: str) -> list[dict]:
    rows = []
    for eps in EPSILONS:
        for library, mode in (("noisygd", "dp_ftrl"), ("noisygd", "noisy_gd"),
                              ("noisygd", "noisy_sgd"), ("opacus", "ghost")):
            row = run_row(library, mode, "cnn", "digits", steps=0, threads=threads,
                          device=device, epsilon=eps)
            row["target_epsilon"] = eps
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="the digits MLP row alone; print one JSON line")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--library", help=argparse.SUPPRESS)
    parser.add_argument("--mode", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--dataset", help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--epsilon", type=float, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--seeds", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--data", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args)))
        return 0
    if not PEERS_PYTHON.exists():
        parser.error(f"{PEERS_PYTHON} is missing: run `make bench-env` first")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    if args.quick:
        rows = throughput_rows(["mlp"], ["digits"], threads=args.threads, device=args.device)
        s = summary(rows, "mlp", "digits")
        keys = ("noisygd_examples_per_s", "opacus_examples_per_s", "nonprivate_examples_per_s",
                "noisygd_accuracy", "opacus_accuracy")
        print(json.dumps({**{k: s.get(k) for k in keys}, "opacus_mode": s.get("opacus_mode"),
                          "step_time_vs_nonprivate": s.get("step_time_vs_nonprivate"),
                          "threads": args.threads, "device": args.device}))
        return 0
    from _common import environment, markdown_table, write_results

    t0 = time.time()
    rows = throughput_rows(["mlp", "cnn"], ["digits", "cifar_shape"], threads=args.threads,
                           device=args.device)
    summaries = [summary(rows, m, d) for d in ("digits", "cifar_shape") for m in ("mlp", "cnn")]
    eps_rows = epsilon_rows(threads=args.threads, device=args.device)
    cols = ["dataset", "model", "library", "mode", "examples_per_s", "step_ms",
            "peak_memory_mb", "training_memory_mb", "accuracy", "accuracy_std", "epsilon",
            "accountant",
            "epsilon_opacus_rdp",
            "epsilon_pld", "steps", "error"]
    eps_cols = ["target_epsilon", "library", "mode", "noise_multiplier", "steps", "accuracy",
                "accuracy_std", "epsilon", "accountant", "error"]
    extra = ("## Summary (noisygd against Opacus' faster mode and against plain torch)\n\n"
             + markdown_table(summaries)
             + "\n\n## CNN on digits at epsilon 1, 2, 8 (delta 1e-5)\n\n"
             + markdown_table(eps_rows, eps_cols))
    meta = {
        "title": "noisygd.torch vs Opacus 1.6 vs non-private torch",
        "description": (__doc__ or "").split("\n\n")[0],
        "command": "make bench-torch",
        "environment": environment(),
        "threads": args.threads,
        "device": args.device,
        "gpu": "none lent this session (device status: can_start_another false); CPU only",
        "batch": BATCH, "noise_multiplier": NOISE, "clip": CLIP, "lr": LR,
        "momentum": MOMENTUM, "lr_nonprivate": LR_NONPRIVATE, "seeds": SEEDS, "delta": DELTA,
        "warmup_steps": WARMUP, "steps": STEPS,
        "opacus_rows_run_by": _PEERS.get("note"),
        "opacus_rows_versions": _PEERS.get("versions"),
        "summary": summaries,
        "epsilon_table": eps_rows,
        "seconds": time.time() - t0,
    }
    write_results("bench_torch_vs_opacus", rows, meta, columns=cols, extra_markdown=extra)
    print(json.dumps(summaries))
    return 0


if __name__ == "__main__":
    sys.exit(main())
