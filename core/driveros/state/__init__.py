"""The state directory: what every driveros process created, registered to its owner.

    lease = await Lease.create("cache", paths=[cache_dir])   # before creating cache_dir
    ...                                                       # use it
    await lease.release()                                     # remove it and the record

Every run's resources (scratch copies and their ``git worktree`` entries, the diagnostics
feed's caches, sockets) are registered as a :class:`Lease` naming the owning process (pid,
start time, boot id, host). :func:`collect_garbage` (run at the start of every entry
point: the server, the CLI, ``driveros acp``, the eval runner, the issue bot; and by
``driveros gc``) removes what belongs to processes that are gone. A lease marked with
:meth:`Lease.keep` (a proposal waiting across a server restart) survives its owner until
:data:`KEPT_MAX_AGE_S`. The sessions ``driveros acp`` keeps (:data:`SESSIONS_DIR`) are
removed once unused for :data:`SESSION_MAX_AGE_S` or past the newest
:data:`SESSION_MAX_COUNT`. :func:`repo_lock` serializes ``git worktree`` commands per
repository within a process and across processes.

The directory is ``$DRIVEROS_STATE_DIR``, else ``$XDG_STATE_HOME/driveros``, else
``~/.local/state/driveros`` (see docs/state.md).
"""

from driveros.state._cleanup import drop_worktree_entries, remove_paths
from driveros.state._gc import (
    KEPT_MAX_AGE_S,
    Collected,
    GcReport,
    collect_garbage,
    gc_reason,
    startup_gc,
    startup_gc_meanwhile,
)
from driveros.state._lease import (
    Kept,
    Lease,
    LeaseRecord,
    kept_leases,
    list_leases,
    new_lease_id,
)
from driveros.state._lock import file_lock, kept_lock, repo_lock
from driveros.state._mounts import mounts_under, unmount_under
from driveros.state._owner import Owner
from driveros.state._paths import STATE_DIR_VAR, state_dir
from driveros.state._sessions import (
    SESSION_MAX_AGE_S,
    SESSION_MAX_COUNT,
    SESSIONS_DIR,
    ForgottenSession,
)

__all__ = [
    "KEPT_MAX_AGE_S",
    "SESSIONS_DIR",
    "SESSION_MAX_AGE_S",
    "SESSION_MAX_COUNT",
    "STATE_DIR_VAR",
    "Collected",
    "ForgottenSession",
    "GcReport",
    "Kept",
    "Lease",
    "LeaseRecord",
    "Owner",
    "collect_garbage",
    "drop_worktree_entries",
    "file_lock",
    "gc_reason",
    "kept_leases",
    "kept_lock",
    "list_leases",
    "mounts_under",
    "new_lease_id",
    "remove_paths",
    "repo_lock",
    "startup_gc",
    "startup_gc_meanwhile",
    "state_dir",
    "unmount_under",
]
