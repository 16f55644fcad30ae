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
``reception_sequence_number`` (None): not the writer's GID. So writers are
told apart by their numbers, with their joint names (their count, first
and last name: ``key``) as a hint. Each writer is a *track*: the last
number taken from it and the names that came with it. A sample

1. continues a track it follows on directly (the number after its last,
   one with the same names first): nothing lost;
2. else continues the track whose last number is the highest below its own
   (the closest predecessor) if that track's names are its own: the numbers
   between them are lost;
3. else starts a new track, nothing lost: a new writer, a writer that
   restarted (its numbers start again from 1), the first sample taken from
   a writer that wrote before the node subscribed, and a hole at which the
   names change.

At most ``MAX_TRACKS`` tracks are kept, the least recently continued one
given up for a new one. The count is never high for one writer, whatever
names it publishes (its old tracks stay below its live one): a writer of
one name list, the common case, is counted exactly; one that alternates
name lists (an arm's and a gripper's joints in turn) misses a hole only
where the names change across it. Writers of different names whose numbers
stay apart (started at different times) are counted exactly; in step
(started together at one rate) a hole may be missed, never added. Writers
of the same names (a misconfiguration, or a driver restarted while its old
process still publishes) cannot be told apart: in step they are counted
exactly (the tracks may swap writers, the numbers skipped stay the same),
but one first seen numbering above the other's last number looks like a
hole in the other's numbers and is counted lost once.

A sample whose names cannot be read (malformed) continues the track that
its number follows on, if one does: it is dropped as malformed, not lost.

No ROS here: the handler passes the numbers.
"""


class SequenceLosses:
    """``lost(sequence, key) -> int``: the samples skipped before the one
    numbered ``sequence`` by its writer (0 for a writer's first), ``key``
    the names it carries (``key(names)``)."""

    MAX_TRACKS = 8

    __slots__ = ("_tracks",)

    def __init__(self):
        # [last number, key] of each writer followed, the most recently continued first
        self._tracks = []

    def lost(self, sequence: int, key=()) -> int:
        tracks = self._tracks
        # the hot path: one writer, in order
        if tracks:
            track = tracks[0]
            if track[0] == sequence - 1 and track[1] == key:
                track[0] = sequence
                return 0
        follows = closest = None
        for track in tracks:
            last = track[0]
            if last == sequence - 1:
                if track[1] == key:
                    return self._continue(track, sequence, key, 0)
                if follows is None:
                    follows = track
            if last < sequence and (closest is None or last > closest[0]):
                closest = track
        if closest is not None and closest[1] == key:
            return self._continue(closest, sequence, key, sequence - closest[0] - 1)
        if follows is not None:
            return self._continue(follows, sequence, key, 0)
        # a new writer, a restarted one, one first seen mid-stream, or new names after a hole
        tracks.insert(0, [sequence, key])
        del tracks[self.MAX_TRACKS:]
        return 0

    def _continue(self, track, sequence: int, key, lost: int) -> int:
        track[0], track[1] = sequence, key
        tracks = self._tracks
        if tracks[0] is not track:
            # by identity: two tracks may hold equal values
            del tracks[next(i for i, t in enumerate(tracks) if t is track)]
            tracks.insert(0, track)
        return lost

    def skip(self, sequence: int):
        """A sample of unknown names (unreadable): the track its number
        follows on, if any, takes it, so that it leaves no hole."""
        for track in self._tracks:
            if track[0] == sequence - 1:
                track[0] = sequence
                return

    def tracks(self) -> int:
        """How many writers are followed."""
        return len(self._tracks)


def key(names) -> tuple:
    """A joint state's names as the hint to its writer: their count, first and last."""
    return (len(names), names[0], names[-1]) if len(names) else ()
