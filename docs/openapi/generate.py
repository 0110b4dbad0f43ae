#!/usr/bin/env python3
"""Writes the OpenAPI 3.1 documents of Surface B (billing.json) and Surface C (revenue.json)
next to this script (the admin API's, admin.json, is built in code: functions/admin/src/openapi.rs). The servers embed the JSON files
(include_str!); `python3 generate.py --check` fails when a file differs from what this script
writes, and the e2e test `openapi` runs that check and compares each document's (method,
path) set with the routers, so script, files and routes cannot drift apart.

Edit this script, run it, commit both. Shapes follow what the handlers answer (docs/billing.md,
docs/usage.md, docs/revenue.md)."""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

CURRENCIES = (
    "USD GBP EUR SEK NOK DKK CAD AUD ZAR NZD MXN INR JPY SAR QAR EGP AED BHD KWD OMR HKD CHF "
    "ILS CNY BRL PLN COP PEN RUB SGD IDR MYR KRW TWD PKR ARS CLP CRC CZK HUF ISK PHP RON THB "
    "TRY BWP NGN"
).split()
AGREEMENT_SERVICE_STATUSES = (
    "ACTIVE SUSPENDED DEACTIVATED PENDING CANCELED TRANSFERRED REPLACED TRIAL SCHEDULED"
).split()
UOMS = (
    "MILLISECOND SECOND MINUTE HOUR DAY WEEK EVENT BYTE KILOBYTE MEGABYTE GIGABYTE TERABYTE "
    "COUNT BITS_PER_SECOND KILOBITS_PER_SECOND MEGABITS_PER_SECOND GIGABITS_PER_SECOND "
    "CURRENCY WATT KILOWATT MEGAWATT GIGAWATT WATTS_PER_HOUR KILOWATTS_PER_HOUR "
    "MEGAWATTS_PER_HOUR GIGAWATTS_PER_HOUR"
).split()


# ---- schema helpers -------------------------------------------------------------------

def ref(name):
    return {"$ref": f"#/components/schemas/{name}"}


def null(schema):
    """`schema` or null (OpenAPI 3.1 / JSON Schema 2020-12 spelling)."""
    if "$ref" in schema:
        return {"oneOf": [schema, {"type": "null"}]}
    out = dict(schema)
    out["type"] = [schema["type"], "null"]
    if "enum" in schema:
        # JSON Schema checks `enum` apart from `type`: a nullable enum must list null too,
        # or generated clients (and validators) refuse the null the server sends.
        out["enum"] = [*schema["enum"], None]
    return out


STR = {"type": "string"}
# An object with members of its own (described in words): additionalProperties says so, or
# generated types read a bare {"type": "object"} as one with no members at all
# (openapi-typescript: Record<string, never>).
ANY_OBJECT = {"type": "object", "additionalProperties": True}
BOOL = {"type": "boolean"}
INT32 = {"type": "integer", "format": "int32"}
INT64 = {"type": "integer", "format": "int64"}
DT = {"type": "string", "format": "date-time"}
DATE = {"type": "string", "format": "date"}
DEC = {
    "type": "number",
    "description": "Exact decimal written with its exact digits (rust_decimal: at most 28 "
    "significant digits, no trailing zeros). A submitted decimal has at most 18 integer digits "
    "(magnitude below 10^18); beyond: 400.",
}
SID = {"type": "string", "description": "Identifier (a string in Surface B)."}
# The spec writes omit_total_count=TRUE; the servers take any case. One spelling is
# documented: an enum whose values differ only in case is one member twice to a generated
# client (openapi-python-client refuses it: "Duplicate key TRUE").
OMIT_TOTAL_COUNT = {"type": "string", "enum": ["TRUE", "FALSE"],
                    "description": "TRUE or FALSE; any case is accepted."}


def obj(props, required=("id",), extra=True, description=None):
    out = {"type": "object", "properties": props}
    req = [r for r in required if r in props]
    if req:
        out["required"] = req
    if not extra:
        out["additionalProperties"] = False
    if description:
        out["description"] = description
    return out


def arr(items, **kw):
    out = {"type": "array", "items": items}
    out.update(kw)
    return out


def json_content(schema):
    return {"application/json": {"schema": schema}}


def param(name, where, schema, description=None, required=None):
    p = {"name": name, "in": where, "schema": schema}
    if where == "path":
        p["required"] = True
    elif required:
        p["required"] = True
    if description:
        p["description"] = description
    return p


RETRY_AFTER = {
    "Retry-After": {
        "description": "Seconds to wait: sent when the process sheds the request (its "
        "concurrency limit) or cut it off (its request timeout)",
        "schema": {"type": "integer", "minimum": 0},
    }
}


def error_responses(statuses, descriptions):
    out = {}
    for s in statuses:
        out[str(s)] = {
            "description": descriptions.get(s, "error"),
            "content": json_content(ref("Error")),
        }
        if s == 503:
            out[str(s)]["headers"] = RETRY_AFTER
    return out


ERROR_SCHEMA = obj(
    {
        "code": {"type": "string", "description": "Stable upper-case code, e.g. BAD_REQUEST."},
        "message": {"type": "string", "description": "What went wrong, in words."},
    },
    required=("code", "message"),
    extra=False,
    description="Every error body: {code, message}.",
)


def openapi_op(tag):
    """GET <prefix>/openapi.json: this document, without credentials."""
    return {
        "get": {
            "operationId": f"{tag}OpenApi",
            "summary": "This OpenAPI document",
            "security": [],
            "tags": ["meta"],
            "responses": {
                "200": {
                    "description": "The document",
                    "content": json_content(ANY_OBJECT),
                }
            },
        }
    }


# ---- Surface B --------------------------------------------------------------------------

B_ERRORS = {
    400: "Bad request: malformed parameter, filter, sort or body (the message names it)",
    401: "Missing or invalid credentials",
    404: "Not found",
    413: "Request body too large",
    415: "Content-Type is not application/json",
    503: "Storage unavailable; nothing was applied",
}

B_LIST_HEADERS = {
    "ETag": {"description": "Hash of the body and total", "schema": STR},
    "X-total-count": {
        "description": "Records matching (left out with omit_total_count=TRUE)",
        "schema": INT64,
    },
    "X-element-count": {"description": "Records in this answer", "schema": INT64},
    "X-total-pages": {
        "description": "Pages (left out with omit_total_count=TRUE)",
        "schema": INT64,
    },
    "Preference-Applied": {
        "description": "return=minimal|representation, when a Prefer: return=... was sent",
        "schema": STR,
    },
}
B_ONE_HEADERS = {k: B_LIST_HEADERS[k] for k in ("ETag", "Preference-Applied")}

