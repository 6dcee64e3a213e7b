"""Every boolean of the experiment file takes TOML's true and false only. pydantic's lax
bool also reads "yes", "off", 1 and 0, so one file could say the same thing four ways and
a quoted or numeric value passed unnoticed where every other key's type is checked."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from fairgate_exp import schema
from fairgate_exp.__main__ import main


def _boolean_fields() -> list[tuple[str, str, Any]]:
    out = []
    for name, model in inspect.getmembers(schema, inspect.isclass):
        if not issubclass(model, BaseModel) or model.__module__ != schema.__name__:
            continue
        for field, info in model.model_fields.items():
            if "bool" in repr(info.annotation) and field in model.__annotations__:
                ann = info.annotation
                out.append((name, field, Annotated[ann, *info.metadata] if info.metadata else ann))
    return out


BOOLEANS = _boolean_fields()


def test_the_schema_has_the_booleans_this_test_knows() -> None:
    found = {f"{m}.{f}" for m, f, _ in BOOLEANS}
    assert {"ExperimentInfo.delayed_ack", "Host.gate_syn", "Measure.traces"} <= found
    assert len(found) >= 7


@pytest.mark.parametrize(("model", "field", "annotation"), BOOLEANS)
def test_a_boolean_takes_only_true_and_false(model: str, field: str, annotation: Any) -> None:
    adapter = TypeAdapter(annotation)
    assert adapter.validate_python(True) is True and adapter.validate_python(False) is False
    for bad in ("yes", "true", "off", 1, 0):
        with pytest.raises(ValidationError):
            adapter.validate_python(bad)


def test_a_file_with_a_string_for_a_boolean_is_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "b.toml"
    path.write_text(
        'switches = ["s1"]\n'
        'hosts = [{ name = "h1", switch = "s1" }, '
        '{ name = "r1", switch = "s1", capacity = "1Mbit/s", gate_syn = "no" }]\n'
        'flows = [{ name = "f", src = "h1", dst = "r1" }]\n'
    )
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert "gate_syn" in err
    path.write_text(path.read_text().replace('gate_syn = "no"', "gate_syn = false"))
    assert main(["check", str(path)]) == 0
