"""Joint states lost before the node's callback, counted from DDS sequence numbers.

Every DDS writer numbers the samples it writes, 1, 2, 3, ..., whoever reads
them; the subscriber gets each sample's number in the message info of its
take (``publication_sequence_number``, rclpy's callback with two arguments).
A sample that a reader never takes (a KEEP_LAST queue that overflowed, a
best-effort sample lost on the way) leaves a hole in its writer's numbers,
whatever the timing: a publisher that is late, bursty or paused loses
nothing and leaves none. So the count is exact: sent = taken + lost.

With the Fast DDS of the Jazzy wheels the info holds ``source_timestamp``,
``received_timestamp``, ``publication_sequence_number`` and
``reception_sequence_number`` (None): not the writer's GID. Samples of
several writers on one topic are told apart by what they carry and by
their numbers. By their joint names first, as the stamp heuristic did (an
arm's driver and a gripper's publish different ones): each name list (its
length, first and last name) has its own tracks, at most ``MAX_KEYS`` of
them. Within one name list each writer is a *track* holding the last
number taken from it, and a sample continues the track whose last number
is the highest below its own (the closest predecessor); the numbers
between them are lost. A sample with no track below it starts a new one,
lost nothing: a new writer, a writer that restarted (its numbers start
again from 1) and the first sample taken from a writer that wrote before
the node subscribed. At most ``MAX_TRACKS`` tracks are kept per name
list, the least recently continued one given up for a new one.

Writers of the same joint names (a misconfiguration, or a driver restarted
while its old process still publishes) are counted right when they move
in step (started together at one rate: the tracks may swap writers, the
numbers skipped are the same) and when the one seen later numbers below
the other. What cannot be told without a GID: a writer of the same names
first seen numbering above another's last number looks like a hole in the
other's numbers (counted lost once); and a hole in one writer's numbers
that spans another's last number is counted short. A single writer, or
writers of different names, are counted exactly.

A sample whose names cannot be read (malformed) continues the track that
its number continues, if one does: it is dropped as malformed, not lost.

No ROS here: the handler passes the numbers.
"""


class SequenceLosses:
    """``lost(sequence, key) -> int``: the samples skipped before the one
    numbered ``sequence`` by its writer (0 for a writer's first), the
    writers of each ``key`` (``key(names)``) followed apart."""

    MAX_TRACKS = 8
    MAX_KEYS = 8

    __slots__ = ("_keys",)

    def __init__(self):
        # key -> the last number taken from each writer, the most recently continued first
        self._keys = {}

    def lost(self, sequence: int, key=()) -> int:
        tracks = self._keys.get(key)
        if tracks is None:
            if len(self._keys) >= self.MAX_KEYS:
                return 0
            tracks = self._keys[key] = []
        # the hot path: one writer, in order
        if tracks and tracks[0] == sequence - 1:
            tracks[0] = sequence
            return 0
        best = -1
        for index, last in enumerate(tracks):
            if last < sequence and (best < 0 or last > tracks[best]):
                best = index
        if best < 0:
            # a new writer, a restarted one, or one first seen mid-stream
            tracks.insert(0, sequence)
            del tracks[self.MAX_TRACKS:]
            return 0
        lost = sequence - tracks.pop(best) - 1
        tracks.insert(0, sequence)
        return lost

    def skip(self, sequence: int):
        """A sample of no known key (unreadable): the track its number
        continues, if any, takes it, so that it leaves no hole."""
        for tracks in self._keys.values():
            for index, last in enumerate(tracks):
                if last == sequence - 1:
                    tracks[index] = sequence
                    return

    def tracks(self, key=()) -> int:
        """How many writers of ``key`` are followed."""
        return len(self._keys.get(key, ()))


def key(names) -> tuple:
    """The key of a joint state's writer by its names: their count, first and last."""
    return (len(names), names[0], names[-1]) if len(names) else ()
