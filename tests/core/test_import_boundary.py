"""The core is headless: importing every module must not load textual or rich."""
import pkgutil
import subprocess
import sys

import palinode_core


def test_core_modules_never_import_textual_or_rich():
    names = [m.name for m in pkgutil.walk_packages(palinode_core.__path__, "palinode_core.")
             if not m.name.endswith("__main__")]
    assert "palinode_core.ops.lifecycle" in names
    code = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
