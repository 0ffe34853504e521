"""How the `argilla_sdk_*` files here were written: by the `argilla` SDK (2.8.0) itself, without a server.

Run with a Python that has `argilla` installed (not the project's environment; it is no dependency of
tailorbench), from this folder: `python make_argilla_sdk_files.py`. The SDK's objects want a client only to
talk to a server; none is reached, so the default client is replaced by a stand-in. It reads tailorbench's
export of tests/annotation/data/pairwise.jsonl (seed 1: `argilla_export_pairwise_settings.json`, and the records
of an older export that carried the unit in each record's metadata, `argilla_export_pairwise_records_v1.json`,
kept so the import of such exports stays tested) through the SDK's own readers (`Settings.from_json`,
`Record.from_dict`), adds responses of three annotators (submitted, one draft, one discarded) and writes what the
SDK writes: `Settings.to_json`, records as `Dataset.to_disk` / `records.to_json` write them (nested, no response
status) and as `records.to_list(flatten=True)` (what `to_hub` publishes, with statuses).
"""

import json
from pathlib import Path
from unittest import mock

import argilla as rg
from argilla.records._io._generic import GenericIO

rg.Argilla._get_default = classmethod(lambda cls: mock.MagicMock())

HERE = Path(__file__).parent
USERS = ["00000000-0000-0000-0000-00000000000a", "00000000-0000-0000-0000-00000000000b",
         "00000000-0000-0000-0000-00000000000c"]
#: (record id, user) -> (side, confidence, status): user a and b disagree on it1; c leaves a draft and discards one
ANSWERS = {
    ("it0", 0): ("left", 3, "submitted"), ("it0", 1): ("left", 2, "submitted"), ("it0", 2): ("right", 1, "submitted"),
    ("it1", 0): ("right", 2, "submitted"), ("it1", 1): ("left", None, "submitted"), ("it1", 2): ("left", 1, "draft"),
    ("it2", 0): ("left", 3, "submitted"), ("it2", 1): ("left", 3, "submitted"), ("it2", 2): ("left", 2, "discarded"),
    ("it3", 0): ("right", 1, "submitted"), ("it3", 1): ("right", 2, "submitted"), ("it3", 2): ("right", 3, "submitted"),
}

settings = rg.Settings.from_json(HERE / "argilla_export_pairwise_settings.json")
out = HERE / "argilla_sdk_pairwise_settings.json"
out.unlink(missing_ok=True)
settings.to_json(out)
records = []
for row in json.loads((HERE / "argilla_export_pairwise_records_v1.json").read_text()):
    record = rg.Record.from_dict(row)
    for user in range(3):
        side, conf, status = ANSWERS[record.id, user]
        record.responses.add(rg.Response("choice", side, user_id=USERS[user], status=status))
        if conf is not None:
            record.responses.add(rg.Response("confidence", conf, user_id=USERS[user], status=status))
    records.append(record)
(HERE / "argilla_sdk_pairwise_records_nested.json").write_text(json.dumps(GenericIO.to_list(records, flatten=False)))
(HERE / "argilla_sdk_pairwise_records_flat.json").write_text(json.dumps(GenericIO.to_list(records, flatten=True)))
