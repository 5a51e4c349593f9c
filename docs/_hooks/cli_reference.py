"""mkdocs hook: the command-line reference, generated from the click commands at build time.

reference/cli.md holds the marker ``<!-- neardup-cli -->``; this hook replaces it with every
``neardup`` command and subcommand: its usage line, its help text and a table of its arguments and
options, each with the help, range and default that ``--help`` prints (click's own
``get_help_record``). The options of dedup, pairs, sign, compare and ``index create`` are built from
the parameter table of ``neardup.config`` (``PARAMS``), so this page is generated from that table.
Loaded by mkdocs.yml (``hooks:``); not part of the package."""
from __future__ import annotations

import inspect
import logging
import re

import click

MARKER = "<!-- neardup-cli -->"
# the search plugin segments the site's Chinese text with jieba when it is installed (neardup needs it);
# its dictionary-loading lines are not the build's news
logging.getLogger("jieba").setLevel(logging.WARNING)
_SPECIALS = re.compile(r"([\\\[\]*_|#])")
_ENTITIES = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}


def _escape(text: str) -> str:
    """Markdown-safe text: characters Markdown would read as markup are escaped, except inside
    `code spans`, which the commands' help uses for command lines."""
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(p if p.startswith("`") and p.endswith("`") and len(p) > 1 else _plain(p) for p in parts)


def _plain(text: str) -> str:
    text = re.sub(r"[<>&]", lambda m: _ENTITIES[m.group(0)], text)
    return _SPECIALS.sub(r"\\\1", text)


def _help_markdown(text: str) -> str:
    """A command's help: paragraphs as Markdown; a paragraph click keeps as written (``\\b``) as a
    block of text."""
    out = []
    for para in re.split(r"\n\s*\n", inspect.cleandoc(text or "")):
        if para.startswith("\b"):
            body = para[1:].strip("\n")
            out.append("```text\n" + body + "\n```")
        else:
            out.append(_escape(" ".join(line.strip() for line in para.splitlines())))
    return "\n\n".join(p for p in out if p.strip())


def _params_table(cmd: click.Command, ctx: click.Context) -> str:
    rows = []
    for param in cmd.get_params(ctx):
        if isinstance(param, click.Argument):
            name = f"`{param.make_metavar(ctx)}`"
            what = ("argument" + (", required" if param.required else "")
                    + (", one or more" if param.nargs == -1 else ""))
            rows.append((name, _escape(what)))
            continue
        record = param.get_help_record(ctx)
        if record is None:
            continue
        opts, help_text = record
        rows.append((f"`{opts}`", _escape(" ".join(help_text.split())) or "&nbsp;"))
    if not rows:
        return ""
    lines = ["| option | what it does |", "|---|---|"]
    lines += [f"| {a} | {b} |" for a, b in rows]
    return "\n".join(lines)


def _command(cmd: click.Command, path: list[str], parent: click.Context | None, level: int) -> list[str]:
    name = " ".join(path)
    ctx = click.Context(cmd, info_name=path[-1], parent=parent)
    out = [f"{'#' * level} `{name}`", ""]
    out += ["```text", cmd.get_usage(ctx).replace("Usage: ", ""), "```", ""]
    if cmd.help:
        out += [_help_markdown(cmd.help), ""]
    if isinstance(cmd, click.Group):
        subs = cmd.list_commands(ctx)
        out += ["| command | what it does |", "|---|---|"]
        out += [f"| [`{name} {s}`](#{_anchor(name + ' ' + s)}) | "
                f"{_escape(cmd.get_command(ctx, s).get_short_help_str(120))} |" for s in subs]
        out.append("")
        for s in subs:
            out += _command(cmd.get_command(ctx, s), [*path, s], ctx, min(level + 1, 4))
    else:
        table = _params_table(cmd, ctx)
        if table:
            out += [table, ""]
    return out


def _anchor(title: str) -> str:
    """The id Python-Markdown's toc gives a heading ``` `title` ```."""
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", title).strip().lower())


def reference() -> str:
    from neardup.cli import main  # noqa: PLC0415  (the package's command group, imported when the page is built)

    ctx = click.Context(main, info_name="neardup")
    out = ["| command | what it does |", "|---|---|"]
    for s in main.list_commands(ctx):
        out.append(f"| [`neardup {s}`](#{_anchor('neardup ' + s)}) | "
                   f"{_escape(main.get_command(ctx, s).get_short_help_str(120))} |")
    out.append("")
    for s in main.list_commands(ctx):
        out += _command(main.get_command(ctx, s), ["neardup", s], ctx, 2)
    return "\n".join(out)


def on_page_markdown(markdown: str, page, config, files) -> str:
    if MARKER in markdown:
        return markdown.replace(MARKER, reference())
    return markdown
