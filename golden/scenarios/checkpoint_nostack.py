"""Same as ``checkpoint`` but recorded with with_stack=False (no python_function rows to lean on)."""

import dataclasses

from golden.scenarios import checkpoint as _ck

SCENARIO = dataclasses.replace(
    _ck.SCENARIO,
    name="checkpoint_nostack",
    title="every MLP block wrapped in torch.utils.checkpoint where no recompute was intended (with_stack=False)",
)

run = _ck.make_run(False)