B_SHAPE_PARAMS = [
    param("return", "query", {"type": "string", "enum": ["SIMPLE", "FULL"]},
          "SIMPLE: scalar fields, references as {id}, nested collections left out. "
          "Default FULL; wins over Prefer."),
    param("Prefer", "header", {"type": "string", "enum": ["return=minimal", "return=representation"]},
          "return=minimal equals return=SIMPLE, return=representation equals FULL"),
]
B_LIST_PARAMS = [
    param("filter", "query", {"type": "string", "maxLength": 4000},
          "Query-language expression, e.g. status EQ 'ACTIVE' AND name LIKE 'A%'"),
    param("sort", "query", STR, "Comma-separated sortable fields; a leading - sorts descending; "
          "at most 8 keys, each field once"),
    param("page_number", "query", {"type": "integer", "format": "int32", "minimum": 0},
          "Page, >= 0 (0 and 1 are the first page); default 1"),
    param("page_size", "query", {"type": "integer", "format": "int32", "minimum": 0, "maximum": 50},
          "0..50, default 50; 0 answers [] with the totals"),
    param("omit_total_count", "query", OMIT_TOTAL_COUNT,
          "TRUE leaves out X-total-count and X-total-pages"),
    param("id", "query", STR, "Internal identifier"),
    param("If-None-Match", "header", STR, "An ETag of an earlier answer (or *): 304 when unchanged"),
] + B_SHAPE_PARAMS
B_ONE_PARAMS = B_SHAPE_PARAMS + [
    param("If-None-Match", "header", STR, "An ETag of an earlier answer (or *): 304 when unchanged"),
]


def b_list(op_id, summary, item, filters=(), path_params=(), extra_errors=(), tag="billing"):
    return {
        "operationId": op_id,
        "summary": summary,
        "tags": [tag],
        "parameters": list(path_params) + [param(n, "query", s, d) for n, s, d in filters] + B_LIST_PARAMS,
        "responses": {
            "200": {
                "description": "One page of records",
                "headers": B_LIST_HEADERS,
                "content": json_content(arr(ref(item))),
            },
            "304": {"description": "Not modified (If-None-Match matched)"},
            **error_responses([400, 401, *extra_errors, 503], B_ERRORS),
            "default": {"description": "Unknown error", "content": json_content(ref("Error"))},
        },
    }


def b_one(op_id, summary, item, path_params, extra_params=(), tag="billing"):
    return {
        "operationId": op_id,
        "summary": summary,
        "tags": [tag],
        "parameters": list(path_params) + list(extra_params) + B_ONE_PARAMS,
        "responses": {
            "200": {
                "description": "The record",
                "headers": B_ONE_HEADERS,
                "content": json_content(ref(item)),
            },
            "304": {"description": "Not modified (If-None-Match matched)"},
            **error_responses([400, 401, 404, 503], B_ERRORS),
            "default": {"description": "Unknown error", "content": json_content(ref("Error"))},
        },
    }


def b_write(op_id, summary, body, status, item, path_params=(), errors=(400, 401, 404, 413, 415, 503), prefer=True, tag="billing", example=None):
    params = list(path_params)
    if prefer:
        params.append(B_SHAPE_PARAMS[1])
    op = {
        "operationId": op_id,
        "summary": summary,
        "tags": [tag],
        "parameters": params,
        "responses": {
            str(status): {
                "description": "Done",
                "headers": {"Preference-Applied": {
                    "description": "Always: return=minimal|representation, the form answered "
                                   "(return=representation unless SIMPLE was asked for)",
                    "schema": STR,
                }},
                "content": json_content(ref(item)),
            },
            **error_responses(list(errors), B_ERRORS),
            "default": {"description": "Unknown error", "content": json_content(ref("Error"))},
        },
    }
    if body is not None:
        op["requestBody"] = {"required": True, "content": json_content(body)}
        if example is not None:
            op["requestBody"]["content"]["application/json"]["example"] = example
    if not params:
        del op["parameters"]
    return op


# Path examples name records of the demo seed (every fresh tenant's default), so example
# requests reach the records rather than 404s.
B_EXAMPLE_IDS = {"id": "1", "bill_cycle_id": "1", "agreement_service_id": "1", "bill_batch_id": "1"}


def pid(name):
    p = param(name, "path", STR)
    p["example"] = B_EXAMPLE_IDS.get(name, "1")
    return p


