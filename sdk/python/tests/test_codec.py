"""The Temporal payload codec with an operator key: what encode encrypts, decode gives back; a
payload in clear comes back from decode as it is; a browser's codec session opens and closes."""

from __future__ import annotations

import base64
import json

import httpx
import pytest

from quota_client import AsyncClient, Client


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# A payload as Temporal's JSON converter writes it, in the codec protocol's JSON.
JSON_PLAIN = {"metadata": {"encoding": b64("json/plain")}, "data": b64(json.dumps({"n": 1}))}


def test_encode_then_decode_round_trips(operator: Client) -> None:
    [encoded] = operator.encode_payloads([JSON_PLAIN])
    assert encoded.metadata["encoding"] == b64("binary/encrypted")
    assert encoded.data != JSON_PLAIN["data"]
    [decoded] = operator.decode_payloads([encoded])
    assert decoded.model_dump() == JSON_PLAIN


def test_decode_answers_a_clear_payload_as_it_is(operator: Client) -> None:
    assert [p.model_dump() for p in operator.decode_payloads([JSON_PLAIN])] == [JSON_PLAIN]


@pytest.mark.anyio
async def test_the_async_client_round_trips_too(base_url: str, operator_key: str) -> None:
    async with AsyncClient(operator_key, base_url=base_url) as operator:
        encoded = await operator.encode_payloads([JSON_PLAIN, JSON_PLAIN])
        decoded = await operator.decode_payloads(encoded)
    assert [p.model_dump() for p in decoded] == [JSON_PLAIN, JSON_PLAIN]


def test_a_browser_session_opens_and_closes(base_url: str, operator_key: str) -> None:
    with httpx.Client() as http, Client(operator_key, base_url=base_url, http_client=http) as ops:
        assert "payloads:codec" in ops.codec_login_page()
        ops.open_codec_session()
        assert http.cookies.get("quota_codec_key") == operator_key
        ops.close_codec_session()
        assert http.cookies.get("quota_codec_key") is None
