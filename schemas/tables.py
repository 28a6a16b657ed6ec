"""Arrow schemas of every warehouse table: the one place where table shapes are defined.

Polars dtypes derive from these (``polars_schema``); readers and transforms conform their
frames to them when a table is written (``conform``).
"""

from __future__ import annotations

import polars as pl
import pyarrow as pa

S, I32, I64, F64, B = pa.string(), pa.int32(), pa.int64(), pa.float64(), pa.bool_()
U32 = pa.uint32()
#: Strings stored as a dictionary of the file's distinct values and a code per row (written
#: as they are read, without hashing each row's string; every reader sees strings).
CODED_S = pa.dictionary(pa.int32(), pa.string())
OWNER = [("corpus", S), ("system", S)]
LIST_S = pa.list_(pa.string())
VIEW_KEYS = [("corpus", S), ("view", S), ("punct", B)]
# Bootstrap intervals (METRICS 1.6b): of the score before them, of the delta before them,
# and the pair's bootstrap p; NULL without data or with --bootstrap 0.
_CI = [("ci_low", F64), ("ci_high", F64)]
_DELTA_CI = [("delta_ci_low", F64), ("delta_ci_high", F64)]
_BOOT_P = ("bootstrap_p", F64)


def _schema(*fields: tuple[str, pa.DataType]) -> pa.Schema:
    return pa.schema(list(fields))


