"""Shared set-up: Taichi on the CPU in f64 (the oracle precision), corpus report."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tiphys  # noqa: E402

tiphys.init(arch="cpu", precision="f64")

# (test group) -> {model: status}; printed at the end of the run.
CORPUS_REPORT: dict[str, dict[str, str]] = {}


def record(group: str, model: str, status: str) -> None:
    CORPUS_REPORT.setdefault(group, {})[model] = status


@pytest.fixture
def report():
    return record


def pytest_terminal_summary(terminalreporter):
    if not CORPUS_REPORT:
        return
    tr = terminalreporter
    tr.section("tiphys corpus report")
    for group, results in sorted(CORPUS_REPORT.items()):
        counts = {}
        for status in results.values():
            key = status.split(":")[0].split(" (")[0]
            counts[key] = counts.get(key, 0) + 1
        summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        tr.write_line(f"{group}: {len(results)} models: {summary}")
        for model, status in sorted(results.items()):
            if not status.startswith("match") or os.environ.get("TIPHYS_REPORT_ALL"):
                tr.write_line(f"    {model}: {status}")
