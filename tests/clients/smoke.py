"""Smoke test of the Python clients openapi-python-client generated from the served documents
(tests/clients/main.rs generates them and runs this against a live sandbox): the calls a team
makes first, through the generated functions and models only, with every request and response
also checked by openapi-core against the document (tests/openapi/traffic.py).

    python3 smoke.py CLIENTS_DIR DOCS_DIR BASE_URL API_KEY ADMIN_KEY TENANT_ID

CLIENTS_DIR holds billing/, revenue/ and admin/, each openapi-python-client's output. Prints
one `ok: ...` line per step and `smoke: N steps passed`; any failure raises (exit 1).
"""

import decimal
import importlib
import json
import os
import re
import sys

clients_dir, docs_dir, base, api_key, admin_key, tenant_id = sys.argv[1:7]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "openapi"))
from traffic import Checker, report  # noqa: E402

STEPS = []


def package(name):
    """The generated package under CLIENTS_DIR/name (one package per output directory)."""
    out = os.path.join(clients_dir, name)
    [pkg] = [d for d in os.listdir(out) if os.path.isfile(os.path.join(out, d, "client.py"))]
    sys.path.insert(0, out)
    return pkg


def client(pkg, url, headers, checker):
    Client = importlib.import_module(f"{pkg}.client").Client
    return Client(base_url=url, headers=headers, raise_on_unexpected_status=True,
                  httpx_args={"event_hooks": checker.httpx_hooks()})


def ok(step, detail=""):
    STEPS.append(step)
    print(f"ok: {step} {detail}".rstrip())


def parsed(response, model, status=200):
    """The parsed body of a 2xx answer, which must be of `model` (a class or list)."""
    assert response.status_code == status, (response.status_code, response.content[:500])
    body = response.parsed
    if model is list:
        assert isinstance(body, list), body
    else:
        assert isinstance(body, model), (type(body), response.content[:500])
    return body


checkers = {n: Checker(os.path.join(docs_dir, f"{n}.json")) for n in ("billing", "revenue", "admin")}

# ---- Surface B ----------------------------------------------------------------------
B = package("billing")
api = lambda m: importlib.import_module(f"{B}.api.{m}")  # noqa: E731
models = importlib.import_module(f"{B}.models")
b = client(B, base, {"X-Api-Key": api_key}, checkers["billing"])

listing = api("billing.list_agreement_services").sync_detailed(
    client=b, status=models.ListAgreementServicesStatus.ACTIVE,
    filter_="agreement_period GT '0'", sort="-id", page_size=50,
    omit_total_count=models.ListAgreementServicesOmitTotalCount.TRUE)
services = parsed(listing, list)
assert services and all(s.status == models.AgreementServiceStatus.ACTIVE for s in services), services
assert "x-total-count" not in listing.headers and "x-element-count" in listing.headers
ok("list agreement services with a filter", f"({len(services)} ACTIVE)")

# Round trip: each service read is put back as read (one with nulls among them).
put_back = 0
for s in services:
    got = parsed(api("billing.get_agreement_service").sync_detailed(s.id, client=b),
                 models.AgreementService)
    body = models.AgreementServicePatch.from_dict(got.to_dict())
    after = parsed(api("billing.update_agreement_service").sync_detailed(s.id, client=b, body=body),
                   models.AgreementService)
    assert after.to_dict() == got.to_dict(), (got.to_dict(), after.to_dict())
    put_back += 1
assert any(s.minimum_amount_currency_code is None for s in services), "no service with nulls"
ok("GET then PUT back agreement services unchanged", f"({put_back})")

# The demo's first service (srv-compute-0001) rates minutes on 2026-02-01.
srid = min(services, key=lambda s: int(s.id)).service_resource_identifier
good = models.UsageEvent(start_time="2026-02-01", service_resource_identifier=srid,
                         usage_uom=models.UsageEventUsageUom.MINUTE, usage_amount=90,
                         reference_id="smoke-good")
bad = models.UsageEvent(start_time="2026-02-01", service_resource_identifier="no-such-srid",
                        usage_uom=models.UsageEventUsageUom.MINUTE, usage_amount=1,
                        reference_id="smoke-erred")
outcome = parsed(api("usage.post_usage_events").sync_detailed(client=b, body=models.BulkRequest(
    mode=models.BulkRequestMode.OVERWRITE_ON_EXISTING, usage_events=[good, bad])),
    models.BulkOutcome)
assert len(outcome.rated_events) == 1 and len(outcome.erred_events) == 1, outcome.to_dict()
[erred] = [e for e in outcome.erred_events if e.unrated_event.get("reference_id") == "smoke-erred"]
assert erred.code == models.ErredEventCode.UNKNOWN_SERVICE_RESOURCE, erred
ok("post usage events with an erred one",
   f"({len(outcome.rated_events)} rated, {len(outcome.erred_events)} erred: {erred.code})")