def billing_doc():
    named_ref = obj({"name": null(STR), "id": SID})
    category_ref = obj({"charge_category_type": null(STR), "name": null(STR), "id": SID})
    cpq = obj({
        "start_date": null(DT), "deactivation_date": null(DT), "duration": null(INT32),
        "recurrence": null(STR), "value": null(DEC), "application_type": null(STR),
        "price_type": null(STR), "discount_key": null(STR),
    }, required=())
    account_ref = obj({
        "account_num": STR, "external_account_num": null(STR),
        "cpq_discounts": arr(ref("CpqDiscount")), "id": SID,
    })
    action = obj({
        "id": SID, "name": STR, "enabled": BOOL, "friendly_name": null(STR),
        "supports_approval": BOOL, "action_type": STR,
        "operations": arr(obj({"operation_type": STR, "name": STR, "enabled": BOOL, "id": SID})),
    })
    item = obj({
        "adjustment_item_type": STR, "amount": null(DEC), "description": null(STR),
        "reason": null(STR), "secondary_reason": null(STR),
        "category": null(ref("CategoryRef")), "id": SID,
    })
    adjustment = obj({
        "occurred_on": null(DT), "amount": null(DEC), "description": null(STR),
        "invoiced": BOOL, "status": STR, "adjustment_type": STR,
        "billing_account": ref("BillingAccountRef"), "reason": null(ref("NamedRef")),
        "secondary_reason": null(ref("NamedRef")), "posted_on": null(DT), "posted_by": null(STR),
        "manual_invoice_application": BOOL, "unapplied_amount": null(DEC),
        "items": arr(ref("AdjustmentItem")), "id": SID,
    })
    application = obj({"account_adjustment": ref("AccountAdjustment"), "id": SID})
    adj_category = obj({
        "id": SID, "charge_category_type": STR, "name": STR,
        "description": null(STR), "priority": INT64,
        "status": {"type": "string", "enum": ["ACTIVE", "SUSPENDED", "CANCELED"]},
    })
    agreement = obj({
        "id": SID, "name": STR, "agreement_period": INT32, "status": STR,
        "termination_flat_charge": null(DEC), "termination_percentage_charge": null(DEC),
        "max_termination_charge": null(DEC), "prorate_on_cancel": BOOL,
        "adjustment_category": null(ref("CategoryRef")), "end_action": null(STR),
        "termination_fee_currency_code": null(STR), "max_termination_fee_currency_code": null(STR),
        "valid_from": null(DT), "valid_to": null(DT), "next_agreement": null(ref("NamedRef")),
        "agreement_period_type": STR, "minimum_amount": null(DEC),
        "minimum_amount_currency_type": null(STR),
        "true_up_adjustment_reason": null(ref("NamedRef")), "preserve_service_price": BOOL,
    })
    product_ref = obj({"name": null(STR), "sku": null(STR), "external_product_number": null(STR), "id": SID})
    price_ref = obj({"product_price_type": null(STR), "price_type": null(STR), "id": SID})
    agreement_service = obj({
        "id": SID, "start_date": null(DT), "next_service_pay_on_purchase": BOOL,
        "renewed": BOOL, "accumulated_charges_amount": null(DEC),
        "agreement": null(ref("NamedRef")), "end_date": null(DT), "end_action": null(STR),
        "next_agreement": null(ref("NamedRef")), "next_end_action": null(STR),
        "next_service_product": null(ref("ProductRef")),
        "next_service_product_price": null(ref("PriceRef")),
        "preserve_service_price": BOOL, "next_preserve_service_price": BOOL,
        "agreement_period": INT32, "minimum_amount": null(DEC),
        "minimum_amount_currency_code": null({"type": "string", "enum": CURRENCIES}),
        "omit_minimum_amount": BOOL,
        "true_up_charge_types": arr(STR),
        "status": {"type": "string", "enum": AGREEMENT_SERVICE_STATUSES},
        "service_resource_identifier": null({**STR, "description":
            "The service's first top-level SRID (what the service_resource_identifier filter "
            "selects on); null when it has none."}),
    })
    ref_in = obj({"id": {"type": ["string", "integer"]}},
                 description="A nested reference: its id is used; the other members of the "
                 "object GET renders (name, sku, ...) may be sent back and are ignored.")
    read_only = lambda schema: {**schema, "description": "Read-only: may be sent back as GET "
                                "renders it; a value other than the stored one is a 400."}
    as_patch = obj({
        "id": read_only({"type": ["string", "integer"]}),
        "start_date": read_only(null(DT)), "renewed": read_only(BOOL),
        "agreement_period": read_only(INT32),
        "status": read_only({"type": "string", "enum": AGREEMENT_SERVICE_STATUSES}),
        "service_resource_identifier": read_only(null(STR)),
        "next_service_pay_on_purchase": null(BOOL),
        "accumulated_charges_amount": null({**DEC, "minimum": 0}),
        "agreement": null(ref("RefIn")), "end_date": null(DT),
        "end_action": null({"type": "string", "minLength": 1, "maxLength": 255}),
        "next_agreement": null(ref("RefIn")),
        "next_end_action": null({"type": "string", "minLength": 1, "maxLength": 255}),
        "next_service_product": null(ref("RefIn")), "next_service_product_price": null(ref("RefIn")),
        "preserve_service_price": null(BOOL), "next_preserve_service_price": null(BOOL),
        "minimum_amount": null({**DEC, "minimum": 0}),
        "minimum_amount_currency_code": null({"type": "string", "enum": CURRENCIES}),
        "omit_minimum_amount": null(BOOL),
        "true_up_charge_types": null(arr({"type": "string", "minLength": 1, "maxLength": 255}, maxItems=50)),
    }, required=(), extra=False,
        description="Partial update: absent fields stay, null clears a nullable one. The whole "
        "AgreementService a GET answers is accepted (read-only members unchanged, nested "
        "references as rendered); any other member is a 400.")
    relation = obj({"id": SID, "true_up_charge_type": STR, "agreement_service": obj({"id": SID})})
    new_relation = obj({"true_up_charge_type": {"type": "string", "minLength": 1, "maxLength": 255}},
                       required=("true_up_charge_type",), extra=False)
    invoice = obj({
        "id": SID, "invoice_type": STR, "invoice_num": STR,
        "external_invoice_num": null(STR), "amount": null(DEC), "description": null(STR),
        "billing_account": ref("BillingAccountRef"),
        "original_billing_account": null(obj({"id": SID})),
    })
    run = obj({
        "id": SID, "invoices": arr(ref("Invoice")), "bill_run_type": STR,
        "step_status": null(STR), "sequence": INT32, "step": null(STR), "status": STR,
        "status_date": null(DT), "open_date": null(DT), "close_date": null(DT),
        "scheduled_run_date": null(DT), "invoice_due_date": null(DT), "invoice_date": null(DT),
        "processed_invoice_count": INT64, "error_msg": null(STR),
        "use_payment_term": BOOL,
    }, description="A bill batch run; without expand only {id}.")
    batch = obj({
        "id": SID, "bill_batch_type": STR, "description": null(STR), "end_date": null(DT),
        "invoice_date": null(DT), "invoice_due_date": null(DT), "auto_approve": BOOL, "name": STR,
        "use_payment_term": BOOL, "internal_render": BOOL, "currency_code": STR,
        "status": {"type": "string", "enum": ["ACTIVE", "SUSPENDED", "CANCELED"]},
        "billing_account_category": null(ref("NamedRef")),
        "bill_batch_runs": arr(ref("BillBatchRun")),
    })
    new_batch = obj({
        "bill_batch_type": {"type": "string", "enum": ["reissue", "reverse", "adhoc", "on-demand monthly"]},
        "name": {"type": "string", "minLength": 1, "maxLength": 255},
        "description": null(STR), "invoice_date": null(DT), "invoice_due_date": null(DT),
        "auto_approve": null(BOOL), "use_payment_term": null(BOOL),
    }, required=("bill_batch_type", "name"), extra=False)
    usage_event_in = obj({
        "start_time": {"type": "string", "description": "Date, RFC 3339 date-time, or local date-time"},
        "end_time": {"type": "string"},
        "service_resource_identifier": {"type": "string", "minLength": 1, "maxLength": 255},
        "usage_uom": {"type": "string", "enum": UOMS},
        "usage_amount": {**DEC, "minimum": 0},
        "reference_id": {"type": "string", "minLength": 1, "maxLength": 255},
        "sequence_id": {"type": "string", "minLength": 1, "maxLength": 255},
    }, required=("start_time", "service_resource_identifier", "usage_uom", "usage_amount"),
        description="A usage event. An event breaking these rules is not refused: it is listed "
        "in erred_events.")
    bulk = obj({
        "mode": {"type": "string", "enum": ["FAIL_ON_EXISTING", "OVERWRITE_ON_EXISTING"]},
        "usage_events": arr(ref("UsageEvent"), minItems=1, maxItems=50),
    }, required=("mode", "usage_events"), extra=False)
    # The example goes on the media type, not the schema: as a schema keyword it made
    # schemathesis' coverage phase fail inside hypothesis while drawing 50-item arrays.
    bulk_example = {"mode": "OVERWRITE_ON_EXISTING", "usage_events": [
        {"service_resource_identifier": "srv-compute-0001", "usage_uom": "MINUTE",
         "usage_amount": 90, "start_time": "2026-02-01", "reference_id": "batch-1", "sequence_id": "1"},
        {"service_resource_identifier": "srv-transfer-0001", "usage_uom": "GIGABYTE",
         "usage_amount": 150, "start_time": "2026-02-01T10:00:00-06:00"}]}
    charge = obj({
        "id": SID, "charge": DEC, "rate": DEC, "usage_rule": obj({"id": SID}),
        "charge_category": obj({"charge_category_type": STR, "id": SID, "name": STR}),
        "usage_uom": {"type": "string", "enum": UOMS}, "usage_amount": DEC,
    }, required=("charge", "usage_rule", "charge_category", "usage_uom", "usage_amount"),
        description="An event charge.")
    rated = obj({
        "id": SID, "total_charge": DEC, "start_time": DT, "end_time": DT,
        "service_resource_identifier": STR, "usage_uom": {"type": "string", "enum": UOMS},
        "usage_amount": DEC, "reference_id": null(STR), "sequence_id": null(STR),
        "request_id": {"type": "string", "format": "uuid"},
        "event_charges": arr(ref("EventCharge")), "service_period": obj({"id": SID}),
        "overwrite_counter": INT64, "voided": BOOL,
    }, required=("total_charge", "start_time", "service_resource_identifier", "usage_uom",
                 "usage_amount", "service_period", "overwrite_counter"),
        description="A rated event.")
    # A simulation answers what posting answers minus request_id; its ids name nothing
    # stored: "-1", "-2", ... in answer order (negative int64 text, never a stored id).
    sim_id = {"type": "string", "pattern": "^-[1-9][0-9]*$",
              "description": "Simulated id: -n for the n-th item of the answer; names nothing stored."}
    sim_charge = {**charge, "properties": {**charge["properties"], "id": sim_id},
                  "required": ["id", *charge["required"]],
                  "description": "An event charge of a simulation."}
    sim_rated = {**rated, "properties": {
        **{k: v for k, v in rated["properties"].items() if k != "request_id"},
        "id": sim_id, "event_charges": arr(ref("SimulatedEventCharge"))},
        "required": ["id", *rated["required"]],
        "not": {"required": ["request_id"]},
        "description": "A rated event of a simulation: no request_id, a simulated id."}
    sim_outcome = obj({"rated_events": arr(ref("SimulatedEvent")),
                       "erred_events": arr(ref("ErredEvent"))},
                      required=("rated_events", "erred_events"))
    erred = obj({
        "unrated_event": {"description": "The event exactly as submitted"},
        "code": {"type": "string", "enum": [
            "INVALID_FIELD", "MISSING_FIELD", "DUPLICATE_IN_REQUEST", "DUPLICATE_EVENT",
            "UNKNOWN_SERVICE_RESOURCE", "INACTIVE_SERVICE_RESOURCE", "BEFORE_SERVICE_START",
            "AFTER_SERVICE_END", "NO_SERVICE_PERIOD", "UOM_NOT_CONVERTIBLE", "NO_MATCHING_RULE",
            "RATE_NOT_FOUND", "RULE_MISCONFIGURED"]},
        "message": STR,
    }, required=("unrated_event", "code", "message"))
    outcome = obj({"rated_events": arr(ref("RatedEvent")), "erred_events": arr(ref("ErredEvent"))},
                  required=("rated_events", "erred_events"))

    e = lambda *vals: {"type": "string", "enum": list(vals)}
    cur = {"type": "string", "enum": CURRENCIES}
    action_types = e("agreement", "agreement-service", "bill-cycle-run", "bill-batch-run",
                     "billing-account", "counter", "credit-adjustment", "disbursement", "invoice",
                     "payment", "product-sale", "remote-prepaid-register", "sales-order", "service",
                     "service-cfv", "system-notification", "usage-rule")
    as_status = e(*AGREEMENT_SERVICE_STATUSES)
    P = BILLING = "/billing/2"
    usage_bulk_errors = (400, 401, 413, 415, 503)
    paths = {
        f"{P}/openapi.json": openapi_op("billing"),
        f"{P}/actions": {"get": b_list("listActions", "Actions", "Action", [
            ("product_id", STR, None), ("action_type", action_types, None),
            ("agreement_id", STR, None), ("bill_cycle_id", STR, None)])},
        f"{P}/actions/{{id}}": {"get": b_one("getAction", "One action", "Action", [pid("id")])},
        f"{P}/bill-cycles/{{bill_cycle_id}}/actions": {"get": b_list(
            "listBillCycleActions", "Actions of a bill cycle", "Action",
            path_params=[pid("bill_cycle_id")], extra_errors=[404])},
        f"{P}/bill-cycles/{{bill_cycle_id}}/actions/{{id}}": {"get": b_one(
            "getBillCycleAction", "One action of a bill cycle", "Action",
            [pid("bill_cycle_id"), pid("id")])},
        f"{P}/adjustment-applications": {"get": b_list(
            "listAdjustmentApplications", "Adjustment applications", "AdjustmentApplication", [
                ("adjustment_id", STR, None), ("billing_account_id", STR, None),
                ("account_num", STR, None), ("occurred_on", DT, None),
                ("unapplied_amount", {"type": "string", "description": "Exact decimal"}, None),
                ("adjustment_application_type", e("standard-invoice", "negative-invoice",
                                                   "reversed-invoice", "write-off-invoice"), None)])},
        f"{P}/adjustment-applications/{{id}}": {"get": b_one(
            "getAdjustmentApplication", "One adjustment application", "AdjustmentApplication", [pid("id")])},
        f"{P}/adjustment-categories": {"get": b_list(
            "listAdjustmentCategories", "Adjustment categories", "AdjustmentCategory", [
                ("name", STR, None), ("status", e("ACTIVE", "SUSPENDED", "CANCELED"), None)])},
        f"{P}/adjustment-categories/{{id}}": {"get": b_one(
            "getAdjustmentCategory", "One adjustment category", "AdjustmentCategory", [pid("id")])},
        f"{P}/agreements": {"get": b_list("listAgreements", "Agreements", "Agreement", [
            ("valid_from", DT, None), ("valid_to", DT, None), ("name", STR, None),
            ("product_id", STR, None), ("status", STR, None),
            ("termination_fee_currency_code", cur, None),
            ("max_termination_fee_currency_code", cur, None)])},
        f"{P}/agreements/{{id}}": {"get": b_one("getAgreement", "One agreement", "Agreement", [pid("id")])},
        f"{P}/agreement-services": {"get": b_list(
            "listAgreementServices", "Agreement services", "AgreementService", [
                ("service_id", STR, None),
                ("service_resource_identifier", {"type": "string", "maxLength": 255}, None),
                ("child_service_resource_identifier", STR, None), ("product_id", STR, None),
                ("billing_account_id", STR, None), ("account_num", STR, None),
                ("external_account_num", STR, None), ("status", as_status, None)])},
        f"{P}/agreement-services/{{id}}": {
            "get": b_one("getAgreementService", "One agreement service", "AgreementService", [pid("id")]),
            "put": b_write("updateAgreementService", "Partial update of an agreement service",
                           ref("AgreementServicePatch"), 200, "AgreementService", [pid("id")]),
        },
        f"{P}/agreement-services/{{agreement_service_id}}/true-up-charge-type-relations": {
            "get": b_list("listTrueUpRelations", "True-up charge type relations", "TrueUpRelation",
                          path_params=[pid("agreement_service_id")], extra_errors=[404]),
            "post": b_write("createTrueUpRelation", "Create a true-up charge type relation",
                            ref("NewTrueUpRelation"), 201, "TrueUpRelation",
                            [pid("agreement_service_id")]),
        },
        f"{P}/agreement-services/{{agreement_service_id}}/true-up-charge-type-relations/{{id}}": {
            "get": b_one("getTrueUpRelation", "One true-up charge type relation", "TrueUpRelation",
                         [pid("agreement_service_id"), pid("id")]),
            "delete": {
                "operationId": "deleteTrueUpRelation", "summary": "Delete a relation",
                "tags": ["billing"],
                "parameters": [pid("agreement_service_id"), pid("id")],
                "responses": {
                    "204": {"description": "Deleted; empty body"},
                    **error_responses([400, 401, 404, 503], B_ERRORS),
                    "default": {"description": "Unknown error", "content": json_content(ref("Error"))},
                },
            },
        },
        f"{P}/bill-batches": {
            "get": b_list("listBillBatches", "Bill batches (status ACTIVE unless named)", "BillBatch", [
                ("bill_batch_type", e("reissue", "reverse", "adhoc", "on-demand monthly"), None),
                ("name", STR, None), ("status", e("ACTIVE", "SUSPENDED", "CANCELED"), "Default ACTIVE"),
                ("currency_code", cur, None), ("billing_account_id", STR, None),
                ("account_num", STR, None), ("external_account_num", STR, None),
                ("expand", STR, "bill_batch_runs or bill_batch_runs.invoices")]),
            "post": b_write("createBillBatch", "Create a bill batch (answers 200)", ref("NewBillBatch"),
                            200, "BillBatch", errors=(400, 401, 413, 415, 503)),
        },
        f"{P}/bill-batches/{{id}}": {"get": b_one(
            "getBillBatch", "One bill batch", "BillBatch", [pid("id")],
            [param("expand", "query", STR, "bill_batch_runs, bill_batch_runs.invoices or invoices")])},
        f"{P}/bill-batches/{{bill_batch_id}}/billing-accounts": {"get": b_list(
            "listBillBatchAccounts", "Billing accounts of a bill batch", "BillingAccountRef", [
                ("account_num", STR, None), ("external_account_num", STR, None)],
            path_params=[pid("bill_batch_id")], extra_errors=[404])},
        f"{P}/usage-events/bulk": {"post": b_write(
            "postUsageEvents", "Rate and store 1..50 usage events", ref("BulkRequest"), 200,
            "BulkOutcome", errors=usage_bulk_errors, prefer=False, tag="usage",
            example=bulk_example)},
        f"{P}/usage-events/simulate/bulk": {"post": b_write(
            "simulateUsageEvents", "Rate 1..50 usage events without storing anything",
            ref("BulkRequest"), 200, "SimulationOutcome", errors=usage_bulk_errors, prefer=False, tag="usage",
            example=bulk_example)},
        f"{P}/usage-events": {"get": b_list(
            "listUsageEvents", "Rated usage events (at least one narrowing parameter)", "RatedEvent", [
                ("reference_id", STR, None), ("request_id", STR, None),
                ("service_period_id", STR, None), ("account_num", STR, None),
                ("billing_account_id", STR, None), ("sequence_id", STR, None)], tag="usage")},
        f"{P}/usage-events/{{id}}": {"get": b_one(
            "getUsageEvent", "One rated usage event (voided or live)", "RatedEvent", [pid("id")], tag="usage")},
    }
    schemas = {
        "Error": ERROR_SCHEMA, "NamedRef": named_ref, "CategoryRef": category_ref,
        "CpqDiscount": cpq, "BillingAccountRef": account_ref, "Action": action,
        "AdjustmentItem": item, "AccountAdjustment": adjustment,
        "AdjustmentApplication": application, "AdjustmentCategory": adj_category,
        "Agreement": agreement, "ProductRef": product_ref, "PriceRef": price_ref,
        "AgreementService": agreement_service, "RefIn": ref_in,
        "AgreementServicePatch": as_patch, "TrueUpRelation": relation,
        "NewTrueUpRelation": new_relation, "Invoice": invoice, "BillBatchRun": run,
        "BillBatch": batch, "NewBillBatch": new_batch, "UsageEvent": usage_event_in,
        "BulkRequest": bulk, "EventCharge": charge, "RatedEvent": rated,
        "ErredEvent": erred, "BulkOutcome": outcome, "SimulatedEventCharge": sim_charge,
        "SimulatedEvent": sim_rated, "SimulationOutcome": sim_outcome,
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Billing sandbox: Surface B (billing API v2)",
            "version": "2",
            "description": "Usage events, queries and maintenance. Behaviour: docs/billing.md "
            "and docs/usage.md. Identifiers are strings; amounts are JSON numbers with their "
            "exact digits; date-times carry the tenant's UTC offset.",
        },
        "servers": [{"url": "/"}],
        "security": [{"ApiKey": []}, {"Bearer": []}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "ApiKey": {"type": "apiKey", "in": "header", "name": "X-Api-Key"},
                "Bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
            },
        },
    }


