"""One declaration per Kafka API (protocol.KafkaApi, beside the code that sends it): the
transport's lookups by request class and API key are read from the declarations, every request
class the codec module exports is declared once, and a wrong or missing declaration says so."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import airflow_provider_kgroups.client.client  # with VERB_HANDLERS below: every handler and lookup, every API declared
from airflow_provider_kgroups.client import handlers as handlers_package
from airflow_provider_kgroups.client import lookup, protocol
from airflow_provider_kgroups.client.client import VERB_HANDLERS
from airflow_provider_kgroups.client.handlers.base import Handler
from airflow_provider_kgroups.client.protocol import (
    CLIENT_MAX_VERSIONS,
    RESPONSE_FOR,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    KafkaApi,
    ListGroupsRequest,
    ListGroupsResponse,
    declared_apis,
)

for _module in VERB_HANDLERS:  # the handlers the client's verbs import on first use
    importlib.import_module(_module)


def _handlers() -> list[type[Handler]]:
    return [
        cls
        for info in pkgutil.iter_modules(handlers_package.__path__)
        for _, cls in inspect.getmembers(
            importlib.import_module(f"{handlers_package.__name__}.{info.name}"), inspect.isclass
        )
        if issubclass(cls, Handler) and "kafka_api" in vars(cls)
    ]


def test_every_exported_request_class_is_declared_once_with_its_response():
    exported = {getattr(protocol, name) for name in protocol.__all__ if name.endswith("Request")}
    apis = declared_apis()
    assert {api.request for api in apis} == exported
    assert len({api.key for api in apis}) == len(apis) == len(exported)
    for api in apis:
        assert api.response is getattr(protocol, api.name + "Response")
        assert CLIENT_MAX_VERSIONS[api.request] == api.max_version
        assert RESPONSE_FOR[api.key] is api.response
    assert set(CLIENT_MAX_VERSIONS) == exported


def test_handlers_and_lookups_send_what_they_declare():
    speakers = [*_handlers(), lookup.CoordinatorLookup, lookup.LeaderLookup]
    assert len(speakers) >= 14
    for cls in speakers:
        api = cls.kafka_api
        assert cls.request_class is api.request, cls.__name__
        assert any(declared is api for declared in declared_apis()), cls.__name__
    fetchers = [cls for cls in speakers if cls.request_class.__name__ == "FetchRequest"]
    assert len(fetchers) == 2 and fetchers[0].kafka_api is fetchers[1].kafka_api  # one API, one declaration


def test_the_same_declaration_again_is_harmless_and_a_different_one_refused():
    before = declared_apis()
    known = next(api for api in before if api.request is DeleteGroupsRequest)
    KafkaApi(DeleteGroupsRequest, DeleteGroupsResponse, max_version=known.max_version)
    assert declared_apis() == before
    with pytest.raises(ValueError, match="DeleteGroups.*declared twice"):
        KafkaApi(DeleteGroupsRequest, DeleteGroupsResponse, max_version=known.max_version - 1)
    assert CLIENT_MAX_VERSIONS[DeleteGroupsRequest] == known.max_version


def test_a_declaration_that_cannot_be_right_is_refused():
    with pytest.raises(TypeError, match="same API key"):
        KafkaApi(DeleteGroupsRequest, ListGroupsResponse, max_version=0)
    with pytest.raises(TypeError, match="same API key"):
        KafkaApi(ListGroupsResponse, ListGroupsRequest, max_version=0)
    with pytest.raises(ValueError, match="outside the codec's 0-"):
        KafkaApi(ListGroupsRequest, ListGroupsResponse, max_version=ListGroupsRequest.max_version + 1)


def test_a_missing_declaration_names_what_to_declare():
    with pytest.raises(KeyError, match="no KafkaApi declares API key 9999: declare it beside the handler"):
        RESPONSE_FOR[9999]
    with pytest.raises(KeyError, match="no KafkaApi declares ListGroupsResponse"):
        CLIENT_MAX_VERSIONS[ListGroupsResponse]
    assert CLIENT_MAX_VERSIONS.get(ListGroupsResponse) is None
