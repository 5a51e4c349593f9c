"""Progress of a Spark run (``--progress bar|json``): each phase of the run is one progress stage
(:mod:`neardup.dedup.progress`), advancing by the Spark tasks its jobs have completed.

The phases are the run's job descriptions (``read + sign``, ``LSH candidates``, ``verify: estimates``,
``write``, …: what the Spark UI shows). A phase's jobs are not known when it starts (each action
plans its own, adaptive execution adds more), so a stage has no total and no ETA: ``done`` counts the
completed tasks of every job submitted since the phase began, read from Spark's status tracker
every :data:`POLL_S` seconds by a daemon thread, and once more when the phase ends.
"""
from __future__ import annotations

import threading

from ...dedup.progress import begin

POLL_S = 0.5


class PhaseProgress:
    """The phases of one run on ``sc`` (a SparkContext) as progress stages; :meth:`close` at the end."""

    def __init__(self, sc):
        self.tracker = sc.statusTracker()
        self.lock = threading.Lock()
        self.stage = None
        self.first_job = 0
        self.counted = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._poll_loop, name="neardup-spark-progress", daemon=True)
        self.thread.start()

    def phase(self, what: str | None) -> None:
        """The phase ``what`` begins (None: none until the next); the one before ends, its tasks counted."""
        with self.lock:
            self._end()
            if what:
                jobs = self.tracker.getJobIdsForGroup(None)
                self.first_job = max(jobs) + 1 if jobs else 0
                self.counted = 0
                self.stage = begin(what, unit="task")

    def close(self) -> None:
        """Stop polling; the open phase ends (its last count skipped if the JVM is gone)."""
        self.stopping.set()
        self.thread.join(timeout=5)
        with self.lock:
            try:
                self._end()
            except Exception:      # (a JVM that died: the run's own error says so)
                if self.stage is not None:
                    self.stage.end()
                    self.stage = None

    def _end(self) -> None:
        if self.stage is not None:
            self._poll()
            self.stage.end()
            self.stage = None

    def _poll(self) -> None:
        """Add the phase's tasks completed since the last poll (called under the lock)."""
        stage_ids = set()          # (a stage reused by a later job is listed by both)
        for job in self.tracker.getJobIdsForGroup(None):
            info = self.tracker.getJobInfo(job) if job >= self.first_job else None
            stage_ids.update(info.stageIds if info is not None else ())
        done = 0
        for stage_id in stage_ids:
            stage = self.tracker.getStageInfo(stage_id)
            done += stage.numCompletedTasks if stage is not None else 0
        if done > self.counted:
            self.stage.update(done - self.counted)
            self.counted = done

    def _poll_loop(self) -> None:
        while not self.stopping.wait(POLL_S):
            with self.lock:
                if self.stage is not None:
                    try:
                        self._poll()
                    except Exception:      # (a JVM going away mid-poll: the run reports it, not this)
                        return