TOKEN_TABLES: dict[str, pa.Schema] = {
    # ``size`` and ``mtime_ns`` of the input file when it was read: a file whose path, size
    # and modification time are unchanged is not read again (its ``sha256`` is reused).
    "systems": _schema(
        ("corpus", S), ("system", S), ("version", S), ("task", S), ("role", S), ("format", S),
        ("path", S), ("sha256", S), ("n_docs", I64), ("n_sents", I64), ("n_units", I64),
        ("ingested_at", pa.timestamp("us", tz="UTC")), ("size", I64), ("mtime_ns", I64),
        ("n_tokens", I64), ("alignment", S),
    ),
    # A system tokenised otherwise than the key (``systems.alignment = 'characters'``): its
    # words aligned with the key's on the characters of the text (METRICS 4), in the key's
    # order: one row per key word with the aligned system word's labels (``<unaligned>``
    # and ``aligned`` false when none), its HEAD in the key's numbering (-2: the word is not
    # aligned, -3: its head is not, -4 - n: the head is key word n of another sentence), and
    # where the system word is in the system's own file (``sys_sent``, ``sys_id``).
    "aligned": _schema(
        ("corpus", S), ("system", S), ("sent", I32), ("id", I32), ("kind", pa.int8()),
        ("form", S), ("lemma", S), ("upos", S), ("xpos", S), ("feats", S), ("head", I32),
        ("deprel", S), ("aligned", B), ("sys_sent", I32), ("sys_id", I32),
    ),
    # Every line of a file read in full (the key, a system read in full); ``word``: a
    # word's position among the file's words (0, 1, 2, ...; null on other lines), what a
    # lean system's rows stand in for.
    "units": _schema(
        ("corpus", S), ("system", S), ("sent", I32), ("id", I32), ("token_id", S),
        ("kind", pa.int8()), ("form", S), ("lemma", S), ("upos", S), ("xpos", S), ("feats", S),
        ("head", I32), ("deprel", S), ("deps", S), ("misc", S), ("line", I32), ("word", I32),
    ),
    # The lean store of a system read on the key's words (``systems.alignment =
    # 'identical'``): per key word, in the key's order (row n is the key's ``units`` row of
    # ``word`` n: no sentence or ID stored), the codes of the labels the task
    # evaluates (a code is the label's position among the file's distinct labels of that
    # column, sorted: the file's ``vocab`` rows) and HEAD; null where the column is not
    # read; DEPS and MISC only where they are not the key's (null where they are: its
    # lines, comments and non-word lines are the key's, checked by the reader). Corpus and
    # system are the partition's (``corpus=C/system=S`` in its path). Users read it through
    # the ``units`` and ``sents`` views.
    "words": _schema(
        ("lemma", U32), ("upos", U32), ("xpos", U32),
        ("feats", U32), ("head", I32), ("deprel", U32), ("deps", S), ("misc", S),
    ),
    "sents": _schema(
        ("corpus", S), ("system", S), ("sent", I32), ("sent_id", S), ("doc", I32),
        ("doc_id", S), ("text", S), ("n_words", I32), ("line", I32),
    ),
    # Label counts of every ingested file, per label column (what the views can score).
    "vocab": _schema(("corpus", S), ("system", S), ("field", S), ("label", S), ("n", I64)),
    # ``missing``: the system has no value in the view's column (all ``_``) where the key
    # has: scored, all wrong.
    "scores": _schema(
        *VIEW_KEYS, ("system", S), ("n_units", I64), ("n_correct", I64), ("accuracy", F64),
        *_CI, ("n_sents", I64), ("n_sents_exact", I64), ("sent_exact", F64), ("missing", B),
        ("options", S),
    ),
    "labels": _schema(
        *VIEW_KEYS, ("system", S), ("gold_label", S), ("n", I64), ("n_correct", I64),
        ("accuracy", F64), ("options", S),
    ),
    "pairs": _schema(
        *VIEW_KEYS, ("sys1", S), ("sys2", S), ("n_units", I64), ("n_diff", I64),
        ("corrections", I64), ("new_errors", I64), ("changed_errors", I64), ("diff", F64),
        ("delta_acc", F64), *_DELTA_CI, ("mcnemar_p", F64), ("ar_p", F64), _BOOT_P,
        ("diff_head_only", I64),
        ("diff_label_only", I64), ("diff_both", I64), ("seg_diff", I64), ("options", S),
    ),
    "changes": _schema(
        *VIEW_KEYS, ("sys1", S), ("sys2", S), ("class", S), ("gold", S), ("l1", S), ("l2", S),
        ("attachment", B), ("count", I64), ("options", S),
    ),
    "oracles": _schema(
        *VIEW_KEYS, ("systems", LIST_S), ("n_systems", I64), ("n_units", I64),
        ("n_correct", I64), ("accuracy", F64), ("best_single", I64), ("gain", F64),
        ("options", S),
    ),
    "oracle_labels": _schema(
        *VIEW_KEYS, ("systems", LIST_S), ("gold_label", S), ("n", I64), ("n_correct", I64),
        ("options", S),
    ),
    "difficulty": _schema(
        *VIEW_KEYS, ("k_correct", I32), ("gold_label", S), ("n", I64), ("options", S),
    ),
    "majority": _schema(
        *VIEW_KEYS, ("systems", LIST_S), ("n_units", I64), ("n_correct", I64),
        ("accuracy", F64), ("options", S),
    ),
    "buckets": _schema(
        *VIEW_KEYS, ("kind", S), ("bucket", S), ("system", S), ("n_units", I64),
        ("n_correct", I64), ("accuracy", F64), ("options", S),
    ),
    "bucket_pairs": _schema(
        *VIEW_KEYS, ("kind", S), ("bucket", S), ("sys1", S), ("sys2", S), ("n_units", I64),
        ("corrections", I64), ("new_errors", I64), ("changed_errors", I64), ("options", S),
    ),
    "conll18": _schema(
        ("corpus", S), ("system", S), ("metric", S), ("correct", I64), ("gold_total", I64),
        ("system_total", I64), ("aligned_total", I64), ("precision", F64), ("recall", F64),
        ("f1", F64), *_CI, ("aligned_accuracy", F64),
        # ci_low/ci_high: F1's bootstrap interval (NULL for a system tokenised otherwise)
        # false: a column the metric compares is '_' in every key word; the row is what the
        # official script prints, but it measures nothing (not shown by ``show conll18``)
        ("key_data", B),
    ),
}


