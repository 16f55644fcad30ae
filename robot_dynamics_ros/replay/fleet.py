"""A fleet of bags: many replays in parallel on the distributed engine, one summary.

``robot_dynamics_replay DIR_OR_GLOB ... [OUTPUT_DIR]`` finds the bags (a bag
is a folder with a ``metadata.yaml``, or a ``.db3``/``.mcap`` file; a folder
that is not a bag holds bags; a glob is expanded), replays each as one task
on Dask (``engine``: a local cluster, or ``--scheduler ADDRESS``), with one
progress bar over the fleet, and prints a table: bag, duration, joint states,
the largest per-joint residual RMS, the identified payload, warnings. A bag
that fails is a row with its error; the others finish. With OUTPUT_DIR each
bag's outputs go to ``OUTPUT_DIR/<bag>/``: the bag ``dynamics`` and, when
asked, the CSV and plot under the names given to --csv and --plot, and the
table to ``OUTPUT_DIR/summary.csv``.
"""

import copy
import csv
import glob
import os
import sys
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from robot_dynamics_ros import cluster
from robot_dynamics_ros.replay import bags
from robot_dynamics_ros.replay.staging import ReplayError

SUMMARY_FIELDS = ("bag", "duration_s", "joint_states", "residual_rms_max", "payload", "warnings", "error")


def is_bag(path: Path) -> bool:
    return (path.is_dir() and (path / "metadata.yaml").exists()) or (
        path.is_file() and path.suffix in (".db3", ".mcap"))


def holds_bags(path: Path) -> bool:
    return path.is_dir() and not is_bag(path) and any(is_bag(p) for p in path.iterdir())


def find_bags(arguments: Sequence[str]) -> Tuple[List[Path], bool]:
    """(the bags named by INPUT arguments, whether they make a fleet): a fleet
    when there are several bags, or any argument is a glob or a folder of bags."""
    bags, fleet = [], len(arguments) > 1
    for argument in arguments:
        path = Path(argument)
        matches = sorted(glob.glob(argument)) if glob.has_magic(argument) and not path.exists() else []
        if matches:
            fleet = True
            bags.extend(Path(m) for m in matches)
        elif holds_bags(path):
            fleet = True
            bags.extend(sorted(p for p in path.iterdir() if is_bag(p) and not p.name.startswith(".")))
        else:  # a bag, or what the replay will refuse with its reason
            bags.append(path)
    return bags, fleet


def split_output(arguments: Sequence[str]) -> Tuple[List[str], Optional[Path]]:
    """INPUT... [OUTPUT]: of several arguments the last is the output unless it
    names input: an existing bag, a folder of bags, or a glob. (An output
    path that exists is then refused as existing, not read.)"""
    last = Path(arguments[-1]) if arguments else None
    if len(arguments) > 1 and not (is_bag(last) or holds_bags(last)
                                   or (glob.has_magic(arguments[-1]) and not os.path.lexists(last))):
        return list(arguments[:-1]), last
    return list(arguments), None


def unique_names(bags: Sequence[Path]) -> List[str]:
    names, seen = [], {}
    for bag in bags:
        name = bag.stem if bag.is_file() else bag.name
        seen[name] = seen.get(name, 0) + 1
        names.append(name if seen[name] == 1 else f"{name}-{seen[name]}")
    return names


def replay_bag(bag: Path, name: str, args, output_dir: Optional[Path]) -> dict:
    """One bag of the fleet, on a worker: its summary row; an error is a row too."""
    from robot_dynamics_ros.replay.run import replay

    bag_args = copy.copy(args)
    bag_args.input, bag_args.quiet = bag, True
    bag_args.output = bag_args.csv = bag_args.plot = None
    if output_dir is not None:
        folder = output_dir / name
        folder.mkdir()
        bag_args.output = folder / "dynamics"
        bag_args.csv = folder / args.csv.name if args.csv else None
        bag_args.plot = folder / args.plot.name if args.plot else None
    row = dict.fromkeys(SUMMARY_FIELDS, "")
    row["bag"] = str(bag)
    try:
        summary = replay(bag_args)
    except (ReplayError, bags.BagError, ValueError, OSError) as error:
        row["error"] = str(error)
        if output_dir is not None:
            with_outputs = any((output_dir / name).iterdir())
            if not with_outputs:
                (output_dir / name).rmdir()
        return row
    row["duration_s"] = f"{summary['duration']:.1f}"
    row["joint_states"] = summary["processed"]
    if summary.get("residuals") is not None:
        row["residual_rms_max"] = f"{summary['residuals'].rms.max():.4g}"
    estimate = summary.get("payload")
    if estimate is not None:
        mass = f"{float(estimate.mass.value):.3f} kg" if estimate.mass.identified else "mass not identifiable"
        com = ("CoM [" + ", ".join(f"{c:.3f}" for c in estimate.com.value) + "] m"
               if estimate.com.identified else "CoM not identifiable")
        row["payload"] = f"{estimate.link}: {mass}, {com}"
    warnings = list(summary["warnings"]) + [f"dropped {n} ({kind})" for kind, n in summary["dropped"].items()]
    row["warnings"] = "; ".join(warnings)
    return row


def run_fleet(bags: Sequence[Path], args, output_dir: Optional[Path]) -> List[dict]:
    """Replay every bag as a Dask task; rows in the order of ``bags``."""
    from distributed import as_completed
    from tqdm import tqdm

    if output_dir is not None:
        if os.path.lexists(output_dir):
            raise ReplayError(f"{str(output_dir)!r} exists already; not overwriting it")
        output_dir.mkdir()
    names = unique_names(bags)
    rows = [None] * len(bags)
    with cluster.client(args.scheduler, args.workers) as client:
        futures = {client.submit(replay_bag, bag, name, args, output_dir, pure=False): i
                   for i, (bag, name) in enumerate(zip(bags, names))}
        with tqdm(total=len(bags), unit=" bags", dynamic_ncols=True, leave=False,
                  disable=args.quiet or not sys.stderr.isatty()) as bar:
            for future in as_completed(futures):
                i = futures[future]
                try:
                    rows[i] = future.result()
                except Exception as error:  # noqa: BLE001 -- a worker lost, an unpicklable result
                    rows[i] = dict.fromkeys(SUMMARY_FIELDS, "")
                    rows[i].update(bag=str(bags[i]), error=f"{type(error).__name__}: {error}")
                bar.update(1)
    if output_dir is not None:
        with open(output_dir / "summary.csv", "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=SUMMARY_FIELDS, lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
    return rows


def summary_table(rows: Sequence[dict]) -> str:
    """The fleet's summary as aligned text."""
    headers = ("bag", "duration [s]", "joint states", "residual rms max", "payload", "warnings / error")
    cells = [(Path(r["bag"]).name, r["duration_s"], str(r["joint_states"]), r["residual_rms_max"],
              r["payload"], ("ERROR: " + r["error"]) if r["error"] else r["warnings"]) for r in rows]
    widths = [max(len(h), *(len(c[k]) for c in cells)) for k, h in enumerate(headers[:-1])]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)) + "  " + headers[-1]]
    lines += ["  ".join(c.ljust(w) for c, w in zip(cell, widths)) + "  " + cell[-1] for cell in cells]
    return "\n".join(lines)
