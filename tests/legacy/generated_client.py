"""Drives Surface A through classes xsdata generated from the served XSD (tests/legacy/
generated.rs): reads a page, an object and a fault, creates an account and runs two commands
with bodies the classes write, and prints what it read as one JSON object.

Arguments: the directory holding the generated package `surface_a`, the Surface A root URL,
and the tenant's `user:password`.
"""

import base64
import json
import os
import sys
import urllib.error
import urllib.request
from decimal import Decimal

sys.path.insert(0, sys.argv[1])
root, basic = sys.argv[2], sys.argv[3]

from surface_a import (  # noqa: E402  (the package is generated at run time)
    AddNote,
    ApplyPayment,
    ApplyPaymentResponse,
    BillingAccount,
    BillingAccountBillType,
    BillingAccounts,
    CommandResponse,
    CreateResponse,
    Fault,
    Invoice,
    Payment,
    Users,
)
from xsdata.formats.dataclass.parsers import XmlParser
from xsdata.formats.dataclass.serializers import XmlSerializer

parser, serializer = XmlParser(), XmlSerializer()
auth = "Basic " + base64.b64encode(basic.encode()).decode()


def call(method, path, cls, body=None):
    data = serializer.render(body).encode() if body is not None else None
    request = urllib.request.Request(f"{root}/{path}", data=data, method=method)
    request.add_header("Authorization", auth)
    request.add_header("Accept", "application/xml")
    if data is not None:
        request.add_header("Content-Type", "application/xml")
    try:
        with urllib.request.urlopen(request) as answer:
            status, raw = answer.status, answer.read()
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read()
    return status, parser.from_bytes(raw, cls)


out = {}
_, page = call("GET", "billingAccounts?pageSize=2", BillingAccounts)
out["page"] = [page.total_elements, page.element_count, [a.account_num for a in page.billing_account]]
out["first_bill_type"] = page.billing_account[0].bill_type.value
_, invoice = call("GET", "invoices/1", Invoice)
out["invoice"] = [invoice.invoice_num, str(invoice.amount), invoice.status.value, invoice.billing_account.eid]
status, fault = call("GET", "invoices/999999", Fault)
out["fault"] = [status, fault.failure_reason.value, fault.message]
new = BillingAccount(account_num=f"GEN-{os.getpid()}", name="Generated", bill_type=BillingAccountBillType.PAPER)
status, created = call("POST", "billingAccounts", CreateResponse, new)
out["created"] = [status, created.successful, created.eid]
_, noted = call("POST", f"billingAccounts/{created.eid}/addNote", CommandResponse, AddNote(note="from xsdata"))
out["note"] = [noted.successful, noted.note.note, noted.note.billing_account.account_num]
pay = ApplyPayment(payment=Payment(amount=Decimal("12.50"), reference="gen"))
_, applied = call("POST", f"billingAccounts/{created.eid}/applyPayment", ApplyPaymentResponse, pay)
out["applied"] = [applied.successful, str(applied.payment.unapplied_amount), len(applied.payment_application)]
_, users = call("GET", "users", Users)
out["users"] = [users.total_elements, users.user[0].eid]
print(json.dumps(out))
