"""Inputs on S3 read in order come from one GET (schemas/formats/stable.py: ``_Stream``), on
the session's moto server: the same bytes, hash and chunks as the local file, one request per
pass however small the reads, an object replaced while it is read refused, a broken
connection read again by a ranged request."""

from __future__ import annotations

import hashlib
import random

import pytest

from sysdiff.schemas.errors import InputError
from sysdiff.schemas.formats.stable import StableFile, after_blank_line
from tests.objstore import bucket, s3_env  # noqa: F401 (fixtures)

SIZE = 20 << 20  # more than s3fs's read-ahead block (8 MiB): several requests without a stream


def sentences(size: int, seed: int = 0) -> bytes:
    """CoNLL-like text of about ``size`` bytes: lines of varied length, blank-line breaks."""
    rng = random.Random(seed)
    words = [f"{i}\tw{rng.randrange(10**6)}\t" + "x" * rng.randrange(40) + "\n"
             for i in range(2000)]
    out, n = [], 0
    while n < size:
        sent = "".join(rng.sample(words, rng.randrange(3, 30))) + "\n"
        out.append(sent)
        n += len(sent)
    return "".join(out).encode()


@pytest.fixture(scope="module")
def text() -> bytes:
    return sentences(SIZE)


@pytest.fixture
def s3_object(bucket, text, tmp_path) -> tuple[str, object]:  # noqa: F811
    from sysdiff.flows.store import filesystem

    fs = filesystem("s3")
    url = f"{bucket}/in/big.conllu"
    fs.pipe_file(url.split("://", 1)[1], text)
    return url, fs


@pytest.fixture
def gets(monkeypatch) -> list[dict]:
    """Every ``get_object`` request that reads go through (their arguments)."""
    import fsspec

    fs = fsspec.filesystem("s3", use_listings_cache=False)
    seen: list[dict] = []
    call = fs._call_s3

    async def counted(method, *args, **kwargs):  # noqa: ANN001, ANN202
        if method == "get_object":
            seen.append(kwargs)
        return await call(method, *args, **kwargs)

    monkeypatch.setattr(fs, "_call_s3", counted)
    return seen


@pytest.mark.parametrize("block", [4096, 1 << 20, 3 << 20])
def test_a_pass_in_blocks_is_one_get_with_the_files_bytes_and_hash(s3_object, text, gets,
                                                                   block):
    url, _fs = s3_object
    with StableFile(url) as f:
        parts = []
        while part := f.read(block):
            parts.append(part)
        f.check()
        assert b"".join(parts) == text
        assert f.sha256 == hashlib.sha256(text).hexdigest()
    assert len(gets) == 1, [g.get("Range") for g in gets]
    assert gets[0]["Range"] == "bytes=0-" and gets[0].get("IfMatch")


def test_chunks_equal_the_local_files_with_their_look_ahead_from_the_stream(
        s3_object, text, gets, tmp_path):
    url, _fs = s3_object
    local = tmp_path / "big.conllu"
    local.write_bytes(text)
    size = 3 << 20
    with StableFile(local) as f:
        want = list(f.chunks(size, after_blank_line))
    with StableFile(url) as f:
        got = list(f.chunks(size, after_blank_line))
        assert f.sha256 == hashlib.sha256(text).hexdigest()
    assert got == want and len(want) > 5
    # the first chunk's look-ahead comes before the stream: one ranged read, then one GET
    assert len(gets) == 2, [g.get("Range") for g in gets]


def test_ranged_reads_stay_ranged_and_do_not_open_a_stream(s3_object, text, gets):
    url, _fs = s3_object
    with StableFile(url, hashed=False) as f:
        for start in (SIZE - 100, 10, SIZE // 2):
            assert f.read_at(start, 50) == text[start:start + 50]
    assert all(g.get("Range", "").split("-")[1] for g in gets)  # closed ranges only


def test_an_object_replaced_during_a_pass_is_refused(s3_object, text):
    url, fs = s3_object
    with pytest.raises(InputError, match="changed|replaced|rewritten"), StableFile(url) as f:
        f.read(1 << 20)
        fs.pipe_file(url.split("://", 1)[1], text[::-1])
        while f.read(4 << 20):
            pass
        f.check()


def test_a_broken_stream_is_read_again_by_a_ranged_request(s3_object, text, monkeypatch):
    from sysdiff.schemas.formats import stable

    take = stable._Stream.take
    calls = {"n": 0}

    def flaky(self, offset, n, consume):  # noqa: ANN001, ANN202
        calls["n"] += 1
        if calls["n"] == 3:
            raise stable._Stream.Broken("connection reset")
        return take(self, offset, n, consume)

    monkeypatch.setattr(stable._Stream, "take", flaky)
    url, _fs = s3_object
    with StableFile(url) as f:
        parts = []
        while part := f.read(1 << 20):
            parts.append(part)
        assert b"".join(parts) == text and f.sha256 == hashlib.sha256(text).hexdigest()
    assert calls["n"] > 3
