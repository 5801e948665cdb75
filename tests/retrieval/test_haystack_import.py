import json
import subprocess
import sys

SCRIPT = """
import json, sys
from haygraph.retrieval.haystack_import import import_haystack_without_torch
first = import_haystack_without_torch()
again = import_haystack_without_torch()
import haystack
loaded_with_haystack = "torch" in sys.modules
from haystack.utils import ComponentDevice
device = ComponentDevice.resolve_device(None).to_torch()  # a component that needs torch loads it
print(json.dumps({"first": first, "again": again, "with_haystack": loaded_with_haystack,
                  "device": str(device), "after": "torch" in sys.modules}))
"""


def test_haystack_imports_without_torch_and_loads_it_on_use():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out == {"first": True, "again": False, "with_haystack": False, "device": "cpu", "after": True}


def test_nothing_to_do_once_torch_is_imported():
    code = (
        "import torch\nfrom haygraph.retrieval.haystack_import import import_haystack_without_torch\n"
        "print(import_haystack_without_torch())"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"