# ---- Surface C --------------------------------------------------------------------------

C_ERRORS = {
    400: "Bad request (malformed JSON, wrong types, out of range, bad dates, non-int64 path id)",
    401: "Authentication failed.",
    404: "Entity not found",
    409: "Conflict with existing state",
    412: "Precondition failed",
    413: "Request body too large",
    415: "Content-Type is not application/json",
    503: "Service unavailable; nothing was applied",
}
C_PAGED_HEADERS = {
    "X-Total-Count": {
        "description": "Records matching (left out with omit_total_count=TRUE)",
        "schema": INT64,
    },
    "X-Elements-Count": {"description": "Records in this answer", "schema": INT64},
    "X-Total-Pages": {
        "description": "Pages (left out with omit_total_count=TRUE)",
        "schema": INT64,
    },
}
C_PAGE = [
    param("page_number", "query", {"type": "integer", "format": "int64", "minimum": 1}, "Default 1"),
    param("page_size", "query", {"type": "integer", "format": "int64", "minimum": 1, "maximum": 50}, "Default 25"),
    param("omit_total_count", "query", OMIT_TOTAL_COUNT,
          "TRUE leaves out X-Total-Count and X-Total-Pages"),
]


C_EXAMPLE_IDS = {"id": 1, "yid": 4, "pid": 5}


