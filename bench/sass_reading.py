"""Reading sm_90 machine code for bench/sass_report.py: the tools (cuobjdump, nvdisasm), the
disassembly with its source lines and control words, resource usage, loops, and what a path of
instructions keeps in flight."""

import glob
import os
import re
import shutil
import subprocess
import sys

CLASSES = [  # (class, opcodes as prefixes of the full opcode), first match wins
    ("shuffle", ("SHFL",)),
    ("move", ("MOV", "UMOV", "IMAD.MOV", "CS2R", "S2R", "S2UR", "R2UR")),
    ("fp32", ("FADD", "FMUL", "FFMA", "FSET", "FSETP", "FMNMX", "FSEL", "FCHK", "FSWZADD")),
    ("fp64", ("DADD", "DMUL", "DFMA", "DSETP", "DMNMX")),
    ("mufu", ("MUFU",)),
    ("conversion", ("F2F", "F2I", "I2F", "F2FP", "I2FP", "FRND")),
    ("global load", ("LDG",)),
    ("global store", ("STG", "RED", "ATOMG")),
    ("shared", ("LDS", "STS", "ATOMS")),
    ("local", ("LDL", "STL")),
    ("constant", ("LDC", "ULDC")),
    ("control", ("BRA", "BSSY", "BSYNC", "EXIT", "BAR", "WARPSYNC", "CALL", "RET", "NOP", "YIELD", "VOTE", "BREAK",
                 "BMOV", "JMP")),
    ("uniform", ("U",)),
    ("integer", ("I", "LOP", "SHF", "LEA", "SEL", "PLOP", "P2R", "R2P", "VIADD", "POPC", "FLO", "BREV", "PRMT", "SGXT",
                 "BMSK", "LOP3", "VIMNMX")),
]


def opcode_class(opcode):
    for name, prefixes in CLASSES:
        if opcode.startswith(prefixes):
            return name
    return "other"


# --- the tools ---------------------------------------------------------------------------------


def find_tool(name):
    """The toolkit's, else NVIDIA's PyPI package's (nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm)."""
    found = shutil.which(name)
    if found:
        return found
    candidates = [f"/usr/local/cuda/bin/{name}"]
    try:
        import nvidia  # a namespace package: each of its paths may hold cu*/bin
        for path in nvidia.__path__:
            candidates += sorted(glob.glob(os.path.join(path, "*", "bin", name)))
    except ImportError:
        pass
    for candidate in candidates:
        if os.access(candidate, os.X_OK):
            return candidate
    sys.exit(f"sass_report: {name} not found (pip install nvidia-cuda-{name}, or put the CUDA toolkit's bin on PATH)")


def run(command):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"sass_report: {' '.join(command)} failed ({result.returncode}):\n{result.stderr}")
    return result.stdout


def demangle(names):
    text = run(["c++filt"] + names) if shutil.which("c++filt") else "\n".join(names)
    return dict(zip(names, text.strip().split("\n")))


# --- parsing -----------------------------------------------------------------------------------


class Instruction:
    __slots__ = ("address", "predicate", "opcode", "operands", "control", "lines")

    def __init__(self, address, text, control, lines):
        self.address = address
        m = re.match(r"(@!?U?P\w+\s+)?(\S+)\s*(.*)", text)
        self.predicate, self.opcode, self.operands = (m.group(1) or "").strip(), m.group(2), m.group(3)
        self.control = control
        self.lines = lines  # ((file, line), ...): the source line and the lines it is inlined at

    @property
    def klass(self):
        return opcode_class(self.opcode)

    # The control word (the upper 23 bits of the 128-bit instruction): the cycles the scheduler
    # waits before this warp's next instruction, and the scoreboards set and awaited.
    @property
    def stall(self):
        return (self.control >> 41) & 0xF

    @property
    def write_barrier(self):
        value = (self.control >> 46) & 0x7
        return None if value == 7 else value

    @property
    def wait_mask(self):
        return (self.control >> 52) & 0x3F

    @property
    def width_bits(self):
        """Bits moved by a memory instruction (.64, .128; 32 otherwise; .U8 and friends 8 or 16)."""
        for suffix, bits in ((".128", 128), (".64", 64), (".U16", 16), (".S16", 16), (".U8", 8), (".S8", 8)):
            if suffix in self.opcode:
                return bits
        return 32


