"""One timed trial of benchmark mode: the bracket around a forward, and how its CUDA events and its
wall clock combine into the trial's time (timing.py runs the trials; docs/formats/harness.md
describes the method). Imports no torch: the GPU comes in through the small interface below
(TorchGpu in timing.py; a simulated GPU in tests/test_trial_timer.py).

The bracket, on the host:

    persisting L2 off; device-wide synchronise        nothing of the last trial is left
    t0 = host clock
    record `pre`; flush L2 (write 4x its size)        the GPU is busy with the flush: the cover
    record `start`; forward; record `end`             the forward's launches queue behind it
    device-wide synchronise; t1 = host clock

Event time (start..end) is the forward's GPU time. The host's time to reach its first launch
(Python, the launchers' argument checks, the launch call) passes while the GPU is still flushing,
so it is not counted, for any contender. Before issue 28 the bracket synchronised after the flush,
the GPU sat idle at `start`, and that host time was counted in both the events and the wall: a
few us for eager's one aten call, about 20 us more for a ModelNew.forward that allocates its
output and calls a ctypes launcher (issue 28 measured 17-20 us on a 130 us kernel). For a 10 us
kernel that difference decides the reward tier, and even an equal host time on both sides pulls
every small kernel's speedup towards 1. A forward whose host work outlasts the cover (the flush:
about 50-70 us on an H100/H200) leaves the GPU idle after `start`, and that idle time counts, as
it must for a host-bound contender.

The wall clock (t0..t1, closed by a device-wide synchronise) sees what events on the current stream
cannot: work on other streams, anything the synchronise waits for. `wall - cover`, with the cover
(pre..start) measured by events in every trial so that the flush's own jitter stays out, minus the
idle overhead (the median of the same quantity in brackets around no forward) is on the events'
scale. A trial's time is the larger of the two.

Every kernel a solution may launch is ordered behind the flush: the current stream is the legacy
default stream, which blocking streams wait for, and the compile farm refuses stream creation,
cudaStreamPerThread/Legacy and threads (tests/bench_suite/attacks 07, 09, 28). Work on a
non-blocking stream, could one be had, would overlap the flush unseen (at most the cover's length)
and be counted past it by the wall clock.

Threading: one Timer per harness process, used from its main thread only.
"""

import statistics


class GpuInterface:
    """What the Timer needs of the GPU. Times are microseconds; `clock()` is host seconds."""

    def prepare(self):
        """Untimed set-up before a trial (persisting L2 off)."""
        raise NotImplementedError

    def sync(self):
        """Device-wide synchronise."""
        raise NotImplementedError

    def cover(self):
        """Queues the L2 flush on the current stream (returns at once)."""
        raise NotImplementedError

    def event(self):
        """A new timing event: `.record()` on the current stream, `.elapsed_us(later)`."""
        raise NotImplementedError

    def clock(self):
        raise NotImplementedError


class Trial:
    """One bracket's raw numbers: the forward's outputs, event time, wall time and cover time (us).
    `raw()` is the form kept in the result (timing.raw_event_wall_us)."""

    __slots__ = ("out", "event_us", "wall_us", "cover_us")

    def __init__(self, out, event_us, wall_us, cover_us):
        self.out = out
        self.event_us = event_us
        self.wall_us = wall_us
        self.cover_us = cover_us

    def raw(self):
        return [round(self.event_us, 3), round(self.wall_us, 3), round(self.cover_us, 3)]


class Timer:
    """Runs brackets and turns their raw numbers into trial times (see the module comment)."""

    def __init__(self, gpu):
        self.gpu = gpu
        self._pre = gpu.event()
        self._start = gpu.event()
        self._end = gpu.event()
        self.idle_samples = []  # wall - cover of brackets around no forward, us

    def bracket(self, fn, inputs):
        """Runs fn(inputs) (None: no forward) in one bracket; returns a Trial."""
        g = self.gpu
        g.prepare()
        g.sync()
        t0 = g.clock()
        self._pre.record()
        g.cover()
        self._start.record()
        out = fn(inputs) if fn is not None else None
        self._end.record()
        g.sync()
        t1 = g.clock()
        return Trial(out, self._start.elapsed_us(self._end), (t1 - t0) * 1e6,
                     self._pre.elapsed_us(self._start))

    def sample_idle(self, n=1):
        """n brackets around no forward, added to the idle samples."""
        for _ in range(n):
            t = self.bracket(None, None)
            self.idle_samples.append(t.wall_us - t.cover_us)

    @property
    def idle_us(self):
        return statistics.median(self.idle_samples) if self.idle_samples else 0.0

    def trial_us(self, event_us, wall_us, cover_us):
        """max(event time, wall - cover - idle overhead)."""
        return max(event_us, wall_us - cover_us - self.idle_us)

    def wall_decided(self, event_us, wall_us, cover_us):
        """Whether the wall clock, not the events, gave this trial's time (for the report)."""
        return wall_us - cover_us - self.idle_us > event_us