def cid(name):
    p = param(name, "path", INT64)
    p["example"] = C_EXAMPLE_IDS[name]
    return p


def c_op(op_id, summary, status, schema, params=(), body=None, errors=(400, 401, 404, 503), paged=False, description=None, example=None):
    ok = {"description": description or "Done"}
    if schema is not None:
        ok["content"] = json_content(schema)
    if paged:
        ok["headers"] = C_PAGED_HEADERS
    op = {
        "operationId": op_id,
        "summary": summary,
        "tags": ["revenue"],
        "parameters": list(params) + (C_PAGE if paged else []),
        "responses": {str(status): ok, **error_responses(list(errors), C_ERRORS)},
    }
    if body is not None:
        op["requestBody"] = {"required": True, "content": json_content(body)}
        if example is not None:
            op["requestBody"]["content"]["application/json"]["example"] = example
    if not op["parameters"]:
        del op["parameters"]
    return op


def revenue_doc():
    e = lambda *vals: {"type": "string", "enum": list(vals)}
    cur = {"type": "string", "enum": CURRENCIES}
    period = obj({
        "type": e("PERIOD"), "id": INT64, "name": null(STR), "description": null(STR),
        "path": arr(INT64), "quarter": null(INT64), "start_date": DATE, "end_date": DATE,
        "time_zone": STR, "open": BOOL, "parent_id": INT64,
    })
    year = obj({
        "type": e("YEAR"), "id": INT64, "name": null(STR), "description": null(STR),
        "path": arr(INT64), "start_date": DATE, "end_date": DATE, "time_zone": STR,
        "parent_id": INT64, "open": BOOL, "complete": BOOL,
        "accounting-periods": arr(ref("AccountingPeriod")),
    })
    calendar = obj({
        "type": e("CALENDAR"), "id": INT64, "path": arr(INT64), "start_date": null(DATE),
        "end_date": null(DATE), "time_zone": STR, "complete": BOOL,
        "years": arr(ref("AccountingYear")),
    })
    ledger_props = {
        "id": INT64, "name": STR, "description": null(STR), "status": e("ACTIVE", "INACTIVE"),
        "convert_currency": e("NONE", "GL", "ACCOUNT_CATEGORY"), "conversion_currency": null(cur),
        "chart_of_account_id": null(INT64), "rule_set_id": null(INT64),
        "run_mode_actuals_id": null(INT64), "conversion_rate_set_id": null(STR),
        "currency_exchange_version": null(STR), "billing_account_category_ids": arr(INT64),
        "expected_customer_lifetime": null(INT64), "create_zero_amount_entries": BOOL,
        "timezone_name": STR, "valid": BOOL, "calendar": ref("Calendar"),
    }
    ledger = obj(ledger_props)
    ledger_item = obj({**ledger_props, "chart_of_account_name": null(STR),
                       "rule_set_name": null(STR), "accounting_calendar_name": null(STR)})
    ledger_fields = obj({
        "id": null(INT64), "name": null({"type": "string", "minLength": 1}),
        "description": null(STR), "status": null(e("ACTIVE", "INACTIVE")),
        "convert_currency": null(e("NONE", "GL", "ACCOUNT_CATEGORY")),
        "conversion_currency": null(cur), "chart_of_account_id": null(INT64),
        "rule_set_id": null(INT64), "run_mode_actuals_id": null(INT64),
        "conversion_rate_set_id": null(STR), "currency_exchange_version": null(STR),
        "billing_account_category_ids": null(arr(INT64, maxItems=1000)),
        "expected_customer_lifetime": null({**INT64, "minimum": 0, "maximum": 1200,
                                            "description": "Months."}),
        "create_zero_amount_entries": null(BOOL),
        "timezone_name": null({**STR, "description": "IANA zone; a new ledger without one "
                               "takes the tenant's zone."}),
    }, required=(), description="Ledger fields. POST needs name (status and id are ignored); "
        "PUT replaces the fields present (id, when given, must equal the path's). Other "
        "members (what a Ledger renders besides: valid, calendar, the list's names) are "
        "ignored, so a ledger read may be sent back.")
    new_period = obj({
        "id": null(INT64), "name": STR, "description": null(STR),
        "quarter": null({"type": "integer", "minimum": 1, "maximum": 4}),
        "start_date": DATE, "end_date": DATE, "open": null(BOOL),
    }, required=("name", "start_date", "end_date"))
    new_year = obj({
        "id": null({**INT64, "description": "PUT: when given, must equal the path's yid "
                    "(POST ignores it). Other members an AccountingYear renders are ignored."}),
        "name": STR, "description": null(STR), "start_date": DATE, "end_date": DATE,
        "accounting-periods": arr(ref("NewAccountingPeriod"), maxItems=1000),
    }, required=("name", "start_date", "end_date"))
    history = obj({"id": INT64, "open": BOOL, "start_date": DT, "end_date": null(DT)})
    gl_run = obj({
        "id": INT64, "date_started": null(DT), "date_ended": null(DT),
        "status": e("NOT_STARTED", "RUNNING", "ERROR", "COMPLETE"), "num_errors": INT64,
        "run_trigger_type": STR, "gl_run_mode_id": null(INT64), "ledger_id": INT64,
        "run_to_date": DT,
    })
    new_gl_run = obj({"gl_run_mode_id": null(INT64), "ledger_id": INT64, "run_to_date": STR},
                     required=("ledger_id", "run_to_date"))
    run_error = obj({"id": INT64, "collector_run_id": null(INT64), "gl_run_id": null(INT64),
                     "error_message": STR})
    collector = obj({"name": STR, "friendly_name": null(STR), "description": null(STR),
                     "group": null(STR), "category": null(STR)}, required=("name",))
    collector_run = obj({
        "id": INT64, "tenant_id": {**INT64, "description": "The tenant's number: a stable "
                                   "int64 derived from the tenant's id."}, "gl_run_mode_id": null(INT64), "date_started": null(DT),
        "date_ended": null(DT), "status": e("NOT_STARTED", "RUNNING", "ERROR", "COMPLETE"),
        "run_trigger_type": STR, "num_errors": INT64, "type": e("AUTO", "MANUAL"),
        "collector_operations": arr(STR), "data_fetch_from_date": null(DT),
        "data_fetch_to_date": null(DT), "overlap_fetch_time": INT64,
    })
    new_collector_run = obj({
        "type": e("AUTO", "MANUAL"), "collector_operations": arr(STR, maxItems=100),
        "data_fetch_from_date": null(STR), "data_fetch_to_date": null(STR),
        "overlap_fetch_time": {"type": "integer", "minimum": 0, "maximum": 2678400},
    }, required=("type",))
    entry = obj({
        "id": INT64, "gl_run_id": INT64, "ledger_id": INT64, "charge_info_id": INT64,
        "period_id": INT64, "posting_date": DATE, "amount": DEC, "debit_account": null(STR),
        "credit_account": null(STR),
    })
    charge_info = obj({
        "id": INT64, "created_on": DT, "updated_on": DT, "created_by": STR,
        "updated_by": STR, "billing_account_num": STR, "core_id": STR,
        "ci_values": {**ANY_OBJECT, "description": "created_date, transaction_type, "
                      "charge_category, billing_account_num, order_id, service_id, "
                      "invoice_number, charge_amount (exact decimal), order_amount, product_id, "
                      "product_name, currency_code; merged records add merged_charge_info_ids"},
    })
    ledger_charge_info = obj({**charge_info["properties"],
                              "charge_info_state_values": null(e("POSTED", "SKIPPED", "ERROR"))})
    ids = obj({"ids": arr(INT64, minItems=1, maxItems=1000)}, required=("ids",), extra=False)
    deleted = obj({"deleted": INT64, "deleted_journal_entries": INT64},
                  required=("deleted", "deleted_journal_entries"))
    view = obj({"name": STR, "rows": INT64, "objects": arr(STR)}, required=("name", "rows", "objects"))
    replication = obj({
        "replication_id": STR, "status": STR, "batch_size": INT64, "prefix": STR,
        "views": arr(ref("ReplicationView")), "total_rows": INT64, "total_objects": INT64,
        "replicated_at": DT,
    }, required=("replication_id", "status", "views"))

    # Surface C is served under two base paths, ours and the platform's (`/calypso/3`): the
    # paths are relative and each base path is a server entry, the docs' one first.
    P = ""
    L, Y = f"{P}/ledgers/{{id}}", f"{P}/ledgers/{{id}}/calendar/years/{{yid}}"
    PER = f"{Y}/accounting-periods/{{pid}}"
    year_ids = [cid("id"), cid("yid")]
    per_ids = year_ids + [cid("pid")]
    ci_filters = [
        param("billing_account", "query", STR, "Account number or id"),
        param("invoice_number", "query", STR), param("charge_info_type", "query", STR),
        param("charge_category", "query", STR, "Category name"),
        param("created_from", "query", STR, "Date-time or date, inclusive"),
        param("created_to", "query", STR, "Date-time or date, exclusive"),
        param("service_id", "query", INT64), param("product_id", "query", INT64),
        param("order_number", "query", STR),
    ]
    paths = {
        f"{P}/openapi.json": openapi_op("revenue"),
        f"{P}/ledgers": {
            "get": c_op("listLedgers", "AR ledgers", 200, arr(ref("LedgerListItem")), [
                param("id", "query", INT64), param("name", "query", STR),
                param("status", "query", e("ACTIVE", "INACTIVE")),
                param("convert_currency", "query", e("NONE", "GL", "ACCOUNT_CATEGORY")),
                param("conversion_currency", "query", cur),
                param("chart_of_account_id", "query", INT64), param("rule_set_id", "query", INT64),
            ], errors=(400, 401, 503), paged=True),
            "post": c_op("createLedger", "Create an AR ledger", 201, ref("Ledger"),
                         body=ref("LedgerFields"), errors=(400, 401, 404, 409, 413, 415, 503),
                         example={"name": "EU Ledger", "chart_of_account_id": 1, "rule_set_id": 1,
                                  "billing_account_category_ids": [1], "timezone_name": "Europe/Berlin"}),
        },
        L: {
            "get": c_op("getLedger", "One AR ledger", 200, ref("Ledger"), [cid("id")]),
            "put": c_op("updateLedger", "Update an AR ledger", 200, ref("Ledger"), [cid("id")],
                        body=ref("LedgerFields"), errors=(400, 401, 404, 409, 413, 415, 503)),
            "delete": c_op("deleteLedger", "Delete an AR ledger and what hangs on it", 200, None,
                           [cid("id")], description="Deleted; empty body"),
        },
        f"{L}/calendar/years": {"post": c_op(
            "createYear", "Add an accounting year", 200, ref("Ledger"),
            [cid("id"), param("generate-periods", "query", {"type": "boolean"}, "Default false")],
            body=ref("NewAccountingYear"), errors=(400, 401, 404, 409, 413, 415, 503),
            example={"name": "FY2030", "start_date": "2030-01-01", "end_date": "2030-12-31"})},
        Y: {
            "get": c_op("getYear", "One accounting year", 200, ref("AccountingYear"), year_ids),
            "put": c_op("updateYear", "Update an accounting year", 200, ref("Ledger"), year_ids,
                        body=ref("NewAccountingYear"), errors=(400, 401, 404, 409, 413, 415, 503)),
            "delete": c_op("deleteYear", "Delete an accounting year", 200, ref("Ledger"), year_ids,
                           errors=(400, 401, 404, 409, 503)),
        },
        f"{PER}/open": {"put": c_op("openPeriod", "Open a period", 200, ref("Ledger"), per_ids)},
        f"{PER}/close": {"put": c_op("closePeriod", "Close a period", 200, ref("Ledger"), per_ids)},
        f"{PER}/history": {"get": c_op("periodHistory", "Open/close history of a period", 200,
                                       arr(ref("PeriodHistoryEntry")), per_ids, paged=True)},
        f"{P}/collectors": {"get": c_op("listCollectors", "Collectors a run can name: the catalogue, then the "
                                        "platform operations (INSERT_SERVICES, ...; group PLATFORM)", 200,
                                        arr(ref("Collector")), [param("group", "query", STR),
                                                                param("category", "query", STR)],
                                        errors=(400, 401, 503), paged=True)},
        f"{P}/collector-runs": {
            "get": c_op("listCollectorRuns", "Collector runs, newest first", 200,
                        arr(ref("CollectorRun")), errors=(400, 401, 503), paged=True),
            "post": c_op("startCollectorRun", "Start a collector run (finishes in the request)", 201,
                         ref("CollectorRun"), body=ref("NewCollectorRun"),
                         errors=(400, 401, 409, 412, 413, 415, 503),
                         example={"type": "MANUAL", "collector_operations": []}),
        },
        f"{P}/collector-runs/{{id}}": {"get": c_op("getCollectorRun", "One collector run", 200,
                                                   ref("CollectorRun"), [cid("id")])},
        f"{P}/collector-runs/{{id}}/errors": {"get": c_op(
            "collectorRunErrors", "Errors of a collector run", 200, arr(ref("RunError")),
            [cid("id")], paged=True)},
        f"{P}/glruns": {
            "get": c_op("listGlRuns", "Ledger runs, newest first", 200, arr(ref("GlRun")),
                        [param("status", "query", e("NOT_STARTED", "RUNNING", "ERROR", "COMPLETE"))],
                        errors=(400, 401, 503), paged=True),
            "post": c_op("startGlRun", "Start a ledger run (finishes in the request)", 201,
                         ref("GlRun"), body=ref("NewGlRun"),
                         errors=(400, 401, 404, 409, 412, 413, 415, 503),
                         example={"ledger_id": 1, "run_to_date": "2026-12-01"}),
        },
        f"{P}/glruns/{{id}}": {
            "get": c_op("getGlRun", "One ledger run", 200, ref("GlRun"), [cid("id")]),
            "delete": c_op("deleteGlRun", "Delete a ledger run and its results", 200, None,
                           [cid("id")], description="Deleted; empty body"),
        },
        f"{P}/glruns/{{id}}/errors": {"get": c_op("glRunErrors", "Errors of a ledger run", 200,
                                                  arr(ref("RunError")), [cid("id")], paged=True)},
        f"{P}/glruns/{{id}}/journal-entries": {"get": c_op(
            "glRunJournalEntries", "Journal entries a ledger run posted (sandbox extension)", 200,
            arr(ref("JournalEntry")), [cid("id")], paged=True)},
        f"{L}/glruns": {"get": c_op("ledgerGlRuns", "Every run of a ledger, newest first", 200,
                                    arr(ref("GlRun")), [cid("id")])},
        f"{P}/ledgers/chargeinfos": {
            "get": c_op("listChargeInfos", "Charge info records", 200, arr(ref("ChargeInfo")),
                        ci_filters + [param("is_parent", "query", {"type": "boolean"}),
                                      param("parent_id", "query", INT64),
                                      param("max_records", "query", {"type": "integer", "format": "int64", "minimum": 1},
                                            "Caps the matching set; default 1000")],
                        errors=(400, 401, 503), paged=True),
            "delete": c_op("deleteChargeInfos", "Delete charge info records", 200,
                           ref("Deleted"), body=ref("Ids"), errors=(400, 401, 413, 415, 503)),
        },
        f"{P}/ledgers/merged-chargeinfos": {"get": c_op(
            "listMergedChargeInfos", "Charge info with usage children merged into their parent",
            200, arr(ref("ChargeInfo")), ci_filters, errors=(400, 401, 503), paged=True)},
        f"{L}/chargeinfos": {"get": c_op(
            "ledgerChargeInfos", "Charge info of a ledger with its state", 200,
            arr(ref("LedgerChargeInfo")), [cid("id"), param("gl_event_id", "query", INT64)] + [
                param(n, "query", STR, "Date-time or date") for n in
                ("created_from", "created_to", "updated_from", "updated_to")], paged=True)},
        f"{L}/chargeinfos/state": {"delete": c_op(
            "deleteChargeInfoStates", "Delete charge info states in a ledger", 200, ref("Deleted"),
            [cid("id")], body=ref("Ids"), errors=(400, 401, 404, 413, 415, 503))},
        f"{P}/replication/svs": {"post": c_op(
            "replicateSvs", "Copy the SVS views to the analytics store", 201,
            ref("ReplicationSummary"),
            [param("batch_size", "query", {"type": "integer", "minimum": 1, "maximum": 10000}, "Default 1000")],
            errors=(400, 401, 503))},
    }
    schemas = {
        "Error": ERROR_SCHEMA, "AccountingPeriod": period, "AccountingYear": year,
        "Calendar": calendar, "Ledger": ledger, "LedgerListItem": ledger_item,
        "LedgerFields": ledger_fields, "NewAccountingPeriod": new_period,
        "NewAccountingYear": new_year, "PeriodHistoryEntry": history, "GlRun": gl_run,
        "NewGlRun": new_gl_run, "RunError": run_error, "Collector": collector,
        "CollectorRun": collector_run, "NewCollectorRun": new_collector_run,
        "JournalEntry": entry, "ChargeInfo": charge_info, "LedgerChargeInfo": ledger_charge_info,
        "Ids": ids, "Deleted": deleted, "ReplicationView": view, "ReplicationSummary": replication,
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Billing sandbox: Surface C (revenue management)",
            "version": "3.16.0.5",
            "description": "AR ledgers, calendars, ledger and collector runs, charge info, "
            "replication. Behaviour: docs/revenue.md. Identifiers are int64 numbers.",
        },
        "servers": [
            {"url": "/revenue/3", "description": "The sandbox's base path (the docs use it)"},
            {"url": "/calypso/3",
             "description": "The production platform's base path: the same operations"},
        ],
        "security": [{"ApiKey": []}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"ApiKey": {"type": "apiKey", "in": "header", "name": "X-Api-Key"}},
        },
    }


