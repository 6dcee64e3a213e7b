"""Reading an experiment file: TOML (tomllib) -> schema (pydantic) -> cross-checks -> Plan.

Every problem becomes one ``ExperimentError`` whose message is one line naming the file and
the place (``links[2].capacity``), with the nearest valid key for a misspelt one.
"""

from __future__ import annotations

import difflib
import tomllib
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from fairgate_exp.schema import ExperimentFile

EXPERIMENTS_DIR = Path(__file__).resolve().parents[1]  # experiments/


class ExperimentError(ValueError):
    """A file that cannot be run; ``str()`` is the one-line message for the user."""


def resolve_path(name_or_path: str, root: Path = EXPERIMENTS_DIR) -> Path:
    """A path as given, or a bare name looked up as experiments/<name>.toml."""
    p = Path(name_or_path)
    if p.suffix != ".toml" and "/" not in name_or_path:
        cand = root / f"{name_or_path}.toml"
        if cand.exists():
            return cand
    return p


def read_toml(path: Path) -> dict[str, Any]:
    if path.is_dir():
        raise ExperimentError(f"{path}: is a directory, not an experiment file (.toml)")
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ExperimentError(f"{path}: no such experiment file") from None
    except OSError as exc:
        raise ExperimentError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ExperimentError(
            f"{path}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at line {line})"
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ExperimentError(f"{path}: TOML syntax error: {exc}") from None


def _model_at(loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The schema class that holds the key at ``loc`` (for 'did you mean')."""
    model: Any = ExperimentFile
    dict_key = False
    for part in loc[:-1]:
        if isinstance(part, int) or dict_key:
            dict_key = False
            continue
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return None
        field = model.model_fields.get(str(part))
        if field is None:
            return None
        dict_key = typing.get_origin(field.annotation) is dict
        model = _unwrap(field.annotation)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _unwrap(tp: Any) -> Any:
    """The model inside ``X | None``, ``list[X]``, ``dict[str, X]``."""
    for _ in range(4):
        args = typing.get_args(tp)
        if not args:
            return tp
        models = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
        if models:
            return models[0]
        inner = [a for a in args if a is not type(None)]
        tp = inner[-1]
    return tp


def loc_str(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def _first_error(exc: ValidationError) -> str:
    err = exc.errors(include_url=False)[0]
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
    where = loc_str(loc)
    if err["type"] == "extra_forbidden":
        key = str(loc[-1])
        model = _model_at(loc)
        known = list(model.model_fields) if model is not None else []
        near = difflib.get_close_matches(key, known, n=1, cutoff=0.5)
        hint = f"; did you mean {near[0]!r}?" if near else f"; valid keys: {', '.join(known)}"
        if len(loc) > 1 and key in ExperimentFile.model_fields:
            hint = f"; {key!r} is a top-level key: in TOML it must come before the first [table]"
        return f"{where}: unknown key{hint}"
    msg = str(err["msg"]).removeprefix("Value error, ")
    if err["type"] == "missing":
        return f"{where}: required key missing"
    if err["type"] == "literal_error":
        return f"{where}: {err['input']!r} is not allowed ({msg.lower()})"
    return f"{where}: {msg}"


def validate(doc: dict[str, Any], path: Path) -> ExperimentFile:
    try:
        return ExperimentFile.model_validate(doc)
    except ValidationError as exc:
        raise ExperimentError(f"{path}: {_first_error(exc)}") from None


def load(name_or_path: str | Path, scale: str | None = None) -> Any:
    """The runnable ``Plan`` of a file at a scale (None: the file's first scale, else 1x)."""
    from fairgate_exp.check import check
    from fairgate_exp.plan import build_plan

    path = resolve_path(str(name_or_path))
    doc = read_toml(path)
    exp = validate(doc, path)
    try:
        check(exp)
        exp = scaled(doc, exp, path, scale)
        return build_plan(exp, path, scale)
    except ExperimentError as exc:
        raise ExperimentError(f"{path}: {exc}") from None


def scale_name(exp: ExperimentFile, scale: str | None) -> str:
    """The scale a run uses: the one asked for, else the file's first (``file``: none)."""
    if scale is None or scale == "file":
        return next(iter(exp.scales), "file")
    return scale


def scale_chain(exp: ExperimentFile, name: str) -> list[Any]:
    """The scale and those it extends, the root first (checked: no cycles)."""
    chain = []
    here = exp.scales.get(name)
    while here is not None:
        chain.insert(0, here)
        here = exp.scales.get(here.extends) if here.extends is not None else None
    return chain


def set_path(doc: dict[str, Any], key: str, value: Any) -> None:
    """Sets a dotted path of the raw document (``*``: every element of a list)."""
    parts = key.split(".")

    def walk(here: Any, j: int) -> None:
        part = parts[j]
        last = j == len(parts) - 1
        if isinstance(here, list):
            idx = range(len(here)) if part == "*" else [int(part)]
            for i in idx:
                if last:
                    here[i] = value
                else:
                    walk(here[i], j + 1)
        elif last:
            here[part] = value
        else:
            walk(here.setdefault(part, {}), j + 1)

    walk(doc, 0)


def scaled(doc: dict[str, Any], exp: ExperimentFile, path: Path, scale: str | None) -> Any:
    """The file as a scale sees it: every ``set`` of the scale's chain applied to the raw
    document, validated and checked again (the same file when the scale sets nothing)."""
    import copy

    from fairgate_exp.check import check

    chain = scale_chain(exp, scale_name(exp, scale))
    if not any(sc.set for sc in chain):
        return exp
    out = copy.deepcopy(doc)
    for sc in chain:
        for key, value in sc.set.items():
            set_path(out, key, value)
    try:
        exp2 = validate(out, path)
    except ExperimentError as exc:
        name = scale_name(exp, scale)
        raise ExperimentError(f"scales.{name}.set: {str(exc).split(': ', 1)[-1]}") from None
    check(exp2)
    return exp2