# ------------------------------------------------------------------------------ coreference
# Mention spans are never null: the reader fills every one of these fields.
_SPAN = [pa.field("doc", S, nullable=False), pa.field("part", I32, nullable=False),
         pa.field("start", I32, nullable=False), pa.field("end", I32, nullable=False)]
_COREF_COUNTS = [(name, F64) for name in ("recall_num", "recall_den", "precision_num",
                                           "precision_den")]
_PRF = [("recall", F64), ("precision", F64), ("f1", F64)]

COREF_TABLES: dict[str, pa.Schema] = {
    "mentions": pa.schema([
        *OWNER, *_SPAN, ("entity", S), ("mtype", S), ("sent", I32), ("head_pos", S),
        ("word", S), ("head", I32), ("zero_deps", S),
    ]),
    "coref_tokens": _schema(*OWNER, ("doc", S), ("part", I32), ("n_tokens", I32),
                            ("line", I32)),
    "coref_counts": _schema(*OWNER, ("doc", S), ("part", I32), ("metric", S), *_COREF_COUNTS),
    # ``options``: the mention matching and singletons of the run (``match:exact|singletons:
    # keep``); a unit of mention_classes matched to a key mention has the key's span.
    "coref_scores": _schema(*OWNER, ("metric", S), *_COREF_COUNTS, *_PRF, *_CI,
                            ("options", S)),
    "mention_classes": pa.schema([
        *OWNER, ("criterion", S), *_SPAN, ("mtype", S), ("word", S), ("in_key", B),
        ("in_resp", B), ("cls", S), ("options", S),
    ]),
    "arcs_scores": _schema(
        *OWNER, ("criterion", S), ("mtype", S), ("tp", I64), ("fp", I64), ("fn", I64),
        ("wl", I64), ("tn", I64), ("precision", F64), ("recall", F64), ("f1", F64), *_CI,
        ("options", S),
    ),
    "coref_pairs": _schema(
        ("corpus", S), ("criterion", S), ("sys1", S), ("sys2", S), ("n_mentions", I64),
        ("n_diff", I64), ("corrections", I64), ("new_errors", I64), ("changed_errors", I64),
        ("diff", F64), ("delta_f1", F64), *_DELTA_CI, ("mcnemar_p", F64), _BOOT_P,
        ("options", S),
    ),
    "coref_transitions": _schema(
        ("corpus", S), ("criterion", S), ("sys1", S), ("sys2", S), ("mtype", S), ("word", S),
        ("c1", S), ("c2", S), ("count", I64), ("options", S),
    ),
    "coref_oracles": _schema(
        ("corpus", S), ("criterion", S), ("systems", LIST_S), ("mtype", S), ("n", I64),
        ("n_tp", I64), ("options", S),
    ),
    "coref_agreement": _schema(
        ("corpus", S), ("sys1", S), ("sys2", S), ("metric", S), *_COREF_COUNTS, *_PRF,
        ("options", S),
    ),
}

# ------------------------------------------------------------------------------ UNL
# ``*_frac`` are exact reduced fractions ("0", "1", "3/14"); UNLization rows leave word_*
# null, NLization rows leave rel_*/uw_*/attr_* null. ``reason`` says why a sentence is not
# returned / not correct, ``reason_line`` is its line in the actual file, ``error_digest``
# fingerprints the exceeding/missing items (equal digests = same errors).
_UNL_COUNTS = [(f"{kind}_{what}", I64) for kind in ("rel", "uw", "attr", "word")
               for what in ("exc", "miss", "tot")]
_UNL_DISC = ([(f"d_{k}", F64) for k in ("rel", "uw", "all", "words")]
             + [(f"d_{k}_frac", S) for k in ("rel", "uw", "all", "words")])