IDEMPOTENCY_KEY = param(
    "Idempotency-Key",
    "header",
    {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]+$"},
    "Optional: makes a retry of this write safe. The same key with the same request (method, "
    "path, query, body) within 24 hours of the tenant clock replays the first answer (with "
    "Idempotent-Replayed: true) instead of running again; 409 while the first is in flight or "
    "when it was applied without a recorded answer (its outcome was unknown); 422 with a "
    "different request. At most 10,000 keys per tenant are kept.",
)

IDEMPOTENCY_ERRORS = {
    400: "The request or its Idempotency-Key is malformed",
    409: "Conflict, or a request with this Idempotency-Key is in progress or was applied without a recorded answer",
    422: "The Idempotency-Key was used with a different request",
}

REPLAYED = {
    "Idempotent-Replayed": {
        "description": "true: this is the recorded answer of an earlier request with the same Idempotency-Key",
        "schema": {"type": "string", "enum": ["true"]},
    }
}


def with_idempotency(build):
    """Every write (POST, PUT, PATCH, DELETE) of a tenant surface takes the Idempotency-Key
    header: it is named, with the answers it may add, on each write of the document."""

    def built():
        doc = build()
        for item in doc["paths"].values():
            for method in ("post", "put", "patch", "delete"):
                op = item.get(method)
                if op is None:
                    continue
                # Copies, never updates in place: parts of operations are shared constants.
                op["parameters"] = list(op.get("parameters", [])) + [IDEMPOTENCY_KEY]
                responses = op["responses"] = dict(op["responses"])
                for status, text in IDEMPOTENCY_ERRORS.items():
                    if str(status) not in responses:
                        responses.update(error_responses([status], {status: text}))
                for code, response in list(responses.items()):
                    if code.startswith("2"):
                        responses[code] = {**response, "headers": {**response.get("headers", {}), **REPLAYED}}
        return doc

    return built


# The admin document is built in code (functions/admin/src/openapi.rs, issue 25).
DOCS = {
    "billing.json": with_idempotency(billing_doc),
}


def render(doc):
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


def main():
    check = "--check" in sys.argv[1:]
    stale = []
    for name, build in DOCS.items():
        path = os.path.join(HERE, name)
        text = render(build())
        if check:
            try:
                with open(path, encoding="utf-8") as f:
                    current = f.read()
            except FileNotFoundError:
                current = None
            if current != text:
                stale.append(name)
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    if stale:
        print("stale (run python3 docs/openapi/generate.py):", ", ".join(stale))
        sys.exit(1)


if __name__ == "__main__":
    main()
