"""Point 11 of issue 16: labels that read well from field names, and ``json_schema_extra`` formats honoured."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field

from elicitkit.elicitation.schema import form_for, title_from_name


@pytest.mark.parametrize(
    ("name", "title"),
    [
        ("cpu_cores", "Cpu cores"),  # sentence case, not "Cpu Cores"
        ("memory_gb", "Memory gb"),
        ("memoryGB", "Memory GB"),  # capitals inside a camelCase name are an acronym the author wrote
        ("CPUCores", "CPU cores"),
        ("userID", "User ID"),
        ("apiKey", "Api key"),
        ("MAX_SIZE", "Max size"),  # an all-capitals name is shouting, not an acronym
        ("party_size", "Party size"),
        ("HTTPServer2", "HTTP server 2"),
        ("x", "X"),
    ],
)
def test_titles_from_names(name: str, title: str) -> None:
    assert title_from_name(name) == title


class Machine(BaseModel):
    cpu_cores: int = Field(description="CPU cores")
    memoryGB: int = 4
    contact: str = Field(json_schema_extra={"format": "email"})
    named: str = Field("", title="Exactly This")


def test_a_model_gets_readable_titles_and_its_json_schema_extra_format() -> None:
    props = form_for(Machine).schema_for("2025-11-25")["properties"]
    assert props["cpu_cores"]["title"] == "Cpu cores"
    assert props["memoryGB"]["title"] == "Memory GB"
    assert props["contact"]["format"] == "email"  # was silently dropped: only Format("email") worked
    assert props["named"]["title"] == "Exactly This"  # an explicit title is kept as given