UNL_TABLES: dict[str, pa.Schema] = {
    "unl_sentences": _schema(
        *OWNER, ("task", S), ("sent_id", S), ("sent_index", I32), ("returned", B),
        ("correct", B), ("reason", S), ("reason_line", I32), *_UNL_COUNTS, *_UNL_DISC,
        ("error_digest", S), ("options", S),
    ),
    # *_f1 are micro-averaged 1 - D over summed counts.
    "unl_scores": _schema(
        *OWNER, ("task", S), ("options", S), ("n_expected", I64), ("n_returned", I64),
        ("n_correct", I64), ("precision", F64), ("recall", F64), ("f1", F64), *_CI,
        ("rel_f1", F64), ("uw_f1", F64), ("attr_f1", F64), ("word_f1", F64),
    ),
    # Ordered pairs of versions (sys1 -> sys2); ``oracle``: the pair's oracle; ``delta_f1``
    # = F(sys2) - F(sys1).
    "unl_pairs": _schema(
        ("corpus", S), ("task", S), ("sys1", S), ("sys2", S), ("n_sentences", I64),
        ("n_correct1", I64), ("n_correct2", I64), ("n_changed", I64), ("corrections", I64),
        ("new_errors", I64), ("changed_errors", I64), ("diff", F64), ("oracle", F64),
        ("delta_f1", F64), *_DELTA_CI, ("mcnemar_p", F64), _BOOT_P,
    ),
    # Oracle of every subset of versions (as ``oracles``): the share of sentences at least
    # one version of the subset gets CORRECT, its best version and the gain over it.
    "unl_oracle": _schema(
        ("corpus", S), ("task", S), ("systems", LIST_S), ("n_systems", I64),
        ("n_sentences", I64), ("n_oracle", I64), ("oracle", F64), ("best_system", S),
        ("best_correct", I64), ("gain", F64),
    ),
    # Sentences whose verdict or error profile moved between sys1 and sys2.
    "unl_moved": _schema(
        ("corpus", S), ("task", S), ("sys1", S), ("sys2", S), ("sent_id", S),
        ("sent_index", I32), ("change", S), ("returned1", B), ("returned2", B),
        ("correct1", B), ("correct2", B), ("d_all_frac1", S), ("d_all_frac2", S),
        ("reason1", S), ("reason2", S),
    ),
}


# ------------------------------------------------------------------------------ spans (ner)
# Positions are 0-based token indexes in the key's sentence, ``end`` inclusive. A system
# tokenised otherwise (``systems.alignment = 'characters'``) has its spans placed on the
# key's characters (transforms/span_alignment.py): ``sent`` is the key sentence of a span's
# first character, and a boundary inside a key token is ``-(1 + c)``, ``c`` the offset of
# its first (start) or last (end) character in the key sentence's text. ``scheme``: the
# decoding of the run (auto, iob1, iob2, bioes); ``options``: scheme, ``align:characters``
# for such a system (or a pair with one) and label mappings.
_SPAN_UNIT = [("sent", I32), ("start", I32), ("end", I32), ("type", S)]