# Amounts are `format: decimal` JSON numbers: the generated model takes what it is given, so
# a body parsed with Decimal keeps the digits the server wrote (docs/clients.md).
[rated] = outcome.rated_events
answer = api("usage.get_usage_event").sync_detailed(rated.id, client=b)
event = models.RatedEvent.from_dict(json.loads(answer.content, parse_float=decimal.Decimal))
[written] = re.findall(rb'"total_charge":\s*([-0-9.eE+]+)', answer.content)
assert isinstance(event.total_charge, (decimal.Decimal, int)), type(event.total_charge)
assert str(event.total_charge) == written.decode(), (event.total_charge, written)
ok("an amount read as an exact decimal", f"(total_charge {event.total_charge})")

# ---- Surface C ----------------------------------------------------------------------
C = package("revenue")
api = lambda m: importlib.import_module(f"{C}.api.{m}")  # noqa: E731
models = importlib.import_module(f"{C}.models")
c = client(C, f"{base}/revenue/3", {"X-Api-Key": api_key}, checkers["revenue"])

ledgers = parsed(api("revenue.list_ledgers").sync_detailed(
    client=c, status=models.ListLedgersStatus.ACTIVE), list)
assert ledgers, "no ledger"
for item in ledgers:
    ledger = parsed(api("revenue.get_ledger").sync_detailed(item.id, client=c), models.Ledger)
    body = models.LedgerFields.from_dict(ledger.to_dict())
    after = parsed(api("revenue.update_ledger").sync_detailed(item.id, client=c, body=body),
                   models.Ledger)
    assert after.to_dict() == ledger.to_dict(), (ledger.to_dict(), after.to_dict())
ok("GET then PUT back ledgers unchanged", f"({len(ledgers)})")

# And a year of the first ledger's calendar, periods included.
year_id = ledger.calendar.years[0].id
year = parsed(api("revenue.get_year").sync_detailed(ledger.id, year_id, client=c),
              models.AccountingYear)
body = models.NewAccountingYear.from_dict(year.to_dict())
parsed(api("revenue.update_year").sync_detailed(ledger.id, year_id, client=c, body=body),
       models.Ledger)
again = parsed(api("revenue.get_year").sync_detailed(ledger.id, year_id, client=c),
               models.AccountingYear)
assert again.to_dict() == year.to_dict(), (year.to_dict(), again.to_dict())
ok("GET then PUT back an accounting year unchanged", f"({len(year.accounting_periods)} periods)")

def states(ledger_id):
    infos = parsed(api("revenue.ledger_charge_infos").sync_detailed(ledger_id, client=c,
                                                                     page_size=50), list)
    return len(infos), sorted({str(i.charge_info_state_values) for i in infos})


run = parsed(api("revenue.start_collector_run").sync_detailed(client=c, body=models.NewCollectorRun(
    type_=models.NewCollectorRunType.MANUAL, collector_operations=[])), models.CollectorRun, 201)
ok("collector run", f"(id {run.id}, {run.status})")

ledger_id = ledgers[0].id
count, before = states(ledger_id)
gl = parsed(api("revenue.start_gl_run").sync_detailed(client=c, body=models.NewGlRun(
    ledger_id=ledger_id, run_to_date="2026-12-01")), models.GlRun, 201)
ok("ledger run", f"(id {gl.id}, {gl.status}, {gl.num_errors} errors)")

_, after = states(ledger_id)
ok("charge info of a ledger with its states", f"({count} records, states {before} -> {after})")

# ---- admin --------------------------------------------------------------------------
A = package("admin")
api = lambda m: importlib.import_module(f"{A}.api.{m}")  # noqa: E731
models = importlib.import_module(f"{A}.models")
a = client(A, base, {"X-Admin-Key": admin_key}, checkers["admin"])

before = parsed(api("admin.get_clock").sync_detailed(tenant_id, client=a), models.Clock)
frozen_mode = next(getattr(models, n) for n in dir(models)
                   if n.startswith("SetClockModeType") and hasattr(getattr(models, n), "FROZEN"))
frozen = parsed(api("admin.set_clock").sync_detailed(
    tenant_id, client=a, body=models.SetClock(mode=frozen_mode.FROZEN)), models.Clock)
assert frozen.mode == models.ClockMode.FROZEN, frozen
real = parsed(api("admin.set_clock").sync_detailed(
    tenant_id, client=a, body=models.SetClock(mode=None, offset_seconds=0)), models.Clock)
ok("a tenant's clock", f"({before.mode} -> {frozen.mode} -> {real.mode})")

# ---- every exchange, by openapi-core ------------------------------------------------
failures = [f for checker in checkers.values() for f in checker.failures]
checked = sum(ch.requests for ch in checkers.values())
print(f"openapi-core: {checked} requests and responses checked, {len(failures)} failed")
if failures:
    print(report(failures))
    sys.exit(1)
print(f"smoke: {len(STEPS)} steps passed")
