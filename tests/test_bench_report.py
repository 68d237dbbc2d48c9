"""The benchmark report's pure parts, its isolation of failing benchmarks, and its plots."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # bench/ is a folder of scripts, not an installed package
    sys.path.insert(0, str(ROOT))

from bench import report  # noqa: E402
from bench.figures import figure  # noqa: E402
from bench.machine import cpu_model, memory_gib  # noqa: E402
from bench.report_plots import check_plot, draw_plot  # noqa: E402
from bench.report_render import (  # noqa: E402
    anchor,
    flatten,
    fmt,
    normalise,
    render_markdown,
    verdict,
)

MACHINE = {"cpu": "Test CPU", "cores": 2, "python": "3.11.7"}


def sample_figure(**overrides: Any) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "name": "Sample bench",
        "what": "what was measured",
        "baseline": ("base", 2.0),
        "measured": ("thing", 3.0),
        "unit": "s",
        "target": "ratio <= 1.25",
        "met": False,
        "notes": "missed because of X; Y would fix it",
        "rows": [("extra", 7, "ms")],
        "plot": {"kind": "box", "series": {"base": [1.0, 2.0], "thing": [3.0, 3.5]}},
    }
    arguments.update(overrides)
    return figure(**arguments)


def test_figure_ratio_defaults_to_measured_over_baseline() -> None:
    result = sample_figure()
    assert result["ratio"] == pytest.approx(1.5)
    assert json.loads(json.dumps(result)) == result  # travels as JSON between processes


def test_figure_rejects_target_without_verdict() -> None:
    with pytest.raises(ValueError, match="target and met go together"):
        sample_figure(met=None)
    with pytest.raises(ValueError, match="target and met go together"):
        sample_figure(target=None, met=True)


def test_figure_ratio_is_none_for_zero_baseline() -> None:
    assert sample_figure(baseline=("base", 0.0))["ratio"] is None


def test_normalise_keeps_standard_shape_and_shows_unknown_dicts_raw() -> None:
    standard = sample_figure()
    assert normalise("bench_sample", standard) == standard
    raw = normalise("bench_other", {"a": 1.5, "nested": {"b": 2}, "samples": [1, 2, 3]})
    assert raw["name"] == "bench_other"
    assert raw["raw"] == [("a", 1.5), ("nested.b", 2), ("samples", "3 values")]


def test_normalise_trainer_adapter_judges_the_09_target() -> None:
    raw = {
        "device": "cpu", "train_rows": 1000, "members": 10, "steps": 10, "batch_size": 32,
        "embedding_dim": 8, "checkpoint_every_steps": 5, "bare_samples_per_s": 100.0,
        "trainer_samples_per_s": 80.0, "ratio": 0.8, "target_ratio": 0.9,
    }  # fmt: skip
    missed = normalise("bench_trainer", raw)
    assert missed["met"] is False and "Missed" in missed["notes"]
    met = normalise("bench_trainer", {**raw, "trainer_samples_per_s": 95.0, "ratio": 0.95})
    assert met["met"] is True


def test_normalise_falls_back_to_raw_when_an_adapter_no_longer_fits() -> None:
    assert "raw" in normalise("bench_trainer", {"unexpected": 1})


def test_flatten_nested_dict_paths() -> None:
    assert flatten({"a": {"b": {"c": 1}}, "d": "x"}) == [("a.b.c", 1), ("d", "x")]


def test_fmt_numbers_for_tables() -> None:
    assert fmt(11290.4) == "11,290"
    assert fmt(0.123456) == "0.1235"
    assert fmt(12) == "12"
    assert fmt(None) == "-"
    assert fmt("a|b") == "a\\|b"


def test_verdict_and_anchor() -> None:
    assert verdict(sample_figure()) == "**missed**"
    assert verdict(sample_figure(met=True)) == "met"
    assert verdict(sample_figure(target=None, met=None)) == "no target"
    assert anchor("Serving: endpoint router + prediction server") == (
        "serving-endpoint-router--prediction-server"
    )


def test_render_markdown_reports_figures_failures_and_machine() -> None:
    entries = [
        {"module": "bench_sample", "seconds": 3.0, "result": sample_figure()},
        {"module": "bench_pipeline", "seconds": 1.0, "error": "RuntimeError: boom"},
    ]
    text = render_markdown(
        entries,
        MACHINE,
        quick=True,
        total_seconds=4.0,
        plot_links={"bench_sample": "img/bench-sample.png"},
    )
    assert "| cpu | Test CPU |" in text
    assert "[Sample bench](#sample-bench) | 2 s | 3 s | 1.5 | ratio <= 1.25 | **missed** |" in text
    assert "missed because of X; Y would fix it" in text
    assert "![Sample bench](img/bench-sample.png)" in text
    assert "## bench_pipeline" in text and "RuntimeError: boom" in text
    assert "| overhead <= 25% | **failed** (not measured) |" in text  # the target
    assert "```python" not in text  # docs examples are executed; the report has none


def test_cpu_model_and_memory_parse_proc_files() -> None:
    cpuinfo = "processor\t: 0\nmodel name\t: AMD EPYC 7B13\nflags\t: fpu\n"
    assert cpu_model(cpuinfo) == "AMD EPYC 7B13"
    assert cpu_model("processor : 0\n") == "unknown"
    assert memory_gib("MemTotal:       24641768 kB\nMemFree: 1 kB\n") == 23.5
    assert memory_gib("") is None


@pytest.mark.parametrize(
    ("plot", "message"),
    [
        ({"kind": "pie", "series": {"a": [1]}}, "plot kind"),
        ({"kind": "box", "series": {}}, "non-empty"),
        ({"kind": "line", "series": {"a": [1, "x"]}}, "non-number"),
        ({"kind": "bar", "categories": ["p50", "p99"], "series": {"a": [1]}}, "one value per"),
        ({"kind": "box", "series": {"a": [1]}, "reference": {"value": "x"}}, "reference"),
    ],
)
def test_check_plot_rejects_bad_descriptions(plot: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_plot(plot)


@pytest.mark.parametrize(
    "plot",
    [
        {"kind": "box", "series": {"a": [1.0, 2.0], "b": [3.0]}},
        {"kind": "line", "series": {"a": [1.0, 2.0, 2.5]}, "reference": {"label": "t", "value": 2}},
        {"kind": "bar", "categories": ["x", "y"], "series": {"a": [1.0, 2.0], "b": [2.0, 1.0]}},
    ],
)
def test_draw_plot_writes_a_png(tmp_path: Path, plot: dict[str, Any]) -> None:
    path = tmp_path / "img" / "plot.png"
    draw_plot(plot, "title", path)
    assert path.read_bytes().startswith(b"\x89PNG")
    assert [p.name for p in path.parent.iterdir()] == ["plot.png"]  # no temp file left


def test_discover_orders_known_benches_first(tmp_path: Path) -> None:
    for name in ("bench_zeta", "bench_tuning", "bench_cli", "helper"):
        (tmp_path / f"{name}.py").write_text("")
    assert report.discover(tmp_path) == ["bench_cli", "bench_tuning", "bench_zeta"]


def test_atomic_write_text_replaces_whole_file(tmp_path: Path) -> None:
    target = tmp_path / "docs" / "out.md"
    report.atomic_write_text(target, "first")
    report.atomic_write_text(target, "second")
    assert target.read_text() == "second"
    assert [p.name for p in target.parent.iterdir()] == ["out.md"]


def test_build_report_reports_a_failing_bench_and_still_runs_the_others(tmp_path: Path) -> None:
    doc = tmp_path / "docs" / "benchmarks.md"
    # bench_cli: the quickest real bench (one process of each command), so the test stays short.
    entries = report.build_report(
        ["bench_does_not_exist", "bench_cli"], quick=True, doc=doc, img_dir=doc.parent / "img"
    )
    failed, cli = entries
    assert "No module named 'bench.bench_does_not_exist'" in failed["error"]
    assert cli["result"]["name"] == "CLI start-up"
    text = doc.read_text(encoding="utf-8")
    assert "**failed**" in text and "## CLI start-up" in text
    assert (doc.parent / "img" / "bench-cli.png").is_file()
    assert "](img/bench-cli.png)" in text


def test_run_isolated_stops_a_bench_past_its_time_limit() -> None:
    entry = report.run_isolated("bench_tuning", True, timeout=0.05)
    assert "result" not in entry
    assert "timed out after 0 s and was stopped" in entry["error"]


def test_main_refuses_unknown_bench_names(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        report.main(["--only", "bench_nope"])
    assert "unknown benchmark(s) ['bench_nope']" in capsys.readouterr().err


def _fake_isolated(values: dict[str, float]) -> Any:
    def isolated(module: str, quick: bool, timeout: float) -> dict[str, Any]:
        name = {"bench_cli": "CLI start-up", "bench_tuning": "Tuning efficiency"}[module]
        result = sample_figure(name=name, measured=("thing", values[module]), plot=None)
        return {"module": module, "seconds": 1.0, "result": result}

    return isolated


def test_build_report_partial_run_keeps_the_other_sections_with_their_dates(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    doc = tmp_path / "benchmarks.md"
    both = ["bench_cli", "bench_tuning"]
    monkeypatch.setattr(
        report, "run_isolated", _fake_isolated({"bench_cli": 3.0, "bench_tuning": 5.0})
    )
    report.build_report(both, quick=False, doc=doc, img_dir=tmp_path / "img")
    monkeypatch.setattr(
        report, "run_isolated", _fake_isolated({"bench_cli": 3.0, "bench_tuning": 7.0})
    )
    report.build_report(
        ["bench_tuning"], quick=False, doc=doc, img_dir=tmp_path / "img", keep_others=True
    )
    text = doc.read_text(encoding="utf-8")
    assert text.index("## CLI start-up") < text.index("## Tuning efficiency")  # report order
    assert "re-ran 1 of the 2 benchmarks; the other 1 sections are kept" in text
    assert "| measured: thing | 7 s |" in text and "| measured: thing | 5 s |" not in text
    assert "| measured: thing | 3 s |" in text  # the kept section
    assert text.count("; ran 1 s, on ") == 2
    record = json.loads((tmp_path / "benchmarks.json").read_text(encoding="utf-8"))
    assert [e["module"] for e in record["entries"]] == both


def test_build_report_never_mixes_quick_and_full_entries(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    doc = tmp_path / "benchmarks.md"
    monkeypatch.setattr(
        report, "run_isolated", _fake_isolated({"bench_cli": 3.0, "bench_tuning": 5.0})
    )
    report.build_report(["bench_cli", "bench_tuning"], quick=False, doc=doc, img_dir=tmp_path)
    report.build_report(["bench_tuning"], quick=True, doc=doc, img_dir=tmp_path, keep_others=True)
    text = doc.read_text(encoding="utf-8")
    assert "## CLI start-up" not in text and "This is a quick pass" in text


def test_load_entries_ignores_a_damaged_or_foreign_record(tmp_path: Path) -> None:
    from bench.report_store import load_entries

    path = tmp_path / "benchmarks.json"
    for text in ("{not json", "[]", '{"format": "other", "quick": false, "entries": []}'):
        path.write_text(text, encoding="utf-8")
        assert load_entries(path, quick=False) == []
    assert load_entries(tmp_path / "absent.json", quick=False) == []