SPAN_TABLES: dict[str, pa.Schema] = {
    # Every token of a file read in full: its tag as written and as decoded (``label``,
    # after the label mapping); ``form`` only for the key and a system placed by characters
    # (another system's forms are checked equal to the key's). Users read the view of the
    # same name, which adds the systems stored lean (``span_words``).
    "span_tokens": _schema(*OWNER, ("sent", I32), ("id", I32), ("form", S), ("tag", S),
                           ("label", S), ("line", I32)),
    # A system read on the key's frame (``schemas/formats/fast_tags.py``): per key token, in
    # the key's order (row n is row n of the key's ``span_tokens``: no sentence or ID
    # stored), its tag as written and as decoded; the ``span_tokens`` view gives it the
    # key's sentences, IDs and lines.
    "span_words": _schema(("corpus", CODED_S), ("system", CODED_S), ("tag", CODED_S),
                          ("label", CODED_S)),
    # The spans decoded from a file (``text``: its words joined by spaces).
    "spans": _schema(*OWNER, *_SPAN_UNIT, ("text", S)),
    # Per file: the scheme its tags follow (``detected``), segments the strict rule of that
    # scheme drops (``n_ill_formed``: an I-X that starts a span, ...), token accuracy of the
    # (mapped) tags against the key's (conlleval's accuracy; null for the key; for a system
    # placed by characters, over the key's tokens: a key token without a system token of
    # the same characters is wrong, and ``n_tokens`` is the system's own count).
    "span_tags": _schema(
        *OWNER, ("scheme", S), ("detected", S), ("n_sents", I64), ("n_tokens", I64),
        ("n_tokens_correct", I64), ("token_accuracy", F64), ("n_spans", I64),
        ("n_ill_formed", I64), ("options", S),
    ),
    # Per system and type (``ALL``: micro average over every type).
    "span_scores": _schema(
        *OWNER, ("type", S), ("n_gold", I64), ("n_pred", I64), ("n_correct", I64),
        ("precision", F64), ("recall", F64), ("f1", F64), *_CI, ("scheme", S), ("options", S),
    ),
    # Span units of each system: every key span (in_key) with its class under the system
    # (correct, type, boundary, missed), and the system's spurious spans; ``pred_*``: the
    # system's span behind the class (the first overlapping one).
    "span_classes": _schema(
        *OWNER, *_SPAN_UNIT, ("text", S), ("in_key", B), ("cls", S), ("pred_start", I32),
        ("pred_end", I32), ("pred_type", S),
    ),
    # Ordered pairs over their units (key spans and the spurious spans of either system);
    # ``delta_f1`` = F1(sys2) - F1(sys1); ``ar_p``: paired randomization of F1 by sentence.
    "span_pairs": _schema(
        ("corpus", S), ("sys1", S), ("sys2", S), ("n_units", I64), ("n_diff", I64),
        ("corrections", I64), ("new_errors", I64), ("changed_errors", I64), ("diff", F64),
        ("delta_f1", F64), *_DELTA_CI, ("mcnemar_p", F64), ("ar_p", F64), _BOOT_P,
        ("scheme", S), ("options", S),
    ),
    # Full class transition matrices (c1 under sys1 -> c2 under sys2) per type and ``ALL``.
    "span_transitions": _schema(
        ("corpus", S), ("sys1", S), ("sys2", S), ("type", S), ("c1", S), ("c2", S),
        ("count", I64), ("scheme", S),
    ),
    # Oracle recall of every subset: key spans that at least one member gets correct.
    "span_oracles": _schema(
        ("corpus", S), ("systems", LIST_S), ("n_systems", I64), ("type", S), ("n_gold", I64),
        ("n_correct", I64), ("recall", F64), ("best_single", I64), ("gain", F64),
        ("scheme", S),
    ),
}

# ------------------------------------------------------------------------------ srl
# Word positions are 1-based word ids of the key's sentence (``pred``: the predicate's word).
# ``mode``: ``head`` (arguments on head words: CoNLL-U (Universal PropBank), CoNLL-2009) or
# ``span`` (CoNLL-2005); ``pieces``: a span argument's phrases (``3-5,8-9``: a ``C-`` phrase
# merged as srl-eval.pl merges it), null in head mode.
_SRL_ARG = [("sent", I32), ("pred", I32), ("start", I32), ("end", I32), ("pieces", S),
            ("role", S)]