def parse_disassembly(text):
    """{mangled function: {"code": [Instruction], "labels": {label: address}, "files": {path}}} of
    nvdisasm -c -gi -hex: "files" holds the whole paths of its source lines (a library header's too)."""
    functions, current = {}, None
    pending_lines, pending_labels, lines, last = [], [], (), None
    for raw in text.split("\n"):
        m = re.match(r"^\.text\.(\S+):$", raw)
        if m:
            current = functions.setdefault(m.group(1), {"code": [], "labels": {}, "files": set()})
            continue
        if current is None:
            continue
        m = re.match(r'^\s*//## File "([^"]+)", line (\d+)(?: inlined at "([^"]+)", line (\d+))?', raw)
        if m:
            pending_lines.append((os.path.basename(m.group(1)), int(m.group(2))))
            current["files"].add(m.group(1))
            continue
        m = re.match(r"^(\.L_x_\d+):", raw.strip())
        if m:
            pending_labels.append(m.group(1))  # the next instruction's address
            continue
        m = re.match(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;\s*/\* 0x([0-9a-f]{16}) \*/", raw)
        if m:
            if pending_lines:
                lines, pending_lines = tuple(pending_lines), []
            last = Instruction(int(m.group(1), 16), m.group(2), 0, lines)
            current["code"].append(last)
            for label in pending_labels:
                current["labels"][label] = last.address
            pending_labels = []
            continue
        m = re.match(r"^\s+/\* 0x([0-9a-f]{16}) \*/\s*$", raw)
        if m and last is not None:
            last.control = int(m.group(1), 16)
    return functions


def parse_resources(text):
    """{mangled function: {"REG": n, "STACK": bytes, "SHARED": bytes, "LOCAL": bytes}} of cuobjdump -res-usage."""
    resources, name = {}, None
    for raw in text.split("\n"):
        m = re.match(r"^\s*Function (\S+):$", raw)
        if m:
            name = m.group(1)
            continue
        if name and "REG:" in raw:
            resources[name] = {k: int(v) for k, v in re.findall(r"(\w+(?:\[\d\])?):(\d+)", raw)}
            name = None
    return resources


def loops(function):
    """[(first, last)] index spans closed by a backward branch; not by one from past the function's last
    unconditional EXIT to before it (a cold path outlined past the end, such as a divergent warp's sync,
    jumping back into the code)."""
    code, labels = function["code"], function["labels"]
    index = {instruction.address: i for i, instruction in enumerate(code)}
    exits = [i for i, c in enumerate(code) if c.opcode == "EXIT" and not c.predicate]
    last_exit = exits[-1] if exits else len(code)
    spans = []
    for i, instruction in enumerate(code):
        if not instruction.opcode.startswith("BRA"):
            continue
        m = re.search(r"`\((\.L_x_\d+)\)", instruction.operands) or re.search(r"(0x[0-9a-f]+)", instruction.operands)
        if not m:
            continue
        target = labels.get(m.group(1)) if m.group(1).startswith(".L") else int(m.group(1), 16)
        if target is not None and target <= instruction.address and target in index and not (
                index[target] < last_exit < i):
            spans.append((index[target], i))
    return spans


def source_span(path, signature):
    """The lines (first, last) of the definition in `path` whose first line matches `signature`."""
    text = open(path).read().split("\n")
    for first, line in enumerate(text):
        if re.search(signature, line):
            depth, opened = 0, False
            for last in range(first, len(text)):
                depth += text[last].count("{") - text[last].count("}")
                opened = opened or "{" in text[last]
                if opened and depth == 0:
                    return os.path.basename(path), first + 1, last + 1
    sys.exit(f"sass_report: no definition matching {signature!r} in {path}")


def loads_in_flight_bits(body):
    """Bits of global loads a thread issues in the steady loop before it first waits on one."""
    barriers, bits = set(), 0
    for instruction in body:
        if instruction.wait_mask & sum(1 << b for b in barriers):
            break
        if instruction.opcode.startswith("LDG"):
            bits += instruction.width_bits
            if instruction.write_barrier is not None:
                barriers.add(instruction.write_barrier)
    return bits


def load_rounds(path):
    """Memory round trips along a path: a load issued after waiting on an earlier load starts a new one."""
    rounds, outstanding, waited = 0, set(), True
    for instruction in path:
        if instruction.wait_mask & sum(1 << b for b in outstanding):
            waited, outstanding = True, set()
        if instruction.opcode.startswith("LDG"):
            if waited:
                rounds, waited = rounds + 1, False
            if instruction.write_barrier is not None:
                outstanding.add(instruction.write_barrier)
    return rounds
