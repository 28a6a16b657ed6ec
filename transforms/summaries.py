"""Summaries of the published tables for people: leaderboards, oriented pairs, per-label and
oracle tables, marginal gains, clustering, version histories (pure polars/numpy, no I/O).

Inputs are rows of the warehouse tables (any subset of their columns that a function names),
already filtered to one corpus, view and punctuation setting. The report and ``show`` both
build on these, so a figure is computed one way only.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from sysdiff.schemas.vocabulary import ARCS_CORRECT, DEP_VIEWS, VIEWS

#: Above this many systems, per-label and oracle tables show only the subsets people read.
MANY_SYSTEMS = 10
#: Significance level of the marks in leaderboards and histories.
ALPHA = 0.05


# ----------------------------------------------------------------------------- systems

def leaderboard(scores: pl.DataFrame) -> pl.DataFrame:
    """Per system: rank (1 = best; ties share a rank), accuracy and sentence exact match
    (and the accuracy's interval, when the scores have one), best first (ties by name); a
    system without a score (NULL: not evaluated) has no rank and comes last."""
    ci = [c for c in ("ci_low", "ci_high") if c in scores.columns]
    return scores.select(
        pl.col("accuracy").rank("min", descending=True).cast(pl.Int64).alias("rank"),
        "system", "n_correct", "n_units", "accuracy", "n_sents_exact", "n_sents", "sent_exact",
        *ci,
    ).sort(["accuracy", "system"], descending=[True, False], nulls_last=True)


def score_name(view: str, punct: bool | None = None, task: str | None = None) -> str:
    """The explicit name of a score: ``LAS (no punct)``, ``UPOS``, ``ARCS F1 (any)``, ..."""
    if task == "coref":
        return f"ARCS F1 ({view})"
    if task in ("unl", "nl"):
        return f"F1 ({view})"
    if task == "ner":
        return f"span F1 ({view})"
    name = {"head": "UAS", "deprel": "LS", "las": "LAS"}.get(view, view.upper())
    if punct is None or punct == VIEWS[view].default_punct:
        return name + (" (no punct)" if view in DEP_VIEWS else "")
    return name + (" (with punct)" if punct else " (no punct)")


# ----------------------------------------------------------------------------- pairs

def oriented_pairs(pairs: pl.DataFrame) -> pl.DataFrame:
    """One row per unordered pair, directed from the less to the more accurate system
    (equal accuracy, or a NULL delta: by name), most different first."""
    delta = pl.col("delta_acc")
    keep = (delta > 0) | ((delta.is_null() | (delta == 0)) & (pl.col("sys1") < pl.col("sys2")))
    return pairs.filter(keep & (pl.col("sys1") != pl.col("sys2"))).sort(
        ["diff", "sys1", "sys2"], descending=[True, False, False])


def diff_matrix(pairs: pl.DataFrame, systems: list[str], value: str = "diff",
                symmetric: bool = True) -> np.ndarray:
    """Matrix of a pair column (``diff`` by default) in ``systems`` order: row sys1, column
    sys2; 0 on the diagonal and for pairs without a row. ``symmetric``: each row also fills
    its mirror cell (a pair given in both directions keeps either)."""
    index = {s: i for i, s in enumerate(systems)}
    m = np.zeros((len(systems), len(systems)))
    known = pairs.filter(pl.col("sys1").is_in(systems) & pl.col("sys2").is_in(systems)
                         & (pl.col("sys1") != pl.col("sys2")))
    if known.height:
        i = known["sys1"].replace_strict(index, return_dtype=pl.Int64).to_numpy()
        j = known["sys2"].replace_strict(index, return_dtype=pl.Int64).to_numpy()
        v = known[value].cast(pl.Float64).fill_null(0.0).to_numpy()
        if symmetric:
            m[j, i] = v
        m[i, j] = v
    return m


def cluster_order(systems: list[str], matrix: np.ndarray) -> list[str]:
    """Systems ordered by average-linkage clustering of the diff matrix (optimal leaf order:
    neighbours in the list are close)."""
    if len(systems) < 3:
        return list(systems)
    from scipy.cluster.hierarchy import leaves_list, linkage, optimal_leaf_ordering
    from scipy.spatial.distance import squareform  # (0.3 s to import: the report only)

    condensed = squareform(matrix, checks=False)
    tree = linkage(condensed, method="average")
    if condensed.any():
        tree = optimal_leaf_ordering(tree, condensed)
    return [systems[i] for i in leaves_list(tree)]


def detail_pairs(oriented: pl.DataFrame, scores: pl.DataFrame, k: int) -> pl.DataFrame:
    """The pairs worth a drill-down: the best system against the runner-up, then the ``k``
    most different pairs (at most ``k`` rows in all; rows of ``oriented``, that order)."""
    board = leaderboard(scores)["system"].to_list()
    first = oriented.filter(pl.col("sys1").is_in(board[1:2]) & pl.col("sys2").is_in(board[:1]))
    rest = oriented.join(first.select("sys1", "sys2"), on=["sys1", "sys2"], how="anti")
    return pl.concat([first, rest]).head(k)


def largest_changes(changes: pl.DataFrame, oriented: pl.DataFrame, k: int) -> pl.DataFrame:
    """The ``k`` largest change cells over every oriented pair: sys1, sys2, class, gold, l1,
    l2, attachment, count (summed over the rows of a cell), largest first."""
    cells = changes.join(oriented.select("sys1", "sys2"), on=["sys1", "sys2"], how="semi")
    return (cells.group_by("sys1", "sys2", "class", "gold", "l1", "l2")
            .agg(pl.col("attachment").any(), pl.col("count").sum())
            .sort(["count", "sys1", "sys2", "class", "gold", "l1", "l2"],
                  descending=[True, False, False, False, False, False, False])
            .head(k))


# ----------------------------------------------------------------------------- labels

def label_table(labels: pl.DataFrame, oracle_labels: pl.DataFrame,
                systems: list[str]) -> pl.DataFrame:
    """The paper's table 9: per gold label, each system's accuracy, the oracle of all systems
    and its gain over the best system, and which systems are best and worst on the row
    (empty when all are equal)."""
    wide = labels.pivot(on="system", index="gold_label", values="accuracy")
    n = labels.group_by("gold_label").agg(pl.col("n").max())
    present = [s for s in systems if s in wide.columns]
    full = oracle_labels.filter(_is_set(systems))
    oracle = full.select("gold_label", (pl.col("n_correct") / pl.col("n")).alias("oracle"))
    df = n.join(wide, on="gold_label").join(oracle, on="gold_label", how="left")
    accs = [pl.col(s) for s in present]
    best, worst = pl.max_horizontal(accs), pl.min_horizontal(accs)

    def who(target: pl.Expr) -> pl.Expr:
        names = [pl.when(pl.col(s) == target).then(pl.lit(s)) for s in present]
        return pl.when(best > worst).then(pl.concat_list(names).list.drop_nulls()) \
            .otherwise(pl.lit([], dtype=pl.List(pl.String)))

    return df.select(
        "gold_label", "n", *present, "oracle", (pl.col("oracle") - best).alias("gain"),
        who(best).alias("best"), who(worst).alias("worst"),
    ).sort(["n", "gold_label"], descending=[True, False])


def label_summary(labels: pl.DataFrame, oracle_labels: pl.DataFrame, systems: list[str],
                  pair: list[str] | None) -> pl.DataFrame:
    """Per gold label, for many systems: n, the best and worst accuracy and who has them
    (empty lists when all are equal), the median, the oracle of ``pair`` (the best pair) and
    of all systems, and the gain of the full oracle over the best system."""
    stats = labels.filter(pl.col("system").is_in(systems)).group_by("gold_label").agg(
        pl.col("n").max(), pl.col("accuracy").max().alias("best_acc"),
        pl.col("accuracy").median().alias("median_acc"),
        pl.col("accuracy").min().alias("worst_acc"),
        pl.col("system").filter(pl.col("accuracy") == pl.col("accuracy").max()).sort()
        .alias("best"),
        pl.col("system").filter(pl.col("accuracy") == pl.col("accuracy").min()).sort()
        .alias("worst"))
    tie = pl.col("best_acc") == pl.col("worst_acc")
    empty = pl.lit([], dtype=pl.List(pl.String))

    def oracle_of(names: list[str] | None, alias: str) -> pl.DataFrame:
        rows = oracle_labels.filter(_is_set(names)) if names else oracle_labels.clear()
        return rows.select("gold_label", (pl.col("n_correct") / pl.col("n")).alias(alias))

    return (stats.join(oracle_of(pair, "oracle_pair"), on="gold_label", how="left")
            .join(oracle_of(systems, "oracle_all"), on="gold_label", how="left")
            .select("gold_label", "n", "best_acc",
                    pl.when(tie).then(empty).otherwise(pl.col("best")).alias("best"),
                    "median_acc", "worst_acc",
                    pl.when(tie).then(empty).otherwise(pl.col("worst")).alias("worst"),
                    "oracle_pair", "oracle_all",
                    (pl.col("oracle_all") - pl.col("best_acc")).alias("gain"))
            .sort(["n", "gold_label"], descending=[True, False]))


# ----------------------------------------------------------------------------- oracles

def _is_set(names: list[str] | None) -> pl.Expr:
    """The ``systems`` list column holds exactly ``names`` (in any order)."""
    names = sorted(set(names or []))
    return (pl.col("systems").list.len() == len(names)) & \
        (pl.col("systems").list.set_difference(pl.lit(names)).list.len() == 0)


def oracle_table(oracles: pl.DataFrame) -> pl.DataFrame:
    """Oracle of every stored subset with its gain over the best member (size, then best
    first)."""
    return oracles.select(
        pl.col("systems").list.sort().list.join(" + ").alias("systems"), "n_systems",
        "n_correct", "n_units", "accuracy",
        pl.when(pl.col("n_units") > 0).then(pl.col("best_single") / pl.col("n_units"))
        .alias("best_single"), "gain",
    ).sort(["n_systems", "accuracy", "systems"], descending=[False, True, False])


def best_pair(oracles: pl.DataFrame) -> list[str] | None:
    """The two systems whose oracle is highest (ties by names), or None without pairs."""
    pairs = oracles.filter(pl.col("systems").list.len() == 2).with_columns(
        pl.col("systems").list.sort().alias("systems"),
        pl.col("systems").list.sort().list.join("\t").alias("_k"))
    if pairs.is_empty():
        return None
    return pairs.sort(["n_correct", "_k"], descending=[True, False])["systems"][0].to_list()


def read_subsets(oracles: pl.DataFrame, systems: list[str], pairs: int = 5) -> pl.DataFrame:
    """The oracle subsets people read, for many systems: the full set, the ``pairs`` best
    pairs, each leave-one-out set and each system; ``kind`` says which (rows of
    ``oracle_table`` with ``kind`` and, for leave-one-out, the ``left_out`` system)."""
    table = oracle_table(oracles.filter(
        pl.col("systems").list.set_difference(pl.lit(sorted(systems))).list.len() == 0))
    n = len(systems)
    left_out = pl.lit(sorted(systems)).list.set_difference(
        pl.col("systems").str.split(" + ")).list.first()
    parts = [
        table.filter(pl.col("n_systems") == n).with_columns(pl.lit("all").alias("kind")),
        table.filter(pl.col("n_systems") == 2).sort(["accuracy", "systems"],
                                                    descending=[True, False])
        .head(pairs).with_columns(pl.lit("best pair").alias("kind")),
        table.filter(pl.col("n_systems") == n - 1).with_columns(
            pl.lit("leave-one-out").alias("kind")),
        table.filter(pl.col("n_systems") == 1).with_columns(pl.lit("system").alias("kind")),
    ]
    out = pl.concat([p for p in parts if p.height]) if any(p.height for p in parts) \
        else table.with_columns(pl.lit("").alias("kind")).clear()
    return out.with_columns(pl.when(pl.col("kind") == "leave-one-out").then(left_out)
                            .otherwise(None).alias("left_out")).unique(
        ["systems"], keep="first", maintain_order=True)


def marginal_gains(oracles: pl.DataFrame, systems: list[str] | None = None,
                   missing: list[str] = ()) -> pl.DataFrame:
    """Per system: oracle(all) - oracle(all without it), from the stored full-set and
    leave-one-out rows of ``oracles`` (columns systems, n_correct, n_units). ``systems``
    defaults to the largest stored subset. Columns: system, oracle_all, oracle_without,
    gain (a fraction of the units), units_gained; largest gain first. No number without
    data: without a unit every rate is NULL, and so are the gains of the ``missing``
    systems (those that lack the view's column)."""
    schema = {"system": pl.String, "oracle_all": pl.Float64, "oracle_without": pl.Float64,
              "gain": pl.Float64, "units_gained": pl.Int64}
    if systems is None:
        if oracles.is_empty():
            return pl.DataFrame(schema=schema)
        systems = oracles.sort(pl.col("systems").list.len(), descending=True)["systems"][0]
        systems = list(systems)
    full = oracles.filter(_is_set(systems)).head(1)
    if full.is_empty() or len(systems) < 2:
        return pl.DataFrame(schema=schema)
    all_correct, n_units = full["n_correct"][0], full["n_units"][0]
    loo = oracles.filter((pl.col("systems").list.len() == len(systems) - 1)
                         & (pl.col("systems").list.set_difference(pl.lit(sorted(systems)))
                            .list.len() == 0))
    system = pl.lit(sorted(systems)).list.set_difference(pl.col("systems")).list.first()
    scored = pl.lit(n_units > 0) & ~system.is_in(list(missing))

    def rate(x: pl.Expr) -> pl.Expr:
        return pl.when(pl.lit(n_units > 0)).then(x / max(n_units, 1))

    return loo.select(
        system.alias("system"),
        rate(pl.lit(all_correct)).alias("oracle_all"),
        rate(pl.col("n_correct")).alias("oracle_without"),
        pl.when(scored).then(rate(all_correct - pl.col("n_correct"))).alias("gain"),
        pl.when(scored).then(all_correct - pl.col("n_correct")).cast(pl.Int64)
        .alias("units_gained"),
    ).unique("system", keep="first").cast(schema).sort(["gain", "system"],
                                                       descending=[True, False],
                                                       nulls_last=True)


# ----------------------------------------------------------------------------- coreference

def transition_class(c1: str, c2: str) -> str:
    """The change class of an ARCS transition c1 -> c2 ('' on the diagonal and between two
    correct classes)."""
    if c1 == c2:
        return ""
    ok1, ok2 = c1 in ARCS_CORRECT, c2 in ARCS_CORRECT
    if ok2 and not ok1:
        return "correction"
    if ok1 and not ok2:
        return "new_error"
    return "changed_error" if not ok1 else ""


def mtype_order(mtypes: list[str]) -> list[str]:
    """Mention types: ALL first, then the others by name."""
    present = set(mtypes)
    return ["ALL"] * ("ALL" in present) + sorted(present - {"ALL"})


def coref_oracle_table(oracles: pl.DataFrame, criterion: str) -> pl.DataFrame:
    """ARCS recall oracle per subset and mention type, with the best member (most TP; ties by
    name), its recall and the oracle's gain over it; largest subsets first."""
    schema = {"systems": pl.String, "size": pl.Int64, "mtype": pl.String, "n": pl.Int64,
              "n_tp": pl.Int64, "oracle": pl.Float64, "best": pl.String,
              "best_recall": pl.Float64, "gain": pl.Float64}
    df = oracles.filter(pl.col("criterion") == criterion)
    if df.is_empty():
        return pl.DataFrame(schema=schema)
    single = df.filter(pl.col("systems").list.len() == 1).select(
        pl.col("systems").list.first().alias("member"), "mtype", pl.col("n_tp").alias("tp1"))
    rows = df.with_row_index("_row").with_columns(pl.col("systems").list.sort())
    best = (rows.select("_row", pl.col("systems").alias("member"), "mtype").explode("member")
            .join(single, on=["member", "mtype"], how="left")
            .sort(["_row", "tp1", "member"], descending=[False, True, False], nulls_last=True)
            .group_by("_row", maintain_order=True).first()
            .select("_row", pl.col("member").alias("best"), "tp1"))
    order = {m: i for i, m in enumerate(mtype_order(df["mtype"].to_list()))}
    n = pl.col("n")
    out = rows.join(best, on="_row", how="left").select(
        pl.col("systems").list.join(" + "), pl.col("systems").list.len().alias("size"),
        "mtype", "n", "n_tp",
        pl.when(n > 0).then(pl.col("n_tp") / n).alias("oracle"), "best",
        pl.when(n > 0).then(pl.col("tp1") / n).alias("best_recall"),
        pl.when(n > 0).then((pl.col("n_tp") - pl.col("tp1")) / n).alias("gain"),
        pl.col("mtype").replace_strict(order, default=len(order), return_dtype=pl.Int64)
        .alias("_m"))
    return out.sort(["size", "systems", "_m"], descending=[True, False, False]) \
        .drop("_m").cast(schema)


# ----------------------------------------------------------------------------- UNL

def unl_oriented(pairs: pl.DataFrame) -> pl.DataFrame:
    """Each unordered pair of versions once, from the fewer to the more CORRECT sentences
    (equal: by name), per task, most different first."""
    if pairs.is_empty():
        return pairs
    a, b = pl.col("n_correct1"), pl.col("n_correct2")
    keep = (b > a) | ((b == a) & (pl.col("sys1") < pl.col("sys2")))
    return pairs.filter(keep & (pl.col("sys1") != pl.col("sys2"))).sort(
        ["task", "diff", "sys1", "sys2"], descending=[False, True, False, False])


# ----------------------------------------------------------------------------- histories

def history_rows(history: pl.DataFrame, alpha: float = ALPHA) -> pl.DataFrame:
    """The rows of a ``history`` table that a chart shows: token views at their default
    punctuation setting only (coreference and UNL rows have no punct), ordered by task,
    view, name and position, with ``significant`` (McNemar p < ``alpha`` against the
    previous version) and ``step``: +1 a significant gain, -1 a significant loss, else 0."""
    if history.is_empty():
        return history.with_columns(pl.lit(False).alias("significant"),
                                    pl.lit(0, pl.Int8).alias("step"))
    default = ~pl.col("view").is_in(list(DEP_VIEWS))  # METRICS 1.1, as ``default_punct``
    sig = pl.col("mcnemar_p").is_not_null() & (pl.col("mcnemar_p") < alpha)
    return (history.filter(pl.col("punct").is_null() | (pl.col("punct") == default))
            .sort(["task", "view", "name", "position"])
            .with_columns(sig.alias("significant"),
                          pl.when(sig & (pl.col("delta") > 0)).then(1)
                          .when(sig & (pl.col("delta") < 0)).then(-1).otherwise(0)
                          .cast(pl.Int8).alias("step")))


def history_summary(rows: pl.DataFrame) -> pl.DataFrame:
    """Per task, view and name (rows of ``history_rows``): number of versions, the latest
    version and score, the best version and score (a version without a score, NULL, is never
    the best: null when none has one), and the significant gains and losses."""
    return rows.group_by("task", "view", "name", maintain_order=True).agg(
        pl.len().alias("versions"),
        pl.col("version").last().alias("latest"), pl.col("score").last().alias("latest_score"),
        pl.col("version").filter(pl.col("score").is_not_null())
        .sort_by(pl.col("score").filter(pl.col("score").is_not_null()),
                 pl.col("position").filter(pl.col("score").is_not_null()),
                 descending=[True, False]).first().alias("best"),
        pl.col("score").max().alias("best_score"),
        (pl.col("step") > 0).sum().alias("gains"), (pl.col("step") < 0).sum().alias("losses"),
    )