SRL_TABLES: dict[str, pa.Schema] = {
    # The key's words: form, PPOS (CoNLL-U XPOS, CoNLL-2009 PPOS), HEAD (null: ``_``).
    "srl_tokens": _schema(*OWNER, ("sent", I32), ("id", I32), ("form", S), ("pos", S),
                          ("head", I32), ("line", I32)),
    # Every predicate of a file: the roleset as written (span mode: the verb), the sense
    # eval09.pl compares (after the dot) and its key (numbers without leading zeros; span
    # mode: the verb), the predicate's PPOS.
    "srl_predicates": _schema(*OWNER, ("sent", I32), ("pred", I32), ("roleset", S),
                              ("sense", S), ("sense_key", S), ("pos", S), ("line", I32)),
    # Every argument of a file (after the role mapping; span mode: ``V`` included).
    "srl_arguments": _schema(*OWNER, *_SRL_ARG, ("line", I32)),
    # The official scores per system: ``mode`` is the scorer's figure (head: eval09.pl's
    # semantic_labeled / semantic_unlabeled (arguments and predicate senses pooled, the
    # official F1), args_labeled / args_unlabeled, predicates_labeled /
    # predicates_unlabeled, proposition, exact_semantic_match (sentences); span:
    # srl-eval.pl's span (role ALL: Overall), span_v (the V row), span_unlabeled (-C),
    # perfect_props, and sysdiff's predicates); ``role`` ALL = every role; ``ppos`` the
    # predicate's PPOS of eval09.pl's per-tag tables (null: every PPOS). P/R/F1 are null
    # where a count they divide by is 0.
    "srl_scores": _schema(
        *OWNER, ("mode", S), ("role", S), ("ppos", S), ("n_gold", I64), ("n_pred", I64),
        ("n_correct", I64), ("precision", F64), ("recall", F64), ("f1", F64), *_CI,
        ("options", S),
    ),
    # Units of each system: ``unit`` argument (key arguments: correct, role, boundary,
    # missed; the system's spurious ones) or predicate (key predicates: correct, sense,
    # missed; spurious; ``role`` is the roleset); ``sys_*``: the system's argument (or
    # predicate) behind the class.
    "srl_classes": _schema(
        *OWNER, ("unit", S), *_SRL_ARG, ("in_key", B), ("cls", S), ("sys_start", I32),
        ("sys_end", I32), ("sys_role", S),
    ),
    # Ordered pairs per unit type over their units (key units and the spurious units of
    # either system); ``delta_acc`` = accuracy(sys2) - accuracy(sys1) over them (correct and
    # absent are right); ``delta_f1`` = F1(sys2) - F1(sys1) (the official arguments F1
    # without senses, or the predicates'); ``ar_p``: paired randomization over sentences of
    # the units right (METRICS 1.6).
    "srl_pairs": _schema(
        ("corpus", S), ("mode", S), ("unit", S), ("sys1", S), ("sys2", S), ("n_units", I64),
        ("n_diff", I64), ("corrections", I64), ("new_errors", I64), ("changed_errors", I64),
        ("diff", F64), ("delta_acc", F64), ("delta_f1", F64), *_DELTA_CI, ("mcnemar_p", F64),
        ("ar_p", F64), _BOOT_P, ("options", S),
    ),
    # Role->role change tables: (class, gold role, role under sys1, under sys2) over the
    # differing argument units (``<boundary>``, ``<missed>``, ``<absent>``: no role there;
    # gold null: a spurious unit); predicate units: classes by the key word's PPOS.
    "srl_changes": _schema(
        ("corpus", S), ("mode", S), ("unit", S), ("sys1", S), ("sys2", S), ("class", S),
        ("gold", S), ("l1", S), ("l2", S), ("count", I64),
    ),
    # Class transitions (c1 under sys1 -> c2 under sys2) per role (arguments) or PPOS
    # (predicates) and ``ALL``; cells with a count only.
    "srl_transitions": _schema(
        ("corpus", S), ("mode", S), ("unit", S), ("sys1", S), ("sys2", S), ("label", S),
        ("c1", S), ("c2", S), ("count", I64),
    ),
    # Oracle recall of every subset: key units that at least one member gets correct.
    "srl_oracles": _schema(
        ("corpus", S), ("mode", S), ("unit", S), ("systems", LIST_S), ("n_systems", I64),
        ("label", S), ("n_gold", I64), ("n_correct", I64), ("recall", F64),
        ("best_single", I64), ("gain", F64),
    ),
}

