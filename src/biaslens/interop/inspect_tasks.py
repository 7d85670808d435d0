"""biaslens's probes as inspect_ai tasks, registered with inspect through its ``inspect_ai``
entry point (``biaslens = "biaslens.interop.inspect_tasks"``): importing this module imports
the task of every method that declares one (:attr:`~biaslens.framework.spec.MethodSpec.
inspect_task`), whose ``@task`` registers it as ``biaslens/<name>``; ``inspect eval
biaslens/sib_mgc --model <any inspect model>`` then runs it."""

from __future__ import annotations

from biaslens.common import plugins
from biaslens.framework.registry import built_in_methods

TASKS = {
    spec.name: plugins.imported(spec.inspect_task)
    for spec in built_in_methods().values()
    if spec.inspect_task
}
"""Each method's inspect task, by the method's name."""
