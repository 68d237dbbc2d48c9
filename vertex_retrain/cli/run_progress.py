"""Progress of a local run, read from kfp.local's output and the training replicas' logs.

kfp.local prints coloured INFO lines ("Executing task 'train'", "Task 'train' finished with
status SUCCESS") and streams each task's output; the reference trainer's primary replica logs
``progress step=700/1848 epoch=2 loss=2.4456``. :class:`RunProgress` turns those into:

- on a terminal, a live line: the current step, its elapsed time and, while training, the
  epoch, step, loss and ETA; each finished step stays above it as one line;
- off a terminal (a pipe, a log file), plain lines without ANSI codes: one per step started
  and finished, training progress at every tenth of the way, each executor warning once.

A step is shown by its display name (``register-champion``), not by kfp.local's name for it
(``register-model-2``), when the run's pipeline gives it one
(:mod:`vertex_retrain.cli.task_names`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TextIO

from rich.console import Console
from rich.live import Live
from rich.text import Text

from vertex_retrain.cli.console import is_terminal, make_console, strip_ansi

_STARTED = re.compile(r"Executing task '([^']+)'")
_FINISHED = re.compile(r"Task '([^']+)' finished with status (\w+)")
_PIPELINE = re.compile(r"Pipeline '([^']+)' finished with status (\w+)")
_TRAINING = re.compile(
    r"^\s*(?:\[trial (?P<trial>\d+)\])?\s*\[workerpool\d+-\d+\].*?progress "
    r"step=(?P<step>\d+)/(?P<total>\d+) epoch=(?P<epoch>\d+) loss=(?P<loss>[-+\w.]+)"
)
_WARNING = re.compile(r"\[executor\] warning: (?:warning: )?(.+)$")
_NOTICE = re.compile(r"\[executor\] (?!warning)(.+)$")
_ERROR = re.compile(r"\bERROR\b")
# Lines of vertex_retrain.backends.local.kfp_adapter.kfp_tasks: a task served from the cache,
# or skipped.
_CACHED = re.compile(r"Task '([^']+)' cached from run (\S+)")
_SKIPPED = re.compile(r"Skipping task '([^']+)': (.+)$")


def format_duration(seconds: float) -> str:
    """``83`` -> ``1m23s``; under a minute, one decimal (``4.2s``)."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


@dataclass
class TrainingProgress:
    """The latest progress line of the running training job (or trial)."""

    step: int
    total: int
    epoch: int
    loss: str
    trial: str | None
    eta_seconds: float | None

    def describe(self) -> str:
        """``epoch 2, step 700/1848 (38%), loss 2.4456, ETA 3m10s``."""
        share = 100 * self.step / self.total if self.total else 0.0
        who = f"trial {self.trial}: " if self.trial else ""
        eta = "" if self.eta_seconds is None else f", ETA {format_duration(self.eta_seconds)}"
        return (
            f"{who}epoch {self.epoch}, step {self.step}/{self.total} ({share:.0f}%), "
            f"loss {self.loss}{eta}"
        )


@dataclass
class _Step:
    name: str
    started: float
    training: TrainingProgress | None = None
    first_progress: tuple[float, int] | None = None
    shown_tenths: set[int] = field(default_factory=set)


class _LiveLine:
    """The live status line; rendered on each refresh so the elapsed time keeps moving."""

    def __init__(self, progress: RunProgress) -> None:
        self._progress = progress

    def __rich__(self) -> Text:
        step = self._progress.current
        if step is None:
            return Text("")
        elapsed = format_duration(self._progress.clock() - step.started)
        line = Text(f"… {step.name} ", style="bold")
        line.append(elapsed, style="cyan")
        if step.training is not None:
            line.append(f"  {step.training.describe()}")
        return line


