"""Validates XML documents against one XSD, for the Surface A tests (tests/support/legacy.rs).

Started once per XSD with its path as the argument; then reads, until end of input, documents
framed as a line holding the byte length followed by that many bytes of UTF-8 XML, and answers
each with one line: "ok", or "invalid: " and the errors.
"""

import sys

import xmlschema

schema = xmlschema.XMLSchema(sys.argv[1])
source = sys.stdin.buffer
while True:
    line = source.readline()
    if not line.strip():
        break
    document = source.read(int(line)).decode("utf-8")
    try:
        errors = [f"{e.path}: {e.reason}" for e in schema.iter_errors(document)]
    except Exception as e:  # not well-formed: say so rather than stop
        errors = [f"not well-formed: {e}"]
    answer = "ok" if not errors else "invalid: " + " | ".join(errors)
    sys.stdout.write(answer.replace("\n", " ") + "\n")
    sys.stdout.flush()
