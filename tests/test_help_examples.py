"""Every command's help: ``-h`` works, every option says what it does, and the examples it shows
(the ``neardup …`` lines of its help) parse with the command's own parser and run, one after another,
on files made from the bundled demo corpus."""
from __future__ import annotations

import gzip
import importlib.util
import json
import re
import shlex
import shutil
from pathlib import Path

import click
import pytest
from hostile import cli

from neardup.cli import main

DEMO = Path(__file__).resolve().parents[1] / "examples" / "data" / "debian_copyright.jsonl.gz"

NOT_RUN = {"serve": "serves until stopped", "warmup": "compiles every method's kernels (minutes)"}
"""Commands whose examples are parsed, not run, and why."""

RUN_ORDER = ("idf fit", "idf", "sign", "lsh", "compare", "dedup", "", "pairs", "explain", "eval", "index create",
             "index add", "index", "index query", "index remove", "index stats", "index compact", "index verify",
             "index export", "index backup", "index migrate")
"""The order the examples run in: later ones read what earlier ones wrote (a run's OUT, an index)."""

NEWS = ("我是蓝翔技工拖拉机学院手扶拖拉机专业的。不用多久，我就会升职加薪，当上总经理，出任CEO，走上人生巅峰。",
        "今天北京天气晴朗，气温回升，市民纷纷走出家门，到公园散步游玩，享受春天的阳光。",
        "今天北京天气晴朗，气温明显回升，市民纷纷走出家门，到公园散步游玩，享受春天的温暖阳光。",
        "研究人员发布了新的数据集，用于评估中文文本去重算法在新闻语料上的效果。")


def commands(group=main, prefix=()):
    """(name, command) of the group and of every command and group below it ('' is ``neardup``)."""
    yield " ".join(prefix), group
    for name, cmd in sorted(group.commands.items()):
        if isinstance(cmd, click.Group):
            yield from commands(cmd, (*prefix, name))
        else:
            yield " ".join((*prefix, name)), cmd


def examples(cmd) -> list[list[str]]:
    """The argument lists of the ``neardup …`` lines of ``cmd``'s help (a line ending in a backslash
    goes on on the next), comments dropped."""
    lines, joined = (cmd.help or "").splitlines(), []
    while lines:
        line = lines.pop(0).strip()
        while line.endswith("\\") and lines:
            line = line[:-1] + " " + lines.pop(0).strip()
        if line.startswith("neardup "):
            joined.append(shlex.split(line, comments=True))
    return joined


def resolve(args: list[str]) -> tuple[click.Command, list[str]]:
    """The command ``args`` (after ``neardup``) name, and the arguments left for it."""
    cmd, rest = main, list(args)
    while isinstance(cmd, click.Group):
        assert rest and rest[0] in cmd.commands, args
        cmd, rest = cmd.commands[rest[0]], rest[1:]
    return cmd, rest


def parse(args: list[str]) -> None:
    """``args`` (after ``neardup``) through the command's own parser, as a run would: unknown options,
    bad values and missing arguments raise."""
    cmd, rest = resolve(args)
    parent = click.Context(main, info_name="neardup", **main.context_settings)     # (-h: the group's setting)
    cmd.make_context(cmd.name, rest, parent=parent)


def test_every_command_and_group_answers_dash_h():
    for name, _ in commands():
        code, out, err = cli(*name.split(), "-h")
        assert code == 0 and out.startswith("Usage: "), (name, err)


def test_every_option_has_help_text():
    for name, cmd in commands():
        for opt in cmd.params:
            if isinstance(opt, click.Option):
                assert (opt.help or "").strip(), f"neardup {name} {opt.opts[-1]} has no help text"


def test_every_command_shows_examples_in_its_help():
    for name, cmd in commands():
        if isinstance(cmd, click.Group) and name:
            continue                # (a group's examples are optional: its commands have theirs)
        shown = examples(cmd)
        own = [a for a in shown if isinstance(cmd, click.Group) or resolve(a[1:])[0] is cmd]
        assert 1 <= len(own) <= 3 and len(shown) <= 4, (name, shown)       # (one may show the next step)
        assert re.search(r"\n    \x08\n    Examples:\n      neardup ", cmd.help or ""), name   # one style: a \b block
        code, out, _ = cli(*name.split(), "-h")
        assert code == 0 and "Examples:\n    neardup " in out, name
        for line in (cmd.help or "").splitlines():
            if line.strip().startswith("neardup "):
                assert "\n    " + line.strip() + "\n" in out, (name, line)      # as written, not re-wrapped


