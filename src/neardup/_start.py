"""The ``neardup`` command's entry point (and ``python -m neardup``'s).

One command line is served before the command-line package (and numba) is imported:
``neardup sign FILE.jsonl … -o OUT --format parquet|npy`` with the options
:mod:`neardup.engines.aot_sign` covers, when its compiled kernels are built for this machine.
The arguments are read here only when every one of them is such an option with a plain value;
anything else — another command, another option, ``--help``, a value the command line would refuse
— goes to the command line (:mod:`neardup.cli`) unread, as does a run the fast path declines, so the
command's behaviour is the command line's in every case but its speed.
"""
from __future__ import annotations

import sys

# each range inside what the command line accepts (tests/test_aot_sign.py checks it against DedupConfig):
# k = 1 is refused there, and k = 2 has no LSH bands at the default threshold
_INTS = {"--num-perm": ("num_perm", 3, 65536), "--seed": ("seed", 0, 2**64 - 1), "--ngram": ("ngram", 1, 64),
         "--workers": ("workers", 0, None), "--batch-size": ("batch_size", 1, None)}
_CHOICES = {"--format": ("fmt", ("parquet", "npy")), "--method": ("method", ("minhash",)),
            "--scheme": ("scheme", ("oph",)), "--tokenizer": ("tokenizer", ("word",)),
            "--input-format": ("input_format", ("jsonl",)), "--on-error": ("on_error", ("raise", "skip"))}
_TEXTS = {"-o": "output", "--output": "output", "--text-field": "text_field", "--id-field": "id_field"}
_FLAGS = {"--jsonl": ("input_format", "jsonl")}


def parse_sign(args: list[str]) -> dict | None:
    """The options of ``neardup sign`` ``args`` (after the command's name) when all of them are ones the
    fast path covers, each given once; else None."""
    got: dict = {"inputs": []}
    i = 0
    while i < len(args):
        a = args[i]
        if not a.startswith("-"):
            got["inputs"].append(a)
            i += 1
            continue
        name, eq, value = a.partition("=")
        if name in _FLAGS and not eq:
            key, v = _FLAGS[name]
            if key in got:
                return None
            got[key] = v
            i += 1
            continue
        if name not in _INTS and name not in _CHOICES and name not in _TEXTS:
            return None                   # anything else: the command line's to read
        if not eq:
            if i + 1 >= len(args):
                return None
            value = args[i + 1]
            i += 2
        else:
            if name == "-o":
                return None
            i += 1
        if name in _INTS:
            key, lo, hi = _INTS[name]
            try:
                v = int(value)
            except ValueError:
                return None
            if v < lo or (hi is not None and v > hi):
                return None
        elif name in _CHOICES:
            key, allowed = _CHOICES[name]
            if value not in allowed:
                return None
            v = value
        else:
            key = _TEXTS[name]
            if value.startswith("-") and value != "-":
                return None               # a missing value followed by an option: let the command line say so
            v = value
        if key in got:
            return None                   # given twice: the command line's rule (the last wins) is not ours
        got[key] = v
    if not got["inputs"] or "fmt" not in got or "output" not in got:
        return None
    return got


def fast_sign(opts: dict) -> bool:
    """Run ``neardup sign`` with the options :func:`parse_sign` read, on the ahead-of-time path; False
    when it does not apply (nothing was written)."""
    from .engines.aot_sign import SignParams, sign_files  # noqa: PLC0415

    params = SignParams(num_perm=opts.get("num_perm", 128), seed=opts.get("seed", 1), ngram=opts.get("ngram", 5))
    got = sign_files(opts["inputs"], opts["output"], opts["fmt"], text_field=opts.get("text_field", "text"),
                     id_field=opts.get("id_field"), params=params, workers=opts.get("workers", 0),
                     input_format=opts.get("input_format"))
    return got is not None


def _run_fast(args: list[str]) -> bool:
    """:func:`fast_sign` as the command line would end it: a user error is one line (``Error: …``) and
    exit status 1; Ctrl-C prints ``Aborted!`` and SIGTERM stops the run, each with 128 + the signal's
    number, once the partial output and the signing processes are gone. A stopped run then ends at
    once (``os._exit``, as the command line does after a stop): a library stopped halfway through
    its import or its first write (pyarrow, in the parent while the children sign) may have
    threads that the interpreter's exit would wait on."""
    import signal  # noqa: PLC0415

    opts = parse_sign(args)
    if opts is None:
        return False

    def on_term(signum, frame):
        raise SystemExit(128 + signum)

    old = signal.signal(signal.SIGTERM, on_term)
    try:
        return fast_sign(opts)
    except KeyboardInterrupt:
        sys.stderr.write("Aborted!\n")
        end_now(128 + signal.SIGINT)
    except SystemExit as exc:
        end_now(exc.code if isinstance(exc.code, int) else 1)
    except Exception as exc:
        from .errors import user_message  # noqa: PLC0415

        message = user_message(exc)
        if message is None:
            raise
        sys.stderr.write(f"Error: {message}\n")
        sys.exit(1)
    finally:
        signal.signal(signal.SIGTERM, old)
    return False        # (not reached)


def end_now(code: int) -> None:
    """The process ends at once with ``code``, its output flushed (after a stop: the command line's
    :func:`~neardup.cli.entry` and the fast path both)."""
    import contextlib  # noqa: PLC0415
    import os  # noqa: PLC0415

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):      # (a closed stream: nothing more to say)
            stream.flush()
    os._exit(code)


def main() -> None:
    """The console script: the fast path of ``neardup sign`` when it applies, else the command line."""
    if sys.argv[1:2] == ["sign"] and _run_fast(sys.argv[2:]):
        return
    from .cli import entry  # noqa: PLC0415

    entry()


if __name__ == "__main__":  # pragma: no cover
    main()
