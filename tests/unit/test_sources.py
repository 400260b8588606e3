"""The sources declaration (shared/definitions/sources.py): parsed by one set of rules for the stack, the local
stack and the functions; every bad entry named in one clear error. Read from sources.json by infra/sources_file.py
(the stack, the local stack, the CLI), handed to the functions in INBOX_SOURCES."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infra.sources_file import load_sources
from shared.definitions import (
    DEFAULT_REFETCH_RATE_PER_SECOND,
    ENV_SOURCES,
    ENV_SOURCES_FILE,
    PROVIDERS,
    SourcesInvalid,
    SourceSpec,
    default_sources,
    find_source,
    mutual_tls_sources,
    parse_sources,
    source_env_suffix,
    source_name_problem,
    sources_from_environment,
    sources_json,
)

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_without_a_file_there_is_one_source_per_provider_named_after_it(tmp_path: Path) -> None:
    # Given no sources.json, When the sources are loaded, Then each catalog provider is its own default source
    sources = load_sources({ENV_SOURCES_FILE: ""}) if not (REPO_ROOT / "sources.json").exists() else default_sources()
    assert [(s.name, s.provider) for s in sources] == [(p, p) for p in PROVIDERS]


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("stripe-br", True),
        ("a", True),
        ("a" * 32, True),
        ("a" * 33, False),
        ("Stripe", False),
        ("1stripe", False),
        ("-stripe", False),
        ("stripe_br", False),
        ("stripe br", False),
        ("stripé", False),
        ("", False),
    ],
)
def test_a_source_name_fits_urls_secret_names_and_group_ids(name: str, valid: bool) -> None:
    # Given a candidate name, When it is checked, Then only the documented alphabet and length pass
    assert (source_name_problem(name) is None) is valid


def test_every_bad_entry_is_named_in_one_error() -> None:
    # Given a declaration with several mistakes
    document = [
        {"name": "Stripe BR", "provider": "stripe"},
        {"name": "asaas", "provider": "asas"},
        {"name": "pix", "provider": "stripe", "allowed_ip_ranges": ["10.0.0.0/8", "not-a-cidr"]},
        {"name": "rate", "provider": "stripe", "refetch_rate_per_second": 0},
        {"name": "typo", "provider": "stripe", "tolerance": 5},
        "stripe",
    ]
    # When it is parsed, Then one error lists each entry's problem
    with pytest.raises(SourcesInvalid) as raised:
        parse_sources(document, where="sources.json")
    message = str(raised.value)
    assert "entry 1 ('Stripe BR'): source name 'Stripe BR' is invalid" in message
    assert "entry 2 ('asaas'): 'provider' must be one of" in message
    assert "'not-a-cidr' is not an IP address or CIDR range" in message
    assert "entry 4 ('rate'): 'refetch_rate_per_second' must be a number above 0" in message
    assert "entry 5 ('typo'): unknown option(s) tolerance" in message
    assert "entry 6: expected an object" in message


def test_a_name_declared_twice_is_refused() -> None:
    with pytest.raises(SourcesInvalid, match="declared twice"):
        parse_sources([{"name": "stripe", "provider": "stripe"}, {"name": "stripe", "provider": "asaas"}])


@pytest.mark.parametrize("document", [[], {}, "stripe", None])
def test_a_declaration_that_is_not_a_list_of_sources_is_refused(document: object) -> None:
    with pytest.raises(SourcesInvalid, match="non-empty JSON list"):
        parse_sources(document)


def test_the_declaration_round_trips_through_the_functions_variable() -> None:
    # Given the example file, When it is handed to the functions as INBOX_SOURCES, Then they read the same sources
    sources = parse_sources(json.loads((REPO_ROOT / "sources.example.json").read_text()))
    assert sources_from_environment({ENV_SOURCES: sources_json(sources)}) == sources
    assert find_source(sources, "stripe-br").refetch_rate == 25
    # And the stack's reader, in a process the local stack started (INBOX_SOURCES set), reads the same
    assert load_sources({ENV_SOURCES: sources_json(sources)}) == sources


def test_the_functions_read_only_their_variable_never_a_file(tmp_path: Path) -> None:
    # Given a sources file named by INBOX_SOURCES_FILE and no INBOX_SOURCES (a function's environment never has it)
    path = tmp_path / "sources.json"
    path.write_text(json.dumps([{"name": "stripe-br", "provider": "stripe"}]))
    environ = {ENV_SOURCES_FILE: str(path)}
    # When the functions' reader reads the declaration, Then it is the default one: the file is not theirs to read
    assert sources_from_environment(environ) == default_sources()
    # While the stack's reader reads the file
    assert [s.name for s in load_sources(environ)] == ["stripe-br"]
    # And a broken INBOX_SOURCES is refused by name
    with pytest.raises(SourcesInvalid, match=f"{ENV_SOURCES}: not valid JSON"):
        sources_from_environment({ENV_SOURCES: "[{"})


def test_the_file_named_by_the_variable_is_read_and_must_exist(tmp_path: Path) -> None:
    # Given a file named by INBOX_SOURCES_FILE, When loaded, Then its sources are the declaration
    path = tmp_path / "mine.json"
    path.write_text(json.dumps([{"name": "stripe-br", "provider": "stripe"}]))
    assert [s.name for s in load_sources({ENV_SOURCES_FILE: str(path)})] == ["stripe-br"]
    # And a missing file is an error, never a silent fall back to the defaults
    with pytest.raises(SourcesInvalid, match="no such file"):
        load_sources({ENV_SOURCES_FILE: str(tmp_path / "missing.json")})
    path.write_text("[{")
    with pytest.raises(SourcesInvalid, match="not valid JSON"):
        load_sources({ENV_SOURCES_FILE: str(path)})


def test_options_default_to_the_provider_and_the_deployment() -> None:
    source = SourceSpec(name="asaas-sandbox", provider="asaas")
    assert source.env_suffix == "ASAAS_SANDBOX" == source_env_suffix("asaas-sandbox")
    assert source.refetch_rate > 0
    assert SourceSpec(name="generic", provider="generic").refetch_rate == DEFAULT_REFETCH_RATE_PER_SECOND
    assert source.document() == {"name": "asaas-sandbox", "provider": "asaas"}


def test_mutual_tls_is_a_true_or_false_option_kept_through_the_functions_variable() -> None:
    # Given a source that takes deliveries only through the mutual-TLS front door, and one that does not say
    sources = parse_sources(
        [{"name": "pix", "provider": "standard", "mutual_tls": True}, {"name": "stripe", "provider": "stripe"}]
    )
    # Then the first requires it, the second (the default) does not, and INBOX_SOURCES carries it
    assert [source.mutual_tls for source in sources] == [True, False]
    assert mutual_tls_sources(sources) == sources[:1]
    assert sources_from_environment({ENV_SOURCES: sources_json(sources)}) == sources
    # And a source without it is written as before (the option at its default is left out)
    assert sources[1].document() == {"name": "stripe", "provider": "stripe"}


@pytest.mark.parametrize("value", ["true", 1, None, []])
def test_mutual_tls_must_be_a_json_boolean(value: object) -> None:
    # Given "mutual_tls" spelled as something other than true or false, When parsed, Then the entry is named
    with pytest.raises(SourcesInvalid, match=r"entry 1 \('pix'\): 'mutual_tls' must be true or false"):
        parse_sources([{"name": "pix", "provider": "standard", "mutual_tls": value}])
