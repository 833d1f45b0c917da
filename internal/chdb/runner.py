"""Runs ClickHouse statements in one fresh chDB session.

Usage: python runner.py DATA_DIR [CONFIG_FILE]

DATA_DIR holds the session's databases; CONFIG_FILE, when given, is a
ClickHouse configuration file the engine starts with (clusters, for one).

It first writes one line, {"chdb": ..., "version": ...}, once the session
answers. Then each line of stdin is a JSON list of statements, run in order
in the same session, and each is answered with one line:

    {"results": [{"columns": [[name, type], ...], "rows": [[...], ...]}, ...],
     "error": null | {"index": i, "code": n, "name": "...", "message": "..."}}

A statement that fails ends its list: results holds those before it, and
error says which failed and ClickHouse's code, name and message. Numbers
keep their precision: JSON integers are arbitrary-precision here and in Go.
"""

import json
import re
import sys

# ClickHouse's exception text: "Code: 62. DB::Exception: <message>.
# (SYNTAX_ERROR)", sometimes with the server's version after the name.
_EXCEPTION = re.compile(
    r"^Code: (\d+)\. DB::Exception: (.*?)(?: \(([A-Z0-9_]+)\))?(?: \(version [^)]*\))?\s*$",
    re.DOTALL,
)

# The format every statement answers in: column names and types, then rows.
_FORMAT = "JSONCompact"


def _error(index, exc):
    text = str(exc)
    m = _EXCEPTION.match(text)
    if m is None:
        return {"index": index, "code": 0, "name": type(exc).__name__, "message": text}
    return {"index": index, "code": int(m.group(1)), "name": m.group(3) or "", "message": m.group(2)}


def _result(text):
    if text.strip() == "":
        return {"columns": [], "rows": []}
    doc = json.loads(text)
    return {"columns": [[c["name"], c["type"]] for c in doc["meta"]], "rows": doc["data"]}


def main():
    if len(sys.argv) not in (2, 3):
        sys.stderr.write(__doc__)
        return 2
    # Non-finite floats as JSON strings, so every answer is valid JSON.
    conn_str = sys.argv[1] + "?output_format_json_quote_denormals=1"
    if len(sys.argv) == 3:
        conn_str += "&config-file=" + sys.argv[2]

    import chdb

    conn = chdb.connect(conn_str)
    version = json.loads(str(conn.query("SELECT version()", _FORMAT)))["data"][0][0]
    out = sys.stdout
    out.write(json.dumps({"chdb": chdb.__version__, "version": version}) + "\n")
    out.flush()

    for line in sys.stdin:
        if not line.strip():
            continue
        results, error = [], None
        for i, stmt in enumerate(json.loads(line)):
            try:
                text = str(conn.query(stmt, _FORMAT))
            except Exception as exc:  # chdb raises its ClickHouse errors as RuntimeError
                error = _error(i, exc)
                # A query that fails after writing part of its answer leaves
                # that part in the session's buffer, ahead of the next
                # query's answer: one throwaway query takes it.
                try:
                    conn.query("SELECT 1", _FORMAT)
                except Exception:
                    pass
                break
            try:
                results.append(_result(text))
            except ValueError as exc:
                error = {"index": i, "code": 0, "name": "runner", "message": "unreadable answer: %s: %r" % (exc, text[:200])}
                break
        out.write(json.dumps({"results": results, "error": error}) + "\n")
        out.flush()
    conn.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
