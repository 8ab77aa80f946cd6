"""``python -m webclient replay ... --resume FILE``: an interrupted capture and the streams that resumed it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.resume_streams import (
    USAGE,
    answer_view,
    cut_inside,
    events_of,
    from_event,
    last_number_before,
    numbered,
    response_id,
    uninterrupted_view,
)
from tests.route_fixtures import RESPONSES
from webclient._cli import main

K1, K2 = numbered(USAGE)[5], numbered(USAGE)[10]


def replay(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any] | None, str]:
    code = main(["replay", "--route", RESPONSES, *args])
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert len(lines) <= 1
    return code, json.loads(lines[0]) if lines else None, captured.err


def files(tmp_path: Path, *captures: bytes) -> list[str]:
    paths = []
    for i, data in enumerate(captures):
        path = tmp_path / f"capture{i}.sse"
        path.write_bytes(data)
        paths.append(str(path))
    return paths


def with_resumes(paths: list[str]) -> list[str]:
    return [arg for path in paths[1:] for arg in ("--resume", path)] + [paths[0]]


@pytest.mark.parametrize("chunking", [[], ["--chunk-size", "1"], ["--chunk-size", "7"], ["--split-at", "5,100,999"]])
def test_an_interrupted_capture_and_its_resume_print_the_uninterrupted_result(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], chunking: list[str]) -> None:
    paths = files(tmp_path, cut_inside(USAGE, K1), from_event(USAGE, K1 - 2))

    code, out, _ = replay([*chunking, *with_resumes(paths)], capsys)

    assert code == 0 and out is not None and out["committed"] is True and out["resume"] is None
    assert answer_view(out) == answer_view(uninterrupted_view(USAGE)[0])  # type: ignore[arg-type]


def test_a_resume_cut_again_and_resumed_again_prints_the_uninterrupted_result(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    second = from_event(USAGE, K1 - 1, K2) + events_of(USAGE)[K2][:30]
    paths = files(tmp_path, cut_inside(USAGE, K1), second, from_event(USAGE, K2 - 1))

    code, out, _ = replay(with_resumes(paths), capsys)

    assert code == 0 and out is not None
    assert answer_view(out) == answer_view(uninterrupted_view(USAGE)[0])  # type: ignore[arg-type]


def test_the_interrupted_capture_alone_prints_its_resume_point(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = replay(files(tmp_path, cut_inside(USAGE, K1)), capsys)

    assert code == 1 and out is not None and (out["outcome"], out["stage"]) == ("truncated", "eof")
    assert out["resume"] == {"response_id": response_id(USAGE), "sequence_number": last_number_before(USAGE, K1)}


def test_a_resume_with_a_gap_is_protocol_error_and_a_further_resume_completes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = files(tmp_path, cut_inside(USAGE, K1), from_event(USAGE, K1 + 1), from_event(USAGE, K1))

    code, out, _ = replay(with_resumes(paths[:2]), capsys)
    assert code == 1 and out is not None and (out["outcome"], out["stage"]) == ("protocol_error", "sequence_gap")
    assert out["resume"]["sequence_number"] == last_number_before(USAGE, K1)

    code, out, _ = replay(with_resumes(paths), capsys)
    assert code == 0 and out is not None and out["committed"] is True


def test_a_resume_after_a_capture_that_cannot_be_resumed_is_an_option_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = files(tmp_path, USAGE, from_event(USAGE, K1))

    code, out, err = replay(with_resumes(paths), capsys)

    assert (code, out) == (2, None)
    assert "--resume #1" in err and "complete" in err


def test_an_unreadable_resume_capture_is_an_input_error_before_any_output(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = files(tmp_path, cut_inside(USAGE, K1))

    code, out, err = replay(["--resume", str(tmp_path / "missing.sse"), paths[0]], capsys)

    assert (code, out) == (2, None) and err.count("\n") == 1
