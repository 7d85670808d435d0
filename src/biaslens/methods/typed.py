"""The settings of every built-in method and the options of every built-in backend, as the
typed models they are declared as, for a call an editor completes and checks::

    from biaslens.methods.typed import MGCSettings, HFOptions
    biaslens.run(MGCSettings(w_kinds=("dates",), limit=5), backend=HFOptions(dtype="float32"))

Each name here is the one declaration the command line, ``biaslens.settings(method)`` and the
docs read too; a test checks that every built-in method and backend is listed.
"""

from __future__ import annotations

from biaslens.methods.cid.audit import AuditSettings
from biaslens.methods.cid.pair import PairSettings
from biaslens.methods.cid.sensitivity import SensitivitySettings
from biaslens.methods.qa.lei_eval.settings import LeiEvalSettings
from biaslens.methods.qa.lei_train.settings import LeiTrainSettings
from biaslens.methods.qa.unqover import UnqoverSettings
from biaslens.methods.sib.detect.settings import DetectSettings
from biaslens.methods.sib.mgc.settings import MGCSettings
from biaslens.methods.sib.toy import ToySettings
from biaslens.models.backends.hf import HFOptions
from biaslens.models.backends.inspect import InspectOptions
from biaslens.models.backends.openai import OpenAIOptions
from biaslens.models.backends.replicated import ReplicaOptions
from biaslens.models.backends.vllm import VLLMOptions

__all__ = [
    "AuditSettings",
    "DetectSettings",
    "HFOptions",
    "InspectOptions",
    "LeiEvalSettings",
    "LeiTrainSettings",
    "MGCSettings",
    "OpenAIOptions",
    "PairSettings",
    "ReplicaOptions",
    "SensitivitySettings",
    "ToySettings",
    "UnqoverSettings",
    "VLLMOptions",
]
