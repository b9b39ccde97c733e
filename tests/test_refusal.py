"""Refusals are data rendered in one place (descheduler/refusal.py)."""

import pytest

from descheduler.refusal import Refusal, define

TEST_SHORT = define(
    "TestInsufficient",
    "insufficient {subject}: requests {requested:units}, free {free:units}",
    "insufficient {subject}",
)
TEST_AGE = define("TestAge", "younger than {age:s}")
TEST_FUNCTION = define("TestFunction", lambda r: f"{len(r.facts)} facts")


def test_text_fills_the_template_with_units_of_the_subject_resource() -> None:
    refusal = Refusal(code=TEST_SHORT, subject="cpu", facts={"requested": 2000, "free": 500})
    assert str(refusal) == "insufficient cpu: requests 2, free 500m"


def test_brief_leaves_the_figures_out() -> None:
    assert Refusal(code=TEST_SHORT, subject="memory", facts={"requested": 1, "free": 0}).brief == "insufficient memory"


def test_brief_is_the_text_when_a_code_has_no_brief() -> None:
    assert Refusal(code=TEST_AGE, facts={"age": 12.4}).brief == "younger than 12s"


def test_scope_names_the_member_of_a_group() -> None:
    refusal = Refusal(code=TEST_AGE, facts={"age": 3}).within("shop/web-1")
    assert str(refusal) == "shop/web-1: younger than 3s"


def test_a_function_may_word_a_code() -> None:
    assert str(Refusal(code=TEST_FUNCTION, facts={"a": 1, "b": 2})) == "2 facts"


def test_a_code_is_defined_once() -> None:
    with pytest.raises(ValueError, match="defined twice"):
        define(TEST_AGE, "other words")


def test_an_undefined_code_is_an_error_not_a_blank() -> None:
    with pytest.raises(KeyError, match="not defined"):
        str(Refusal(code="NoSuchCode"))
