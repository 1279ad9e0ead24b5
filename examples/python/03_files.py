"""Files: write, read (bytes stay bytes), list, push a directory, pull it back."""

import tempfile
from pathlib import Path

import pocketdock

with pocketdock.create_new_container(profile="minimal") as c, tempfile.TemporaryDirectory() as tmp:
    c.write_file("/tmp/config.json", '{"debug": true}')
    assert c.read_text("/tmp/config.json") == '{"debug": true}'
    blob = bytes(range(256))
    c.write_file("/tmp/blob.bin", blob)
    assert c.read_file("/tmp/blob.bin") == blob

    src = Path(tmp) / "src"
    src.mkdir()
    (src / "main.py").write_text("print('pushed')\n")
    c.push(str(src), "/tmp/src")
    print([f"{e.name} ({e.kind}, {e.size} B)" for e in c.list_files("/tmp/src")])
    assert c.run("python3 /tmp/src/main.py").stdout == "pushed\n"

    c.run("mkdir -p /tmp/out && echo result > /tmp/out/r.txt")
    report = c.pull("/tmp/out", str(Path(tmp) / "out"))
    assert report.files == 1
    assert (Path(tmp) / "out" / "r.txt").read_text() == "result\n"
print("files: ok")