# Every task: each version of NAME@VERSION against the previous one and the best one before
# it. ``view``: a token view, a coreference criterion, the UNL task or the span scheme;
# ``score``: accuracy, ARCS F1, UNL F1 or span F1 (fractions).
HISTORY_TABLES: dict[str, pa.Schema] = {
    "history": _schema(
        ("corpus", S), ("task", S), ("view", S), ("punct", B), ("name", S), ("version", S),
        ("position", I64), ("previous", S), ("score", F64), *_CI, ("delta", F64),
        *_DELTA_CI, ("corrections", I64), ("new_errors", I64), ("changed_errors", I64),
        ("mcnemar_p", F64), _BOOT_P, ("best_version", S), ("best_score", F64), ("delta_best", F64),
        ("mcnemar_p_best", F64),
    ),
}

TABLES: dict[str, pa.Schema] = {**TOKEN_TABLES, **COREF_TABLES, **UNL_TABLES,
                                **SPAN_TABLES, **SRL_TABLES, **HISTORY_TABLES}


def all_tables() -> dict[str, pa.Schema]:
    """Every table the warehouse knows."""
    return TABLES


def polars_schema(table: str) -> pl.Schema:
    """The polars schema of a table (derived from its Arrow schema)."""
    return pl.Schema(pl.from_arrow(TABLES[table].empty_table()).schema)


#: String columns that name what a row belongs to: their statistics let a reader skip row
#: groups of other corpora, systems and pairs.
IDENTITY_COLUMNS = ("corpus", "system", "sys1", "sys2", "view")


def parquet_options(schema: pa.Schema) -> dict[str, object]:
    """How a table's Parquet file is encoded: dictionaries for string columns and label
    codes only (an integer column such as a line number has as many values as rows, and a
    dictionary attempt costs more than it saves; label codes are few and come out
    bit-packed); other integers as deltas (``DELTA_BINARY_PACKED``: a run of line, word or
    sentence numbers takes a few bits a row, where plain values take 32 before
    compression); min/max statistics for numbers and identity columns (what readers filter
    on; a string column's min/max costs much and is never used)."""
    strings, others, deltas = [], [], {}
    for name, leaf in _leaves(schema):
        coded = (pa.types.is_string(leaf) or pa.types.is_large_string(leaf) or leaf == U32
                 or pa.types.is_dictionary(leaf))
        (strings if coded else others).append(name)
        if not coded and pa.types.is_integer(leaf):
            deltas[name] = "DELTA_BINARY_PACKED"
    return {"compression": "zstd", "use_dictionary": strings, "column_encoding": deltas,
            "write_statistics": others + [c for c in IDENTITY_COLUMNS if c in schema.names]}


def _leaves(schema: pa.Schema) -> list[tuple[str, pa.DataType]]:
    """(Parquet column path, type) of every leaf column (a list's items are
    ``name.list.element``)."""
    out = []
    for f in schema:
        path, t = f.name, f.type
        while pa.types.is_list(t) or pa.types.is_large_list(t):
            path, t = f"{path}.list.element", t.value_type
        out.append((path, t))
    return out


def with_nulls(df: pl.DataFrame, schema: pa.Schema) -> pa.Table:
    """``df`` as Arrow with each column of ``schema`` it lacks as nulls (one shared buffer,
    not a column of values built, copied and cast)."""
    table = df.to_arrow()
    for field in schema:
        if field.name not in table.column_names:
            table = table.append_column(field, pa.nulls(table.num_rows, field.type))
    return table


def conform(df: pl.DataFrame | pa.Table, schema: pa.Schema) -> pa.Table:
    """Select and cast ``df``'s columns to ``schema`` (missing columns are an error); an
    Arrow table is taken as it is where its types are the schema's."""
    names = df.columns if isinstance(df, pl.DataFrame) else df.column_names
    missing = [f.name for f in schema if f.name not in names]
    if missing:
        raise ValueError(f"table is missing columns {missing}")
    if isinstance(df, pl.DataFrame):
        return df.select(schema.names).to_arrow().cast(schema)
    return df.select(schema.names).cast(schema)
