"""Schemathesis hooks for the services' contract fuzzing (test/integration/platform/fuzz.test.ts).

A valid Idempotency-Key is made unique per request: the header's contract is "one key per
request"; a key the fuzzer reused with another body is answered 422 IDEMPOTENCY_KEY_MISMATCH,
which is the document's own refusal, not a finding. Keys the fuzzer made invalid (empty, too
long) are left as they are, so their refusal is still checked.
"""

import uuid

import schemathesis

IDEMPOTENCY_KEY = "Idempotency-Key"
KEY_LENGTH_MAX = 255


@schemathesis.hook
def before_call(context, case, kwargs):
    headers = case.headers or {}
    key = headers.get(IDEMPOTENCY_KEY)
    if isinstance(key, str) and 1 <= len(key) <= KEY_LENGTH_MAX:
        headers[IDEMPOTENCY_KEY] = str(uuid.uuid4())
