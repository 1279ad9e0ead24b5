"""Summarise every CSV in the inbox (columns: region,amount).

The files are untrusted: a bad row is counted and skipped, never fatal.
"""
import csv
import json
import pathlib
import sys

inbox, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
totals, rejected = {}, 0
for path in sorted(inbox.glob("*.csv")):
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            try:
                region, amount = row["region"].strip(), float(row["amount"])
            except (KeyError, TypeError, ValueError, AttributeError):
                rejected += 1
                continue
            totals[region] = totals.get(region, 0.0) + amount

summary = {"totals": dict(sorted(totals.items())), "rejected_rows": rejected}
(out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
print(json.dumps(summary))
