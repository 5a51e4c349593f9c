"""``neardup warmup``: compile and cache the kernels of each method's run now, not in a first run.

For installs that should start at full speed (a Docker image, the project's own set-up script):
the first ``dedup`` of a method on a machine otherwise spends its first seconds compiling (it says
so, and times it apart). Methods are compiled in parallel processes, one per method."""
from __future__ import annotations

import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import click

from ..config import METHODS, DedupConfig, cpu_count
from ..engines.local.warmup import warm_up
from .group import main


def _warm(method: str, force: bool) -> float | None:
    return warm_up(DedupConfig(method=method).resolved(), announce=False, force=force, explicit=True)


@main.command()
@click.option("--method", "methods", multiple=True, type=click.Choice(METHODS),
              help="A method to compile for (repeat for several). Default: minhash, the default method.")
@click.option("--all", "all_methods", is_flag=True, help="Every method.")
@click.option("--force", is_flag=True, help="Compile again even where this machine has run the method before.")
@click.option("--jobs", type=click.IntRange(1), default=None,
              help="Methods compiled at once, each in its own process (default: the CPUs, at most the methods).")
def warmup(methods, all_methods, force, jobs):
    """Compile the kernels of each method's default run now and cache them on disk, so that later
    runs start at full speed (numba caches per machine; a run with other options may still compile a
    kernel or two, and says so). For minhash and simhash also the persistent index's (`dedup
    --index`, `neardup serve`).

    \b
    Examples:
      neardup warmup                          # the default method (minhash)
      neardup warmup --method minhash --method simhash
      neardup warmup --all --force            # e.g. in a Docker image's build step
    """
    todo = list(METHODS) if all_methods else list(dict.fromkeys(methods or ("minhash",)))
    jobs = min(jobs or cpu_count(), len(todo))
    t0 = time.perf_counter()
    if jobs == 1:
        results = [_warm(m, force) for m in todo]
    else:
        # spawned, not forked: each process starts with no numba state (no OpenMP pool) of ours
        with ProcessPoolExecutor(jobs, mp_context=get_context("spawn")) as pool:
            results = list(pool.map(_warm, todo, [force] * len(todo)))
    for method, seconds in zip(todo, results):
        if seconds is None:
            click.echo(f"{method}: already compiled on this machine (--force compiles again)")
        else:
            click.echo(f"{method}: kernels compiled in {seconds:.1f} s")
    click.echo(f"done in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
