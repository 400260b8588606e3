"""tests/aws_speedups.py keeps moto's parse tree of a state machine definition, never the components built from it:
each parse of a definition answers with components of its own, built by moto's preprocessor, and a definition
that does not parse is refused every time."""

from __future__ import annotations

import json

import pytest
from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser, ASLParserException

from infra.replay_definition import replay_definition


def test_a_definition_is_parsed_once_and_its_components_built_for_each_call() -> None:
    page_function = "arn:aws:lambda:us-east-1:123456789012:function:replay-page"  # as CloudFormation substitutes it
    definition = json.dumps(replay_definition(f"table-{id(object())}", page_function=page_function))
    first, first_tree = AmazonStateLanguageParser.parse(definition)
    again, again_tree = AmazonStateLanguageParser.parse(definition)
    assert again_tree is first_tree  # the parse tree, once
    assert again is not first and type(again) is type(first)  # the interpreter's components, anew
    assert AmazonStateLanguageParser.parse.parse_trees[definition] is first_tree  # type: ignore[attr-defined]


def test_a_definition_that_does_not_parse_is_refused_every_time() -> None:
    for _ in range(2):
        with pytest.raises(ASLParserException):
            AmazonStateLanguageParser.parse('{"StartAt": "A", "States": {"A": {"Type": "Nope"}}')
    assert '{"StartAt": "A"' not in str(list(AmazonStateLanguageParser.parse.parse_trees))  # type: ignore[attr-defined]
