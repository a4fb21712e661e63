"""lab.setup.names: what a server folder may be called, and what a server
name read back from a run folder may be before it becomes a path."""
from __future__ import annotations

import pytest

from lab.setup.names import why_not_a_recorded_name, why_not_a_server_name

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("name", ["ada-mini", "aws", "x_1", "9", "a" * 64])
def test_a_folder_name_selectable_with_server_is_allowed(name: str) -> None:
    assert why_not_a_server_name(name) is None


@pytest.mark.parametrize("name", ["-x", "a/b", "..", ".hidden", "a.b", "a@2", "a b", "é",
                                  "", "a" * 65])
def test_a_folder_name_that_is_an_option_a_path_or_a_variant_is_refused(name: str) -> None:
    why = why_not_a_server_name(name)
    assert why is not None and repr(name) in why and "SERVER=" in why


@pytest.mark.parametrize("name", ["aws", "aws.threads", "aws@4", "aws.threads@4#2", "ews#9"])
def test_a_recorded_name_with_its_variant_workers_and_copy_is_read(name: str) -> None:
    assert why_not_a_recorded_name(name) is None


@pytest.mark.parametrize("name", ["../../outside/x", "a\0b", "aws#123", "ews#12", "aws#1", "aws@123456", "aws.",
                                  "aws..x", "-aws"])
def test_a_recorded_name_that_could_become_another_path_is_refused(name: str) -> None:
    why = why_not_a_recorded_name(name)
    assert why is not None and "refused before it becomes a path" in why