class RunProgress:
    """Receives every output line of a local run and shows the progress (see module doc).

    Args:
        out: Where progress goes (stdout, or stderr when stdout carries JSON).
        verbose: Show every line as well (without ANSI codes off a terminal).
        clock: Monotonic seconds (tests pass a fake).
        names: kfp.local's task name -> the display name shown for it
            (:func:`vertex_retrain.cli.task_names.display_names`); a name not in it is shown
            as it is.
    """

    def __init__(
        self,
        out: TextIO,
        *,
        verbose: bool = False,
        clock: Callable[[], float] = time.monotonic,
        names: Mapping[str, str] | None = None,
    ) -> None:
        self._out = out
        self._verbose = verbose
        self._names = dict(names or {})
        self.clock = clock
        self._terminal = is_terminal(out)
        self._console: Console = make_console(out)
        self.current: _Step | None = None
        self.finished: list[tuple[str, str, float]] = []
        self._warnings: set[str] = set()
        self._live: Live | None = None
        if self._terminal:
            self._live = Live(
                _LiveLine(self),
                console=self._console,
                refresh_per_second=4,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start()

    def _print(self, text: str, style: str | None = None) -> None:
        if self._terminal:
            self._console.print(Text(text, style=style or ""), soft_wrap=True)
        else:
            self._out.write(text + "\n")
            self._out.flush()

    def feed(self, raw: str) -> None:
        """Takes one line of output (ANSI codes allowed)."""
        line = strip_ansi(raw).rstrip()
        if self._verbose:
            self._print(raw.rstrip() if self._terminal else line)
        if started := _STARTED.search(line):
            self._start(self._shown(started[1]))
        elif finished := _FINISHED.search(line):
            self._finish(self._shown(finished[1]), finished[2])
        elif cached := _CACHED.search(line):
            name = self._shown(cached[1])
            self.finished.append((name, "CACHED", 0.0))
            if not self._verbose:
                self._print(f"↺ step {name}: cached from run {cached[2]}", "cyan")
        elif skipped := _SKIPPED.search(line):
            if not self._verbose:
                self._print(f"- step {self._shown(skipped[1])}: skipped ({skipped[2]})")
        elif training := _TRAINING.search(line):
            self._train(training)
        elif warning := _WARNING.search(line):
            if warning[1] not in self._warnings and not self._verbose:
                self._warnings.add(warning[1])
                self._print(f"  warning: {warning[1]}", "yellow")
        elif notice := _NOTICE.search(line):
            if not self._verbose:
                self._print(f"  {notice[1]}")
        elif (_PIPELINE.search(line) or _ERROR.search(line)) and not self._verbose:
            self._print(line.split(" - ", 2)[-1], "red" if "FAILURE" in line else None)

    def _shown(self, name: str) -> str:
        return self._names.get(name, name)

    def _start(self, name: str) -> None:
        self.current = _Step(name, self.clock())
        if not self._terminal and not self._verbose:
            self._print(f"step {name}: running")

    def _finish(self, name: str, status: str) -> None:
        step = self.current if self.current and self.current.name == name else None
        elapsed = self.clock() - step.started if step else 0.0
        self.finished.append((name, status, elapsed))
        self.current = None
        ok = status == "SUCCESS"
        word = "done" if ok else status
        if not self._verbose:
            mark = "✓" if ok else "✗"
            self._print(
                f"{mark} step {name}: {word} in {format_duration(elapsed)}",
                "green" if ok else "bold red",
            )

    def _train(self, match: re.Match[str]) -> None:
        step = self.current
        if step is None:
            return
        now = self.clock()
        done, total = int(match["step"]), int(match["total"])
        if step.first_progress is None or done < step.first_progress[1]:
            step.first_progress = (now, done)  # a restart (preemption, new trial) starts over
        first_time, first_step = step.first_progress
        rate = (done - first_step) / (now - first_time) if now > first_time else 0.0
        eta = (total - done) / rate if rate > 0 else None
        step.training = TrainingProgress(
            done, total, int(match["epoch"]), match["loss"], match["trial"], eta
        )
        tenth = int(10 * done / total) if total else 0
        key = tenth if match["trial"] is None else hash((match["trial"], tenth))
        if not self._terminal and not self._verbose and key not in step.shown_tenths:
            step.shown_tenths.add(key)
            self._print(f"  {step.name}: {step.training.describe()}")

    def close(self) -> None:
        """Stops the live line (call once, when the run has ended)."""
        if self._live is not None:
            self._live.stop()
            self._live = None
