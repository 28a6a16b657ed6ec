"""The staging writers of one input file: named after the signature when closed, dropped
when the file's read fails before that, kept when it fails after."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from sysdiff.flows.warehouse import PieceWriters


def counts(first: int, n: int) -> pl.DataFrame:
    """``n`` rows of the ``vocab`` table, their counts ``first`` ... ``first + n - 1``."""
    return pl.DataFrame({"corpus": ["c"] * n, "system": ["s"] * n, "field": ["upos"] * n,
                         "label": [f"L{i}" for i in range(n)],
                         "n": list(range(first, first + n))})


def staged_files(root: Path) -> list[Path]:
    return sorted((root / "tables").rglob("*.parquet"))


def test_closed_files_are_named_after_the_signature_and_hold_every_piece(tmp_path):
    with PieceWriters(tmp_path, "c/s") as writers:
        writers.open(["vocab"])
        writers.append("vocab", counts(0, 3))
        writers.append("vocab", counts(3, 2))
        staged = writers.close("sig1")
    path = tmp_path / staged["vocab"].rel
    assert path.name == "sig1.parquet"
    assert staged_files(tmp_path) == [path]
    assert pl.read_parquet(path)["n"].to_list() == [0, 1, 2, 3, 4]
    assert staged["vocab"].partitions == (("c/s", "sig1"),)
    # on a local disk the commit hashes the file (on a store, the writer does)
    assert (staged["vocab"].sha256, staged["vocab"].size) == ("", -1)


def test_an_error_before_the_close_drops_every_file_opened(tmp_path):
    with pytest.raises(ValueError, match="bad line"), PieceWriters(tmp_path, "c/s") as writers:
        writers.open(["sents", "vocab"])
        writers.append("vocab", counts(0, 3))
        assert len(staged_files(tmp_path)) == 2  # both pending files exist while reading
        raise ValueError("bad line")
    assert staged_files(tmp_path) == []


def test_an_error_after_the_close_keeps_the_files(tmp_path):
    with pytest.raises(ValueError, match="later"), PieceWriters(tmp_path, "c/s") as writers:
        writers.open(["vocab"])
        writers.append("vocab", counts(0, 1))
        staged = writers.close("sig2")
        raise ValueError("later")
    assert staged_files(tmp_path) == [tmp_path / staged["vocab"].rel]


def test_a_lean_frame_gets_the_columns_it_lacks_as_nulls_and_conform_still_refuses_them():
    """What a lean piece leaves out (labels not read, DEPS/MISC all the key's) is written as
    nulls of the table's types; a frame lacking columns without ``with_nulls`` is refused."""
    from sysdiff.schemas.tables import all_tables, conform, with_nulls

    schema = all_tables()["words"]
    frame = pl.DataFrame({"upos": [3, 0], "head": [2, 1]},
                         schema={"upos": pl.UInt32, "head": pl.Int32})
    with pytest.raises(ValueError, match="missing columns"):
        conform(frame, schema)
    table = conform(with_nulls(frame, schema), schema)
    assert table.schema == schema
    assert table.column("upos").to_pylist() == [3, 0]
    assert table.column("head").to_pylist() == [2, 1]
    absent = [f.name for f in schema if f.name not in frame.columns]
    assert absent and all(table.column(c).null_count == 2 for c in absent)


def test_numbers_are_stored_as_deltas_and_labels_as_dictionaries(tmp_path):
    """A run of line or word numbers costs a few bits a row (deltas), not the bytes of
    plain values; the values read back are the ones written."""
    import pyarrow.parquet as pq

    from sysdiff.flows.warehouse import PieceWriter

    n = 200_000
    frame = pl.DataFrame({
        "corpus": "c", "system": "s", "sent": [i // 20 for i in range(n)],
        "id": [i % 20 + 1 for i in range(n)], "token_id": [str(i % 20 + 1) for i in range(n)],
        "kind": 0, "form": [f"w{i % 500}" for i in range(n)], "lemma": "_", "upos": "NOUN",
        "xpos": "_", "feats": "_", "head": 0, "deprel": "_", "deps": "_", "misc": "_",
        "line": [i + i // 20 * 2 for i in range(n)], "word": list(range(n))},
        schema_overrides={"kind": pl.Int8, "sent": pl.Int32, "id": pl.Int32, "head": pl.Int32,
                          "line": pl.Int32, "word": pl.Int32})
    writer = PieceWriter(tmp_path, "units", "corpus=c/system=s")
    writer.append(frame)
    staged = writer.close("sig")
    path = tmp_path / staged.rel
    meta = pq.ParquetFile(path).metadata
    columns = {meta.schema.column(i).name: i for i in range(meta.num_columns)}

    def chunks(name: str) -> list:
        return [meta.row_group(g).column(columns[name]) for g in range(meta.num_row_groups)]

    for name in ("sent", "id", "line", "word"):
        assert all("DELTA_BINARY_PACKED" in c.encodings for c in chunks(name)), name
        assert sum(c.total_compressed_size for c in chunks(name)) < n / 10, name
    assert all("RLE_DICTIONARY" in c.encodings for c in chunks("form"))
    assert pl.read_parquet(path).select(frame.columns).equals(frame)
