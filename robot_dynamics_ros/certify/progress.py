"""The certificate search's progress line: gap, boxes open, rate, ETA."""
import sys
import time


def _clock(seconds):
    if seconds != seconds or seconds == float("inf"):
        return "?"
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class Progress:
    """One line on ``stream``, redrawn at most twice a second on a terminal,
    a new line every 10 s otherwise (a log file)."""

    def __init__(self, stream=sys.stderr, quiet=False):
        self.stream = stream
        self.quiet = quiet
        self.terminal = hasattr(stream, "isatty") and stream.isatty()
        self.last = 0.0

    def show(self, *, lower, upper, gap, open_boxes, rate, settled, elapsed, budget, final=False):
        now = time.monotonic()
        if self.quiet or (not final and now - self.last < (0.5 if self.terminal else 10.0)):
            return
        self.last = now
        # ETA: by the share of the joint-space volume settled so far (an
        # estimate: large boxes settle first), within the time budget
        eta = elapsed * (1.0 - settled) / settled if settled > 0 else float("inf")
        eta = min(eta, max(0.0, budget - elapsed))
        line = (f"gap {upper / lower:.4f} (K_c in [{lower:.6g}, {upper:.6g}], target {gap:g}) | "
                f"open {open_boxes} | {rate:.0f} boxes/s | settled {100 * settled:.1f}% | "
                f"{_clock(elapsed)} ETA {_clock(eta)}")
        if self.terminal:
            self.stream.write("\r" + line + ("\n" if final else "\x1b[K"))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
