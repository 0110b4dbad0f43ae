"""Validates live HTTP exchanges against the shipped OpenAPI documents with openapi-core, a
validator nobody on this project wrote.

Two users:
- `python3 traffic.py DOCUMENT CASSETTE`: every exchange of a schemathesis VCR cassette
  (tests/openapi/conformance.rs records one per document): each response is checked, and each
  request schemathesis generated as valid (`mode: positive`); a request generated to be
  invalid is the server's to refuse, not the document's to accept. Prints one summary line,
  `traffic: N requests, M responses valid, F failed`, then the failures; exits 1 on any.
- `Checker`: the smoke script of the generated clients (tests/clients/smoke.py) checks every
  request it sends and every response it gets, through httpx event hooks.
"""

import base64
import json
import sys
import time
from urllib.parse import parse_qsl, urlsplit

from openapi_core import OpenAPI
from openapi_core.datatypes import RequestParameters
from openapi_core.templating.paths.exceptions import PathError
from openapi_core.validation.request.exceptions import ParameterValidationError
from werkzeug.datastructures import Headers, ImmutableMultiDict


class Request:
    """openapi-core's Request protocol over a recorded request."""

    def __init__(self, method, url, headers, body):
        parts = urlsplit(url)
        self.host_url = f"{parts.scheme}://{parts.netloc}"
        self.path = parts.path
        self.method = method.lower()
        self.body = body or None
        header = Headers(headers)
        self.content_type = (header.get("content-type") or "").lower()
        self.parameters = RequestParameters(
            query=ImmutableMultiDict(parse_qsl(parts.query, keep_blank_values=True)),
            header=header,
            cookie=ImmutableMultiDict(),
        )


class Response:
    """openapi-core's Response protocol over a recorded response."""

    def __init__(self, status, headers, body):
        self.status_code = status
        self.headers = Headers(headers)
        self.content_type = (self.headers.get("content-type") or "").lower()
        self.data = body or b""


def explain(error):
    """The error and the schema errors beneath it, on one line each."""
    out = [f"{type(error).__name__}: {error}"]
    cause = error.__cause__
    while cause is not None:
        out.append(f"  {type(cause).__name__}: {cause}")
        for e in getattr(cause, "schema_errors", None) or []:
            out.append(f"    at {'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}")
        cause = cause.__cause__
    return "\n".join(out)


class Checker:
    """Validates requests and responses against one document, collecting failures."""

    def __init__(self, document_path):
        with open(document_path, encoding="utf-8") as f:
            self.openapi = OpenAPI.from_dict(json.load(f))
        self.requests = 0
        self.responses = 0
        self.failures = []
        self.skipped = 0

    def request(self, request, what):
        self.requests += 1
        try:
            self.openapi.validate_request(request)
        except ParameterValidationError as e:
            # schemathesis draws "" for a string query parameter as a valid value; OpenAPI's
            # allowEmptyValue defaults to false and openapi-core holds to it. A disagreement
            # of the two tools about `?name=`, not a request a client sends.
            if "EmptyQueryParameterValue" in explain(e):
                self.skipped += 1
                self.requests -= 1
                return
            self.failures.append((f"request {what}", explain(e)))
        except Exception as e:  # noqa: BLE001 - every refusal is a finding
            self.failures.append((f"request {what}", explain(e)))

    def response(self, request, response, what, probing=False):
        """`probing`: the request was drawn to be invalid (schemathesis' negative cases,
        among them methods a path does not serve): an answer that reached no documented
        operation (no such path or method; 405) is skipped, any other is checked."""
        if probing and response.status_code == 405:
            self.skipped += 1
            return
        self.responses += 1
        try:
            self.openapi.validate_response(request, response)
        except PathError:
            if not probing:
                self.failures.append((f"response to {what}", "no documented operation"))
            else:
                self.skipped += 1
                self.responses -= 1
        except Exception as e:  # noqa: BLE001
            self.failures.append((f"response {response.status_code} to {what}", explain(e)))

    def httpx_hooks(self):
        """httpx event hooks checking every request sent and every response received."""

        def on_response(r):
            r.read()
            req = r.request
            what = f"{req.method} {req.url}"
            request = Request(req.method, str(req.url), list(req.headers.multi_items()),
                              req.content)
            self.request(request, what)
            self.response(request, Response(r.status_code, list(r.headers.multi_items()),
                                            r.content), what)

        return {"response": [on_response]}


def body_of(recorded):
    """The bytes of a cassette body (`string` or `base64_string`)."""
    if not recorded:
        return None
    if "base64_string" in recorded:
        return base64.b64decode(recorded["base64_string"])
    return recorded.get("string", "").encode("utf-8")


def pairs(headers):
    return [(name, v) for name, values in (headers or {}).items() for v in values]


def check_cassette(document_path, cassette_path):
    import yaml  # schemathesis depends on PyYAML

    with open(cassette_path, encoding="utf-8") as f:
        cassette = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    checker = Checker(document_path)
    # Many cases get the same answer (the same 400 for many bad values): an answer already
    # checked for the same operation path and method is not checked again.
    answered = set()
    for item in cassette.get("http_interactions") or []:
        rec, resp = item["request"], item.get("response")
        if resp is None:  # the request never got an answer (a tool error)
            continue
        request = Request(rec["method"], rec["uri"], pairs(rec.get("headers")), body_of(rec.get("body")))
        what = f"{rec['method']} {rec['uri']}"
        positive = (item.get("generation") or {}).get("mode") == "positive"
        if positive:
            checker.request(request, what)
        if "truncated_from" in resp:
            # schemathesis records at most 1 MiB of a body (a journal page of exports is
            # more): a prefix is not the answer, so it is not judged.
            checker.skipped += 1
            continue
        status = int(resp["status"]["code"])
        headers = pairs(resp.get("headers"))
        body = body_of(resp.get("body"))
        seen = (rec["method"], request.path, status, body,
                tuple(sorted((k.lower(), v) for k, v in headers if k.lower() != "date")))
        if seen in answered:
            continue
        answered.add(seen)
        checker.response(request, Response(status, headers, body), what, probing=not positive)
    return checker


def report(failures):
    """Each distinct failure once, with how often it was seen and its first exchange."""
    seen = {}
    for what, detail in failures:
        first, n = seen.get(detail, (what, 0))
        seen[detail] = (first, n + 1)
    return "\n".join(f"--- x{n}, first: {what}\n{detail}" for detail, (what, n) in seen.items())


def main():
    document, cassette = sys.argv[1], sys.argv[2]
    started = time.monotonic()
    checker = check_cassette(document, cassette)
    failed = len(checker.failures)
    print(f"traffic: {checker.requests} requests, {checker.responses} responses checked, "
          f"{checker.skipped} skipped, {failed} failed, {time.monotonic() - started:.1f} s")
    print(report(checker.failures))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
