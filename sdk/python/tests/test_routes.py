"""Route parity: every operation of the served OpenAPI document has a method on both clients."""

from __future__ import annotations

import inspect
import re
from typing import Any

import httpx
import pytest

import quota_client
from quota_client import ROUTES, AsyncClient, Client

METHODS = ("get", "put", "post", "delete", "patch")


def snake(operation_id: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", operation_id).lower()


@pytest.fixture(scope="module")
def document(base_url: str) -> dict[str, Any]:
    served: dict[str, Any] = httpx.get(f"{base_url}/openapi.json").json()
    return served


def served_operations(document: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {
        (operation["operationId"], method.upper(), path)
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in METHODS
    }


def test_every_operation_has_a_route(document: dict[str, Any]) -> None:
    known = {(route.operation_id, route.method, route.path) for route in ROUTES.values()}
    assert served_operations(document) == known


@pytest.mark.parametrize("client_class", [Client, AsyncClient])
def test_every_operation_has_a_method(document: dict[str, Any], client_class: type) -> None:
    missing = []
    for operation_id, _, _ in sorted(served_operations(document)):
        method = getattr(client_class, snake(operation_id), None)
        if method is None:
            missing.append(snake(operation_id))
            continue
        # The method sends its own route (the constant tools/generate.py names after it).
        source = inspect.getsource(method)
        assert f"_routes.{snake(operation_id).upper()}" in source, operation_id
        if client_class is AsyncClient:
            assert inspect.iscoroutinefunction(method), operation_id
    assert missing == []


def test_operation_ids_are_unique(document: dict[str, Any]) -> None:
    ids = [operation_id for operation_id, _, _ in served_operations(document)]
    assert len(ids) == len(set(ids))
    assert len({snake(i) for i in ids}) == len(ids)


def test_the_clients_have_the_same_methods() -> None:
    def public(cls: type) -> set[str]:
        return {name for name in dir(cls) if not name.startswith("_")}

    assert public(Client) == public(AsyncClient)


def test_the_package_is_installed_not_imported_from_the_source_tree() -> None:
    # `pip install ./sdk/python` is what runs here: a non-editable install into site-packages.
    assert "site-packages" in quota_client.__file__, quota_client.__file__
