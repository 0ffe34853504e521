"""Fuzzing configuration readers: the train-rm YAML config, the eval options (Python API and the `tailor eval`
flags through CliRunner) and every judge's options. A valid config loads to exactly its values (numbers written
in scientific notation included); a bad one is a ConfigError naming the option, before any work."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tailorbench.errors import ConfigError
from tailorbench.evaluate.runner import EvalConfig, validate_config
from tailorbench.judges.base import JudgeOptions, make_judge
from tailorbench.train.config import load_config
from tests.fuzz.conftest import count, fuzz, workdir
from tests.fuzz.gen import name

# --- train-rm YAML -----------------------------------------------------------------------------------------


@st.composite
def yaml_float(draw: st.DrawFn, positive: bool = True) -> tuple[str, float]:
    """(text as a person writes it in YAML, the float it means): `5e-5`, `5.0e-05`, `0.00005`, `2`."""
    mantissa = draw(st.integers(1, 99))
    exponent = draw(st.integers(-8, 3))
    value = float(f"{mantissa}e{exponent}")
    form = draw(st.sampled_from(["sci", "sci_upper", "repr", "sci_plus", "quoted"]))
    written = {"sci": f"{mantissa}e{exponent}", "sci_upper": f"{mantissa}E{exponent}", "repr": repr(value),
               "sci_plus": f"{mantissa}.0e{exponent:+d}", "quoted": f'"{mantissa}e{exponent}"'}[form]
    if not positive and draw(st.booleans()):
        return "-" + written.lstrip('"') if form != "quoted" else f'"-{mantissa}e{exponent}"', -value
    return written, value


_INT_FIELDS = {"epochs": (1, 5), "batch_size": (1, 64), "grad_accum": (1, 4), "seed": (-5, 10**6),
               "log_every": (1, 100), "n_boot": (1, 500), "max_length": (16, 512), "max_steps": (1, 10**5)}
_POSITIVE_FLOATS = ("learning_rate", "length_lr", "ngram_l2", "feature_l2", "center_coef", "length_debias",
                    "weight_decay")  # weight_decay < 0 is refused (RMTrainConfig.validate)
_ANY_FLOATS = ("margin", "max_grad_norm")
_BOOL_FIELDS = ("length_feature", "group_by_length", "dropout", "eval_each_epoch")
_YAML_BOOLS = {"true": True, "false": False, "yes": True, "no": False, "on": True, "off": False, "True": True}


@st.composite
def train_yaml(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    lines, want = ["data: demo", "out: runs/rm"], {"data": "demo", "out": "runs/rm"}
    for field in draw(st.lists(st.sampled_from(sorted(_INT_FIELDS)), unique=True, max_size=4)):
        low, high = _INT_FIELDS[field]
        value = draw(st.integers(low, high))
        lines.append(f"{field}: {draw(st.sampled_from([str(value), f'{value}.0'] if value else [str(value)]))}")
        want[field] = value
    for field in draw(st.lists(st.sampled_from(_POSITIVE_FLOATS + _ANY_FLOATS), unique=True, max_size=4)):
        written, value = draw(yaml_float(positive=field in _POSITIVE_FLOATS))
        lines.append(f"{field}: {written}")
        want[field] = value
    for field in draw(st.lists(st.sampled_from(_BOOL_FIELDS), unique=True, max_size=2)):
        written = draw(st.sampled_from(sorted(_YAML_BOOLS)))
        if field == "length_feature":
            continue  # may clash with features: [length]; covered by the other booleans
        lines.append(f"{field}: {written}")
        want[field] = _YAML_BOOLS[written]
    if draw(st.booleans()):
        scheduler = draw(st.sampled_from(["linear", "cosine", "constant"]))
        lines.append(f"scheduler: {scheduler}")
        want["scheduler"] = scheduler
    if draw(st.booleans()):
        lo = draw(st.integers(1, 3))
        hi = draw(st.integers(lo, 5))
        lines.append(f"ngram_range: [{lo}, {hi}]")
        want["ngram_range"] = [lo, hi]
    return "\n".join(draw(st.permutations(lines))) + "\n", want


@fuzz(300)
@given(train_yaml())
def test_valid_train_yaml_loads_to_exactly_its_values(case: tuple[str, dict[str, Any]]) -> None:
    count("train yaml valid")
    text, want = case
    with workdir() as root:
        path = root / "rm.yaml"
        path.write_text(text, "utf-8")
        config = load_config(path).validate()
        for field, value in want.items():
            got = getattr(config, field)
            assert got == value and type(got) is type(value), (field, got, value, text)


_BAD_VALUES: dict[str, tuple[str, ...]] = {
    "int": ("two", "1.5", "[1]", "{a: 1}", "true", "1e-3", "''"),
    "float": ("fast", "[0.1]", "{a: 1}", "true", "''", ".nan", ".inf"),
    "bool": ("maybe", "2", "[true]", "0.5"),
    "list": ("length", "3", "{a: 1}"),
    "str": ("[a, b]", "{a: 1}", "true"),
}
_KIND_OF = {**dict.fromkeys(_INT_FIELDS, "int"), **dict.fromkeys(_POSITIVE_FLOATS + _ANY_FLOATS, "float"),
            **dict.fromkeys(_BOOL_FIELDS, "bool"), "features": "list", "ngram_range": "list", "scheduler": "str",
            "model": "str", "precision": "str"}


@fuzz(300)
@given(train_yaml(), st.data())
def test_every_bad_train_yaml_field_is_named(case: tuple[str, dict[str, Any]], data: st.DataObject) -> None:
    """Each example plants three defects, one file each, in one generated config."""
    text, _ = case
    for _ in range(3):
        count("train yaml defect")
        field = data.draw(st.sampled_from(sorted(_KIND_OF)))
        unknown = data.draw(st.booleans())
        lines = [line for line in text.splitlines() if not line.startswith(f"{field}:")]
        bad_key = ""
        if unknown:
            bad_key = data.draw(name.filter(lambda n: n not in _KIND_OF and n not in ("data", "out"))) + "_x"
            lines.append(f"{bad_key}: 1")
        else:
            lines.append(f"{field}: {data.draw(st.sampled_from(_BAD_VALUES[_KIND_OF[field]]))}")
        with workdir() as root:
            path = root / "rm.yaml"
            path.write_text("\n".join(lines) + "\n", "utf-8")
            try:
                load_config(path).validate()
            except ConfigError as error:
                message = str(error)
                if unknown:
                    assert bad_key in message and "known:" in message, message
                else:
                    assert field in message, message
            else:
                raise AssertionError(f"accepted:\n{path.read_text()}")


# --- eval options ------------------------------------------------------------------------------------------

_NUMERIC = {"n_boot": ("--n-boot", 1), "limit": ("--limit", 1), "batch_size": ("--batch-size", 1),
            "seed": ("--seed", None)}


@st.composite
def eval_options(draw: st.DrawFn) -> tuple[dict[str, Any], str | None]:
    """EvalConfig keyword values and the option a bad one must be named by (None: all valid)."""
    values: dict[str, Any] = {}
    bad: str | None = None
    for field, (flag, minimum) in _NUMERIC.items():
        if not draw(st.booleans()):
            continue
        if bad is None and draw(st.integers(0, 3)) == 0:
            value = draw(st.one_of(st.integers(-10**6, 0) if minimum else st.nothing(),
                                   st.sampled_from(["abc", "", "1.5", [3], {"a": 1}, True, 2.5, float("nan")])))
            bad = flag
        else:
            value = draw(st.one_of(st.integers(minimum or -10**6, 10**6),
                                   st.integers(minimum or 0, 10**4).map(str)))
        values[field] = value
    if draw(st.booleans()):
        if bad is None and draw(st.integers(0, 3)) == 0:
            values["orders"] = draw(st.sampled_from(["", "Both", "sideways", 3]))
            bad = "--orders"
        else:
            values["orders"] = draw(st.sampled_from(["both", "random"]))
    if draw(st.booleans()):
        if bad is None and draw(st.integers(0, 3)) == 0:
            values["max_failed"] = draw(st.sampled_from([-0.1, 1.5, "lots", float("inf")]))
            bad = "max"
        else:
            values["max_failed"] = draw(st.sampled_from([0.0, 0.05, 1.0]))
    return values, bad


@fuzz(2000)
@given(eval_options())
def test_eval_options_are_typed_or_refused_by_name(case: tuple[dict[str, Any], str | None]) -> None:
    count("eval options")
    values, bad = case
    config = EvalConfig(**values)
    if bad is None:
        typed = validate_config(config)
        for field, value in values.items():
            assert getattr(typed, field) == (int(value) if field in _NUMERIC else value)
        return
    try:
        validate_config(config)
    except ConfigError as error:
        assert bad in str(error), (str(error), bad)
    else:
        raise AssertionError(f"accepted {values}")


_CLI_BAD = st.sampled_from([
    ("--n-boot", "0"), ("--n-boot", "-3"), ("--limit", "0"), ("--limit", "-1"), ("--batch-size", "0"),
    ("--top-k", "0"), ("--orders", "sideways"), ("--ci-unit", "items"), ("--max-failed", "2"),
    ("--max-failed", "-0.5"), ("--persona-sections", "Nonexistent"), ("--split", "nope"), ("--tier", "mid-hard"),
    ("--judge-option", "batch_size=abc"), ("--judge-option", "batch_size=0"), ("--judge-option", "colour=red"),
    ("--judge-option", "novalue"), ("--n-boot", "many"), ("--seed", "x"), ("--judge", "nosuchjudge"),
    ("--setting", "telepathy"),
])


@fuzz(50)
@given(st.lists(_CLI_BAD, min_size=1, max_size=3, unique_by=lambda p: p[0]),
       st.sampled_from(["longer", "shorter", "first", "random"]))
def test_tailor_eval_refuses_bad_flags_before_any_work(bad: list[tuple[str, str]], judge: str) -> None:
    """Through the CLI: exit 2, one clear line naming one of the bad options, and no run directory."""
    count("eval cli defect")
    with workdir() as root:
        out = root / "run"
        args = ["eval", "--data", "demo", "--limit", "3", "--no-progress", "--judge", judge, "--out", str(out)]
        if any(flag == "--setting" for flag, _ in bad):
            args += ["--setting", "persona"]
        for flag, value in bad:
            args += [flag, value]
        if any(flag == "--top-k" for flag, _ in bad):
            args += ["--setting", "rag"]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2 and not isinstance(result.exception, Exception), (args, result.exception)
        assert "Traceback" not in result.output
        names = {flag for flag, _ in bad} | {value.split("=")[0] for _, value in bad}
        assert any(n in result.stderr for n in names) or "Invalid value" in result.stderr, (args, result.stderr)
        assert not (out / "predictions.jsonl").exists()


# --- judge options -----------------------------------------------------------------------------------------

_KNOWN = {"longer": set(), "shorter": set(), "first": set(), "random": set(), "embedding": {"max_length"},
          "rm:/nonexistent/checkpoint": {"max_length", "precision", "rm_batch_size", "device"}}
_OPTION_VALUES = st.one_of(st.integers(-3, 600).map(str), st.sampled_from(["abc", "", "1.5", "fp64", "auto"]))


@fuzz(150)
@given(st.sampled_from(sorted(_KNOWN)), st.dictionaries(st.one_of(name, st.sampled_from(
    ["batch_size", "max_length", "precision", "rm_batch_size", "temperature", "template"])), _OPTION_VALUES,
    min_size=1, max_size=3))
def test_every_judge_checks_its_options_the_same_way(spec: str, options: dict[str, str]) -> None:
    """Unknown keys are refused naming the known ones; bad values naming the option; good baseline options
    build the judge (embedding and rm are only ever given a bad option here: a good one would load a model)."""
    count("judge options")
    unknown = sorted(set(options) - _KNOWN[spec] - {"batch_size"})
    batch = options.get("batch_size")
    bad_batch = batch is not None and not (batch.isdigit() and int(batch) >= 1)
    heavy = not spec.isalpha()
    if not unknown and not bad_batch and heavy:
        options = {**options, "max_length": "abc"}  # keep it a bad input: never load a model here
    try:
        judge = make_judge(spec, JudgeOptions(extra=options))
    except ConfigError as error:
        message = str(error)
        if unknown:
            assert unknown[0] in message and ("known:" in message or "takes only batch_size" in message), message
        else:
            assert any(key in message for key in options), message
    else:
        assert not unknown and not bad_batch and not heavy, options
        assert judge.batch_size == (int(batch) if batch is not None else judge.batch_size)
