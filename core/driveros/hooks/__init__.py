"""The user's hooks: their own programs run around a run's tool calls (docs/extending.md).

hooks = load_hooks(workspace, user_dir=user_config_dir(), trusted=False)
policy = gate(policy, hooks, run_id=run_id)      # pre_tool: exit 2 blocks
on_event = watching(on_event, hooks)             # run_start, post_tool, run_end
"""

from driveros.hooks._config import HookEvent, HookSet, HookSpec, load_hooks
from driveros.hooks._gate import HookedPolicy, gate, watching
from driveros.hooks._run import HookOutcome, run_hook

__all__ = [
    "HookEvent",
    "HookOutcome",
    "HookSet",
    "HookSpec",
    "HookedPolicy",
    "gate",
    "load_hooks",
    "run_hook",
    "watching",
]