def test_every_example_parses_with_its_commands_parser():
    """Options exist, values are in range and choices offered, arguments are all there. A path an
    example names may not exist here (an index an earlier example creates, ``/etc/neardup/token``:
    the next test runs them); nothing else may fail."""
    seen = 0
    for name, cmd in commands():
        reached_own = isinstance(cmd, click.Group)     # (a group's examples run its commands)
        for args in examples(cmd):
            assert args[0] == "neardup", args
            reached_own = reached_own or resolve(args[1:])[0] is cmd
            seen += 1
            try:
                parse(args[1:])
            except click.exceptions.Exit as exc:       # -h
                assert exc.exit_code == 0, args
                continue
            except click.BadParameter as exc:
                assert "does not exist" in exc.format_message(), (args, exc.format_message())
                continue
            except click.ClickException as exc:
                pytest.fail(f"{shlex.join(args)}: {exc.format_message()}")
        assert reached_own or name in NOT_RUN, f"neardup {name}: no example of the command itself"
    assert seen >= 45


@pytest.fixture
def corpus(tmp_path, monkeypatch):
    """A folder with the files the examples name: docs.jsonl (60 demo documents, ids doc-1 …; doc-2
    and doc-3 are near-duplicates), new.jsonl, a.txt and b.txt (doc-2 and doc-3), labels.jsonl and
    news/day1.jsonl (Chinese); the working folder while the test runs."""
    with gzip.open(DEMO, "rt", encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line in f][:60]
    with open(tmp_path / "docs.jsonl", "w", encoding="utf-8") as f:
        for i, text in enumerate(texts):
            f.write(json.dumps({"id": f"doc-{i + 1}", "text": text}) + "\n")
    with open(tmp_path / "new.jsonl", "w", encoding="utf-8") as f:
        for i, text in enumerate([texts[1] + "\nAppended line.", texts[9], "A document nobody indexed."]):
            f.write(json.dumps({"id": f"doc-{i + 100}", "text": text}) + "\n")
    (tmp_path / "a.txt").write_text(texts[1], encoding="utf-8")
    (tmp_path / "b.txt").write_text(texts[2], encoding="utf-8")
    (tmp_path / "labels.jsonl").write_text('{"a": "doc-2", "b": "doc-3", "label": 1}\n'
                                           '{"a": "doc-1", "b": "doc-2", "label": 0}\n')
    (tmp_path / "news").mkdir()
    with open(tmp_path / "news" / "day1.jsonl", "w", encoding="utf-8") as f:
        for i, text in enumerate(NEWS):
            f.write(json.dumps({"id": f"news-{i}", "text": text}, ensure_ascii=False) + "\n")
    legacy = Path(__file__).parent / "data" / "legacy_sqlite"     # indexes neardup 0.x wrote: SQLite files
    shutil.copyfile(legacy / "minhash.ndx", tmp_path / "crawl.ndx")
    (tmp_path / "old").mkdir()
    shutil.copyfile(legacy / "simhash.ndx", tmp_path / "old" / "news.ndx")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_every_example_runs_on_the_demo_corpus(corpus):
    """Each command's examples, in :data:`RUN_ORDER`, exit 0 (those needing jieba are parsed only where
    it is absent); every command with examples is either run or in :data:`NOT_RUN`, with why."""
    by_name = {name: examples(cmd) for name, cmd in commands()}
    assert {n for n, ex in by_name.items() if ex} == set(RUN_ORDER) | set(NOT_RUN)
    has_jieba = importlib.util.find_spec("jieba") is not None
    ran = 0
    for name in RUN_ORDER:
        for args in by_name[name]:
            if not has_jieba and any("jieba" in a or a in ("yanyiwu", "jieba-analyse") for a in args):
                parse(args[1:])
                continue
            code, out, err = cli(*args[1:])
            assert code == 0, f"{shlex.join(args)}: exit {code}\n{out[-2000:]}\n{err[-2000:]}"
            ran += 1
    assert ran >= 35
    assert (corpus / "out" / "report.html").is_file() and (corpus / "idx-2026-12-07").is_dir()
    assert (corpus / "crawl-migrated" / "MANIFEST").is_file() and (corpus / "news-idx" / "MANIFEST").is_file()
